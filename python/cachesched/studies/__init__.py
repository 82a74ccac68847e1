"""Studies: each re-runs one source document's experiments and prints its
claims beside the values measured here (``cachesched study NAME``).

Every study is a :class:`~.study.Study` (``STUDY`` in its package) run by
the one framework in :mod:`.study`: its parts run their simulations through
:mod:`.runs` (the sweep machinery: parallel, Dask-capable, stored once and
resumable), judge their claims in :mod:`.claims` and write one page with
:mod:`.page`. :data:`STUDIES` names them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .study import Study

#: Study name -> (package, one line on what it reproduces); the package is
#: imported only when the study is asked for.
STUDIES = {
    "migration": ("cachesched.studies.migration",
                  "TLB preservation and migration prefetching (spec tlb-preservation-and-migration-prefetch.md)"),
    "ets": ("cachesched.studies.ets",
            "replacement policies and elastic time slicing (spec elastic-time-slicing.md)"),
    "numa": ("cachesched.studies.numa",
             "profile-driven NUMA page migration with interconnect sampling (spec numa-page-migration.md)"),
    "locking": ("cachesched.studies.locking",
                "cache locking and the per-VM hypervisor cache (spec cache-locking.md)"),
    "region": ("cachesched.studies.region",
               "region scheduling: regions mapped to cache domains, tasks micro-scheduled (spec region-scheduling.md)"),
}


def get(name: str) -> Study:
    """The study ``name``."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; studies: {', '.join(STUDIES)}")
    return importlib.import_module(STUDIES[name][0]).STUDY
