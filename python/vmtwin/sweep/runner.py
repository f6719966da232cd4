"""Running a sweep's runs: in this process, on a local process pool, or on a Ray cluster.

Every run is independent (its own scenario and seed), so the backends differ only in where runs
execute; results are put back in the sweep's fixed order, so the dataset is the same whatever
the backend and the number of workers. The pool's workers are forked from a ``forkserver`` that has
imported vmtwin once (nothing is inherited from the parent's threads, and a worker starts in
milliseconds rather than re-importing numpy, pyarrow and the engine); each runs many tasks. On Ctrl-C, pending runs are cancelled and the workers stopped before the interrupt
goes on (nothing has been written at that point: the dataset is written after the last run).
"""

from __future__ import annotations

import functools
import hashlib
import multiprocessing
import os
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Callable, Optional, Sequence

import pyarrow as pa

from vmtwin.exceptions import VmtwinError
from vmtwin.sweep.spec import Task

__all__ = ["run_task", "run_tasks", "BACKENDS"]

BACKENDS = ("local", "ray")

#: Imported once by the fork server, so each worker starts as a fork of a process that has them
#: (pyarrow imports pandas lazily on the first run: 0.7 s a worker otherwise).
_PRELOAD = ("pandas", "vmtwin.simulation", "vmtwin.sweep.metrics", "vmtwin.sweep.runner")

#: How long to wait for a terminated worker to exit.
STOP_TIMEOUT_S = 10.0

Progress = Optional[Callable[[int, int], None]]


@functools.lru_cache(maxsize=1)
def build_id() -> str:
    """This process's vmtwin: version and a hash of the native engine file it loaded."""
    from vmtwin import __version__, _core

    digest = hashlib.blake2b(Path(_core.__file__).read_bytes(), digest_size=8).hexdigest()
    return f"{__version__}+{digest}"


def run_task(task: Task) -> dict:
    """Run one point of the grid with its seed; the run reduced to per-entity means, and the
    build that ran it (``"build"``)."""
    from vmtwin.scenario import parse_scenario
    from vmtwin.simulation import Simulation
    from vmtwin.sweep.metrics import reduce_run

    sc = parse_scenario(task.scenario, base_dir=task.base_dir, name=f"grid point {task.point}")
    sim = Simulation(sc, seed=task.seed, duration=task.duration)
    sim.run()
    return {**reduce_run(sim.tables()), "build": build_id()}


def _same_build(results: list) -> list:
    """Refuse results from another vmtwin build (a Ray node with another version, an engine
    rebuilt while the sweep ran): the dataset would not be reproducible."""
    mine = build_id()
    other = sorted({r["build"] for r in results} - {mine})
    if other:
        raise VmtwinError(f"runs were made by another vmtwin build ({', '.join(other)}) than this one ({mine}): "
                          "install the same vmtwin everywhere (and do not rebuild it while a sweep runs)")
    return results


def run_tasks(tasks: Sequence[Task], *, backend: str = "local", workers: Optional[int] = None,
              address: Optional[str] = None, progress: Progress = None) -> list[dict[str, pa.Table]]:
    """Run every task; results in the tasks' order.

    Parameters
    ----------
    backend : "local" or "ray"
        ``local``: ``workers`` processes (1: in this process, no pool). ``ray``: the cluster at
        ``address`` (``HOST:PORT`` of its head, as ``ray start --head`` prints it).
    progress : callable, optional
        ``progress(done, total)`` after each run.
    """
    if backend not in BACKENDS:
        raise VmtwinError(f"--backend: got {backend!r}; allowed: {', '.join(BACKENDS)}")
    build_id()  # before any run: the engine this process loaded
    if backend == "ray":
        return _same_build(_run_ray(tasks, address, progress))
    workers = workers or os.cpu_count() or 1
    if workers < 1:
        raise VmtwinError(f"--workers: got {workers}; allowed: an integer of at least 1")
    if workers == 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(run_task(task))
            if progress:
                progress(len(results), len(tasks))
        return results
    return _same_build(_run_pool(tasks, workers, progress))


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C (sent to the whole terminal process group) to the parent, which
    stops them: no traceback from each worker."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_fork_server() -> None:
    """Start the fork server ignoring SIGINT: a terminal's Ctrl-C goes to the whole process group,
    and the server would die with a traceback if it came while it imports its modules (it ignores
    SIGINT itself only once they are in). An ignored signal stays ignored across exec, so the
    server starts that way; this process ignores it only for the few milliseconds of the exec."""
    from multiprocessing import forkserver

    if threading.current_thread() is not threading.main_thread():
        forkserver.ensure_running()
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        forkserver.ensure_running()
    finally:
        signal.signal(signal.SIGINT, old)


def _ready() -> bool:
    return True


def _stop(pool: ProcessPoolExecutor) -> None:
    """Stop the workers first (SIGTERM ends one at once), then the pool: the other order would
    free the pool's queues under a worker still reading them (a traceback on stderr).

    Then wait for the pool's manager thread to finish closing its pipes. ``shutdown(wait=False)``
    does not, and forgets the thread, so a later ``shutdown(wait=True)`` does not either; the
    interpreter's exit hook for process pools then writes to a pipe that thread may be closing at
    that instant (CPython 3.11 takes no lock there): ``OSError: [Errno 9]`` and a traceback after
    ``interrupted``, seen once on CI."""
    workers_now = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)
    for p in workers_now:
        p.terminate()
    for p in workers_now:
        p.join(STOP_TIMEOUT_S)
        if p.is_alive():  # pragma: no cover - SIGTERM is not handled by a worker
            p.kill()
            p.join(STOP_TIMEOUT_S)
    pool.shutdown(wait=False, cancel_futures=True)
    if manager is not None:
        manager.join(STOP_TIMEOUT_S)  # bounded: its queue's feeder could block on a full pipe


def _start_pool(ctx, n: int) -> ProcessPoolExecutor:
    """A pool whose ``n`` workers are all running. Ctrl-C meanwhile is held back until they are
    (a worker interrupted while the fork server makes it prints a traceback), then raised."""
    held: list[int] = []
    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum)) if main else None
    try:
        pool = ProcessPoolExecutor(max_workers=n, mp_context=ctx, initializer=_ignore_sigint)
        try:
            for f in [pool.submit(_ready) for _ in range(n)]:
                f.result()
        except BaseException:
            _stop(pool)
            raise
    finally:
        if main:
            signal.signal(signal.SIGINT, old)
    if held:
        _stop(pool)
        raise KeyboardInterrupt
    return pool


def _run_pool(tasks: Sequence[Task], workers: int, progress: Progress) -> list[dict[str, pa.Table]]:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(_PRELOAD))
    _start_fork_server()
    pool = _start_pool(ctx, min(workers, len(tasks)))
    try:
        futures = [pool.submit(run_task, t) for t in tasks]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for f in done:
                if f.exception() is not None:
                    raise f.exception()
            if progress:
                progress(len(futures) - len(pending), len(futures))
        return [f.result() for f in futures]
    except BaseException:
        _stop(pool)
        raise
    finally:
        pool.shutdown(wait=True)


#: How long to wait for the Ray head's port to answer before saying nothing is there (Ray itself
#: retries for minutes).
CONNECT_TIMEOUT_S = 5.0


def _check_reachable(address: str) -> None:
    """Refuse a malformed HOST:PORT, or one where nothing listens, at once and clearly."""
    import socket

    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise VmtwinError(f"--address: got {address!r}; allowed: HOST:PORT of a Ray head, e.g. 10.0.0.5:6379")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise VmtwinError(f"--address {address}: no Ray head answers there ({exc.strerror or exc}); start one "
                          f"with `ray start --head --port {port}`") from None


def _run_ray(tasks: Sequence[Task], address: Optional[str], progress: Progress) -> list[dict[str, pa.Table]]:
    try:
        import ray
    except ImportError:
        raise VmtwinError("--backend ray needs Ray: pip install 'vmtwin[ray]' (or pip install 'ray[default]')") \
            from None
    if not address:
        raise VmtwinError("--backend ray needs --address HOST:PORT (the head node's address, "
                          "as printed by `ray start --head`)")
    started_here = not ray.is_initialized()
    if started_here:
        _check_reachable(address)
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise VmtwinError(f"--address {address}: cannot connect to a Ray cluster there: {exc}") from None
    try:
        remote = ray.remote(run_task)
        refs = [remote.remote(t) for t in tasks]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list = [None] * len(refs)
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[index[ref]] = ray.get(ref)
            if progress:
                progress(len(refs) - len(pending), len(refs))
        return results
    except BaseException:
        for ref in refs if "refs" in locals() else []:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
