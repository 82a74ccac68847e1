"""cachesched: simulate what operating-system and hypervisor scheduling does to
caches, TLBs and NUMA memory.

>>> import cachesched
>>> r = cachesched.simulate({"workload": {"kind": "zipf", "params": {"working_set_bytes": "4MiB"}}})
>>> r.miss_ratio("l1d")  # doctest: +SKIP
"""

from . import _core
from .config import presets, resolve
from .errors import (CacheschedError, ConfigError, InternalError, RecordError, ResultsError, SimulationError,
                     TraceError)
from .missratio import mrc
from .results import Results
from .simulate import replay, simulate
from .sweep import run as run_sweep

__version__ = _core.__version__

__all__ = [
    "CacheschedError",
    "ConfigError",
    "InternalError",
    "RecordError",
    "Results",
    "ResultsError",
    "SimulationError",
    "TraceError",
    "mrc",
    "presets",
    "resolve",
    "run_sweep",
    "replay",
    "simulate",
    "__version__",
]


def __getattr__(name: str) -> object:
    """``cachesched.report`` without an import of its own, loaded on first
    use: it imports matplotlib, which simulations alone do not need."""
    if name == "report":
        import importlib

        return importlib.import_module(".report", __name__)
    raise AttributeError(f"module 'cachesched' has no attribute {name!r}")
