"""The claims table of a study: each numbered claim of a source document
beside the value measured here, and a verdict.

A part of a study registers its claims with :meth:`Claims.add` and judges
each one with :meth:`Claim.judge`, from checks computed on its own tables:
the verdict is *holds* when every check passes, *partly* when some do,
*does not hold* when none does. The checks that fail become the claim's
``difference``; the part gives the likely ``reason``. A part that is not
built yet lists its claims with :meth:`Claims.planned`, so they show as
"not run in this version" instead of disappearing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._files import staged

HOLDS, PARTLY, FAILS, NOT_RUN = "holds", "partly", "does not hold", "not run in this version"
#: A claim about something the simulator does not model (the scheduler's own code).
NOT_COMPARABLE = "not comparable"
VERDICTS = (HOLDS, PARTLY, FAILS, NOT_COMPARABLE, NOT_RUN)
#: The columns of ``claims.csv``, in order.
COLUMNS = ("id", "part", "claim", "spec", "measured", "verdict", "difference", "reason", "source", "values")


@dataclass
class Claim:
    """One claim: what the source says (``claim``, ``spec``: its value), what
    was measured (``measured``, readable; ``values``, the numbers behind it,
    for tests and tools), the verdict, and when it does not hold, by how
    much (``difference``) and why, likely (``reason``). ``source`` names the
    tables the measured values come from."""

    id: str
    part: str
    claim: str
    spec: str
    measured: str = ""
    verdict: str = NOT_RUN
    difference: str = ""
    reason: str = ""
    source: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    def judge(self, checks: Iterable[tuple[str, bool]], measured: str, *, reason: str = "",
              source: str = "", **values: Any) -> Claim:
        """Set the verdict from named checks (``(what should be true, is it)``):
        all true holds, some true partly, none does not hold; the failed
        checks make the difference. ``reason`` is kept only when something
        failed."""
        checks = [(what, bool(ok)) for what, ok in checks]
        passed = sum(ok for _, ok in checks)
        self.verdict = HOLDS if passed == len(checks) else PARTLY if passed else FAILS
        self.measured, self.source, self.values = measured, source, values
        failed = [what for what, ok in checks if not ok]
        self.difference = "; ".join(f"not: {what}" for what in failed)
        self.reason = reason if failed else ""
        return self


class Claims:
    """The claims of a study, in the order they were added."""

    def __init__(self) -> None:
        self.items: list[Claim] = []

    def add(self, id: str, part: str, claim: str, spec: str) -> Claim:
        """Register a claim (not run until judged) and return it."""
        if any(c.id == id for c in self.items):
            raise ValueError(f"claim {id} is registered twice")
        item = Claim(id=id, part=part, claim=claim, spec=spec)
        self.items.append(item)
        return item

    def planned(self, part: str, claims: Iterable[tuple[str, str, str]]) -> None:
        """Register the claims ``(id, claim, spec value)`` of a part that is
        not built yet: they stay "not run in this version"."""
        for id, text, spec in claims:
            self.add(id, part, text, spec)

    def __getitem__(self, id: str) -> Claim:
        for c in self.items:
            if c.id == id:
                return c
        raise KeyError(id)

    def frame(self) -> pd.DataFrame:
        """One row per claim, :data:`COLUMNS`; ``values`` as JSON text."""
        rows = [{**asdict(c), "values": json.dumps(c.values, sort_keys=True, default=float)} for c in self.items]
        return pd.DataFrame(rows, columns=list(COLUMNS))

    @staticmethod
    def read(path: str | Path) -> pd.DataFrame:
        """A ``claims.csv`` back as a table (empty cells as empty strings)."""
        return pd.read_csv(path, keep_default_na=False, dtype=str)

    def write(self, path: str | Path) -> Path:
        """Write ``claims.csv``."""
        path = Path(path)
        with staged(path) as temp:
            self.frame().to_csv(temp, index=False)
        return path


def pct(x: float | None, digits: int = 1) -> str:
    """``x`` as a percentage (``n/a`` if missing)."""
    return "n/a" if x is None or not np.isfinite(x) else f"{100 * x:.{digits}f}%"


def claim(cid: str, measured: str, verdict: str, why: str = "") -> dict:
    """A part's judgement of claim ``cid`` (:func:`cachesched.studies.runs.record_claims`)."""
    return {"id": cid, "measured": measured, "verdict": verdict, "why": why}


def grade(ok: bool, close: bool) -> str:
    """``holds`` if ok, else ``partly`` if close, else ``does not hold``."""
    return "holds" if ok else "partly" if close else "does not hold"
