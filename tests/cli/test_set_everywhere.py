"""``--set PATH=VALUE`` on ``workload``, ``compare``, ``report`` and ``in-network``: the command
runs on the edited scenario, and an error of an edit names ``--set`` and its path (never the
example's file) in one line with exit code 2.

The budget cases use ``gpt3_175b_a100_cluster`` (objective ``perf``, bounds hb [100, 600],
scaleout [12.5, 100] GB/s, budget $40M). Its network cost is linear in the bandwidth,
``kappa . bw`` (``cost_coefficients``); at the upper bounds it costs about $17.4M, so a
$12M budget binds: the optimum spends all of it. HB stays at its 600 GB/s bound (asserted),
so the scale-out gets what is left, ``bw_s = (B - kappa_hb * 600) / kappa_s``.
"""

import ast
import csv
import json

import pytest
from numpy.testing import assert_allclose

from libra_opt.cli.main import main
from libra_opt.cost.prices import cost_coefficients
from libra_opt.io import load_scenario

EXAMPLE = "gpt3_175b_a100_cluster"
BUDGET_USD = 1.2e7
HB_MAX_GBPS = 600.0


def _scaleout_left_gbps(in_network: tuple[int, ...] = ()) -> float:
    """The scale-out bandwidth a binding $12M buys with HB at its 600 GB/s bound."""
    scen = load_scenario(EXAMPLE)
    kappa = cost_coefficients(scen.fabric, scen.cost_model, in_network).usd_per_gbps
    assert kappa @ [HB_MAX_GBPS, 100.0] > 1.5e7  # the bounds cost more: the budget binds
    return (BUDGET_USD - kappa[0] * HB_MAX_GBPS) / kappa[1]


def _one_line_error(capsys, path: str) -> str:
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert f"<cli>: --set: {path}: " in err, err
    assert ".yaml" not in err, err  # never blamed on the example's file
    return err


# ------------------------------------------------------------------------------ workload

TP4 = ["--set", "workloads[0].parallelism.tp=4", "--set", "workloads[0].parallelism.dp=16",
       "--set", "workloads[0].mapping={tp: {hb: 4}, pp: {scaleout: 16}, dp: {hb: 2, scaleout: 8}}"]


def test_workload_set_changes_the_parallelism(capsys):
    assert main(["workload", EXAMPLE, *TP4]) == 0
    text = capsys.readouterr().out
    assert "placement        tp: hb 4 | dp: hb 2, scaleout 8 | pp: scaleout 16" in text
    assert "groups (k_d)     tp=(4, 1), pp=(1, 16), dp=(2, 8)" in text

    assert main(["workload", EXAMPLE, "--json", *TP4]) == 0
    (edited,) = json.loads(capsys.readouterr().out)
    assert main(["workload", EXAMPLE, "--json"]) == 0
    (given,) = json.loads(capsys.readouterr().out)
    # micro-batches per step = global batch / (dp x micro-batch) = 1536 / (16 x 1) = 96;
    # bubble = (p - 1) / (v m) = 15 / 96 for equal stages (Narayanan et al., SC'21, eq. 1 with
    # v = 1); with the output layer the last stage is the slowest, and the flow-shop fill and
    # drain is the 15 other stages' time in its passes: sum_{s != r} t_s / (t_r m)
    assert edited["micro_batches"] == 96 and given["micro_batches"] == 192
    t = edited["stage_compute_s"]
    assert len(t) == 16 and max(t) == t[-1] > t[0] > t[1] == t[7]
    assert_allclose(edited["bubble_fraction"], (sum(t) - t[-1]) / t[-1] / 96, rtol=1e-12)
    assert 0.9 * 15 / 96 < edited["bubble_fraction"] < 15 / 96
    # weights per NPU at pipeline stage 0, by hand (GPT-3 175B: h 12288, 96 layers / pp 16 =
    # 6 per stage, vocab 50257, sequence 2048; bf16, 2 bytes per parameter). Sharded by tp:
    # per layer 12 h^2 (QKV, projection, MLP) + 7 h (QKV and first MLP biases), and the word
    # embedding; replicated: per layer 6 h (two biases, two layer norms) and the position
    # embedding. Where the two output biases are counted (12 h of 2.9e9) is within rtol.
    h = 12288
    sharded = 6 * (12 * h * h + 7 * h) + 50257 * h
    replicated = 6 * 6 * h + 2048 * h
    for doc, tp in ((edited, 4), (given, 8)):
        assert_allclose(doc["memory_bytes"]["weights"], 2 * (sharded / tp + replicated),
                        rtol=2e-4)
    # dp now spans 2 NPUs of the HB domain: it moves HB bytes, none before
    assert edited["traffic_bytes"]["dp"]["hb"] > 0 == given["traffic_bytes"]["dp"]["hb"]


def test_workload_bad_set_names_the_flag(capsys):
    # tp 5 x dp 8 x pp 16 = 640 NPUs on a 1024-NPU fabric
    assert main(["workload", EXAMPLE, "--set", "workloads[0].parallelism.tp=5"]) == 2
    err = _one_line_error(capsys, "workloads[0].parallelism.tp")
    assert "640 NPUs" in err


# ------------------------------------------------------------------------------- compare


def test_compare_set_budget_changes_the_rows(capsys, tmp_path):
    out = tmp_path / "c.csv"
    assert main(["compare", EXAMPLE, "--fabrics", "fat_tree", "--set",
                 f"budget_usd={BUDGET_USD}", "--csv", str(out)]) == 0
    text = capsys.readouterr().out
    assert "equal_budget_joint: $12,000,000 total" in text  # the baseline's cost: the budget
    rows = {r["mode"]: r for r in csv.DictReader(out.open())}
    assert set(rows) == {"equal_bw", "equal_budget", "equal_budget_joint"}
    for row in rows.values():  # every row keeps the scenario's (edited) budget
        assert_allclose(float(row["network_cost_usd"]), BUDGET_USD, rtol=1e-6)
        bw = ast.literal_eval(row["bw_gbps"])  # "(600.0, 61.534947)"
        assert_allclose(bw, [HB_MAX_GBPS, _scaleout_left_gbps()], rtol=1e-6)


def test_compare_bad_set_names_the_flag(capsys):
    assert main(["compare", EXAMPLE, "--set", "budget_usd=abc"]) == 2
    _one_line_error(capsys, "budget_usd")


# -------------------------------------------------------------------------------- report


def test_report_set_budget_is_in_the_report(capsys, tmp_path):
    out = tmp_path / "r"
    assert main(["report", EXAMPLE, "--set", f"budget_usd={BUDGET_USD:g}", "--budget-points",
                 "2", "--no-progress", "--out", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "| network budget | $12,000,000 |" in md  # the example's file says 4.0e7
    assert "network cost $12,000,000;" in md        # the budget binds (module notes)
    assert "| overrides (--set) | budget_usd=1.2e+07 |" in md
    assert "--set budget_usd=1.2e+07" in md         # the command line
    assert "before the overrides above" in md       # the file's text is the unedited one


def test_report_bad_set_names_the_flag_and_writes_nothing(capsys, tmp_path):
    out = tmp_path / "r"
    assert main(["report", EXAMPLE, "--set", "fabric.colour=3", "--out", str(out)]) == 2
    _one_line_error(capsys, "fabric.colour")
    assert not (out / "report.md").exists() and not (out / "report.html").exists()


# ---------------------------------------------------------------------------- in-network


def test_in_network_set_budget_changes_every_choice(capsys, tmp_path):
    out = tmp_path / "c.csv"
    assert main(["in-network", EXAMPLE, "--set", f"budget_usd={BUDGET_USD}",
                 "--csv", str(out)]) == 0
    rows = {r["in_network_dims"]: r for r in csv.DictReader(out.open())}
    assert set(rows) == {"", "hb", "scaleout", "hb;scaleout"}
    for dims, row in rows.items():
        idx = tuple(i for i, n in enumerate(("hb", "scaleout")) if n in dims.split(";"))
        assert_allclose(float(row["network_cost_usd"]), BUDGET_USD, rtol=1e-6)
        assert_allclose(float(row["bw_hb_gbps"]), HB_MAX_GBPS, rtol=1e-6)
        # the in-network premium comes out of the scale-out's share of the budget
        assert_allclose(float(row["bw_scaleout_gbps"]), _scaleout_left_gbps(idx), rtol=1e-6)


def test_in_network_bad_set_names_the_flag(capsys):
    assert main(["in-network", EXAMPLE, "--set", "budget_usd=-1"]) == 2
    _one_line_error(capsys, "budget_usd")


@pytest.mark.parametrize("command", ["workload", "compare", "in-network"])
def test_set_must_be_path_equals_value(capsys, command):
    assert main([command, EXAMPLE, "--set", "budget_usd"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--set" in err and "PATH=VALUE" in err
