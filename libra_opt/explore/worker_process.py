"""What runs inside a worker process of the executors (:mod:`libra_opt.explore.executors`):
detaching from the caller (SIGINT ignored, stdio on ``/dev/null``, death with the caller),
progress ticks, and the tasks that wrap a run's function on a process pool or on Dask."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["TICK_INTERVAL_S", "alive", "consume", "call_in_pool", "call_in_dask",
           "init_pool_worker", "detach_dask_worker"]

#: Seconds between progress messages of one worker (items are counted, not each sent).
TICK_INTERVAL_S = 0.1
#: Seconds between checks, in a worker, that the caller is still alive.
_WATCH_INTERVAL_S = 0.25
_PR_SET_PDEATHSIG = 1

# Per-worker-process state, set only by the pool initializer inside worker processes (the
# initializer protocol offers no other channel to the task function): the progress queue
# and the object every batch of the run needs (``shared``).
_worker_state: list[Any] = []


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie, exited but not yet
    reaped by its parent, counts as gone).

    A process descriptor (``os.pidfd_open``, Linux 5.3+) polls readable once the process
    has exited, reaped or not; where there is none, ``os.kill(pid, 0)`` tells only whether
    the pid exists.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (OSError, AttributeError):  # no pidfd on this system or kernel
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return not poller.poll(0)
    finally:
        os.close(fd)


def _watch_caller(caller_pid: int, parent_pid: int) -> None:
    while True:
        time.sleep(_WATCH_INTERVAL_S)
        if os.getppid() != parent_pid or not alive(caller_pid):
            os._exit(1)


def _detach_worker(caller_pid: int) -> None:
    """Make this worker process die with the caller and release the caller's stdio."""
    with contextlib.suppress(ValueError, OSError):  # not the main thread: keep the default
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.close(devnull)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    threading.Thread(target=_watch_caller, args=(caller_pid, os.getppid()), daemon=True,
                     name="libra-opt-parent-watch").start()


def init_pool_worker(caller_pid: int, ticks: Any, shared: Any = None) -> None:
    """Initializer of the ``processes`` workers."""
    _detach_worker(caller_pid)
    _worker_state[:] = [ticks, shared]


def detach_dask_worker(caller_pid: int) -> bool:
    """Run on each worker of a cluster started here (``Client.run``)."""
    _detach_worker(caller_pid)
    return True


def consume(fn: Callable[[Any], Iterable[Any]], batch: Any,
             send: Callable[[int], None] | None, every_item: bool = False) -> list[Any]:
    """``list(fn(batch))``, sending the count of finished items at most every 0.1 s (or
    after every item)."""
    out: list[Any] = []
    last = time.monotonic()
    unsent = 0
    for r in fn(batch):
        out.append(r)
        unsent += 1
        if send is not None:
            now = time.monotonic()
            if every_item or now - last >= TICK_INTERVAL_S:
                send(unsent)
                unsent, last = 0, now
    return out


def call_in_pool(fn: Callable[[Any], Iterable[Any]], batch: Any, index: int,
                  shared: bool = False) -> list[Any]:
    """Task of the ``processes`` executor (``shared``: pass the worker's shared object)."""
    ticks, obj = _worker_state if _worker_state else (None, None)
    if shared:
        fn = functools.partial(fn, obj)
    return consume(fn, batch, None if ticks is None else lambda n: ticks.put((index, n)))


def call_in_dask(fn: Callable[[Any], Iterable[Any]], batch: Any, index: int,
                  topic: str, *shared: Any) -> list[Any]:
    """Task of the Dask executors: progress goes to the client as worker events;
    ``shared``: the object scattered to every worker, when the run has one."""
    from distributed import get_worker

    try:
        worker = get_worker()
    except ValueError:
        worker = None
    send = None if worker is None else lambda n: worker.log_event(topic, (index, n))
    return consume(functools.partial(fn, *shared), batch, send)
