"""The command line prints the model's error band on every model-based answer: solve,
evaluate (text and --json) and search; a bad --error-model file is one line, exit 2."""

import json

import pytest

from libra_opt.cli import main
from libra_opt.io.error_model import load_error_model

KNOBS = ["--space", "micro_batch_sizes=2", "--space", "recompute=selective", "--space",
         "zero=1,2", "--space", "interleave=1,8", "--space", "tp=4", "--space", "pp=8",
         "--space", "max_cp=1", "--no-gains", "--no-progress"]


def test_solve_prints_the_band_in_text_and_json(capsys):
    assert main(["solve", "gpt3_175b_a100_cluster"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("Model error band: gpt3_175b"))
    assert "a100_80gb / megatron_lm_2022" in line and "outside" not in line
    assert main(["solve", "gpt3_175b_a100_cluster", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    band = doc["error_band"]["gpt3_175b"]
    t = doc["step_time_s"]["gpt3_175b"]
    b = band["rel_error"]
    assert band["step_time_range_s"] == pytest.approx([t / (1 + b), t / (1 - b)])
    assert band["outside_envelope"] == []


def test_evaluate_flags_what_lies_outside(capsys):
    assert main(["evaluate", "llama3_405b_h100_tco", "--bw", "900,50", "--json"]) == 0
    band = json.loads(capsys.readouterr().out)["error_band"]["llama3_405b"]
    assert any(o.startswith("recompute full") for o in band["outside_envelope"])


def test_a_file_based_workload_has_no_band(capsys):
    assert main(["solve", "gpt3_175b_4d", "--json"]) == 0
    assert "error_band" not in json.loads(capsys.readouterr().out)


def test_search_prints_bands_flags_and_alternatives(capsys):
    assert main(["search", "gpt3_175b_a100_cluster", "--top", "3", *KNOBS]) == 0
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if ln.lstrip().startswith("#"))
    assert "+-band" in head and "trust" in head
    assert "error band (trust:" in out
    assert "outside the validated envelope: #" in out and "interleave 8 (validated 1-3)" in out
    best = load_error_model().best_mfu("a100_80gb")
    assert f"MFU above the best measured on a100_80gb ({100 * best[0]:.1f} %" in out
    assert "same design, other knobs:" in out and "also as zero 1" in out


def test_a_bad_error_model_is_one_line(tmp_path, capsys):
    p = tmp_path / "e.yaml"
    p.write_text("runs:\n  - {name: a}\n")
    assert main(["solve", "gpt3_175b_a100_cluster", "--error-model", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "runs[0]" in err and str(p) in err


@pytest.mark.parametrize("argv", [["solve", "gpt3_175b_4d"],
                                  ["evaluate", "gpt3_175b_4d", "--bw", "250,250,250,250"]])
def test_a_missing_error_model_is_refused_before_any_work(tmp_path, capsys, argv):
    """Read first, even for a scenario without model-based workloads (nothing printed)."""
    missing = tmp_path / "none.yaml"
    assert main([*argv, "--error-model", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and str(missing) in err


def test_validate_writes_an_error_model_that_reads_back(tmp_path, capsys):
    p = tmp_path / "mine.yaml"
    assert main(["validate", "--table", "llama3_h100", "--error-model", str(p)]) == 0
    m = load_error_model(p)
    assert {r.table for r in m.runs} == {"llama3_h100"}
    assert main(["validate", "--table", "llama3_h100", "--error-model", str(tmp_path)]) == 2
    assert "--error-model" in capsys.readouterr().err


@pytest.mark.parametrize(("edit", "flag"), [
    ("collectives.efficiency={hb: none}", "collectives.efficiency set"),
    ("collective_model=sequential", "timing sequential collectives"),
])
def test_timing_the_tables_did_not_validate_widens_the_band(capsys, edit, flag):
    """The tables time pipelined collectives over hierarchical traffic at each device's own
    efficiency: another timing is outside the envelope (the worst error of any run)."""
    assert main(["evaluate", "gpt3_175b_a100_cluster", "--bw", "600,50", "--set", edit,
                 "--json"]) == 0
    band = json.loads(capsys.readouterr().out)["error_band"]["gpt3_175b"]
    worst = max(abs(r.error) for r in load_error_model().runs if r.role == "validation")
    assert any(o.startswith(flag) for o in band["outside_envelope"])
    assert band["rel_error"] == pytest.approx(worst)
