"""Run one function over batches of work items: serially, on local processes or on Dask.

:func:`run_batches` applies a top-level (picklable) function ``fn`` to each batch of a list
of batches and yields ``(batch_index, results)`` as batches finish, in completion order.
``fn(batch)`` (or ``fn(shared, batch)``, with an object every batch needs sent to each worker
once) returns (or yields) one result per item; the caller's ``on_items(index, n)`` hears of
finished items as they finish (``n`` more items of batch ``index``; a progress bar advances
per item, not per batch). Where a run goes and how it reports is one value,
:class:`ExecutorOptions`.

Executors (:func:`resolve_executor`): ``serial`` (in the caller; ``fn`` need not be
picklable); ``processes``, a local pool whose workers a fork server (Linux; spawn elsewhere)
starts with ``fn``'s module and the solver imported; ``dask``, a loopback
``distributed.LocalCluster`` of worker processes started here, the cluster at a scheduler
address (``scheduler=`` or ``DASK_SCHEDULER_ADDRESS``), or a ``distributed.Client``.

Workers started here never outlive the caller (:mod:`libra_opt.explore.worker_process`):
they ignore SIGINT, set Linux's parent-death signal, watch the caller's process id and have
``/dev/null`` for stdin, stdout and stderr. When the consumer stops iterating (an exception,
Ctrl-C, ``close()``), unfinished batches are cancelled and local workers killed before the
generator returns. Several runs in a row share one pool or cluster through
:func:`executor_session`. Batches (:func:`batch_size`, :func:`make_batches`) amortise
shipping work over many items while leaving several per worker for load balance.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import multiprocessing
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from libra_opt.errors import InputError, short_repr
from libra_opt.explore.dask_scratch import dask_scratch
from libra_opt.explore.worker_process import (
    TICK_INTERVAL_S,
    call_in_dask,
    call_in_pool,
    consume,
    detach_dask_worker,
    init_pool_worker,
)

__all__ = [
    "ExecutorOptions",
    "EXECUTORS",
    "SCHEDULER_ENV",
    "resolve_executor",
    "executor_label",
    "batch_size",
    "make_batches",
    "run_batches",
    "default_workers",
    "check_scheduler",
    "executor_session",
    "LocalPool",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Executor names (besides a scheduler address or a ``distributed.Client``).
EXECUTORS = ("serial", "processes", "dask")
#: Environment variable naming an existing Dask scheduler (``tcp://host:port``).
SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
#: Most items in one batch by default (a batch is also the unit streamed to disk).
MAX_BATCH_ITEMS = 1000
#: Batches per worker by default (load balance against shipping cost).
BATCHES_PER_WORKER = 4


def default_workers() -> int:
    """Local workers when none are asked for: the usable CPU cores (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True)
class ExecutorOptions:
    """Where a run's batches are solved and how it reports, as one value passed down:
    ``executor`` as :func:`resolve_executor` takes it (kept resolved, with ``scheduler``),
    ``max_workers`` (default :func:`default_workers`), ``progress`` (a bar or a callback),
    ``batch_size`` (default :func:`batch_size`), ``stop`` (polled, :func:`run_batches`) and
    ``out`` (a sweep's :class:`~libra_opt.explore.sink.ResultsSink`).

    Raises
    ------
    InputError
        Naming the field: an unknown executor, a bad address, a count that is not an
        integer >= 1, an ``out`` that is no results sink.

    Examples
    --------
    >>> ExecutorOptions("processes", max_workers=2).workers
    2
    >>> ExecutorOptions(batch_size=0)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: batch_size: batch_size 0 must be an integer >= 1
    """

    executor: Any = "serial"
    max_workers: int | None = None
    scheduler: str | None = None
    progress: Any = None
    batch_size: int | None = None
    stop: Callable[[], bool] | None = None
    out: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "executor", resolve_executor(self.executor, self.scheduler))
        for name in ("max_workers", "batch_size"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise InputError(f"{name} {short_repr(v)} must be an integer >= 1", field=name)
        from libra_opt.explore.sink import ResultsSink

        if self.out is not None and not isinstance(self.out, ResultsSink):
            raise InputError(f"expected a results sink, got {short_repr(self.out)} "
                             "(libra_opt.sweep and libra_opt.io.results.results_stream open "
                             "a folder)", field="out")

    @property
    def workers(self) -> int:
        """Workers of a local pool or cluster: ``max_workers`` or :func:`default_workers`."""
        return self.max_workers or default_workers()


def resolve_executor(executor: Any = "serial", scheduler: str | None = None,
                     environ: Mapping[str, str] | None = None) -> Any:
    """The executor to run on: ``serial``, ``processes``, ``dask``, a scheduler address
    (``scheduler``, ``executor`` given as one, or ``DASK_SCHEDULER_ADDRESS`` with ``dask``)
    or a ``distributed.Client``.

    Raises
    ------
    InputError
        ``field='executor'`` for an unknown executor; ``field='scheduler'`` for an address
        that is not ``protocol://host:port`` or given with ``serial``/``processes``.

    Examples
    --------
    >>> resolve_executor("processes")
    'processes'
    >>> resolve_executor("dask", environ={"DASK_SCHEDULER_ADDRESS": "tcp://10.0.0.5:8786"})
    'tcp://10.0.0.5:8786'
    >>> resolve_executor("dask", scheduler="tcp://127.0.0.1:8786", environ={})
    'tcp://127.0.0.1:8786'
    >>> resolve_executor("threads")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: executor: executor 'threads' is not one of serial, processes, dask, a scheduler address (tcp://host:port) or a dask.distributed.Client
    """
    env = os.environ if environ is None else environ
    if isinstance(executor, LocalPool):
        return executor
    if isinstance(executor, str) and "://" in executor:
        scheduler, executor = executor, "dask"
    if not isinstance(executor, str):
        if callable(getattr(executor, "map", None)) and hasattr(executor, "gather"):
            if scheduler is not None:
                raise InputError("give a scheduler address or a Client, not both",
                                 field="scheduler")
            return executor
        raise InputError(_bad_executor(executor), field="executor")
    if executor not in EXECUTORS:
        raise InputError(_bad_executor(executor), field="executor")
    if scheduler is not None:
        if executor != "dask" and executor != "serial":
            raise InputError(f"a scheduler address runs on Dask; got --executor {executor}",
                             field="scheduler")
        return _check_address(scheduler)
    if executor == "dask" and env.get(SCHEDULER_ENV, "").strip():
        return _check_address(env[SCHEDULER_ENV].strip(), SCHEDULER_ENV)
    return executor


def _bad_executor(executor: Any) -> str:
    return (f"executor {short_repr(executor)} is not one of {', '.join(EXECUTORS)}, a "
            "scheduler address (tcp://host:port) or a dask.distributed.Client")


def _check_address(address: str, field: str = "scheduler") -> str:
    proto, sep, rest = str(address).partition("://")
    host, colon, port = rest.rpartition(":")
    if not sep or not proto.isalnum() or not colon or not host or not port.isdigit() \
            or not 0 < int(port) < 65536:
        raise InputError(f"expected a scheduler address protocol://host:port (e.g. "
                         f"tcp://127.0.0.1:8786), got {short_repr(address)}", field=field)
    return str(address)


def check_scheduler(address: str, timeout_s: float = 5.0, field: str = "scheduler") -> None:
    """Check that something listens at a ``tcp://`` scheduler address (a bad address fails
    here at once, not after the client's timeout); other protocols are left to the client.

    Raises
    ------
    InputError
        ``field``: nothing answers at the address.
    """
    import socket

    proto, _, rest = address.partition("://")
    if proto != "tcp":
        return
    host, _, port = rest.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise InputError(f"cannot reach the Dask scheduler at {address}: "
                         f"{exc.strerror or exc}", field=field) from None


def executor_label(executor: Any) -> str:
    """A short name for logs and manifests: the executor's name, or ``dask <address>``.

    Examples
    --------
    >>> executor_label("serial"), executor_label("tcp://127.0.0.1:8786")
    ('serial', 'dask tcp://127.0.0.1:8786')
    """
    if isinstance(executor, str):
        return f"dask {executor}" if "://" in executor else executor
    return "dask client"


def batch_size(n_items: int, n_workers: int, *, max_items: int = MAX_BATCH_ITEMS,
               per_worker: int = BATCHES_PER_WORKER) -> int:
    """Items per batch: ``ceil(n_items / (per_worker * n_workers))``, between 1 and
    ``max_items``.

    Examples
    --------
    >>> batch_size(20_000, 2), batch_size(10, 2), batch_size(0, 4)
    (1000, 2, 1)
    """
    if n_items <= 0:
        return 1
    return max(1, min(max_items, math.ceil(n_items / (per_worker * max(1, n_workers)))))


def make_batches(items: Sequence[T], size: int, weight: Callable[[T], int] | None = None,
                 workers: int | None = None) -> list[tuple[T, ...]]:
    """Consecutive ``items`` packed into batches of total ``weight`` at most ``size`` (an
    item heavier than ``size`` is a batch alone). ``weight`` defaults to 1 per item. With
    ``workers``, a batch holds at most the weight left over twice the workers (and at least
    a sixteenth of ``size``): batches shrink toward the end, so that the workers finish
    together.

    Examples
    --------
    >>> make_batches([1, 2, 3, 4, 5], 2)
    [(1, 2), (3, 4), (5,)]
    >>> make_batches(["aaa", "b", "cc", "d"], 3, weight=len)
    [('aaa',), ('b', 'cc'), ('d',)]
    >>> [len(b) for b in make_batches(range(20), 8, workers=2)]
    [5, 4, 3, 2, 2, 1, 1, 1, 1]
    """
    if size < 1:
        raise InputError(f"batch size must be >= 1, got {size}", field="batch_size")
    weights = [1 if weight is None else weight(item) for item in items]
    left = sum(weights)
    out: list[tuple[T, ...]] = []
    cur: list[T] = []
    load, limit = 0, size
    for item, w in zip(items, weights, strict=True):
        if cur and load + w > limit:
            out.append(tuple(cur))
            cur, load = [], 0
        if not cur and workers is not None:
            limit = max(math.ceil(size / 16), min(size, math.ceil(left / (2 * workers))))
        cur.append(item)
        load += w
        left -= w
    if cur:
        out.append(tuple(cur))
    return out


# --------------------------------------------------------------------------- the caller


def _start_context(fn: Callable) -> Any:
    """The fork-server context (preloading ``fn``'s module), or spawn where there is none."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        module = getattr(fn, "__module__", None) or getattr(
            getattr(fn, "func", None), "__module__", None)
        preload = ("__main__", __name__, module, "clarabel")  # clarabel: every sweep point's
        ctx.set_forkserver_preload([m for m in preload if m])
        # Start the server now, with SIGINT ignored (the server inherits that; a Ctrl-C
        # in that moment is lost): Ctrl-C while it imports would print its traceback; it
        # ignores SIGINT once it serves. It boots while the caller works.
        try:
            old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        except ValueError:  # not the main thread: leave the handlers alone
            return ctx
        try:
            from multiprocessing import forkserver

            forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, old)
        return ctx
    return multiprocessing.get_context("spawn")


def run_batches(
    fn: Callable[..., Iterable[Any]],
    batches: Sequence[Any],
    options: ExecutorOptions | None = None,
    *,
    on_items: Callable[[int, int], None] | None = None,
    shared: Any = None,
) -> Iterator[tuple[int, list[Any]]]:
    """Apply ``fn`` to every batch; yield ``(index, results)`` as batches finish.

    Parameters
    ----------
    fn : callable
        ``fn(batch)`` (``fn(shared, batch)`` with ``shared``) returns or yields one result
        per item of ``batch``; picklable (module-level) for the process and Dask executors.
    batches : sequence
        The batches, each a sized sequence of items.
    options : ExecutorOptions, optional
        Its ``executor``, ``max_workers`` and ``stop`` (default: serial). ``stop`` is polled
        in the caller's thread after every item (serial) or at least every 0.1 s; true
        stops the run as Ctrl-C does (``KeyboardInterrupt``).
    on_items : callable, optional
        ``on_items(index, n)``: ``n`` more items of batch ``index`` finished (called in the
        caller's thread, before the batch is yielded).
    shared : object, optional
        What every batch needs (a sweep's base scenario), sent to each worker once (with
        every batch on a pool of :func:`executor_session`) and kept for the whole run.

    Yields
    ------
    tuple of (int, list)
        A batch's index in ``batches`` and ``fn``'s results for it, in item order.

    Notes
    -----
    Use it as ``with contextlib.closing(run_batches(...)) as it: for i, res in it: ...``
    so that an exception in the loop body stops the workers at once.

    Examples
    --------
    >>> sorted(run_batches(lambda b: [x * x for x in b], [(1, 2), (3,)]))
    [(0, [1, 4]), (1, [9])]
    >>> sorted(run_batches(lambda k, b: [k * x for x in b], [(1, 2)], shared=10))
    [(0, [10, 20])]
    """
    options = ExecutorOptions() if options is None else options
    stop, executor = options.stop, options.executor
    user_tick = on_items or (lambda i, n: None)
    if stop is None:
        tick = user_tick
    else:
        def tick(i: int, n: int) -> None:
            _check(stop)
            user_tick(i, n)
    if not batches:  # nothing to do: start no worker
        return
    if executor == "serial":
        call = fn if shared is None else functools.partial(fn, shared)
        for i, batch in enumerate(batches):
            yield i, consume(call, batch, functools.partial(tick, i), every_item=True)
        return
    if isinstance(executor, LocalPool):  # started without ``shared``: it goes with the batches
        yield from _run_processes(fn if shared is None else functools.partial(fn, shared),
                                  batches, tick, stop, executor)
        return
    if executor == "processes":
        pool = LocalPool(fn, min(options.workers, max(1, len(batches))), shared)
        yield from _run_processes(fn, batches, tick, stop, pool,
                                  fn if shared is None else functools.partial(fn, shared))
        return
    yield from _run_dask(fn, batches, executor, options.workers, tick, stop, shared)


def _check(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise KeyboardInterrupt


class LocalPool:
    """A started ``processes`` pool of ``workers`` processes that import ``fn``'s module
    at start; ``shared`` is sent to each at its start and every task called with it
    (:func:`run_batches`). Several runs share it through :func:`executor_session`."""

    def __init__(self, fn: Callable, workers: int, shared: Any = None) -> None:
        ctx = _start_context(fn)
        self.workers = workers
        self.shared = shared is not None
        self.ticks = ctx.SimpleQueue()
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=ctx,
                                        initializer=init_pool_worker,
                                        initargs=(os.getpid(), self.ticks, shared))

    def drain(self) -> None:
        """Drop progress messages left by an earlier run (all were written before its
        results came back)."""
        while not self.ticks.empty():
            self.ticks.get()

    def kill(self) -> None:
        """Kill the workers (the pool's manager thread then fails every pending future)."""
        for proc in list((getattr(self.pool, "_processes", None) or {}).values()):
            with contextlib.suppress(OSError, AttributeError):
                proc.kill()

    def close(self) -> None:
        """Stop the workers and release the queue."""
        self.pool.shutdown(wait=True)
        with contextlib.suppress(OSError):
            self.ticks.close()


@contextlib.contextmanager
def executor_session(executor: Any, fn: Callable, max_workers: int | None = None
                     ) -> Iterator[Any]:
    """An executor for several :func:`run_batches` calls in a row, started once and closed
    when the block ends: a :class:`LocalPool` for ``processes`` (preloading ``fn``'s
    module), a ``distributed.Client`` for Dask; ``serial`` and a given ``Client`` pass
    through. ``executor`` is what :func:`resolve_executor` returns; ``max_workers`` as in
    :class:`ExecutorOptions`.

    Examples
    --------
    >>> def absolute(batch):
    ...     return [abs(x) for x in batch]
    >>> with executor_session("serial", absolute) as ex:
    ...     sorted(run_batches(absolute, [(-1, 2)], ExecutorOptions(ex))) + sorted(
    ...         run_batches(absolute, [(-3,)], ExecutorOptions(ex)))
    [(0, [1, 2]), (0, [3])]
    """
    workers = max_workers or default_workers()
    if executor == "serial" or not isinstance(executor, str):
        yield executor
        return
    if executor == "processes":
        pool = LocalPool(fn, workers)
        finished = False
        try:
            yield pool
            finished = True
        finally:
            if not finished:
                pool.kill()
            pool.close()
        return
    with _dask_connection(executor, workers) as client:
        yield client


def _run_processes(fn: Callable, batches: Sequence[Any], tick: Callable[[int, int], None],
                   stop: Callable[[], bool] | None, local: LocalPool,
                   own: Callable | None = None) -> Iterator[tuple[int, list[Any]]]:
    """Run on ``local``. ``own``: the pool was started for this run (closed at its end);
    while its workers start, the caller runs batches itself with ``own`` (the task with what
    the workers were sent): a helper thread hands the batches to the pool in order, the
    caller takes from the end those not handed over yet, until a worker reports progress."""
    if own is None:
        local.drain()
    pool, ticks = local.pool, local.ticks
    lock = threading.Lock()
    todo = deque(range(len(batches)))  # neither handed to the pool nor taken by the caller
    pending: dict[Future, int] = {}
    failed: list[BaseException] = []

    def hand_over() -> None:  # the first submission waits for the fork server to start
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    i = todo.popleft()
                fut = pool.submit(call_in_pool, fn, batches[i], i, local.shared)
                with lock:
                    pending[fut] = i
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            failed.append(exc)

    finished = False
    submitter = threading.Thread(target=hand_over, daemon=True, name="libra-opt-submit")
    try:
        submitter.start()
        seen = [0] * len(batches)
        done_batches: set[int] = set()

        def drain() -> None:
            while not ticks.empty():
                i, n = ticks.get()
                if i not in done_batches:
                    seen[i] += n
                    tick(i, n)

        steal = own
        while steal is not None and ticks.empty():
            with lock:
                if not todo or any(f.done() for f in pending):
                    break
                i = todo.pop()
            done_batches.add(i)
            yield i, consume(steal, batches[i], functools.partial(tick, i), every_item=True)
        submitter.join()
        if failed:
            raise failed[0]
        while pending:
            done, _ = wait(pending, timeout=TICK_INTERVAL_S, return_when=FIRST_COMPLETED)
            _check(stop)
            drain()
            for fut in done:
                i = pending.pop(fut)
                res = fut.result()
                done_batches.add(i)
                if len(res) > seen[i]:
                    tick(i, len(res) - seen[i])
                yield i, res
        finished = True
    finally:
        if not finished:
            # Stop the hand-over first: a batch submitted after the kill would start a
            # worker of its own that the broken pool then waits for forever. Then kill the
            # workers: the pool's manager thread fails every pending future (cancelling
            # them first would make it trip over the cancelled ones).
            with lock:
                todo.clear()
            if submitter.is_alive():
                submitter.join()
            local.kill()
        if own is not None or not finished:
            local.close()


def _run_dask(fn: Callable, batches: Sequence[Any], executor: Any, workers: int,
              tick: Callable[[int, int], None], stop: Callable[[], bool] | None = None,
              shared: Any = None) -> Iterator[tuple[int, list[Any]]]:
    import secrets

    with _dask_connection(executor, workers) as client:
        topic = f"libra-opt-progress-{secrets.token_hex(6)}"
        events: deque[tuple[int, int]] = deque()
        futures: list[Any] = []
        try:
            with contextlib.suppress(AttributeError, TypeError):
                client.subscribe_topic(topic, lambda event: events.append(event[1]))
            extra = () if shared is None else (
                [client.scatter(shared, broadcast=True, hash=False)] * len(batches),)
            futures = client.map(call_in_dask, [fn] * len(batches), batches,
                                 range(len(batches)), [topic] * len(batches), *extra,
                                 pure=False)
            seen = [0] * len(batches)
            done_batches: set[int] = set()

            def drain() -> None:
                while events:
                    i, n = events.popleft()
                    if i not in done_batches:
                        seen[i] += n
                        tick(i, n)

            pending = dict(zip(range(len(futures)), futures, strict=True))
            while pending:
                _check(stop)
                ready = [i for i, f in pending.items() if f.done()]
                if not ready:
                    time.sleep(TICK_INTERVAL_S / 2)
                    drain()
                    continue
                for i in ready:
                    res = pending.pop(i).result()
                    drain()
                    done_batches.add(i)
                    if len(res) > seen[i]:
                        tick(i, len(res) - seen[i])
                    yield i, res
        finally:
            with contextlib.suppress(Exception):
                client.cancel(futures)
            with contextlib.suppress(Exception):
                client.unsubscribe_topic(topic)


@contextlib.contextmanager
def _dask_connection(executor: Any, workers: int) -> Iterator[Any]:
    """The Dask client of ``executor``: the caller's own (left open), a client of the
    scheduler at an address, or one of a new loopback ``LocalCluster`` of worker processes
    in a scratch folder (:func:`~libra_opt.explore.dask_scratch.dask_scratch`); what is
    started here is closed on exit."""
    if not isinstance(executor, str):
        yield executor
        return
    from distributed import Client

    if "://" in executor:
        check_scheduler(executor)
        try:
            client = Client(executor, timeout="10s", set_as_default=False)
        except OSError as exc:
            raise InputError(f"cannot reach the Dask scheduler at {executor}: {exc}",
                             field="scheduler") from None
        try:
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=5)
        return
    import dask
    from distributed import LocalCluster

    with dask_scratch() as scratch:
        with dask.config.set({"temporary-directory": scratch,
                              "distributed.worker.daemon": True,
                              "distributed.worker.multiprocessing-method": "spawn"}):
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                   protocol="tcp://", host="127.0.0.1",
                                   # a free loopback port: two runs on one machine do
                                   # not collide (a taken port prints a warning)
                                   dashboard_address="127.0.0.1:0", local_directory=scratch,
                                   silence_logs=logging.WARNING)
        try:
            client = Client(cluster, set_as_default=False)
            client.run(detach_dask_worker, os.getpid())
        except BaseException:
            cluster.close()
            raise
        try:
            yield client
        finally:
            with contextlib.suppress(Exception):
                client.close(timeout=5)
            with contextlib.suppress(Exception):
                cluster.close(timeout=5)
