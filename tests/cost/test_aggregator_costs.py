"""Aggregator prices against the NPUs' member groups, in the caps and in perf_per_cost."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.aggregators import Aggregators
from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.errors import InputError, UnboundedDesignError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.heterogeneous import DimMembers
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


def _fabric(members: DimMembers | None = None) -> Fabric:
    return Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B", members=members)))


def _prices(agg: Aggregators | None) -> CostModel:
    cm = CostModel.from_tables({"A": {"link": 1.0}, "B": {"link": 1.0, "switch": 0.0, "nic": 2.0}})
    return dataclasses.replace(cm, aggregators=agg)


def test_member_factors_do_not_discount_aggregator_ports():
    # one member group at a quarter of the price scales the NPU side of pod by 0.25; the
    # ports (32 NPUs x 100 $ per GB/s) are added at full price
    agg = Aggregators(("pod",), usd_per_port_gbps=100.0)
    members = DimMembers(fraction=(1.0,), share=(1.0,), price_factor=(0.25,))
    plain = cost_coefficients(_fabric(), _prices(None)).usd_per_gbps
    k = cost_coefficients(_fabric(members), _prices(agg)).usd_per_gbps
    assert plain[1] > 0
    assert_allclose(k, [plain[0], 0.25 * plain[1] + 32 * 100.0], rtol=1e-12)


def test_slower_members_need_fewer_aggregator_ports():
    # half the NPUs at half speed push 0.5 x 1 + 0.5 x 0.5 = 0.75 GB/s per GB/s of B_pod:
    # ports 32 x 0.75 x 100 = 2,400 $ per GB/s, on top of the NPU side (factor 0.75 too,
    # price factors 1)
    agg = Aggregators(("pod",), usd_per_port_gbps=100.0)
    members = DimMembers(fraction=(1.0, 0.5), share=(0.5, 0.5))
    plain = cost_coefficients(_fabric(), _prices(None)).usd_per_gbps
    k = cost_coefficients(_fabric(members), _prices(agg)).usd_per_gbps
    assert_allclose(k, [plain[0], 0.75 * plain[1] + 2400.0], rtol=1e-12)


def _scenario(objective: str, state_bytes: float, **kw: object) -> Scenario:
    agg = Aggregators(("pod",), state_bytes=state_bytes, usd_per_port_gbps=0.0,
                      usd_per_state_gb=1.0)
    f = _fabric()
    w = Workload("w", (Layer("l", Phase(0.01, (Collective("all_reduce", 4e9, "g"),))),),
                 {"g": (4, 8)})
    return Scenario(f, _prices(agg), (w,), objective=objective, **kw)  # type: ignore[arg-type]


def test_budget_counts_the_state_memory():
    # 1e12 bytes of state memory at 1 $ per GB = 1,000 $; budget 10,000 $: the row is
    # kappa . B <= 9,000, and the reported cost includes the memory
    s = _scenario("perf", 1e12, budget_usd=10_000.0)
    row = {r.label: r for r in s.rows}["budget_usd"]
    assert row.rhs == pytest.approx(9_000.0, rel=1e-12)
    sol = solve(s, with_baselines=False)
    assert sol.network_cost_usd == pytest.approx(10_000.0, rel=1e-6)
    assert float(s.coefficients.usd_per_gbps @ sol.bw_gbps) == pytest.approx(9_000.0, rel=1e-6)


@pytest.mark.parametrize("state_bytes", [0.0, 3e12])
def test_perf_per_cost_counts_the_state_memory(state_bytes):
    # objective T(B) x (kappa . B + F) on the line node + pod = 400: brute force over the
    # line against both backends (the fixed part F moves the optimum)
    cons = (parse_constraint("sum(bw) == 400", _fabric()),)
    s = _scenario("perf_per_cost", state_bytes, constraints=cons)
    grid = np.linspace(0.5, 399.5, 40_000)
    values = [evaluate(s, [b, 400.0 - b]).objective_value for b in grid]
    best = grid[int(np.argmin(values))]
    fast = solve(build_problem(s), with_baselines=False)
    ref = solve(build_problem(s, backend="cvxpy"), with_baselines=False)
    assert fast.objective_value == pytest.approx(ref.objective_value, rel=1e-7)
    assert fast.objective_value <= min(values) * (1 + 1e-9)
    assert fast.bw_gbps[0] == pytest.approx(best, abs=0.05)
    assert fast.network_cost_usd == pytest.approx(
        float(s.coefficients.usd_per_gbps @ fast.bw_gbps) + state_bytes / 1e9, rel=1e-12)


def test_budget_below_the_fixed_part_is_named():
    with pytest.raises(InputError, match="does not cover the network's fixed part") as info:
        _scenario("perf", 1e12, budget_usd=500.0)  # 1,000 $ of state memory
    assert info.value.field == "constraints.budget_usd"


def test_cost_rows_count_the_fixed_part_as_the_budget_does():
    # "cost <= 10000" and budget_usd 10,000 are the same cap: kappa . B <= 9,000
    cons = (parse_constraint("cost <= 10000", _fabric()),)
    a = _scenario("perf", 1e12, constraints=cons)
    b = _scenario("perf", 1e12, budget_usd=10_000.0)
    assert a.rows[0].rhs == pytest.approx(9_000.0, rel=1e-12) == b.rows[0].rhs
    assert solve(a, with_baselines=False).network_cost_usd == pytest.approx(10_000.0, rel=1e-6)


@pytest.mark.parametrize(("compute_s", "bounded"), [(0.0, False), (0.01, True)])
def test_fixed_cost_without_a_time_floor_has_no_optimum(compute_s, bounded):
    # T(B) (kappa . B + F): with no compute and no latency, T = t / B and along B = s B0 the
    # objective t F / s + t kappa . B0 falls toward its infimum without reaching it; with
    # compute it grows again (both backends must say the same)
    agg = Aggregators(("pod",), state_bytes=1e12, usd_per_port_gbps=0.0, usd_per_state_gb=1.0)
    w = Workload("w", (Layer("l", Phase(compute_s, (Collective("all_reduce", 4e9, "g"),))),),
                 {"g": (4, 8)})
    s = Scenario(_fabric(), _prices(agg), (w,), objective="perf_per_cost")
    if not bounded:
        for backend in ("clarabel", "cvxpy"):
            with pytest.raises(UnboundedDesignError):
                solve(build_problem(s, backend=backend), with_baselines=False)
        return
    fast = solve(build_problem(s), with_baselines=False)
    ref = solve(build_problem(s, backend="cvxpy"), with_baselines=False)
    assert fast.objective_value == pytest.approx(ref.objective_value, rel=1e-7)
