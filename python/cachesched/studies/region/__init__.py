"""The region-scheduling study: spec region-scheduling.md (Lee and Schwan's
region scheduling: memory regions mapped to last-level caches and tasks
micro-scheduled to them), run by ``cachesched study region``.

Its parts (:data:`PARTS`), one module each, run in order:

- ``unification`` (E1, Figs. 8-9): memlat's unification map on Clovertown
  and Westmere;
- ``overhead`` (E2, section 5.1): the cost of moving, with and without
  per-cache page tables, and of region scheduling where it cannot win;
- ``balancing`` (E3, section 5.2): large and small memlats balanced over
  the domains, against Xen's credit scheduler and Linux's cache-aware
  balancing;
- ``contention`` (E4, Fig. 17): a suite program beside two large memlats
  and a small one, credit against region scheduling;
- ``loads`` (E5, Fig. 18): the domains' loads over time in that balancing;
- ``programs`` (E7, and E6's Fig. 20): the open suite's programs alone,
  region scheduling against credit, with their regions per domain;
- ``discovery`` (E6, Figs. 16, 19, 23): accessed-bit maps, merges,
  regions and loads over time, for the stable and dynamic phase models
  and the suite's programs;
- ``shared`` (E6, Fig. 14): the share of pages that stay global (code
  and stack) in the suite's programs;
- ``server`` (E8, sections 5.4-5.5): a media server's response times
  alone, consolidated under credit, and under region scheduling with the
  server preferred;
- ``isolation`` (E9, section 5.5): a streaming parallel VM beside omnetpp
  VMs, the caches partitioned against the credit scheduler;
- ``projection`` (claim 15): E1's map with a 100-cycle micro-schedule, the
  source's outlook for hardware execution migration;

What they share (the machines, memlat, the micro-schedule's costs, the
measures) is in :mod:`.common`. See docs/region-scheduling.md, "The study".
"""

from __future__ import annotations

from ..study import Part, Study
from .common import notes

PARTS = (
    Part("unification", "E1", "The cache-unification map", "cachesched.studies.region.unification"),
    Part("overhead", "E2", "Overhead per micro-schedule rate", "cachesched.studies.region.overhead"),
    Part("balancing", "E3", "Balancing large and small memlats", "cachesched.studies.region.balancing"),
    Part("contention", "E4", "A program beside large memlats", "cachesched.studies.region.contention"),
    Part("loads", "E5", "Cache loads over time", "cachesched.studies.region.loads"),
    Part("programs", "E6, E7", "Single programs", "cachesched.studies.region.programs"),
    Part("discovery", "E6", "Access patterns and region discovery", "cachesched.studies.region.discovery"),
    Part("shared", "E6", "Shared pages", "cachesched.studies.region.shared"),
    Part("server", "E8", "A media server under consolidation", "cachesched.studies.region.server"),
    Part("isolation", "E9", "Isolating parallel code", "cachesched.studies.region.isolation"),
    Part("projection", "outlook", "A 100-cycle micro-schedule", "cachesched.studies.region.projection"),
)

STUDY = Study(name="region", title="Region scheduling: the study", spec="region-scheduling.md", parts=PARTS,
              sizes={"quick": "quick", "full": "full"}, notes=notes, suite=False)
run = STUDY.run
