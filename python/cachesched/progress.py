"""Progress bars for long work: a tqdm bar on stderr that appears only
after a second, only in a terminal, and is erased when the work ends."""

from __future__ import annotations

import sys
from typing import Callable

#: ``progress(done, total)``: work done so far and, if known, in all.
Progress = Callable[[int, "int | None"], None]


def bar(unit: str) -> tuple[Progress, Callable[[], None]]:
    """A progress callback and the function that erases its bar. When stderr
    is not a terminal (a log, a pipe) there is no bar: there, its last
    picture (98% done, say) would stay in front of the results."""
    from tqdm import tqdm

    bar = tqdm(total=None, unit=unit, unit_scale=True, delay=1.0, file=sys.stderr, leave=False, dynamic_ncols=True,
               disable=None)

    def update(done: int, total: int | None) -> None:
        if total is not None and bar.total != total:
            bar.total = total
        bar.update(done - bar.n)

    return update, bar.close
