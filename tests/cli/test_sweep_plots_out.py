"""``libra-opt sweep --out DIR``: its ``--plots`` draw the sweep's axes, its manifest
lists every file written, a resumed run says how many points it solved, and the staging
folder of the plots never outlives its run (real processes, stopped while they draw).

Process groups are frozen with SIGSTOP while the plots are staged (the run is caught in the
act however fast the machine is); Linux only.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

import libra_opt.io.output as output
from libra_opt.cli.main import main
from tests.fixtures import interruptible

BIN = Path(sys.executable).parent
SCENARIO = "gpt3_175b_4d"   # four dimensions: chiplet, package, node, pod
SWEEP = ["sweep", SCENARIO, "--axis", "budget_usd=2e7:6e7:5", "--no-progress"]
DIMS = ["chiplet", "package", "node", "pod"]


def _shape(fig) -> dict:
    """What a figure draws, for comparing two figures: per axes its title, labels, lines
    (their data) and filled areas; the figure's legend entries and title."""
    return {
        "axes": [(a.get_title(), a.get_xlabel(), a.get_ylabel(),
                  [(ln.get_label(), [float(v) for v in ln.get_xdata()],
                    [float(v) for v in ln.get_ydata()]) for ln in a.get_lines()],
                  len(a.collections)) for a in fig.axes],
        "legend": [t.get_text() for lg in fig.legends for t in lg.get_texts()],
        "suptitle": fig.get_suptitle(),
    }


@pytest.fixture
def drawn(monkeypatch) -> dict[str, dict]:
    """The shape of every figure the command saves, by file name."""
    shapes: dict[str, dict] = {}
    save = output.save_figure_atomic

    def record(fig, path, **kwargs):
        shapes[Path(path).name] = _shape(fig)
        return save(fig, path, **kwargs)

    monkeypatch.setattr(output, "save_figure_atomic", record)
    yield shapes
    plt.close("all")


def test_out_plots_draw_the_axes_not_the_point_index(tmp_path, capsys, drawn):
    """``--out DIR --plots``: the ``point`` index of the folder's rows is no axis (one
    series, one stack; not one colour or panel per point)."""
    assert main([*SWEEP, "--out", str(tmp_path / "out"), "--plots"]) == 0
    capsys.readouterr()
    assert sorted(drawn) == ["bandwidth.png", "pareto.png", "sweep.png"]
    sweep = drawn["sweep.png"]
    assert len(sweep["axes"]) == 2   # step time and its twin (bandwidth)
    assert sweep["legend"] == ["weighted step time", *[f"bw {d}" for d in DIMS]]
    assert [len(line[1]) for line in sweep["axes"][0][3]] == [5]   # one line, 5 budgets
    bandwidth = drawn["bandwidth.png"]
    assert len(bandwidth["axes"]) == 1 and bandwidth["axes"][0][4] == len(DIMS)  # one stack
    assert bandwidth["legend"] == DIMS[::-1] and bandwidth["suptitle"] == ""
    assert not [t for t in drawn["pareto.png"]["legend"] if "point" in t]


def _manifest_files(out: Path) -> list[str]:
    return json.loads((out / "manifest.json").read_text())["files"]


def test_the_manifest_lists_every_file_written(tmp_path, capsys):
    out = tmp_path / "all"
    assert main([*SWEEP, "--out", str(out), "--parquet", "--plots"]) == 0
    files = ["results.csv", "results.parquet", "sweep.png", "pareto.png", "bandwidth.png"]
    assert _manifest_files(out) == files
    assert sorted(p.name for p in out.iterdir()) == sorted([*files, "manifest.json"])
    out = tmp_path / "parquet"
    assert main([*SWEEP, "--out", str(out), "--parquet"]) == 0
    assert _manifest_files(out) == ["results.csv", "results.parquet"]
    # a resumed run keeps listing the earlier run's files that are still there
    assert main([*SWEEP, "--out", str(out), "--resume"]) == 0
    assert _manifest_files(out) == ["results.csv", "results.parquet"]


def test_a_resumed_run_says_how_many_points_it_solved(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*SWEEP, "--out", str(out)]) == 0
    assert re.search(r": 5 points \(5 optimal\) in [\d.]+ s, [\d.]+ ms per point$",
                     capsys.readouterr().out.strip())
    assert main([*SWEEP, "--out", str(out), "--resume"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.endswith(": 5 points (5 optimal): 0 solved now, 5 from the earlier run"), line
    # a run killed after two points: its CSV holds the header and the first two rows
    csv = out / "results.csv"
    csv.write_text("".join(csv.read_text().splitlines(keepends=True)[:3]))
    assert main([*SWEEP, "--out", str(out), "--resume"]) == 0
    line = capsys.readouterr().out.strip()
    assert re.search(r": 5 points \(5 optimal\): 3 solved now in [\d.]+ s, [\d.]+ ms per "
                     r"point, 2 from the earlier run$", line), line


# --- the staging folder of the plots (real processes) -------------------------------------

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                                reason="freezes and signals real processes (Linux)")
RUN = [str(BIN / "libra-opt"), "sweep", SCENARIO, "--axis", "budget_usd=2e7:6e7:40",
       "--no-progress", "--plots"]


def _stages(out: Path) -> list[str]:
    return sorted(p.name for p in out.glob(".libra-opt-stage-*"))


def _plot_stage(out: Path) -> bool:
    """Whether the plots' staging folder holds its first plot (every file is written through
    a staging folder; only the plots' holds a PNG)."""
    return any((out / name / "sweep.png").exists() for name in _stages(out))


def _frozen_while_plotting(out: Path) -> subprocess.Popen | None:
    """A sweep into ``out`` frozen (SIGSTOP to its process group) while its plots are staged;
    None when it finished before it could be caught. The caller continues or kills it."""
    proc = subprocess.Popen([*RUN, "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=interruptible)
    while not _plot_stage(out):
        if proc.poll() is not None:
            proc.communicate()
            return None
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGSTOP)
    if proc.poll() is not None or not _plot_stage(out):   # done just now
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return None
    return proc


@pytest.fixture
def plotting(tmp_path):
    """``(out, process)``: a run frozen while it draws (three tries); killed at the end
    whatever happens."""
    procs: list[subprocess.Popen] = []

    def start() -> tuple[Path, subprocess.Popen]:
        for attempt in range(3):
            out = tmp_path / f"run{attempt}"
            proc = _frozen_while_plotting(out)
            if proc is not None:
                procs.append(proc)
                return out, proc
        pytest.fail("the run finished its plots before it could be caught, three times")

    yield start
    for proc in procs:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


@needs_proc
@pytest.mark.parametrize("then", ["--resume", "--overwrite"])
def test_a_run_killed_while_plotting_leaves_a_stage_the_next_run_removes(plotting, capsys,
                                                                         then):
    out, proc = plotting()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert len(_stages(out)) == 1   # SIGKILL: nothing of the run could clean up
    # what an atomic write killed midway leaves, and a file of the user's own
    (out / ".libra-opt-stage-0123456789ab").mkdir()
    (out / ".libra-opt-stage-0123456789ab" / "results.parquet").write_bytes(b"PAR1")
    (out / ".notes").write_text("mine\n")
    assert main([*RUN[1:], "--out", str(out), then]) == 0
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == [".notes"]
    assert _manifest_files(out) == ["results.csv", "sweep.png", "pareto.png",
                                    "bandwidth.png"]


@needs_proc
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_while_plotting_removes_the_stage_and_keeps_the_points(plotting, sig):
    out, proc = plotting()
    if sig == signal.SIGINT:   # Ctrl-C: the terminal signals the whole process group
        os.killpg(proc.pid, sig)
    else:
        os.kill(proc.pid, sig)
    os.killpg(proc.pid, signal.SIGCONT)
    _, stderr = proc.communicate(timeout=60)
    err = stderr.decode()
    assert proc.returncode == 128 + sig, err
    assert err.count("\n") == 1 and "interrupted while writing" in err and "--resume" in err
    assert _stages(out) == []
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "results.csv"]
    assert len((out / "results.csv").read_text().splitlines()) == 1 + 40


@needs_proc
def test_a_live_run_keeps_its_stage_and_its_folder(plotting, capsys):
    """While a run draws into DIR, another run into DIR is refused (one line, exit 2) and
    the live run's staging folder stays; the first run then completes its plots."""
    out, proc = plotting()
    stages = _stages(out)
    assert main([*RUN[1:], "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "another run" in err, err
    assert _stages(out) == stages
    os.killpg(proc.pid, signal.SIGCONT)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert _stages(out) == []
    assert {"sweep.png", "pareto.png", "bandwidth.png"} <= {p.name for p in out.iterdir()}


def test_an_interrupt_python_swallowed_still_stops_the_plots(tmp_path, capsys, monkeypatch):
    """A SIGTERM whose KeyboardInterrupt is raised inside a callback that ignores exceptions
    (as an import lock's weakref callback does) is lost to the plotting code; the command
    still sees the signal it recorded and moves no plot in (seen once in CI: the run went
    on and exited 0)."""
    save = output.save_figure_atomic

    def record(fig, path, **kwargs):
        if Path(path).name == "pareto.png":
            handler = signal.getsignal(signal.SIGTERM)
            assert callable(handler)
            with contextlib.suppress(KeyboardInterrupt):   # swallowed, as in that callback
                handler(signal.SIGTERM, None)
        return save(fig, path, **kwargs)

    monkeypatch.setattr(output, "save_figure_atomic", record)
    out = tmp_path / "out"
    assert main([*SWEEP, "--out", str(out), "--plots"]) == 128 + signal.SIGTERM
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "interrupted while writing" in err and "--resume" in err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "results.csv"]
    plt.close("all")
