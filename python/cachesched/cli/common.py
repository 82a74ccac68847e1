"""What the commands share: argument types and progress bars."""

from __future__ import annotations

import argparse


def progress_bar(quiet: bool, unit: str):
    """A progress callback and its closer: a bar on stderr, none if quiet."""
    if quiet:
        return None, lambda: None
    from ..progress import bar

    return bar(unit)


def wrote_line(summary: dict, path: str, source_bytes: int | None = None) -> str:
    text = (f"wrote {summary['accesses']:,} accesses, {summary['instructions']:,} instructions to {path} "
            f"({summary['file_bytes']:,} bytes, {summary['bytes_per_access']:.2f} bytes/access")
    if source_bytes:
        text += f", {source_bytes / summary['file_bytes']:.1f}x smaller than the input"
    return text + ")"


UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
          "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40}


def size_arg(text: str) -> int:
    """A size in bytes as configs write them: ``4096``, ``32KiB``, ``1MiB``,
    ``1TiB`` (K, KB and KiB are all 1024)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in UNITS:
        raise argparse.ArgumentTypeError(f"expected a size such as 32768, 32KiB, 1MiB or 1TiB, got {text!r}")
    size = int(m.group(1)) * UNITS[m.group(2).lower()]
    if not 0 < size < 1 << 64:
        raise argparse.ArgumentTypeError(f"expected a size above 0 and below 2^64 bytes, got {text!r}")
    return size


def whole_arg(lo: int, hi: int = (1 << 64) - 1):
    """An argparse type: a whole number in ``[lo, hi]`` (the core's counts are
    unsigned 64-bit, threads 32-bit), or a usage error that says so."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lo <= value <= hi:
            bound = f"at least {lo}" if hi == (1 << 64) - 1 else f"from {lo} to {hi}"
            raise argparse.ArgumentTypeError(f"expected a whole number {bound}, got {text!r}")
        return value

    return parse


#: Argument types: counts that may be 0, counts of at least 1, thread ids.


COUNT, POSITIVE, THREAD = whole_arg(0), whole_arg(1), whole_arg(0, (1 << 32) - 1)
