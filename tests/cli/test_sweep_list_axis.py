"""``libra-opt sweep --axis NAME=[..],[..]``: list-valued sweep points through the CLI."""

import pandas as pd
import pytest

from libra_opt.cli.main import main
from tests.fixtures import write_scenario_files

# Two switch dimensions with their bandwidth pinned by the bounds (hb 100 GB/s, scale-out
# 50 GB/s), so every point's step time can be derived by hand.
YAML = """\
name: inr_axis
fabric:
  dims:
    - {name: hb, topology: switch, size: 8, tier: ScaleUp}
    - {name: scaleout, topology: switch, size: 16, tier: ScaleOut}
cost_model: {catalog: current_2025}
workloads:
  - name: w
    astra_sim: w.txt
    communicator: comm.yml
constraints:
  bounds: {hb: [100, 100], scaleout: [50, 50]}
"""
# one layer: 1 ms of compute and a 1 GB weight-gradient all-reduce over hb 8 x scaleout 16
WORKLOAD = "DATA\n1\nl -1 0 NONE 0 0 NONE 0 1000000 ALLREDUCE 1000000000 1\n"
COMM = "Forward: [1, 1]\nInputGrad: [1, 1]\nWeightGrad: [8, 16]\n"


@pytest.fixture
def scenario(tmp_path):
    return write_scenario_files(tmp_path, YAML, WORKLOAD, COMM)


def test_list_valued_axis_sweeps_sets_of_dimensions(scenario, tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["sweep", str(scenario), "--axis",
                 "in_network_reduction=[],[hb],[scaleout],[hb, scaleout]",
                 "--out", str(out), "--no-progress"]) == 0
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 4 and set(df["status"]) == {"optimal"}
    # Hand derivation (pipelined: step = 1 ms + max_d traffic_d / B_d):
    # * plain: hb reduce-scatter + all-gather 2 x 1 GB x 7/8 = 1.75 GB / 100 = 17.5 ms;
    #   scaleout all-reduces the 125 MB shard, 2 x 125 MB x 15/16 / 50 = 4.6875 ms -> 18.5 ms
    # * [hb]: the inner in-network all-reduce sends 1 GB in and gets 7/8 GB of gathered
    #   shards: 1.875 GB / 100 = 18.75 ms -> 19.75 ms (worse: SHARP on an inner dimension)
    # * [scaleout]: 125 MB / 50 = 2.5 ms, hb still 17.5 ms -> 18.5 ms
    # * both: 19.75 ms
    expected_ms = [18.5, 19.75, 18.5, 19.75]
    assert df["weighted_step_time_s"].tolist() == pytest.approx([t / 1e3 for t in expected_ms],
                                                                rel=1e-6)
    # SHARP premium (catalog current_2025): NVLS 0.5 $ and IB SHARP 1.1 $ per GB/s of switch
    # port, one port per NPU, 128 NPUs: hb 0.5 x 128 x 100 = 6,400 $, scaleout
    # 1.1 x 128 x 50 = 7,040 $
    cost = df["network_cost_usd"].to_numpy()
    assert cost[1:] - cost[0] == pytest.approx([6400.0, 7040.0, 13440.0], rel=1e-9)
    assert "wrote" in capsys.readouterr().out


def test_one_list_value_is_one_point(scenario, capsys):
    assert main(["sweep", str(scenario), "--axis", "in_network_reduction=[hb,scaleout]",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and "(hb, scaleout)" in out[1] and "0.01975" in out[1]


@pytest.mark.parametrize(("value", "needle"), [
    ("[],[hb", "unbalanced brackets"),
    ("[hb]]", "unbalanced brackets"),
    ("[],,[hb]", "empty value"),
    ("[hb, {a: ]", "unbalanced brackets"),
    ("[a: b: c]", "malformed list or mapping"),
    ("[nope]", "no dimension named 'nope'"),
])
def test_malformed_list_values_one_line_exit_2(scenario, capsys, value, needle):
    assert main(["sweep", str(scenario), "--axis", f"in_network_reduction={value}",
                 "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--axis" in err and needle in err


def test_budget_axis_rejects_lists(scenario, capsys):
    assert main(["sweep", str(scenario), "--axis", "budget_usd=[1e6]", "--no-progress"]) == 2
    assert "budget_usd takes numbers" in capsys.readouterr().err


def test_help_documents_list_values(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "outside brackets" in " ".join(capsys.readouterr().out.split())
