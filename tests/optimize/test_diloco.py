"""DiLoCo across sites: amortized outer sync derived by hand, brute force over the
bandwidths, both backends, and the closed-form site bandwidth for a given slowdown."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.explore.diloco import diloco_scenario
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.diloco import (
    DiLoCoSettings,
    amortized_exposed_s,
    min_bandwidth_for_slowdown_gbps,
)
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
from tests.fixtures import write_scenario_files
from tests.optimize.test_problem import brute_2d, check

SITE_LAT = 5e-3
#: ring of 4 (2 $/GB/s per NPU), site switch of 2 (link 1 + switch 1 + nic 1 per NPU), 8 NPUs
KAPPA = np.array([8 * 2.0, 8 * 3.0])


def base(objective="perf", budget=24_000.0):
    f = Fabric((Dim("node", "ring", 4, "A"), Dim("site", "switch", 2, "W", SITE_LAT)))
    cm = CostModel.from_tables({"A": {"link": 2.0}, "W": {"link": 1.0, "switch": 1.0, "nic": 1.0}})
    ar = Collective("all_reduce", 2e9, "dp")
    w = Workload("gpt", (Layer("l", Phase(0.1), Phase(0.0), Phase(0.2, (ar,))),), {"dp": (4, 2)})
    cons = (parse_constraint("sum(bw) >= 1", f),)
    return Scenario(f, cm, (w,), constraints=cons, budget_usd=budget, objective=objective)


SETTINGS = DiLoCoSettings(50, fragments=2, delta_bits=4)


def step(b0, b1):
    """Inner: DP all-reduce of 2 GB over the ring of 4: 2 x 2 x 3/4 = 3 GB / b0; compute 0.3 s.
    Outer fragment: 1e9 params x 4 bits / 8 / 2 fragments = 0.25 GB over (4, 2): node
    2 x 0.25 x 3/4 = 0.375 GB / b0; site: the 0.0625 GB shard, 2 x 0.0625 x 1/2 / b1 plus
    two switch steps of 5 ms; pipelined max; weight F / H = 2 / 50."""
    outer = np.maximum(0.375 / b0, 0.0625 / b1 + 2 * SITE_LAT)
    return 0.3 + 3.0 / b0 + 0.04 * outer


def test_step_time_by_hand():
    d = diloco_scenario(base(), "site", SETTINGS, 1e9)
    for bw in ([10.0, 1.0], [200.0, 0.05]):
        assert_allclose(evaluate(d, bw).weighted_step_time_s, step(*bw), rtol=1e-12)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_budget_brute_force(objective):
    d = diloco_scenario(base(objective, budget=3000.0), "site", SETTINGS, 1e9)
    sol = solve(d)

    def obj(a, b):
        s = step(a, b)
        return s if objective == "perf" else s * (KAPPA[0] * a + KAPPA[1] * b)

    best, _ = brute_2d(lambda a, b: (a + b >= 1) & (KAPPA[0] * a + KAPPA[1] * b <= 3000.0), obj,
                       hi=200.0)
    check(sol, best)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_backends_agree_and_dcp(objective):
    d = diloco_scenario(base(objective), "site", SETTINGS, 1e9)
    a = solve(build_problem(d, backend="clarabel"))
    p = build_problem(d, backend="cvxpy")
    assert p.program.problem.is_dcp()
    b = solve(p)
    assert_allclose(a.objective_value, b.objective_value, rtol=1e-7)


def test_exposed_time_and_bandwidth_for_slowdown_by_hand():
    s = DiLoCoSettings(100, fragments=4, delta_bits=4, overlap_steps=1.5)
    # F/H max(T_f - tau C, 0) = 0.04 x max(3 - 1.5 x 1.2, 0) = 0.048
    assert amortized_exposed_s(3.0, 1.2, s) == pytest.approx(0.048)
    assert amortized_exposed_s(1.0, 1.2, s) == 0.0
    # x / (s T0 H / F + tau C - l) = 1e9 / (0.05 x 2 x 25 + 1.5 x 1.2 - 0.3) = 1e9 / 4
    assert min_bandwidth_for_slowdown_gbps(1e9, 0.3, 2.0, 1.2, s) == pytest.approx(0.25)
    # latency alone too slow
    assert min_bandwidth_for_slowdown_gbps(1e9, 1.0, 0.1, 0.1, DiLoCoSettings(1)) == math.inf


def test_slowdown_bandwidth_is_tight_on_the_evaluator():
    """At the closed-form site bandwidth the evaluated amortized step is exactly 5% slower
    than the inner step (site-only sync: a DP group of (1, 2))."""
    f = Fabric((Dim("node", "ring", 4, "A"), Dim("site", "switch", 2, "W", SITE_LAT)))
    cm = CostModel.from_tables({"A": {"link": 2.0}, "W": {"link": 1.0, "switch": 1.0, "nic": 1.0}})
    ar = Collective("all_reduce", 2e9, "dp")
    w = Workload("gpt", (Layer("l", Phase(0.1), Phase(0.0), Phase(0.2, (ar,))),), {"dp": (1, 2)})
    s = DiLoCoSettings(20, delta_bits=8)
    d = diloco_scenario(Scenario(f, cm, (w,)), "site", s, 1e9)
    t0 = 0.3  # inner step: the DP group is a single NPU per site, compute only
    x_site = 2 * (1e9 * 8 / 8) * 1 / 2  # all-reduce of 1 GB over 2: 1 GB per NPU
    b = min_bandwidth_for_slowdown_gbps(x_site, 2 * SITE_LAT, t0, t0, s)
    assert_allclose(evaluate(d, [100.0, b]).weighted_step_time_s, 1.05 * t0, rtol=1e-12)


@pytest.mark.parametrize(("kw", "field"), [
    ({"sync_every_steps": 0}, "diloco.sync_every_steps"),
    ({"sync_every_steps": 4, "fragments": 8}, "diloco.fragments"),
    ({"sync_every_steps": 4, "delta_bits": 0}, "diloco.delta_bits"),
    ({"sync_every_steps": 4, "overlap_steps": -1}, "diloco.overlap_steps"),
])
def test_bad_settings(kw, field):
    with pytest.raises(InputError) as err:
        DiLoCoSettings(**kw)
    assert err.value.field == field


def test_bad_scenario():
    with pytest.raises(InputError, match="does not span"):
        diloco_scenario(base(), "site", SETTINGS, 1e9, dp_group="tp")
    with pytest.raises(InputError, match="no dimension"):
        diloco_scenario(base(), "dci", SETTINGS, 1e9)
    with pytest.raises(InputError, match="overlap_steps"):
        diloco_scenario(base(), "site", DiLoCoSettings(10, overlap_steps=1), 1e9)


YAML = """\
name: two_sites
fabric:
  dims:
    - {name: node, topology: ring, size: 4, tier: A}
    - {name: site, topology: switch, size: 2, tier: W, latency_s: 5.0e-3}
cost_model: {A: {Link: 2.0}, W: {Link: 1.0, Switch: 1.0, Nic: 1.0}}
workloads:
  - name: gpt
    astra_sim: w.txt
    communicator: comm.yml
constraints:
  linear: ["sum(bw) >= 1"]
  budget_usd: 3000
diloco: {site_dim: site, params_per_npu: 1.0e9, sync_every_steps: 50, fragments: 2,
         delta_bits: 4, dp_group: weight_grad}
"""
# forward 0.1 s, weight-grad 0.2 s + all-reduce of 2 GB over DP (4, 2)
WORKLOAD = "DATA\n1\nl -1 100000000 NONE 0 0 NONE 0 200000000 ALLREDUCE 2000000000 0\n"
COMM = "Forward: [1, 1]\nInputGrad: [1, 1]\nWeightGrad: [4, 2]\n"


def write(tmp_path, text=YAML):
    return write_scenario_files(tmp_path, text, WORKLOAD, COMM)


def test_yaml_block_matches_hand_derivation_and_sweeps(tmp_path):
    from libra_opt.explore.grid import sweep_grid
    from libra_opt.explore.overrides import apply_overrides
    from libra_opt.io import load_scenario

    p = write(tmp_path)
    s = load_scenario(p)
    assert [w.name for w in s.workloads] == ["gpt", "gpt_outer"]
    for bw in ([10.0, 1.0], [200.0, 0.05]):
        assert_allclose(evaluate(s, bw).weighted_step_time_s, step(*bw), rtol=1e-12)
    # H = 10, b = 16, F = 1: fragment 2 GB, node 2 x 2 x 3/4 = 3 GB, site 2 x 0.5 x 1/2 = 0.5
    o = apply_overrides(p, {"diloco.sync_every_steps": 10, "diloco.delta_bits": 16,
                            "diloco.fragments": 1})
    b0, b1 = 20.0, 2.0
    want = 0.3 + 3.0 / b0 + 0.1 * max(3.0 / b0, 0.5 / b1 + 2 * SITE_LAT)
    assert_allclose(evaluate(o, [b0, b1]).weighted_step_time_s, want, rtol=1e-12)
    df = sweep_grid(p, {"diloco.sync_every_steps": [2, 10, 50, 250]}, progress=False)
    assert list(df["status"]) == ["optimal"] * 4
    assert list(df["objective"]) == sorted(df["objective"], reverse=True)


def test_yaml_errors_name_file_and_field(tmp_path):
    from libra_opt.io import load_scenario

    p = write(tmp_path, YAML.replace("site_dim: site", "site_dim: dci"))
    with pytest.raises(InputError) as err:
        load_scenario(p)
    assert err.value.source == str(p) and err.value.field == "diloco.site_dim"
    p = write(tmp_path, YAML.replace("fragments: 2", "fragments: 80"))
    with pytest.raises(InputError) as err:
        load_scenario(p)
    assert err.value.field == "diloco.fragments"
