"""Type stubs of the compiled module ``cachesched._core`` (crates/py).

Configurations go in and results come out as JSON text; the Python modules
wrap these functions, and users call those instead.
"""

from typing import Callable, Optional

__version__: str

Progress = Callable[[int, Optional[int]], None]

def simulate(
    config_json: str,
    base_dir: Optional[str] = None,
    progress: Optional[Progress] = None,
    scheduler: Optional[object] = None,
) -> str: ...
def resolve_config(config_json: str) -> str: ...
def presets() -> list[dict[str, str]]: ...
def machine_replay(config_json: str, cores: list[int], kinds: list[int], addrs: list[int], seed: int = 0) -> str: ...
def trace_info(path: str) -> str: ...
def trace_scan(path: str, thread: Optional[int] = None) -> str: ...
def trace_mrc(
    path: str,
    thread: Optional[int] = None,
    sets: int = 1,
    line_bytes: int = 64,
    ways: Optional[list[int]] = None,
    sample: Optional[float] = None,
    ifetch: bool = False,
    progress: Optional[Progress] = None,
) -> str: ...
def trace_generate(
    workload_json: str,
    path: str,
    seed: int = 1,
    base_dir: Optional[str] = None,
    progress: Optional[Progress] = None,
) -> str: ...
def trace_write(
    path: str, addr: bytes, kind: bytes, size: bytes, pc: bytes, instrs: bytes, source: str = "python"
) -> str: ...
def trace_read(
    path: str, thread: Optional[int] = None, skip: int = 0, limit: Optional[int] = None
) -> dict[str, bytes]: ...
def trace_convert(params_json: str, path: str, progress: Optional[Progress] = None) -> str: ...
def trace_record(
    pipe: str,
    path: str,
    source: str,
    meta_json: str,
    skip_instructions: int = 0,
    limit: Optional[int] = None,
    ifetch: bool = False,
    progress: Optional[Progress] = None,
    windows: Optional[list[tuple[int, int, int]]] = None,
) -> str: ...
def hcache_run(params_json: str, traces: list[str]) -> str: ...
def provision_run(params_json: str, traces: list[str]) -> str: ...
def block_read(path: str, format: str) -> str: ...
def cl1lock_run(params_json: str, traces: list[str]) -> str: ...
