"""Failures on the command line: the report lines of a scenario with a reliability section,
its JSON, one-line errors for bad failure inputs, and ``search --rank failures``."""

from __future__ import annotations

import json

import pytest

from libra_opt.cli.main import main

LLAMA = "llama3_405b_h100_tco"


def test_solve_reports_failures_only_with_a_reliability_section(capsys) -> None:
    assert main(["solve", LLAMA]) == 0
    text = capsys.readouterr().out
    assert "Failures and goodput:" in text and "scaleout leaf-aggregation cable" in text
    assert "Job MTTF 3.27 h: 395.7 interruptions and 23.3 degradations per 54.0 days" in text
    assert "92.97%" in text and "One training run with failures:" in text
    assert main(["solve", "gpt3_175b_a100_cluster"]) == 0
    assert "Failures" not in capsys.readouterr().out


def test_evaluate_json_has_the_reliability_object(capsys) -> None:
    assert main(["evaluate", LLAMA, "--bw", "656.99,18.565", "--json"]) == 0
    rel = json.loads(capsys.readouterr().out)["reliability"]
    assert rel["run_h"] == 1296 and rel["interruptions"] == pytest.approx(395.7, abs=0.05)
    assert rel["workloads"]["llama3_405b"]["goodput"] > 0.9
    assert {m["where"] for m in rel["modes"] if not m["stops"]} == {
        "scaleout aggregation", "scaleout leaf-aggregation cable", "scaleout core",
        "scaleout aggregation-core cable"}


@pytest.mark.parametrize(("override", "field", "what"), [
    ("reliability.rates_per_h.gpu=-1e-6", "reliability.rates_per_h.gpu", "> 0"),
    ("reliability.rates_per_h.hbm=0", "reliability.rates_per_h.hbm", "> 0"),
    ("reliability.mtbf_h.gpu=0", "reliability.mtbf_h.gpu", "> 0 (hours)"),
    ("reliability.checkpoint_write_gbps=0", "reliability.checkpoint_write_gbps", "> 0"),
    ("reliability.spares_per_domain=9", "reliability.spares_per_domain",
     "more than the 8 NPUs"),
])
def test_bad_failure_inputs_exit_2_in_one_line(capsys, override, field, what) -> None:
    assert main(["solve", LLAMA, "--set", override]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and field in err and what in err


def test_search_rank_failures(capsys) -> None:
    args = ["search", LLAMA, "--top", "2", "--no-gains", "--no-progress", "--space", "tp=8",
            "--space", "cp=1", "--space", "pp=16", "--space", "zero=1", "--space",
            "micro_batch_sizes=1", "--space", "interleave=1,2", "--space", "recompute=full",
            "--space", "sequence_parallel=true", "--placements", "auto"]
    assert main([*args, "--rank", "failures"]) == 0
    out = capsys.readouterr().out
    assert "objective tco under failures" in out and "goodput" in out and "92.97%" in out
    assert main(["search", "gpt3_175b_a100_cluster", "--rank", "failures"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "rank" in err and "reliability section" in err
