"""In-network reduction through the scenario YAML, ``--set`` overrides, sweep axes and
:func:`choose_in_network` on a packaged example."""


import pytest

from libra_opt import apply_overrides
from libra_opt.errors import InputError
from libra_opt.explore.in_network import choose_in_network
from libra_opt.explore.sweep import sweep
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import solve
from tests.fixtures import write_scenario_files

YAML = """\
name: inr
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
  bounds: {hb: [10, 900], scaleout: [5, 200]}
  budget_usd: 3.0e6
in_network_reduction: %s
"""
# one layer: a 1 GB weight-gradient all-reduce over both dimensions (DP 8 x 16)
WORKLOAD = "DATA\n1\nl -1 0 NONE 0 0 NONE 0 1000000 ALLREDUCE 1000000000 1\n"
COMM = "Forward: [1, 1]\nInputGrad: [1, 1]\nWeightGrad: [8, 16]\n"


def write(tmp_path, inr):
    return write_scenario_files(tmp_path, YAML % inr, WORKLOAD, COMM)


def test_yaml_key_and_premium(tmp_path):
    plain = load_scenario(write(tmp_path, "[]"))
    s = load_scenario(write(tmp_path, "[scaleout]"))
    assert s.in_network_reduction == ("scaleout",)
    # SHARP premium of the ScaleOut tier: 1.1 $/GB/s per switch port GB/s (catalog); the
    # scale-out block of 16 NPUs, one port each: +16 x 8 NPU blocks = 128 NPUs x 1.1
    extra = s.coefficients.usd_per_gbps - plain.coefficients.usd_per_gbps
    assert extra[0] == 0.0
    assert extra[1] == pytest.approx(128 * 1.1, rel=1e-12)
    # the hierarchical all-reduce: hb RS/AG 2 x 1 GB x 7/8; scaleout all-reduces the
    # 125 MB shard: 2 x 125 MB x 15/16 -> in the network 125 MB
    a = solve(plain, with_baselines=False).evaluation.workloads[0].traffic_by_dim_bytes
    b = solve(s, with_baselines=False).evaluation.workloads[0].traffic_by_dim_bytes
    assert a[1] == pytest.approx(2 * 125e6 * 15 / 16)
    assert b[1] == pytest.approx(125e6)
    assert b[0] == pytest.approx(a[0]) == pytest.approx(2 * 1e9 * 7 / 8)


@pytest.mark.parametrize(("value", "match"), [("[nope]", "no dimension named"),
                                              ("3", "expected a list"),
                                              ("[hb, 3]", "expected text")])
def test_bad_yaml_names_file_and_field(tmp_path, value, match):
    p = write(tmp_path, value)
    with pytest.raises(InputError, match=match) as err:
        load_scenario(p)
    assert err.value.source == str(p)
    assert "in_network_reduction" in (err.value.field or "")


def test_override_and_sweep_axis(tmp_path):
    p = write(tmp_path, "[]")
    s = apply_overrides(load_scenario(p), {"in_network_reduction": "[scaleout]"})
    assert s.in_network_reduction == ("scaleout",)
    assert apply_overrides(s, {"in_network_reduction": "none"}).in_network_reduction == ()
    with pytest.raises(InputError, match="list of dimension names"):
        apply_overrides(s, {"in_network_reduction": "[1, 2]"})
    df = sweep(load_scenario(p), {"in_network_reduction": [[], ["hb"], ["scaleout"], ["hb", "scaleout"]]},
                    progress=False)
    assert list(df["status"]) == ["optimal"] * 4
    res = choose_in_network(load_scenario(p))
    by_dims = {c.dims: c.objective_value for c in res.choices}
    for _, row in df.iterrows():
        assert by_dims[tuple(row["in_network_reduction"])] == pytest.approx(row["objective"],
                                                                             rel=1e-7)
    assert res.best.objective_value <= res.runner_up.objective_value


def test_example_with_sequence_parallel_does_not_buy_it_on_hb():
    """Llama 3 405B with sequence parallelism: its TP reduce-scatters send M instead of
    7/8 M in the network, so in-network reduction on the NVLink domain raises the TCO."""
    res = choose_in_network(load_scenario("llama3_405b_h100_tco"), ["hb"])
    assert res.best.dims == ()
    assert res.runner_up is not None and res.runner_up.dims == ("hb",)
