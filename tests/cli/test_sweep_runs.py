"""Real ``libra-opt sweep`` processes: killed mid-run with SIGTERM, SIGKILL or Ctrl-C on each
executor, they leave no process behind, release the caller's pipes, keep their finished
points on disk, and ``--resume`` completes the run with the rows of an uninterrupted one.
A real Dask cluster (a ``dask scheduler`` and two ``dask worker`` processes on loopback)
runs a sweep and a co-design search through ``--scheduler`` with the serial rows.

Process trees are read from ``/proc`` (Linux only).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from libra_opt import sweep
from libra_opt.cli.main import main
from libra_opt.explore.dask_scratch import SCRATCH_PREFIX, host_tag, remove_orphaned_scratch
from libra_opt.io.results import read_results
from tests.cli.test_search import MODEL as SEARCH_MODEL
from tests.cli.test_search import SCENARIO as SEARCH_SCENARIO
from tests.fixtures import interruptible

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="reads the process tree from /proc")

BIN = Path(sys.executable).parent
TIMING = ["compile_s", "solve_s", "wall_s"]
SCENARIO = "gpt3_175b_4d"
# 240 right-hand-side points in batches of 8. The test freezes the run (SIGSTOP to its
# process group) as soon as a batch is on disk, checks that points are still missing, sends
# the signal and lets the run go on (SIGCONT): the signal lands mid-run however fast or
# busy the machine is.
AXIS = "sum(bw) == 1000=500:2000:240"
N_POINTS = 240
ARGS = ["sweep", SCENARIO, "--axis", AXIS, "--no-progress", "--batch-size", "8",
        "--workers", "2"]
RUN = [str(BIN / "libra-opt"), *ARGS]


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of ``pid``, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0]


def descendants(root: int) -> set[int]:
    """Every live process below ``root`` (children, their children, ...)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st is not None and st[1] not in ("Z", "X"):
                parent[int(entry)] = st[0]
    out: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


def alive(pids: set[int]) -> set[int]:
    return {p for p in pids if (st := _stat(p)) is not None and st[1] not in ("Z", "X")}


def rows(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=TIMING).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> pd.DataFrame:
    """The uninterrupted serial run, in process, streamed to a folder like the CLI's."""
    from libra_opt.cli.sweep import parse_axis

    name, values = parse_axis(AXIS)
    out = tmp_path_factory.mktemp("reference") / "run"
    return sweep(SCENARIO, {name: values}, progress=False, out=out)


def _wait_for_rows(csv: Path, proc: subprocess.Popen, timeout_s: float = 60.0) -> bool:
    """Until ``csv`` holds a finished batch (a header and 8 rows); False if the run ended."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if csv.exists() and csv.read_bytes().count(b"\n") >= 9:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("no batch on disk in time")


def _interrupt_mid_run(out: Path, executor: str, sig: int, tmp: Path):
    """Start the sweep (temporary directory ``tmp``), freeze it once a batch is on disk,
    send ``sig`` while points are still missing, let it go on and collect it: (process,
    tree, stdout, stderr, wait_s). None when the run finished first (the caller starts
    another)."""
    tmp.mkdir()
    proc = subprocess.Popen([*RUN, "--executor", executor, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, "TMPDIR": str(tmp)},
                            preexec_fn=interruptible)
    try:
        if not _wait_for_rows(out / "results.csv", proc):
            proc.communicate(timeout=60)
            return None
        os.killpg(proc.pid, signal.SIGSTOP)  # the whole run, workers included
        tree = descendants(proc.pid)
        lines = (out / "results.csv").read_bytes().count(b"\n")
        if proc.poll() is not None or lines > N_POINTS:  # every point written already
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate(timeout=60)
            return None
        if sig == signal.SIGINT:  # Ctrl-C: the terminal signals the whole process group
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        os.killpg(proc.pid, signal.SIGCONT)
        t0 = time.monotonic()
        stdout, stderr = proc.communicate(timeout=15)  # every holder of the pipes is gone
        return proc, tree, stdout, stderr, time.monotonic() - t0
    finally:
        if proc.poll() is None:
            with _suppress():
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        with _suppress():
            os.killpg(proc.pid, signal.SIGCONT)  # nothing of the group stays frozen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGINT],
                         ids=["SIGTERM", "SIGKILL", "SIGINT"])
@pytest.mark.parametrize("executor", ["serial", "processes", "dask"])
def test_killed_sweep_leaves_nothing_behind_and_resumes(tmp_path, capsys, reference, executor,
                                                        sig):
    for attempt in range(3):
        out = tmp_path / f"run{attempt}"
        tmp = tmp_path / f"tmp{attempt}"
        got = _interrupt_mid_run(out, executor, sig, tmp)
        if got is not None:
            break
    else:
        pytest.fail("the sweep finished before it could be interrupted, three times")
    proc, tree, stdout, stderr, waited_s = got
    if executor != "serial":
        assert tree, "the executor started no worker process"
    assert waited_s < 15
    deadline = time.monotonic() + 10
    while alive(tree) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(tree), f"left behind: {alive(tree)}"
    if executor == "dask":
        # a caught signal removes the local cluster's scratch folder; a SIGKILL cannot, and
        # leaves it named with the run's process id for the next run to remove
        left = sorted(p.name for p in tmp.iterdir())
        if sig == signal.SIGKILL:
            assert len(left) == 1 and left[0].startswith(
                f"{SCRATCH_PREFIX}{host_tag()}-{proc.pid}-"), left
            assert remove_orphaned_scratch(str(tmp)) == [str(tmp / left[0])]
        assert list(tmp.iterdir()) == []
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        assert proc.returncode == 128 + sig, (stdout, stderr)
        err = stderr.decode()
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "interrupted: kept" in err and "--resume" in err
    # the finished batches are on disk (a SIGKILL may tear the last one: resume drops it)
    kept = out / "results.csv"
    assert kept.read_bytes().count(b"\n") >= 9
    # --resume solves the missing points only, and the rows equal the uninterrupted run
    assert main([*ARGS, "--executor", "serial", "--out", str(out), "--resume"]) == 0
    assert f"{N_POINTS:,} points" in capsys.readouterr().out
    pd.testing.assert_frame_equal(rows(read_results(out)), rows(reference), check_exact=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dask_cli(*args: str) -> list[str]:
    """The ``dask`` command of this environment (or its module form)."""
    exe = BIN / "dask"
    if exe.exists():
        return [str(exe), *args]
    module = {"scheduler": "distributed.cli.dask_scheduler",
              "worker": "distributed.cli.dask_worker"}[args[0]]
    return [sys.executable, "-m", module, *args[1:]]


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory):
    """A ``dask scheduler`` and two ``dask worker`` processes on 127.0.0.1 (free ports),
    stopped by PID afterwards, whatever happens."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scratch = tmp_path_factory.mktemp("dask")
    procs: list[subprocess.Popen] = []
    log = open(scratch / "cluster.log", "wb")  # noqa: SIM115 - closed below
    try:
        procs.append(subprocess.Popen(
            _dask_cli("scheduler", "--host", "127.0.0.1", "--port", str(port),
                      "--dashboard-address", ":0", "--no-show"),
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=scratch))
        for i in range(2):
            procs.append(subprocess.Popen(
                _dask_cli("worker", address, "--nthreads", "1", "--nworkers", "1",
                          "--host", "127.0.0.1", "--no-dashboard", "--name", f"w{i}",
                          "--local-directory", str(scratch / f"w{i}")),
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=scratch))
        from distributed import Client

        with Client(address, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in procs:
            if p.poll() is None:
                with _suppress():
                    os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with _suppress():
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        log.close()


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return exc[0] is not None and issubclass(exc[0], ProcessLookupError)


def test_sweep_on_a_real_cluster_through_scheduler_gives_the_serial_rows(
        tmp_path, reference, dask_cluster):
    out = tmp_path / "cluster"
    assert main([*ARGS, "--scheduler", dask_cluster, "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(rows(read_results(out)), rows(reference), check_exact=True)


def test_search_on_a_real_cluster_through_scheduler_gives_the_serial_rows(
        tmp_path, capsys, dask_cluster):
    """``libra-opt search`` on the real cluster: every row (knobs, status, bounds, optimal
    bandwidths, rank) equal to the serial run's, bit for bit; only the measured solve
    seconds differ."""
    (tmp_path / "tiny.yaml").write_text(SEARCH_MODEL)
    scen = tmp_path / "s.yaml"
    scen.write_text(SEARCH_SCENARIO)
    args = ["search", str(scen), "--top", "3", "--hb-domain", "8,16", "--space",
            "micro_batch_sizes=1", "--space", "recompute=full", "--space", "zero=1",
            "--no-gains", "--no-progress"]
    assert main([*args, "--out", str(tmp_path / "serial")]) == 0
    from distributed import Client, get_task_stream

    with Client(dask_cluster, timeout="30s", set_as_default=False) as client, \
            get_task_stream(client) as stream:
        assert main([*args, "--scheduler", dask_cluster, "--out",
                     str(tmp_path / "cluster")]) == 0
    # the chunks ran on the cluster's two workers (the task stream of its scheduler)
    ran = [t for t in stream.data if "call_in_dask" in str(t["key"])]
    assert ran and {t["worker"] for t in ran} <= set(client_workers(dask_cluster))
    capsys.readouterr()
    serial = pd.read_csv(tmp_path / "serial" / "results.csv").drop(columns="solve_s")
    cluster = pd.read_csv(tmp_path / "cluster" / "results.csv").drop(columns="solve_s")
    assert (serial["status"] == "optimal").sum() >= 3 and len(serial) > 10
    pd.testing.assert_frame_equal(cluster, serial, check_exact=True)


def client_workers(address: str) -> list[str]:
    """The worker addresses of the cluster at ``address``."""
    from distributed import Client

    with Client(address, timeout="30s", set_as_default=False) as client:
        return list(client.scheduler_info()["workers"])


def test_dask_scheduler_address_from_the_environment(tmp_path, capsys, monkeypatch, reference,
                                                     dask_cluster):
    out = tmp_path / "env"
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", dask_cluster)
    assert main([*ARGS, "--executor", "dask", "--out", str(out)]) == 0
    pd.testing.assert_frame_equal(rows(read_results(out)), rows(reference), check_exact=True)


def test_an_unreachable_scheduler_is_one_line(capsys):
    port = _free_port()  # nothing listens there
    assert main([*ARGS, "--scheduler", f"tcp://127.0.0.1:{port}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--scheduler" in err and "cannot reach" in err, err
