"""``libra-opt compare``: table on stdout, one-line errors with exit code 2, plot and CSV."""

import argparse

import pandas as pd
import pytest

from libra_opt.cli import main as cli_main
from libra_opt.cli.compare import register


def main(args):
    return cli_main(["compare", *args])

SCENARIO = """\
name: moe_small
fabric:
  dims:
    - {name: hb, topology: switch, size: 8, tier: ScaleUp}
    - {name: scaleout, topology: switch, size: 512, tier: ScaleOut}
cost_model:
  ScaleUp: {Link: 0.5, Switch: 5.0, Nic: 0.0}
  ScaleOut: {Link: 30.0, Switch: 10.9375, Nic: 44.0}
workloads:
  - {name: moe, astra_sim: w.txt, communicator: c.yml}
constraints:
  linear: ["bw[0] == 450", "bw[1] == 50"]
collective_model: sequential
"""
# One layer: forward all-to-all 200 MB over (8, 8); weight-grad all-reduce over (1, 512).
WORKLOAD = "layer -1 10000000 ALLTOALL 200000000 10000000 NONE 0 10000000 ALLREDUCE 500000000 0\n"
COMM = "Forward: [ 8, 8 ]\nInputGrad: [ -1, -1 ]\nWeightGrad: [ -1, 512 ]\n"


@pytest.fixture
def scenario(tmp_path):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    (tmp_path / "w.txt").write_text(WORKLOAD)
    (tmp_path / "c.yml").write_text(COMM)
    return tmp_path / "s.yaml"


def test_prints_table_and_writes_plot_and_csv(scenario, tmp_path, capsys):
    png, csv = tmp_path / "cmp.png", tmp_path / "cmp.csv"
    rc = main([str(scenario), "--fabrics", "fat_tree,rail_only", "--plot", str(png),
               "--csv", str(csv)])
    out = capsys.readouterr().out
    assert rc == 0
    assert "fat_tree" in out and "rail_only" in out and "equal_budget" in out
    assert png.stat().st_size > 1000
    df = pd.read_csv(csv)
    # Scale-out per NPU per GB/s: 3 tiers x 30 + 5 x 10.9375 + 44 vs 2 x 30 + 3 x 10.9375 + 44.
    ft = 4096 * (0.5 + 5.0) * 450 + 4096 * (3 * 30 + 5 * 10.9375 + 44) * 50
    ro = 4096 * (0.5 + 5.0) * 450 + 4096 * (2 * 30 + 3 * 10.9375 + 44) * 50
    eq = df[df["mode"] == "equal_bw"].set_index("fabric")
    assert eq.loc["fat_tree", "network_cost_usd"] == pytest.approx(ft)
    assert eq.loc["rail_only", "cost_reduction_pct"] == pytest.approx(100 * (1 - ro / ft))


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--fabrics", "fat_tree,dragonfly"], "--fabrics: unknown fabric(s) dragonfly"),
        (["--bw", "450,abc"], "--bw: expected comma-separated numbers"),
        (["--bw", "450"], "expected 2 bandwidths"),
        (["--catalog", "nope"], "no catalog 'nope'"),
        (["--radix", "63"], "switch_radix 63 must be an even integer"),
        (["--scaleout-budget-usd", "-1"], "--scaleout-budget-usd: budget -1.0 $ must be"),
    ],
)
def test_bad_input_exits_2_with_one_line(scenario, capsys, args, needle):
    rc = main([str(scenario), *args])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.count("\n") == 1 and needle in err


def test_missing_scenario_file(tmp_path, capsys):
    assert main([str(tmp_path / "none.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_register_adds_a_subcommand():
    parser = argparse.ArgumentParser(prog="libra-opt")
    sub = parser.add_subparsers(dest="command", required=True)
    register(sub)
    args = parser.parse_args(["compare", "x.yaml", "--fabrics", "rail_only"])
    assert args.command == "compare" and args.fabrics == "rail_only" and callable(args.func)


RAIL32 = """\
name: rail32
fabric: {builder: rail_only, n_npus: 4096, hb_domain: 8, switch_radix: 32}
cost_model:
  ScaleUp: {Link: 0.5, Switch: 5.0, Nic: 0.0}
  ScaleOut: {Link: 30.0, Switch: 10.9375, Nic: 44.0}
workloads:
  - {name: moe, astra_sim: w.txt, communicator: c.yml}
constraints:
  bounds:
    hb: [100, 900]
    scaleout: [12.5, 60]
  budget_usd: 2.0e8
collective_model: sequential
traffic_model: native
"""


@pytest.fixture
def rail32(tmp_path):
    (tmp_path / "r.yaml").write_text(RAIL32)
    (tmp_path / "w.txt").write_text(WORKLOAD)
    (tmp_path / "c.yml").write_text(COMM)
    return tmp_path / "r.yaml"


def test_scenario_radix_rows_and_switch_columns(rail32, tmp_path, capsys):
    csv = tmp_path / "r.csv"
    assert main([str(rail32), "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "scale-out switch radix 32 (the scenario's)" in out
    df = pd.read_csv(csv)
    eq = df[df["mode"] == "equal_bw"].set_index("fabric")
    # The scenario's own rail-only fabric is one row, labelled as such, not also "rail_only";
    # multi_dim is the scenario's shape with ideal switches.
    assert list(eq.index) == ["fat_tree", "scenario (rail_only)", "multi_dim"]
    assert list(eq.family) == ["fat_tree", "rail_only", "multi_dim"]
    # HB: one 8-port switch per domain, 4096 / 8. Radix 32: the fat-tree over 4096 NPUs has
    # 3 tiers, 2 x 4096 / 32 = 256 leaves, 256 aggregation and 4096 / 32 = 128 cores; each of
    # the 8 rails of 512 = 32^2 / 2 NPUs has 2 tiers, 1024 / 32 = 32 leaves and 16 spines.
    assert list(eq.hb_switches) == [512, 512, 512]
    assert list(eq.scaleout_switches) == [256 + 256 + 128, 8 * (32 + 16), 1]
    assert set(df["mode"]) == {"equal_bw", "equal_budget", "equal_budget_joint"}
    # Every row inside the scenario's bounds.
    for text in df.bw_gbps:
        hb, so = (float(x) for x in text.strip("()").split(","))
        assert 100 * (1 - 1e-6) <= hb <= 900 * (1 + 1e-6)
        assert 12.5 * (1 - 1e-6) <= so <= 60 * (1 + 1e-6)


def test_radix_flag_overrides_the_scenario(rail32, tmp_path, capsys):
    csv = tmp_path / "r.csv"
    assert main([str(rail32), "--radix", "64", "--fabrics", "rail_only", "--csv", str(csv)]) == 0
    assert "scale-out switch radix 64 (--radix)" in capsys.readouterr().out
    eq = pd.read_csv(csv).query("mode == 'equal_bw'").set_index("fabric")
    # Radix 64: rails of 512 NPUs, 2 x 512 / 64 = 16 leaves and 8 spines each.
    assert eq.loc["rail_only", "scaleout_switches"] == 8 * (16 + 8)
    assert eq.loc["scenario (rail_only)", "scaleout_switches"] == 8 * (32 + 16)


def test_equal_budget_holds_hb_and_spends_the_scaleout_budget(rail32, tmp_path, capsys):
    csv = tmp_path / "r.csv"
    assert main([str(rail32), "--fabrics", "fat_tree,rail_only", "--bw", "450,20",
                 "--csv", str(csv)]) == 0
    df = pd.read_csv(csv)
    # Baseline fat-tree, 3 tiers: 3 x 30 + 5 x 10.9375 + 44 $ per GB/s per NPU on the scale-out.
    budget = 4096 * (3 * 30 + 5 * 10.9375 + 44) * 20
    eb = df[df["mode"] == "equal_budget"]
    assert eb.scaleout_cost_usd.to_numpy() == pytest.approx([budget] * 2, rel=1e-6)
    for text in eb.bw_gbps:
        assert float(text.strip("()").split(",")[0]) == pytest.approx(450, rel=1e-9)


def test_scenario_without_radix_says_64_is_the_default(scenario, capsys):
    assert main([str(scenario), "--fabrics", "rail_only"]) == 0
    out = capsys.readouterr().out
    assert "scale-out switch radix 64 (the default: the scenario's scale-out has no switch_radix)" in out
    assert "scenario (multi_dim, ideal, no radix limit)" in out   # LIBRA's ideal switch, said so


def test_topology_aware_scenario_compares_with_hierarchical_traffic(tmp_path, capsys):
    # topology_aware has no routing-aware (native) form: the default follows it, and the
    # budget rows, pinned by the scenario's bounds to the equal_bw bandwidth, read exactly
    # 0 % change (their solves agree to 1e-8 relative, not to the last bit)
    csv = tmp_path / "c.csv"
    assert main(["gpt3_175b_a100_cluster", "--set", "collective_model=topology_aware",
                 "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "traffic model: hierarchical" in out
    # the rail_only rows then miss their cross-rail forwarding, and the table says so
    assert "the rail_only rows do not charge the forwarding of cross-rail traffic" in out
    df = pd.read_csv(csv)
    assert len(df) == 9
    assert (df["step_time_change_pct"] == 0.0).all()


def test_native_traffic_under_topology_aware_is_blamed_on_the_flag(capsys):
    assert main(["gpt3_175b_a100_cluster", "--set", "collective_model=topology_aware",
                 "--traffic-model", "native"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--traffic-model: the scenario's collective_model" in err[0]
    assert "does not model 'native' routing" in err[0]


def test_the_table_is_formatted_not_raw_pandas(tmp_path, capsys):
    """Raw pandas printed the step time as 12.6 in every row beside a change of -0.04483 %,
    and costs as 1.625e+08."""
    import re

    csv = tmp_path / "c.csv"
    assert main(["deepseek_v3_rail_only", "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    assert "e+" not in out
    df = pd.read_csv(csv)
    lines = out.splitlines()
    header = re.split(r"\s{2,}", lines[0])
    assert header[:7] == ["mode", "fabric", "bw (GB/s)", "step time (s)", "network cost ($)",
                          "scale-out cost ($)", "network power (W)"]
    assert header[-1] == "step time change"
    rows = [re.split(r"\s{2,}", ln) for ln in lines[2:2 + len(df)]]
    col = {h: i for i, h in enumerate(header)}
    for r, (_, d) in zip(rows, df.iterrows(), strict=True):
        assert r[col["step time (s)"]] == f"{d['step_time_s']:.6g}"
        assert r[col["network cost ($)"]] == f"{round(d['network_cost_usd']):,}"
        assert r[col["network power (W)"]] == f"{round(d['network_power_w']):,}"
        assert r[col["cost reduction"]] == f"{d['cost_reduction_pct']:.2f}%".replace("-0.00",
                                                                                     "0.00")
    # a non-zero step-time change shows in the step time itself
    changed = df["step_time_change_pct"] != 0
    assert changed.any()
    shown = {r[col["step time (s)"]] for r, c in zip(rows, changed, strict=True) if c}
    base = {r[col["step time (s)"]] for r, c in zip(rows, changed, strict=True) if not c}
    assert shown and not shown & base
    assert {r[col["step time change"]] for r, c in zip(rows, changed, strict=True) if c} == {
        f"{x:.2f}%" for x in df.loc[changed, "step_time_change_pct"]}
    # the footer's budgets (by default the baseline's costs at equal bandwidth) in whole $
    base_row = df[(df["mode"] == "equal_bw") & (df["fabric"] == "fat_tree")].iloc[0]
    assert (f"equal_budget: ${round(base_row['scaleout_cost_usd']):,} scale-out, " in out)
    assert f"equal_budget_joint: ${round(base_row['network_cost_usd']):,} total;" in out


def test_native_traffic_needs_no_forwarding_note(capsys):
    assert main(["gpt3_175b_a100_cluster", "--fabrics", "fat_tree,rail_only"]) == 0
    out = capsys.readouterr().out
    assert "traffic model: native" in out and "do not charge the forwarding" not in out
