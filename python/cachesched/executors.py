"""Where a sweep's runs execute: local processes, or a Dask distributed cluster.

Both sit behind :class:`Executor`: give it a function and an iterator of jobs,
get back ``(job, outcome)`` pairs as runs finish, each job exactly once. The
executor pulls jobs only when it has room for them, so the driver can mark a
run ``running`` at the moment it is handed over.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

from .errors import ConfigError

Job = dict[str, Any]
Outcome = dict[str, Any]
Task = Callable[[Job], Outcome]

#: A run in flight when its worker process died this many times is recorded failed.
MAX_CRASHES = 3


def failure(error: str) -> Outcome:
    """The outcome of a run that did not finish."""
    return {"ok": False, "error": error}


class Executor(ABC):
    """Runs jobs and hands back every job's outcome exactly once."""

    #: How many runs execute at once.
    slots: int

    @abstractmethod
    def run(self, task: Task, jobs: Iterator[Job]) -> Iterator[tuple[Job, Outcome]]:
        """Run ``task(job)`` for each job; yield ``(job, outcome)`` in order of completion."""

    def close(self) -> None:
        """Release the workers."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _worker_init(driver: int) -> None:
    """Workers leave Ctrl-C to the driver, which stops them itself; and they
    exit when the driver is gone. Nothing else would stop them after a
    ``kill -9`` of the driver: a worker blocked on the pool's queue holds the
    queue's write end itself, so it never sees EOF, and it keeps the fork
    server (its parent) alive by holding the server's liveness pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            try:
                os.kill(driver, 0)
            except ProcessLookupError:
                os._exit(1)
            time.sleep(0.2)

    threading.Thread(target=watch, name="cachesched-driver-watch", daemon=True).start()


class LocalExecutor(Executor):
    """Processes on this machine (default: one per core).

    A worker killed in the middle of a run (``kill -9``, out of memory) breaks
    the pool: a new pool takes over and the runs that were in flight are
    submitted again, up to :data:`MAX_CRASHES` times each.
    """

    def __init__(self, workers: int | None = None):
        self.slots = (os.cpu_count() or 1) if workers is None else workers
        if self.slots < 1:
            raise ConfigError.single("workers", "out_of_range", f"workers: expected at least 1, got {workers}")
        # forkserver: workers fork from a clean process that has imported
        # cachesched once, so they start fast and never inherit the driver's
        # threads (progress bar, Dask) or open database.
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["cachesched.sweep"])
        self._pool: ProcessPoolExecutor | None = None

    def warm_up(self) -> None:
        """Start the fork server now (it lives as long as this process and
        serves every later pool), so that timing a sweep does not count it."""
        from multiprocessing import forkserver

        forkserver.ensure_running()

    def _new_pool(self) -> ProcessPoolExecutor:
        self._stop()
        self._pool = ProcessPoolExecutor(self.slots, mp_context=self._context, initializer=_worker_init,
                                         initargs=(os.getpid(),))
        return self._pool

    def run(self, task: Task, jobs: Iterator[Job]) -> Iterator[tuple[Job, Outcome]]:
        pool = self._new_pool()
        retry: deque[Job] = deque()
        crashes: Counter[str] = Counter()
        flying: dict[Future, Job] = {}
        source = iter(jobs)
        while True:
            while len(flying) < 2 * self.slots:
                job = retry.popleft() if retry else next(source, None)
                if job is None:
                    break
                flying[pool.submit(task, job)] = job
            if not flying:
                return
            done, _ = wait(flying, return_when=FIRST_COMPLETED)
            broken = False
            for future in done:
                job = flying.pop(future)
                try:
                    yield job, future.result()
                except BrokenProcessPool:
                    broken = True
                    crashes[job["key"]] += 1
                    if crashes[job["key"]] >= MAX_CRASHES:
                        yield job, failure(f"a worker process died {MAX_CRASHES} times while running it")
                    else:
                        retry.append(job)
            if broken:
                # Every run still in flight was lost with the pool: run it again.
                retry.extend(flying.values())
                flying.clear()
                pool = self._new_pool()

    def _stop(self) -> None:
        """Shut the pool down now: queued runs are dropped and running ones killed
        (on Ctrl-C they would otherwise finish before the driver can exit)."""
        if self._pool is None:
            return
        processes = list(getattr(self._pool, "_processes", {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            if p.is_alive():
                p.kill()
        self._pool = None

    def close(self) -> None:
        self._stop()


class DaskExecutor(Executor):
    """A Dask distributed cluster, given its scheduler address or a connected
    ``distributed.Client``. Dask reschedules a run whose worker died (up to its
    ``allowed-failures``); a run it gives up on is recorded failed."""

    def __init__(self, cluster: Any):
        from distributed import Client

        self._own = isinstance(cluster, str)
        self.client = Client(cluster) if self._own else cluster
        threads = self.client.nthreads()
        self.slots = max(1, sum(threads.values()))

    def run(self, task: Task, jobs: Iterator[Job]) -> Iterator[tuple[Job, Outcome]]:
        from distributed import as_completed

        flying: dict[Any, Job] = {}
        finished = as_completed()
        source = iter(jobs)

        def top_up() -> None:
            while len(flying) < 2 * self.slots:
                job = next(source, None)
                if job is None:
                    return
                future = self.client.submit(task, job, pure=False)
                flying[future] = job
                finished.add(future)

        top_up()
        for future in finished:
            job = flying.pop(future)
            try:
                outcome = future.result()
            except Exception as e:  # the cluster gave up on it (KilledWorker, lost connection)
                outcome = failure(f"{type(e).__name__}: {e}")
            yield job, outcome
            top_up()

    def close(self) -> None:
        if self._own:
            self.client.close()


def make_executor(workers: int | None = None, dask: Any = None) -> Executor:
    """Dask when given an address or a client, else local processes."""
    return DaskExecutor(dask) if dask is not None else LocalExecutor(workers)
