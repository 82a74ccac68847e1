"""cachesched: simulate what operating-system and hypervisor scheduling does to
caches, TLBs and NUMA memory.

>>> import cachesched
>>> r = cachesched.simulate({"workload": {"kind": "zipf", "params": {"working_set_bytes": "4MiB"}}})
>>> r.miss_ratio("l1d")  # doctest: +SKIP
"""

from . import _core
from .config import presets, resolve
from .errors import CacheschedError, ConfigError, InternalError, RecordError, SimulationError, TraceError
from .missratio import mrc
from .results import Results
from .simulate import simulate

__version__ = _core.__version__

__all__ = [
    "CacheschedError",
    "ConfigError",
    "InternalError",
    "RecordError",
    "Results",
    "SimulationError",
    "TraceError",
    "mrc",
    "presets",
    "resolve",
    "simulate",
    "__version__",
]
