"""The NUMA page-migration study: spec numa-page-migration.md (profile-driven
online page migration with interconnect hardware counters, Sun Fire 6800),
run by ``cachesched study numa``.

Its parts (:data:`PARTS`), one module each, run in order:

- ``sampling`` (E1, Table 1): the sampler's accuracy D per CPU, maximum-rate
  against interval sampling;
- ``placement`` (E2, E3, Tables 2 and 3): one thread's uncached walk with
  local and non-local pages;
- ``migration`` (E4-E6, Tables 4-6): non-local accesses, write-backs and
  execution time of the seven NAS kernels, original, bound, and with page
  migration stop-the-world and in the background;
- ``interval`` (E7): the migration interval swept.

What they share (the machine, the kernels and their sizes, how time is
scaled, the measures) is in :mod:`.common`. See docs/numa.md, "The study".
"""

from __future__ import annotations

from ..study import Part, Study
from .common import notes

PARTS = (
    Part("sampling", "E1", "Sampling accuracy: maximum-rate against interval sampling",
         "cachesched.studies.numa.sampling"),
    Part("placement", "E2, E3", "Local against non-local placement", "cachesched.studies.numa.placement"),
    Part("migration", "E4-E6", "Non-local accesses, write-backs and time of the NAS kernels",
         "cachesched.studies.numa.migration"),
    Part("interval", "E7", "The migration interval swept", "cachesched.studies.numa.interval"),
)

#: The kernels' sizes (not suite traces): "quick" and "full" select them.
STUDY = Study(name="numa", title="NUMA page migration: the study", spec="numa-page-migration.md", parts=PARTS,
              sizes={"quick": "quick", "full": "full"}, notes=notes, suite=False)
run = STUDY.run
