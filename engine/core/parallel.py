"""One ``parallel=`` interface for independent fits: serially, over processes, or on Dask.

Cross-validation folds and bootstrap replicates are independent fits of one cohort that differ
only in case weights.  A *task* is a picklable callable ``task(item) -> result``: it carries the
cohort, sorts it into a model once per worker thread (``WorkerCache``) and derives every fold's
or replicate's randomness from ``(seed, index)`` inside ``item``, never from worker state, so a
seed gives the same numbers serially, over a process pool and on a Dask cluster.

``parallel`` is None or "serial"; "threads" (a ``concurrent.futures.ThreadPoolExecutor`` of
``n_jobs`` threads, the usable cores by default: the kernels release the GIL, the workers share
the process's memory, and each runs Numba and BLAS on one thread, since the pool is the
parallelism); "processes" (a ``concurrent.futures.ProcessPoolExecutor`` of
``n_jobs`` workers, spawned so it is safe beside the app's threads); "dask" (a
``distributed.LocalCluster`` of ``n_jobs`` worker processes, 2 by default); a scheduler address
such as "tcp://10.0.0.5:8786" to join a running cluster; or a ``distributed.Client``.  A GPU
backend would batch the same items (the folds share X) in one kernel or run them on streams
behind this interface: a runner only needs ``task(item)``.

Progress callbacks get ``(done, total)``; a threading.Event-like ``cancel`` is polled between
fits and stops the run with ``engine.Cancelled``.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import threading

from threadpoolctl import threadpool_limits

from .errors import Cancelled

MODES = ("serial", "threads", "processes", "dask")
_POLL_S = 0.1


class WorkerCache:
    """Per-thread state of a task (its sorted model), rebuilt after pickling, never shipped."""

    def __init__(self):
        self._local = threading.local()

    def get(self, key, build):
        store = self._local.__dict__
        if key not in store:
            store[key] = build()
        return store[key]

    def __getstate__(self):
        return {}

    def __setstate__(self, state):
        self._local = threading.local()


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def core_idle() -> bool:
    """A second thread would find a core free now: the 1-minute load average is below the usable
    cores less a half, and fewer tasks than cores are running at this instant (the average lags
    by a minute: two busy processes started 20 s earlier left it at 1.2 on two cores, and the
    parallel kernels then doubled a 10^5-row fit's time).  False where the platform has no load
    average.  On a busy machine a parallel region waits for its slowest thread, which waits for
    a core: measured slower than one thread (docs/cost_model.md; engine.numba_layer,
    engine.bayes.sample)."""
    if not hasattr(os, "getloadavg"):
        return False
    cores = usable_cores()
    return os.getloadavg()[0] < cores - 0.5 and _running() < cores


def _running() -> int:
    """Tasks running or ready to run now, this one included (Linux's /proc/loadavg); 0 where
    the platform does not say."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        return 0


def check(parallel, n_jobs=None) -> None:
    """Raise a ValueError naming the choices when ``parallel`` or ``n_jobs`` is not usable."""
    if n_jobs is not None and not (isinstance(n_jobs, int) and n_jobs >= 1):
        raise ValueError(f"n_jobs must be a positive integer or None, got {n_jobs!r}")
    if parallel is None or _is_client(parallel) or _is_address(parallel) or parallel in MODES:
        return
    raise ValueError(f"unknown parallel={parallel!r}; use None/'serial', 'threads', 'processes', "
                     "'dask', a Dask scheduler address ('tcp://host:8786') or a "
                     "distributed.Client.")


class Runner:
    """``with Runner(task, parallel, n_jobs) as r: r.map(items)``: the pool or cluster starts
    once and serves every ``map`` (an automatic penalty search maps many times)."""

    def __init__(self, task, parallel=None, n_jobs=None):
        check(parallel, n_jobs)
        self.task, self.parallel, self.n_jobs = task, parallel, n_jobs
        self._pool = self._client = self._cluster = self._shared = self._blas = None
        self._own_client = False

    def __enter__(self):
        p = self.parallel
        if p == "threads":
            self._blas = threadpool_limits(1)
            self._pool = cf.ThreadPoolExecutor(max_workers=self.n_jobs or usable_cores(),
                                               initializer=_one_numba_thread)
        elif p == "processes":
            self._pool = cf.ProcessPoolExecutor(
                max_workers=self.n_jobs or os.cpu_count() or 1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_install, initargs=(self.task,))
        elif p is not None and p != "serial":
            import distributed

            if _is_client(p):
                self._client = p
            else:
                if p == "dask":
                    self._cluster = distributed.LocalCluster(
                        n_workers=self.n_jobs or 2, threads_per_worker=1, processes=True,
                        dashboard_address=":0")
                self._client = distributed.Client(self._cluster or p)
                self._own_client = True
            self._shared = self._client.scatter(self.task, broadcast=True, hash=False)
        return self

    def __exit__(self, *exc):
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._blas is not None:
            self._blas.restore_original_limits()
        if self._own_client:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def map(self, items, progress=None, cancel=None) -> list:
        """``[task(item) for item in items]`` in order, wherever the runner computes."""
        items = list(items)
        if self._pool is not None:
            call = self.task if self.parallel == "threads" else _call_installed
            futures = {self._pool.submit(call, it): i for i, it in enumerate(items)}
            return _gather(futures, progress, cancel, _wait_local, _cancel_local)
        if self._client is not None:
            client = self._client
            futures = {client.submit(_call, self._shared, it, pure=False): i
                       for i, it in enumerate(items)}
            return _gather(futures, progress, cancel, _wait_dask,
                           lambda fs: client.cancel(list(fs)))
        out = []
        for item in items:
            _poll(cancel, len(out), len(items))
            out.append(self.task(item))
            if progress is not None:
                progress(len(out), len(items))
        return out


def run(task, items, parallel=None, n_jobs=None, progress=None, cancel=None) -> list:
    """One-off ``Runner(task, parallel, n_jobs).map(items)``."""
    with Runner(task, parallel, n_jobs) as runner:
        return runner.map(items, progress, cancel)


_TASK = None


def _one_numba_thread():
    """A pool thread runs Numba's parallel kernels on one thread (thread-local in Numba): two
    pool threads each opening a parallel region would put four threads on two cores."""
    import numba

    numba.set_num_threads(1)


def _install(task):
    global _TASK
    _TASK = task


def _call_installed(item):
    return _TASK(item)


def _call(task, item):
    return task(item)


def _wait_local(pending):
    return cf.wait(pending, _POLL_S, cf.FIRST_COMPLETED)[0]


def _cancel_local(pending):
    for f in pending:
        f.cancel()


def _wait_dask(pending):
    import distributed

    try:
        return distributed.wait(list(pending), timeout=_POLL_S, return_when="FIRST_COMPLETED").done
    except TimeoutError:
        return set()


def _gather(futures, progress, cancel, wait, cancel_all):
    """Collect results by index as futures finish; report progress; honour ``cancel``."""
    total = len(futures)
    results = [None] * total
    pending = set(futures)
    done = 0
    while pending:
        if cancel is not None and cancel.is_set():
            cancel_all(pending)
        _poll(cancel, done, total)
        for f in wait(pending):
            pending.discard(f)
            results[futures[f]] = f.result()
            done += 1
            if progress is not None:
                progress(done, total)
    return results


def _poll(cancel, done, total):
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"cancelled after {done} of {total} fits")


def _is_address(parallel) -> bool:
    return isinstance(parallel, str) and "://" in parallel


def _is_client(parallel) -> bool:
    return type(parallel).__name__ == "Client" and hasattr(parallel, "scatter")
