"""Loading configurations: TOML files, TOML text, dicts and overrides.

Python only merges; the schema lives in the Rust core, which parses the
merged document, fills in the preset and defaults, and reports every problem
with its key path.
"""

from __future__ import annotations

import copy
import json
import math
import tomllib
from pathlib import Path
from typing import Any, Mapping

from . import _core
from .errors import ConfigError

ConfigLike = Mapping[str, Any] | str | Path


def read_toml(path: Path, what: str = "configuration") -> dict:
    """The TOML file at ``path`` (a ``what``), or a ConfigError naming it:
    unreadable, not UTF-8, or not TOML."""
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        raise ConfigError.single("", "unreadable", f"{path}: cannot read the {what}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        line = e.object[:e.start].count(b"\n") + 1
        raise ConfigError.single("", "invalid_encoding", f"{path}: line {line}: byte {e.start} is not UTF-8; a "
                                 f"{what} is a TOML file, which is UTF-8 text") from None
    return _parse_toml(text, str(path))


def _parse_toml(text: str, where: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError.single("", "invalid_toml", f"{where}: not valid TOML: {e}") from None


def merge(base: dict, over: Mapping[str, Any]) -> dict:
    """Merge ``over`` into a copy of ``base``: tables key by key, anything else replaces.

    A plug-in table whose ``kind`` changes is replaced whole (the core does the
    same when it applies a preset).
    """
    out = copy.deepcopy(base)
    for key, value in over.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, Mapping):
            if "kind" in old and "kind" in value and old["kind"] != value["kind"]:
                out[key] = copy.deepcopy(dict(value))
            else:
                out[key] = merge(old, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_override(text: str) -> dict:
    """Turn ``machine.l2.ways=8`` into ``{"machine": {"l2": {"ways": 8}}}``.

    The value is read as TOML (``8``, ``"32KiB"``, ``true``, ``{kind = "lru"}``);
    a bare word that is not valid TOML is taken as a string.
    """
    if "=" not in text:
        raise ConfigError.single(text, "invalid_override", f"override '{text}' is not of the form key.path=value")
    path, raw = text.split("=", 1)
    keys = [k.strip() for k in path.strip().split(".")]
    if not all(keys):
        raise ConfigError.single(path, "invalid_override", f"override '{text}' has an empty key")
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    out: dict = {}
    node = out
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return out


def load(config: ConfigLike, overrides: list[str] | None = None, **sections: Any) -> tuple[dict, Path | None]:
    """Read a configuration and apply overrides.

    ``config`` is a path to a TOML file, TOML text, or a dict. ``overrides``
    are ``key.path=value`` strings; keyword arguments replace or merge whole
    top-level sections (``machine={...}``, ``workload={...}``, ``seed=3``).
    Returns the merged dict and the directory relative trace paths are
    resolved against (the config file's directory, if any).
    """
    base_dir: Path | None = None
    if isinstance(config, Path) or (isinstance(config, str) and _looks_like_path(config)):
        path = Path(config)
        doc = read_toml(path)
        base_dir = path.resolve().parent
    elif isinstance(config, str):
        doc = _parse_toml(config, "<config text>")
    elif isinstance(config, Mapping):
        doc = copy.deepcopy(dict(config))
    else:
        raise TypeError(f"a configuration is a path, TOML text or a dict, not {type(config).__name__}")
    for text in overrides or []:
        doc = merge(doc, parse_override(text))
    doc = merge(doc, sections)
    return doc, base_dir


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and "=" not in text and (text.endswith(".toml") or Path(text).exists())


def to_json(doc: Mapping, loc: str = "") -> str:
    """A configuration as the JSON text the core reads. JSON has no NaN or
    infinity, so a non-finite number is reported at its key."""
    def check(value: Any, at: str) -> None:
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError.single(at or "<config>", "invalid_value", f"expected a finite number, got {value}")
        if isinstance(value, Mapping):
            for key, item in value.items():
                check(item, f"{at}.{key}" if at else str(key))
        elif isinstance(value, (list, tuple)):
            for i, item in enumerate(value):
                check(item, f"{at}[{i}]")

    check(doc, loc)
    return json.dumps(doc)


def resolve(config: ConfigLike, overrides: list[str] | None = None, **sections: Any) -> dict:
    """The configuration as the core will run it: preset applied, every default filled in."""
    doc, _ = load(config, overrides, **sections)
    return json.loads(_core.resolve_config(to_json(doc)))


def presets() -> list[dict]:
    """The shipped machine presets: dicts with name, description, source and toml."""
    return _core.presets()
