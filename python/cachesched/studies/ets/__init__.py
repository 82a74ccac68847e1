"""The elastic-time-slicing study (spec ``elastic-time-slicing.md``): every
experiment of its catalogue that a simulation can run, on the open suite,
and its validation table (§7) with the values measured here; run by
``cachesched study ets``.

Its parts (:data:`PARTS`), one module each, run in order:

- ``performance``: ETS vs UTS-2.5/5/10 per LLC policy (E1, E3, E4, E6, E12);
- ``latency``: the co-runners' latency (E5);
- ``sharing``: the estimator on a shared, way-partitioned LLC (E7, E8);
- ``estimator``: estimator error and switch misses per LLC policy and size
  (E8-E11, E13, E14; claim 8's shared half from ``sharing``);
- ``residual``: the complete-eviction check (E2).

Each module has ``table`` (its runs, through a ``simulate`` callable),
``claims``, ``figures``, ``CLAIMS`` and ``run(ctx)``; what they share
(time scale, mixes, run configuration, measures) is in :mod:`.common`. The
study takes ``programs`` beyond the common options. See
docs/elastic-time-slicing.md, "The study".
"""

from __future__ import annotations

from ..study import Part, Study
from .common import notes

PARTS = (
    Part("performance", "E1, E3, E4, E6, E12", "ETS against uniform slicing, per LLC policy",
         "cachesched.studies.ets.performance"),
    Part("latency", "E5", "Latency of the co-runners", "cachesched.studies.ets.latency"),
    Part("sharing", "E7, E8", "The estimator on a shared, way-partitioned LLC", "cachesched.studies.ets.sharing"),
    Part("estimator", "E8-E11, E13, E14", "Estimator accuracy and switch misses per LLC policy and size",
         "cachesched.studies.ets.estimator"),
    Part("residual", "E2", "The complete-eviction assumption", "cachesched.studies.ets.residual"),
)

#: Quick: the tiny traces (whole runs of 3M to 28M instructions, recorded in
#: seconds each) of four programs; full: the small traces of every program.
STUDY = Study(name="ets", title="Elastic time slicing: the study", spec="elastic-time-slicing.md", parts=PARTS,
              sizes={"quick": "tiny", "full": "small"},
              extra={"programs": "the suite programs to run (default: four quick, every one full)"}, notes=notes,
              takes_ref=True)
run = STUDY.run
