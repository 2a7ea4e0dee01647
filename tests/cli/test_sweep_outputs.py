"""Output paths are refused before any work, in one line and within a second; several plots
land together or not at all."""

from __future__ import annotations

import importlib
import os
import time
from pathlib import Path

import pytest

import libra_opt.optimize.problem as problem
from libra_opt.cli.main import main

SWEEP = ["sweep", "gpt3_175b_4d", "--axis", "sum(bw) == 1000=500:2000:5", "--no-progress"]


def _boom(*args, **kwargs):
    raise AssertionError("a point was solved before the outputs were checked")


@pytest.fixture
def no_points(monkeypatch):
    monkeypatch.setattr(importlib.import_module("libra_opt.explore.sweep"), "run_batches", _boom)
    monkeypatch.setattr(problem, "solve", _boom)


def _refused(capsys, argv, *needles):
    t0 = time.perf_counter()
    code = main(argv)
    took_s = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, err
    assert took_s < 1.0, took_s
    return err


def test_a_symlink_in_out_pointing_outside(tmp_path, capsys, no_points):
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.csv").symlink_to(tmp_path / "elsewhere.csv")
    _refused(capsys, [*SWEEP, "--out", str(out), "--overwrite"], "--out",
             "would be written outside")
    assert not (tmp_path / "elsewhere.csv").exists()


def test_a_300_character_out(tmp_path, capsys, no_points):
    _refused(capsys, [*SWEEP, "--out", str(tmp_path / ("x" * 300))], "--out",
             "longer than 255 bytes")


def test_a_path_under_sys(capsys, no_points):
    _refused(capsys, [*SWEEP, "--out", "/sys/libra-opt-out"], "--out", "cannot write in")


def test_results_csv_is_a_directory(tmp_path, capsys, no_points):
    out = tmp_path / "out"
    (out / "results.csv").mkdir(parents=True)
    _refused(capsys, [*SWEEP, "--out", str(out), "--overwrite"], "--out", "is a directory")


def test_a_non_empty_folder_needs_resume_or_overwrite(tmp_path, capsys, no_points):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("x\n")
    _refused(capsys, [*SWEEP, "--out", str(out)], "--out", "not empty", "--overwrite")
    _refused(capsys, [*SWEEP, "--out", str(out), "--resume"], "--out", "nothing to resume")
    _refused(capsys, [*SWEEP, "--out", str(out), "--resume", "--overwrite"], "give one")
    _refused(capsys, [*SWEEP, "--resume"], "--resume", "give --out DIR")


def test_resume_of_another_study_is_one_line(tmp_path, capsys):
    out = tmp_path / "out"
    assert main([*SWEEP, "--out", str(out)]) == 0
    capsys.readouterr()
    err = _refused(capsys, ["sweep", "gpt3_175b_4d", "--axis", "budget_usd=2e7,3e7",
                            "--no-progress", "--out", str(out), "--resume"],
                   "--out", "different study")
    assert "sum(bw) == 1000" in err  # names the folder's axes


def test_solve_plot_dir_with_a_symlinked_plot(tmp_path, capsys, no_points):
    plots = tmp_path / "plots"
    plots.mkdir()
    (plots / "gpt3_175b_4d_allocation.png").symlink_to(tmp_path / "outside.png")
    _refused(capsys, ["solve", "gpt3_175b_4d", "--plot-dir", str(plots)], "--plot-dir",
             "would be written outside")


def test_report_with_a_symlinked_markdown(tmp_path, capsys, monkeypatch):
    import libra_opt.explore.study as study

    monkeypatch.setattr(study, "design_study", _boom)  # refused before any work
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.md").symlink_to(tmp_path / "outside.md")
    _refused(capsys, ["report", "gpt3_175b_4d", "--out", str(out)], "--out",
             "would be written outside")
    assert sorted(os.listdir(out)) == ["report.md"]


def test_plots_of_an_all_infeasible_sweep_are_all_or_nothing(tmp_path, capsys):
    """Budgets far below any feasible design: every point infeasible, the plots cannot be
    drawn; the results stay, no PNG (and no staging folder) is left."""
    out = tmp_path / "out"
    code = main(["sweep", "gpt3_175b_4d", "--axis", "budget_usd=1,2", "--no-progress",
                 "--out", str(out), "--plots"])
    err = capsys.readouterr().err
    assert code == 2 and "no optimal row" in err, err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "results.csv"]


def test_plots_are_staged_and_moved_together(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", "gpt3_175b_4d", "--axis", "budget_usd=2e7:4e7:3", "--no-progress",
                 "--out", str(out), "--plots"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "sweep.png" in names and not [n for n in names if n.startswith(".")]
    assert Path(out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
