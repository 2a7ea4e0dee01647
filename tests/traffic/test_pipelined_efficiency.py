"""``collectives.efficiency`` under the pipelined and sequential models
(:attr:`~libra_opt.traffic.timing.TimingModel.efficiency`): each collective runs at the
fraction of a dimension's bandwidth the named value or measured curve gives at the buffer
the dimension handles, and the optimizer stays exact (the fraction is fixed per
collective, so every term is ``coef / B_d + const``)."""

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.traffic.nccl_curves import NCCL_CURVES
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

EXAMPLE = Path(__file__).resolve().parents[2] / "libra_opt/data/examples/gpt3_175b_a100_cluster.yaml"
CURVE = NCCL_CURVES["a100_nvlink_nccl"]
FABRIC = Fabric((Dim("nvl", "switch", 8, "NVLink"), Dim("ib", "switch", 4, "IB")))
BW = [300.0, 25.0]


def one(kind, size, span, flat=False):
    w = Workload("w", (Layer("l", Phase(0.0, (Collective(kind, size, "g"),))),), {"g": span},
                 flat_ring_groups=frozenset({"g"}) if flat else frozenset())
    return w


@pytest.mark.parametrize("size", [2**20, 48 * 2**20, 2**30])
def test_an_all_reduce_on_one_dimension_runs_at_the_measured_bus_bandwidth(size):
    # busbw = (M / T) 2 (k - 1) / k (nccl-tests): T = 2 (7/8) M / busbw(M)
    t = step_time(one("all_reduce", size, (8, 1)), FABRIC, BW,
                  TimingModel(efficiency={"nvl": "a100_nvlink_nccl"})).step_time_s
    assert_allclose(t, 2 * 7 / 8 * size / (CURVE.busbw_at(size) * 1e9), rtol=1e-12)


@pytest.mark.parametrize("kind", ["all_reduce", "reduce_scatter", "all_gather"])
@pytest.mark.parametrize("span", [(8, 1), (8, 4), (2, 4)])
def test_pipelined_with_a_curve_equals_topology_aware_with_one_chunk_on_one_dimension(kind, span):
    """On a collective that spans one dimension the two models are the same ring; spanning
    two, the sequential model adds the per-dimension phases as topology_aware's single chunk
    does (no latency anywhere). (All-to-all is left out: topology_aware's ring all-to-all
    moves other bytes than the hierarchical model's, with or without a curve.)"""
    size = 24 * 2**20
    eff = {"nvl": "a100_nvlink_nccl", "ib": 0.8}
    ta = TimingModel("topology_aware", collectives=CollectiveSettings(
        algorithm={"nvl": "ring", "ib": "ring"}, efficiency=eff))
    model = "pipelined" if sum(k > 1 for k in span) == 1 else "sequential"
    t_pipe = step_time(one(kind, size, span), FABRIC, BW, TimingModel(model, efficiency=eff))
    t_ta = step_time(one(kind, size, span), FABRIC, BW, ta)
    assert_allclose(t_pipe.step_time_s, t_ta.step_time_s, rtol=1e-9)


def test_a_flat_ring_reads_the_curve_at_the_whole_buffer_on_every_dimension():
    size = 16 * 2**20   # an all-gather shard: the ring over 16 ranks assembles 256 MiB
    w = one("all_gather", size, (8, 2), flat=True)
    fabric = Fabric((Dim("nvl", "switch", 8, "NVLink"), Dim("ib", "switch", 2, "IB")))
    t = TimingModel(efficiency={"nvl": "a100_nvlink_nccl", "ib": "a100_nvlink_nccl"})
    eff = t.efficiency_by_dim(fabric.dims, "all_gather", size, (8, 2), flat_ring=True)
    assert_allclose(eff, [CURVE.efficiency_at(16 * size)] * 2, rtol=1e-12)
    plain = step_time(w, fabric, BW, TimingModel())
    curved = step_time(w, fabric, BW, t)
    assert_allclose(curved.step_time_s, plain.step_time_s / eff[0], rtol=1e-12)


def test_bytes_are_reported_unscaled():
    w = one("all_reduce", 2**26, (8, 1))
    a = step_time(w, FABRIC, BW, TimingModel())
    b = step_time(w, FABRIC, BW, TimingModel(efficiency={"nvl": "a100_nvlink_nccl"}))
    assert_allclose(a.traffic_by_dim_bytes, b.traffic_by_dim_bytes, rtol=0)
    assert b.step_time_s > a.step_time_s


@pytest.fixture(scope="module")
def curved_scenario():
    """The A100 example: its device's measured NVLink curve applies to ``hb`` by default."""
    return load_scenario(EXAMPLE)


def test_the_scenario_prices_its_nvlink_with_the_device_curve(curved_scenario, tmp_path):
    t = curved_scenario.timing
    assert t.is_pipelined and t.efficiency == (("hb", "a100_nvlink_nccl"),)
    path = tmp_path / "s.yaml"   # the line rate instead: collectives.efficiency.hb none
    path.write_text(EXAMPLE.read_text() + "\ncollectives: {efficiency: {hb: none}}\n")
    line = load_scenario(path)
    assert line.timing.efficiency == (("hb", 1.0),)
    plain = evaluate(line, [600.0, 100.0])
    curved = evaluate(curved_scenario, [600.0, 100.0])
    assert curved.objective_value > plain.objective_value


def test_the_optimum_with_a_curve_matches_cvxpy_and_a_brute_force_budget_line(curved_scenario):
    s = curved_scenario
    budget = 1.5e7
    fast = solve(build_problem(s), budget_usd=budget, with_baselines=False)
    ref = solve(build_problem(s, backend="cvxpy"), budget_usd=budget, with_baselines=False)
    assert_allclose(fast.objective_value, ref.objective_value, rtol=1e-6)
    # brute force along the budget line between the bounds hb >= 100, scaleout >= 12.5
    k = s.coefficients.usd_per_gbps
    spare = budget - float(k @ np.array([100.0, 12.5])) - s.coefficients.fixed_usd
    assert spare > 0
    ts = np.linspace(0.0, 1.0, 20001)
    points = [(100.0 + t * spare / k[0], 12.5 + (1 - t) * spare / k[1]) for t in ts]
    objs = [evaluate(s, list(p)).objective_value for p in points
            if p[0] <= 600.0 and p[1] <= 100.0]   # the example's upper bounds
    assert len(objs) > 1000
    assert fast.objective_value <= min(objs) * (1 + 1e-8)
    assert_allclose(fast.objective_value, min(objs), rtol=1e-4)   # the grid's resolution


def test_refusals_and_copies():
    import copy
    import dataclasses
    import pickle

    from libra_opt.errors import InputError

    with pytest.raises(InputError, match="efficiency: under topology_aware the efficiency is a "
                       "collective setting"):
        TimingModel("topology_aware", efficiency={"nvl": 0.5})
    # a curve includes the link's latency: a dimension with its own latency is refused
    lat = Fabric((Dim("nvl", "switch", 8, "NVLink", 1e-6), Dim("ib", "switch", 4, "IB")))
    with pytest.raises(InputError, match=r"collectives\.efficiency\.nvl: 'nvl' is priced with "
                       "the measured curve 'a100_nvlink_nccl'"):
        CollectiveSettings(efficiency={"nvl": "a100_nvlink_nccl"}).check(lat)
    CollectiveSettings(efficiency={"nvl": 0.5}).check(lat)   # a fraction is fine
    # copies keep the resolved settings the efficiency is read with
    t = TimingModel(efficiency={"nvl": "a100_nvlink_nccl"})
    want = t.efficiency_by_dim(FABRIC.dims, "all_reduce", 2**26, (8, 1))
    for u in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t),
              dataclasses.replace(t, training_loop="overlap")):
        assert_allclose(u.efficiency_by_dim(FABRIC.dims, "all_reduce", 2**26, (8, 1)), want)
    assert pickle.loads(pickle.dumps(t)) == t


def test_a_curve_below_its_first_size_takes_that_sizes_time():
    small = [step_time(one("all_reduce", m, (8, 1)), FABRIC, BW,
                       TimingModel(efficiency={"nvl": "a100_nvlink_nccl"})).step_time_s
             for m in (24 * 2**10, 256 * 2**10, 2**20)]
    assert_allclose(small, [2 * 7 / 8 * 2**20 / (CURVE.busbw_gbps[0] * 1e9)] * 3, rtol=1e-12)
