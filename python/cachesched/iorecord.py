"""Recording a real program's file I/O as a block trace (docs/trace-formats.md,
"Recording a program's file I/O").

The program runs under ``strace`` (``-f -ttt -T -y``: every process, the
wall-clock time and duration of each call, the path behind each file
descriptor); its reads and writes of regular files under the chosen
directories become requests of an MSR Cambridge block trace. Each file is
its own extent of one virtual disk (64 GiB apart, in the order the files
are first read or written), so a request's offset is its file's base plus
its position in the file: ``pread``/``pwrite`` carry it, ``read``/``write``
use the descriptor's position, which opening (0, or the end with
``O_APPEND``), ``lseek`` and the bytes moved keep (a descriptor a process
inherited starts at 0 in it); ``copy_file_range`` and ``sendfile`` are a
read and a write. A file mapped with
``mmap`` is one read of the mapped range when it is mapped (strace sees no
page faults: the pages a mapping can touch). A call that failed or moved
nothing is not a request. The request's response time is the call's
duration.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ._files import write_text

#: The system calls followed.
CALLS = ("open", "openat", "creat", "read", "write", "pread64", "pwrite64", "readv", "writev", "preadv",
         "pwritev", "lseek", "mmap", "copy_file_range", "sendfile")
#: Bytes between two files' extents on the virtual disk.
EXTENT = 1 << 36
#: Windows filetime (MSR's clock: 100 ns since 1601) of the Unix epoch.
EPOCH_FILETIME = 116_444_736_000_000_000

_LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\d+\.\d+) (.*)$")
_CALL = re.compile(r"^(\w+)\((.*)\)\s+= (-?\d+|0x[0-9a-f]+)(?:<([^>]*)>)?.*?<(\d+\.\d+)>$")
_FD = re.compile(r"^(-?\d+)<([^>]*)>")


class Recorder:
    """Turns strace lines into block requests: ``(time_s, write, offset,
    bytes, duration_s)``, with the files' extents in ``files``."""

    def __init__(self, roots: Sequence[str | Path]) -> None:
        self.roots = [str(Path(r).resolve()) for r in roots]
        self.files: dict[str, int] = {}
        self.positions: dict[tuple[int, int], int] = {}
        self.pending: dict[int, str] = {}
        self.requests: list[tuple[float, bool, int, int, float]] = []

    def wanted(self, path: str) -> bool:
        return any(path == r or path.startswith(r + os.sep) for r in self.roots)

    def base(self, path: str) -> int:
        return self.files.setdefault(path, len(self.files)) * EXTENT

    def line(self, text: str) -> None:
        """Read one line of strace's output."""
        m = _LINE.match(text.rstrip("\n"))
        if not m:
            return
        pid, when, rest = int(m[1]), float(m[2]), m[3]
        # With several processes a call is split: "<unfinished ...>", then "<... name resumed>".
        if rest.endswith("<unfinished ...>"):
            self.pending[pid] = rest.removesuffix("<unfinished ...>")
            return
        resumed = re.match(r"^<\.\.\. \w+ resumed>(.*)$", rest)
        if resumed:
            rest = self.pending.pop(pid, "") + resumed[1]
        call = _CALL.match(rest)
        if call:
            self.call(pid, when, call)

    def call(self, pid: int, when: float, call: re.Match) -> None:
        name, args, result, result_path, duration = call[1], call[2], call[3], call[4], float(call[5])
        value = int(result, 16) if result.startswith("0x") else int(result)
        parts = [a.strip() for a in args.split(", ")]
        fds = [_FD.match(a) for a in parts]
        if name in ("open", "openat", "creat"):
            if value >= 0 and result_path:
                self.positions[(pid, value)] = -1 if "O_APPEND" in args else 0
        elif name == "lseek" and fds[0] and value >= 0:
            self.positions[(pid, int(fds[0][1]))] = value
        elif name == "mmap" and len(parts) == 6 and fds[4] and value >= 0:
            path = fds[4][2]
            if self.wanted(path):
                self.requests.append((when, False, self.base(path) + int(parts[5], 0), int(parts[1], 0), duration))
        elif value <= 0:
            return
        elif name in ("read", "readv", "write", "writev") and fds[0]:
            self.move(pid, when, fds[0], name.startswith("write"), None, value, duration)
        elif name in ("pread64", "preadv", "pwrite64", "pwritev") and fds[0]:
            self.move(pid, when, fds[0], name.startswith("pwrite"), int(parts[-1], 0), value, duration)
        elif name == "copy_file_range" and fds[0] and fds[2]:
            # (in, in offset or NULL, out, out offset or NULL, length, flags)
            at = [None if parts[i] == "NULL" else int(parts[i].strip("[]"), 0) for i in (1, 3)]
            self.move(pid, when, fds[0], False, at[0], value, duration)
            self.move(pid, when, fds[2], True, at[1], value, duration)
        elif name == "sendfile" and fds[0] and fds[1]:
            # (out, in, in offset or NULL, count)
            at = None if parts[2] == "NULL" else int(parts[2].strip("[]"), 0)
            self.move(pid, when, fds[1], False, at, value, duration)
            self.move(pid, when, fds[0], True, None, value, duration)

    def move(self, pid: int, when: float, fd: re.Match, write: bool, offset: int | None, size: int,
             duration: float) -> None:
        """``size`` bytes read or written on descriptor ``fd`` at
        ``offset`` (none: its position, which moves on)."""
        key, path = (pid, int(fd[1])), fd[2]
        if offset is None:
            offset = self.positions.get(key, 0)
            if offset < 0:  # O_APPEND: at the end, which strace does not show
                offset = max(0, os.path.getsize(path) - size) if os.path.exists(path) else 0
            self.positions[key] = offset + size
        if self.wanted(path):
            self.requests.append((when, write, self.base(path) + offset, size, duration))

    def csv(self, host: str) -> str:
        """The requests as MSR Cambridge lines (no header)."""
        out = []
        for when, write, offset, size, duration in self.requests:
            stamp = EPOCH_FILETIME + round(when * 1e7)
            out.append(f"{stamp},{host},0,{'Write' if write else 'Read'},{offset},{size},{round(duration * 1e7)}\n")
        return "".join(out)


def record(argv: Sequence[str], out: str | Path, *, cwd: str | Path | None = None,
           roots: Sequence[str | Path] | None = None, host: str = "vm", stdout=subprocess.DEVNULL) -> dict:
    """Run ``argv`` under strace and write its file I/O under ``roots``
    (default: the working directory) as an MSR block trace at ``out``.
    Returns a summary: requests, reads, writes, bytes of each, files."""
    strace = shutil.which("strace")
    if strace is None:
        raise RuntimeError("strace is not installed (Debian package strace; `cachesched suite install` installs it)")
    cwd = Path(cwd or ".").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "strace.log"
        done = subprocess.run([strace, "-f", "-ttt", "-T", "-y", "-s", "0", "-qq", "-e", "trace=" + ",".join(CALLS),
                               "-o", str(log), *argv], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed under strace ({done.returncode}): {done.stderr[-1000:]}")
        recorder = Recorder(roots or [cwd])
        with open(log, encoding="utf-8", errors="replace") as lines:
            for text in lines:
                recorder.line(text)
    write_text(out, recorder.csv(host))
    reads = [r for r in recorder.requests if not r[1]]
    writes = [r for r in recorder.requests if r[1]]
    return {"requests": len(recorder.requests), "reads": len(reads), "writes": len(writes),
            "read_bytes": sum(r[3] for r in reads), "write_bytes": sum(r[3] for r in writes),
            "files": len(recorder.files), "trace": str(out)}
