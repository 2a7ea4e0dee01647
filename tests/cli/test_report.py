"""``libra-opt report``: writes the HTML and Markdown into --out and nowhere else."""

from __future__ import annotations

import argparse

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
