"""Exceptions raised by cachesched.

Every error a user can cause is a :class:`CacheschedError`. The subclasses
also derive from the matching builtin, so ``except ValueError`` catches a bad
configuration and ``except OSError`` a bad trace file.
"""

from __future__ import annotations


class CacheschedError(Exception):
    """Base class of every cachesched error."""


class ConfigError(CacheschedError, ValueError):
    """A configuration is malformed or describes an impossible setup.

    :meth:`errors` lists every problem found, each a dict with ``loc`` (the
    key path, e.g. ``machine.l2.ways``), ``code`` (a stable identifier such as
    ``unknown_field``) and ``msg``.
    """

    def __init__(self, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self._errors = list(errors or [])

    @classmethod
    def single(cls, loc: str, code: str, msg: str, message: str | None = None) -> "ConfigError":
        """An error with one problem; ``message`` defaults to ``loc: msg``
        (``msg`` alone for the root)."""
        return cls(message or (f"{loc}: {msg}" if loc else msg), [{"loc": loc, "code": code, "msg": msg}])

    def errors(self) -> list[dict]:
        """Every problem found: dicts with ``loc``, ``code`` and ``msg``."""
        return [dict(e) for e in self._errors]


class TraceError(CacheschedError, OSError):
    """A trace could not be opened, read or decoded.

    ``path`` names the file; ``offset`` (bytes), ``block`` and ``line`` say
    where, when known.
    """

    def __init__(
        self,
        message: str,
        path: str | None = None,
        offset: int | None = None,
        block: int | None = None,
        line: int | None = None,
    ):
        super().__init__(message)
        self.path = path
        self.offset = offset
        self.block = block
        self.line = line

    def __str__(self) -> str:
        return self.args[0]


class RecordError(CacheschedError, RuntimeError):
    """Recording a program failed: valgrind or the program is missing, the
    program failed or was killed, or it made no memory accesses."""


class ResultsError(CacheschedError):
    """Saved results are missing or damaged: a results store's ledger, or a
    run's ``results.json``. The message names the file and how to recover."""


class SimulationError(CacheschedError):
    """The simulation could not continue."""


class InternalError(SimulationError):
    """A bug in cachesched (the Rust core panicked). Please report it."""
