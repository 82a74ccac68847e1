"""Output files that appear whole or not at all.

Every file cachesched writes for a user is written under a temporary name in
its folder and renamed onto its path once complete (as the core's
``StagedFile`` does for traces): an interrupted or failed write leaves the
old file, or none, never half of one.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


@contextmanager
def staged(path: str | Path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed onto ``path``
    when the block ends without an exception, removed otherwise. A path that
    is not a regular file (``/dev/stdout``, a FIFO) is written directly."""
    target = Path(path)
    if target.exists() and not target.is_file():
        yield target
        return
    if target.is_symlink():  # the file it names gets the new content; the link stays
        target = target.resolve()
    # The suffix stays last: writers such as matplotlib's choose the format by it.
    temp = target.with_name(f".{target.stem}.{os.getpid()}.part{target.suffix}")
    try:
        yield temp
        with open(temp, "rb+") as f:  # on disk before it takes the name
            os.fsync(f.fileno())
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all."""
    with staged(path) as temp:
        temp.write_bytes(data)


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    write_bytes(path, text.encode("utf-8"))
