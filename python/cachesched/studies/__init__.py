"""Studies: each re-runs one source document's experiments and prints its
claims beside the values measured here (``cachesched study NAME``).

A study is a package under ``cachesched.studies`` with a ``run(out, ...)``
function; :data:`STUDIES` names them. Shared pieces: :mod:`.claims` (the
claims table), :mod:`.page` (the report page), :mod:`.runs` (running a
study's simulations through the sweep machinery).
"""

from __future__ import annotations

import importlib
from types import ModuleType

#: Study name -> (module, one line on what it reproduces).
STUDIES = {
    "migration": ("cachesched.studies.migration",
                  "TLB preservation and migration prefetching (spec tlb-preservation-and-migration-prefetch.md)"),
    "ets": ("cachesched.studies.ets",
            "replacement policies and elastic time slicing (spec elastic-time-slicing.md)"),
}


def get(name: str) -> ModuleType:
    """The module of study ``name``."""
    if name not in STUDIES:
        raise ValueError(f"unknown study {name!r}; studies: {', '.join(STUDIES)}")
    return importlib.import_module(STUDIES[name][0])
