"""Recording real programs: valgrind lackey, piped into the Rust lackey
reader and the ``.cst`` writer as it runs.

Lackey's text runs to about 20 bytes per access, gigabytes per second of a
program's run, so it never touches the disk: valgrind writes it to a pipe
(``--log-fd``) whose other end the Rust core reads, converts and compresses.
Python only starts and stops the processes and reports how they ended.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Sequence

from . import _core
from ._files import staged
from .progress import Progress
from .errors import RecordError


#: Lackey's closing count of the instructions it ran.
_GUEST_INSTRS = re.compile(r"guest instrs:\s+([\d,]+)")


def _program(command: Sequence[str]) -> str:
    """The path of the program ``command`` runs, or a RecordError."""
    if not command:
        raise RecordError("no program to record: give it after --, e.g. `cachesched record -o ls.cst -- ls -l`")
    name = command[0]
    found = name if "/" in name else shutil.which(name)
    if found is None or not os.path.isfile(found):
        raise RecordError(f"program not found: {name}" + ("" if "/" in name else " (not on PATH)"))
    if not os.access(found, os.X_OK):
        raise RecordError(f"program is not executable: {found}")
    return found


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def record(command: Sequence[str], output: str | Path, *, skip: int = 0, limit: int | None = None,
           ifetch: bool = False, progress: Progress | None = None, stdout=None, cwd: str | Path | None = None,
           windows: Sequence[tuple[int, int, int]] | None = None, meta: dict | None = None,
           env: dict[str, str] | None = None) -> dict:
    """Run ``command`` under ``valgrind --tool=lackey --trace-mem=yes`` and
    write its memory accesses to the ``.cst`` file ``output``.

    The accesses of the first ``skip`` instructions are dropped (warm-up);
    recording stops after ``limit`` accesses, and valgrind with it. Or, with
    ``windows`` (instruction ranges ``(from, start, end)`` counted from the
    run's first instruction, ``[from, start)`` a warm-up), thread ``i`` of
    the trace holds window ``i``'s accesses and valgrind stops after the
    last window. With ``ifetch`` instruction fetches are kept as accesses.
    ``stdout`` is where the program's standard output goes (inherited if
    None); ``cwd`` the directory it runs in, ``env`` its environment (this
    process's if None); ``meta`` more entries for the trace header's
    ``meta``.

    Returns the trace's summary plus ``limit_reached``, ``warmup_accesses``
    (per window), ``instructions_read`` (lackey's instruction lines read)
    and ``lackey_instructions`` (lackey's own count, when the program ran to
    its end). Raises
    :class:`~cachesched.errors.RecordError` if valgrind or the program is
    missing, the program fails or is killed, or no access was recorded; the
    output file is then left as it was.
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RecordError("valgrind is not installed (or not on PATH); install it, e.g. `apt-get install valgrind`")
    _program(command)
    if skip < 0 or (limit is not None and limit < 1):
        raise RecordError("--skip must be at least 0 and --limit at least 1")
    if windows is not None and (skip or limit is not None or not windows
                                or any(not 0 <= a <= b < c for a, b, c in windows)):
        raise RecordError("windows are (from, start, end) instructions with from <= start < end, at least one, "
                          "and take neither a skip nor a limit")
    output = Path(output)
    meta = {"recorder": "cachesched record", "command": list(command), "skip_instructions": skip, "limit": limit,
            "ifetch": ifetch, "tool": "valgrind --tool=lackey --trace-mem=yes", **(meta or {})}
    source = f"valgrind lackey: {shlex.join(command)}"
    read_end, write_end = os.pipe()
    try:
        # A larger pipe lets lackey run ahead while the reader converts a batch.
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 1 << 20)
    except OSError:
        pass
    try:
        proc = subprocess.Popen(
            [valgrind, "--tool=lackey", "--trace-mem=yes", f"--log-fd={write_end}", *command],
            pass_fds=(write_end,), stdout=stdout, cwd=cwd, env=env,
        )
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    os.close(write_end)
    # The trace takes the output's name only once the program is known to
    # have run well: a failed recording leaves whatever was there.
    with staged(output) as temp:
        try:
            result = json.loads(_core.trace_record(f"/dev/fd/{read_end}", str(temp), source, json.dumps(meta), skip,
                                                   limit, ifetch, progress,
                                                   [tuple(w) for w in windows] if windows else None))
        except BaseException:
            _stop(proc)
            raise
        finally:
            os.close(read_end)
        if result["limit_reached"]:
            _stop(proc)
        else:
            code = proc.wait()
            if code != 0:
                said = [m.split("==", 2)[-1].strip() for m in result["messages"]]
                said = "\n  ".join(line for line in said if line)[-2000:]
                raise RecordError(f"{command[0]} {_status(code)} under valgrind; nothing was recorded"
                                  + (f"; valgrind said:\n  {said}" if said else ""))
        summary = result["summary"]
        if summary["accesses"] == 0:
            raise RecordError(f"empty trace: {command[0]} made no memory accesses after the first {skip:,} "
                              f"instructions (it ran {result['instructions_read']:,})")
    counted = [_GUEST_INSTRS.search(m) for m in result["messages"]]
    lackey = [int(m.group(1).replace(",", "")) for m in counted if m]
    return {**summary, "limit_reached": result["limit_reached"], "warmup_accesses": result["warmup_accesses"],
            "instructions_read": result["instructions_read"], "lackey_instructions": lackey[-1] if lackey else None}


def _stop(proc: subprocess.Popen) -> None:
    """End valgrind (and the program it runs) once its output is no longer wanted."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
