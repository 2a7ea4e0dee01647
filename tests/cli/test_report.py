"""``libra-opt report``: writes the HTML and Markdown into --out and nowhere else."""

from __future__ import annotations

import argparse
import json

import pytest

from libra_opt.cli import report as cli_report
from libra_opt.cli.main import main


def test_report_writes_html_and_markdown(tmp_path, capsys):
    out = tmp_path / "rep"
    assert main(["report", "gpt3_175b_4d", "--out", str(out), "--no-progress",
                 "--budget-points", "4"]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "gpt3_175b_4d" in html
    assert (out / "report.md").is_file() and (out / "report_pareto.png").is_file()
    # a scenario whose workload is not generated from a model: the search section says why
    md = (out / "report.md").read_text(encoding="utf-8")
    assert ("## Co-design search\n\nCo-design search not run: the co-design search needs a "
            "model-based workload (model, parallelism, device)\n") in md
    assert f"wrote {out / 'report.html'}" in capsys.readouterr().out
    assert {p.parent for p in tmp_path.rglob("*") if p.is_file()} == {out}
    # the manifest lists what the report wrote (what --overwrite replaces next time)
    files = json.loads((out / "manifest.json").read_text())["files"]
    assert sorted(files) == sorted(p.name for p in out.iterdir() if p.name != "manifest.json")


def test_out_that_is_a_file_fails_before_work(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["report", "gpt3_175b_4d", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "not a directory" in err


def test_bad_points_and_missing_scenario_exit_2(tmp_path, capsys):
    assert main(["report", "gpt3_175b_4d", "--out", str(tmp_path / "o"),
                 "--budget-points", "1"]) == 2
    assert "--budget-points" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "none.yaml"), "--out", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists()


def test_register_adds_the_subcommand():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command")
    cli_report.register(sub)
    args = p.parse_args(["report", "s.yaml", "--out", "d"])
    assert args.func is cli_report.run and args.out == "d" and not args.no_progress


def test_a_non_empty_out_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """A second report into the same folder overwrote it silently, exit 0 (as ``search``
    and ``sweep`` refuse a non-empty --out unless --overwrite)."""
    import libra_opt.explore.study as study

    def no_work(*args, **kwargs):
        raise AssertionError("the study ran before the folder was checked")

    out = tmp_path / "rep"
    out.mkdir()
    (out / "report.md").write_text("an earlier report")
    monkeypatch.setattr(study, "design_study", no_work)
    assert main(["report", "gpt3_175b_4d", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "is not empty" in err
    assert "--overwrite" in err
    assert (out / "report.md").read_text() == "an earlier report"


def test_overwrite_removes_the_earlier_reports_files_it_does_not_write(tmp_path, capsys):
    """A report without the search left the earlier run's report_search.png beside a
    report.md saying 'Co-design search not run'."""
    out = tmp_path / "rep"
    args = ["report", "gpt3_175b_4d", "--out", str(out), "--no-progress", "--budget-points",
            "3"]
    assert main(args) == 0
    # an earlier run that drew the search plot: its manifest lists report_search.png
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["files"].append("report_search.png")
    (out / "manifest.json").write_text(json.dumps(manifest))
    (out / "report_search.png").write_bytes(b"old plot")
    (out / "notes.txt").write_text("the user's own file")   # not the report's: kept
    assert main([*args, "--no-search", "--overwrite"]) == 0
    capsys.readouterr()
    assert not (out / "report_search.png").exists()
    assert (out / "notes.txt").read_text() == "the user's own file"
    md = (out / "report.md").read_text()
    assert "report_search.png" not in md and "--no-search" in md
    assert "report_search.png" not in json.loads((out / "manifest.json").read_text())["files"]


@pytest.mark.parametrize("extra", [[], ["--overwrite"]])
def test_an_empty_or_missing_out_needs_no_overwrite(tmp_path, capsys, extra):
    out = tmp_path / "empty"
    out.mkdir()
    assert main(["report", "gpt3_175b_4d", "--out", str(out), "--no-progress",
                 "--budget-points", "2", *extra]) == 0
    assert (out / "report.html").is_file()
