"""Executors: the same results on every executor, per-item progress, workers detached from
the caller's stdio and stopped when the consumer stops."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from libra_opt.errors import InputError
from libra_opt.explore.executors import (
    ExecutorOptions,
    LocalPool,
    batch_size,
    executor_session,
    make_batches,
    resolve_executor,
    run_batches,
)


def squares(batch):
    """Task: one result per item."""
    return [x * x for x in batch]


def slow_items(batch):
    """Task: 0.15 s per item, yielded one by one."""
    for x in batch:
        time.sleep(0.15)
        yield x


def whoami(batch):
    """Task: this worker's pid, its stdout target and the items."""
    return [(os.getpid(), os.readlink("/proc/self/fd/1") if Path("/proc/self/fd/1").exists()
             else None, x) for x in batch]


def sleepy(batch):
    for x in batch:
        time.sleep(0.3)
        yield os.getpid(), x


class Counted:
    """What every batch needs; counts its copies (a fresh count on every unpickling)."""

    def __init__(self) -> None:
        self.used = 0

    def __getstate__(self):
        return {"used": 0}


def scaled_by_shared(shared, batch):
    """Task with a shared object: this process, the copy's identity and its use count."""
    shared.used += 1
    return [(os.getpid(), id(shared), shared.used, x) for x in batch]


@pytest.mark.parametrize("executor", ["serial", "processes", "dask"])
def test_the_shared_object_goes_to_each_worker_once(executor):
    """``shared`` reaches every batch; a worker keeps one copy for the whole run (its use
    count grows batch after batch), whatever process ran the batch (the caller itself runs
    some while the process pool starts)."""
    batches = make_batches(list(range(40)), 2)
    got = dict(run_batches(scaled_by_shared, batches, ExecutorOptions(executor, max_workers=2),
                           shared=Counted()))
    assert [x for i in sorted(got) for *_, x in got[i]] == list(range(40))
    copies: dict[tuple[int, int], list[int]] = {}
    for res in got.values():
        pid, ident, used, _ = res[0]
        copies.setdefault((pid, ident), []).append(used)
    per_process: dict[int, set[int]] = {}
    for pid, ident in copies:
        per_process.setdefault(pid, set()).add(ident)
    assert all(len(ids) == 1 for ids in per_process.values())  # one copy per process
    for uses in copies.values():  # each copy counted every batch it served
        assert sorted(uses) == list(range(1, len(uses) + 1))
    if executor != "serial":
        assert len(per_process) <= 3  # two workers, and perhaps the caller
        assert sum(len(u) for u in copies.values()) == len(batches)


@pytest.mark.parametrize("executor", ["serial", "processes"])
def test_every_batch_once_in_item_order(executor):
    items = list(range(23))
    batches = make_batches(items, 4)
    got = dict(run_batches(squares, batches, ExecutorOptions(executor, max_workers=2)))
    assert sorted(got) == list(range(len(batches)))
    assert [r for i in sorted(got) for r in got[i]] == [x * x for x in items]


def test_a_session_keeps_one_pool_for_several_runs():
    """Two runs on one ``processes`` session: the same worker processes serve both, each
    run's items are counted once (no progress of the first run leaks into the second), and
    the pool is gone after the block."""
    counts: list[dict[int, int]] = []
    pids: list[set[int]] = []
    with executor_session("processes", whoami, max_workers=2) as ex:
        assert isinstance(ex, LocalPool)
        for run in range(2):
            heard: dict[int, int] = {}
            batches = make_batches(list(range(10 * run, 10 * run + 10)), 3)

            def on_items(i, n, heard=heard):
                heard[i] = heard.get(i, 0) + n

            got = dict(run_batches(whoami, batches, ExecutorOptions(ex), on_items=on_items))
            assert [x for i in sorted(got) for _, _, x in got[i]] == list(
                range(10 * run, 10 * run + 10))
            counts.append(heard)
            pids.append({p for res in got.values() for p, _, _ in res})
        procs = list(ex.pool._processes.values())
    assert counts == [{0: 3, 1: 3, 2: 3, 3: 1}] * 2  # batches of 3, 3, 3, 1 items
    assert pids[1] <= set(p.pid for p in procs)  # the second run used the same workers
    assert pids[0] <= set(p.pid for p in procs)
    assert not any(p.is_alive() for p in procs)


def test_progress_reaches_the_caller_within_a_batch():
    """One batch of four 0.15 s items on a worker: the caller hears of finished items
    before the batch returns (ticks at most every 0.1 s), and of all four in the end."""
    heard: list[tuple[int, int, bool]] = []
    finished = []

    def on_items(index, n):
        heard.append((index, n, bool(finished)))

    for i, res in run_batches(slow_items, [(1, 2, 3, 4)],
                              ExecutorOptions("processes", max_workers=1), on_items=on_items):
        finished.append(i)
        assert res == [1, 2, 3, 4]
    assert sum(n for _, n, _ in heard) == 4
    assert any(not after for _, _, after in heard[:-1]) and len(heard) >= 2


@pytest.mark.skipif(not Path("/proc/self/fd/1").exists(), reason="reads /proc")
def test_workers_write_to_devnull_and_die_when_the_consumer_stops():
    it = run_batches(sleepy, [(i,) * 1 for i in range(20)],
                     ExecutorOptions("processes", max_workers=2))
    # the caller itself takes the last batches while the workers start: wait for a worker's
    pid = next(p for _, res in it for p, _ in res if p != os.getpid())
    out = dict(run_batches(whoami, [(1,)], ExecutorOptions("processes", max_workers=1)))
    assert out[0][0][1] == os.devnull
    it.close()  # stop early: the pool's processes are killed before close() returns
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] \
            if Path(f"/proc/{pid}/stat").exists() else "X"
        if stat in ("Z", "X"):
            break
        time.sleep(0.05)
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] \
        if Path(f"/proc/{pid}/stat").exists() else "gone"
    assert state in ("Z", "X", "gone")


def test_batch_sizes():
    # 20,000 points on two workers: four batches per worker would be 2,500 points; capped
    assert batch_size(20_000, 2) == 1000
    assert batch_size(100, 2) == 13  # ceil(100 / 8)
    # weights 3, 1, 1, 1, 1, 1 packed into batches of at most 4
    assert make_batches(list("abcdef"), 4, weight=lambda c: 3 if c == "a" else 1) == [
        ("a", "b"), ("c", "d", "e", "f")]
    with pytest.raises(InputError):
        make_batches([1], 0)


@pytest.mark.parametrize(("args", "field"), [
    (("threads",), "executor"),
    (("dask", "localhost"), "scheduler"),
    (("dask", "tcp://host:port"), "scheduler"),
    (("processes", "tcp://127.0.0.1:8786"), "scheduler"),
])
def test_bad_executor_or_address(args, field):
    with pytest.raises(InputError) as exc:
        resolve_executor(*args, environ={})
    assert exc.value.field == field


def test_scheduler_address_from_the_environment_only_for_dask():
    env = {"DASK_SCHEDULER_ADDRESS": "tcp://127.0.0.1:8786"}
    assert resolve_executor("dask", environ=env) == "tcp://127.0.0.1:8786"
    assert resolve_executor("processes", environ=env) == "processes"
    assert resolve_executor("tcp://10.1.2.3:9000", environ={}) == "tcp://10.1.2.3:9000"
    with pytest.raises(InputError) as exc:
        resolve_executor("dask", environ={"DASK_SCHEDULER_ADDRESS": "nope"})
    assert exc.value.field == "DASK_SCHEDULER_ADDRESS"


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs process descriptors")
def test_alive_counts_an_exited_unreaped_process_as_gone():
    """The worker watchdog's liveness check: a running process is alive; one that exited but
    is not reaped yet (a zombie) and one reaped are gone."""
    import subprocess

    from libra_opt.explore.worker_process import alive as _alive

    assert _alive(os.getpid())
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        assert _alive(proc.pid)
        proc.stdin.close()  # the child exits; not waited for: a zombie
        deadline = time.monotonic() + 10
        while _alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(proc.pid)
    finally:
        proc.wait(timeout=10)
    assert not _alive(proc.pid)


def test_a_bad_value_of_a_long_structural_axis_is_refused_by_the_workers_as_serially():
    """With a parallel executor and >= PARALLEL_CHECK_VALUES distinct values, the workers
    build each value's scenario; the refusal is the serial one (first bad value, its
    message, the axis named)."""
    import numpy as np

    import libra_opt as lo
    from libra_opt.errors import InputError
    from libra_opt.explore.grid import PARALLEL_CHECK_VALUES

    values = [float(v) for v in np.linspace(0.0, 1e-6, PARALLEL_CHECK_VALUES + 200)]
    values[700] = -1.0   # a latency must be >= 0: refused by the fabric, not by the type
    values[900] = -2.0
    axis = "fabric.dims.pod.latency_s"
    messages = {}
    for executor in ("serial", "processes"):
        with pytest.raises(InputError) as exc:
            lo.sweep("gpt3_175b_4d", {axis: values}, executor=executor, max_workers=2,
                     progress=False)
        messages[executor] = (exc.value.field, exc.value.message)
    assert messages["processes"] == messages["serial"]
    assert messages["serial"][0] == axis
    assert messages["serial"][1].startswith("value -1.0:") and "must be a finite number >= 0" \
        in messages["serial"][1]
