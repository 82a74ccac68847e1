"""The Python package's layers (docs/architecture.md, "The Python
package"): every module of ``cachesched`` imports only from its own layer
or those below, so there are no import circles, even through imports
inside functions. A module not listed here fails the test until it is
given a layer. Compatibility aliases resolved in a module's
``__getattr__`` (``cachesched.results.load``, ``cachesched.report``) are
not imports of the module's own code and are left out."""

from __future__ import annotations

import ast
from pathlib import Path

import cachesched

#: Layer of each top-level module or subpackage of ``cachesched``
#: (``__init__`` is the package's own API, ``__version__`` among it).
LAYERS = {
    "_core": 0, "errors": 0, "_files": 0, "progress": 0,
    "config": 1, "results": 1, "reference": 1, "executors": 1,
    "simulate": 2, "store": 2, "trace": 2, "record": 2, "iorecord": 2, "cl1lock": 2, "missratio": 2, "ets": 2, "hcache": 2,
    "sweep": 3, "bench": 3, "workloads": 3,
    "__init__": 4,
    "report": 5,
    "studies": 6,
    "cli": 7,
}
ROOT = Path(cachesched.__file__).parent


def _unit(module: str) -> str:
    """``cachesched.x.y`` -> ``x``; the package itself (and names it
    defines, such as ``__version__``) -> ``__init__``."""
    parts = module.split(".")
    return "__init__" if len(parts) == 1 or parts[1] == "__version__" else parts[1]


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, imported module) of every import of a ``cachesched`` module in ``path``."""
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    package = parts[:-1] if parts[-1] == "__init__" else parts[:-1]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
               for n in ast.walk(f)}
    out = []
    for node in ast.walk(tree):
        if id(node) in aliases:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.split(".")[0] == "cachesched":
                target = node.module
            else:
                continue
            names = [f"{target}.{a.name}" for a in node.names] if target == "cachesched" else [target]
            out += [(node.lineno, name) for name in names]
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "cachesched"]
    return out


def test_every_module_imports_only_from_its_layer_or_below():
    problems, seen = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent)
        own = _unit(".".join(rel.with_suffix("").parts))
        seen.add(own)
        if own not in LAYERS:
            problems.append(f"{rel}: module {own} has no layer in tests/test_layers.py")
            continue
        for line, target in _imports(path):
            other = _unit(target)
            if other not in LAYERS:
                problems.append(f"{rel}:{line}: imports {target}, which has no layer")
            elif LAYERS[other] > LAYERS[own]:
                problems.append(f"{rel}:{line}: {own} (layer {LAYERS[own]}) imports {target} "
                                f"(layer {LAYERS[other]})")
    assert not problems, "\n".join(problems)
    assert set(LAYERS) - {"_core"} <= seen, f"layers of modules that no longer exist: {set(LAYERS) - seen}"


def test_the_checker_sees_imports_inside_functions_and_skips_aliases():
    # results.py's __getattr__ alias to the store is skipped; the store's own
    # function-level import of results is seen.
    assert not [t for _, t in _imports(ROOT / "results.py") if _unit(t) == "store"]
    assert [t for _, t in _imports(ROOT / "store.py") if _unit(t) == "results"]
    assert "cachesched.studies" in {t for _, t in _imports(ROOT / "cli" / "study.py")}  # from .. import studies
