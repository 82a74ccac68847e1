"""Run one simulation from Python."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from . import _core
from .config import ConfigLike, load, to_json
from .errors import ConfigError
from .progress import Progress
from .progress import bar as progress_bar
from .results import Results


#: What the engine calls on a Python policy, and the attributes it reads.
HOOKS = ("place", "pick", "quantum", "balance")
ATTRIBUTES = ("period", "default_quantum")


def _check_policy(obj: object) -> None:
    """Refuse a policy whose public names are not all hooks or attributes
    the engine knows: a misspelled hook (``pik``) would otherwise be
    silently never called. Helpers and state start with ``_``."""
    import difflib

    cls = type(obj).__name__
    for name in dir(obj):
        if name.startswith("_"):
            continue
        value = getattr(obj, name)
        if callable(value) and name in HOOKS or not callable(value) and name in ATTRIBUTES:
            continue
        known = HOOKS if callable(value) else ATTRIBUTES
        if not callable(value) and not difflib.get_close_matches(name, known, 1, 0.75):
            continue  # state of the policy's own, not a near miss of an attribute the engine reads
        close = difflib.get_close_matches(name, known, 1)
        what = "a method" if callable(value) else "an attribute"
        raise ConfigError.single(
            "scheduler", "unknown_hook",
            f"{cls}.{name} is not {what} the engine uses"
            + (f" (did you mean {close[0]}?)" if close else "")
            + f"; hooks are {', '.join(HOOKS)}, attributes {', '.join(ATTRIBUTES)}; name helpers with a leading _")


def _policy_table(obj: object) -> dict:
    """The ``kind = "python"`` table recording a scheduler object: its class,
    and its ``period`` and ``default_quantum`` attributes if it has them."""
    _check_policy(obj)
    params: dict[str, Any] = {"class": type(obj).__name__}
    for attr, key in (("period", "period"), ("default_quantum", "quantum")):
        if getattr(obj, attr, None) is not None:
            params[key] = getattr(obj, attr)
    return {"kind": "python", "params": params}


def simulate(
    config: ConfigLike,
    *,
    overrides: list[str] | None = None,
    progress: bool | Progress = False,
    base_dir: str | Path | None = None,
    **sections: Any,
) -> Results:
    """Simulate a configuration and return its :class:`Results`.

    ``config`` is a path to a TOML file, TOML text or a dict; ``overrides``
    are ``key.path=value`` strings and keyword arguments replace or merge
    top-level sections, e.g. ``simulate("run.toml", machine={"l2": {"ways": 8}})``.
    ``scheduler`` may be an object instead of a table: a policy written in
    Python (see docs/scheduling.md).
    ``progress=True`` shows a progress bar on stderr for runs longer than a
    second; a callable receives ``(done, total)`` about every million
    references. Relative trace paths are resolved against ``base_dir``, else
    the config file's directory, else the working directory.

    Raises :class:`~cachesched.errors.ConfigError` for a bad configuration,
    :class:`~cachesched.errors.TraceError` for a bad trace, and
    :class:`~cachesched.errors.SimulationError` if the run cannot finish.
    """
    # A scheduler object (not a table) is passed by reference, never copied.
    obj = sections.get("scheduler")
    if isinstance(config, Mapping) and not isinstance(config.get("scheduler"), (Mapping, type(None))):
        obj = obj if obj is not None else config["scheduler"]
        config = {k: v for k, v in config.items() if k != "scheduler"}
    if isinstance(obj, Mapping):
        obj = None
    elif obj is not None:
        sections["scheduler"] = _policy_table(obj)
    doc, found_dir = load(config, overrides, **sections)
    directory = Path(base_dir) if base_dir is not None else found_dir
    close = None
    if progress is True:
        callback, close = progress_bar(" accesses")
    else:
        callback = progress or None
    try:
        text = _core.simulate(to_json(doc), str(directory) if directory else None, callback, obj)
    finally:
        if close:
            close()
    return Results.from_json(text)


KINDS = {"load": 0, "store": 1, "ifetch": 2}


def replay(machine: Mapping[str, Any], accesses: list[tuple[int, str, int]], *, seed: int = 0) -> dict[str, Any]:
    """Run ``accesses``, ``(core, kind, address)`` with kind ``"load"``,
    ``"store"`` or ``"ifetch"``, in this order on ``machine`` (a ``machine``
    table, preset and all), as threads of one address space: core ``c``'s
    references are task ``c``'s, with coherence unless ``coherence =
    "none"``. No scheduler and no clocks: the interleaving is the one given.
    Returns ``caches`` (per cache: ``path`` and ``lines``, each a pair of
    physical line number and dirty bit), ``traffic`` (per core and home
    node: the interconnect transactions, see docs/numa.md) and ``memory``
    (per node)."""
    import json

    try:
        kinds = [KINDS[k] for _, k, _ in accesses]
    except KeyError as e:
        raise ConfigError.single("accesses", "invalid_value",
                                 f"unknown kind {e.args[0]!r}; expected load, store or ifetch") from None
    out = _core.machine_replay(json.dumps({"machine": dict(machine)}), [c for c, _, _ in accesses], kinds,
                               [a for _, _, a in accesses], seed)
    return json.loads(out)
