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
