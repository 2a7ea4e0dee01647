"""sensitivity: duals against finite differences of re-solves, the model derivative by hand."""

import dataclasses

import numpy as np
from numpy.testing import assert_allclose

from libra_opt.explore.sensitivity import sensitivity
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.examples import toy_scenario


def central(problem, label, rhs, h):
    up = solve(problem, rhs={label: rhs + h}, with_baselines=False).objective_value
    down = solve(problem, rhs={label: rhs - h}, with_baselines=False).objective_value
    return (up - down) / (2 * h)


def test_budget_and_bound_values_match_resolves():
    scen = load_scenario("deepseek_v3_rail_only")
    problem = build_problem(scen)
    sol = solve(problem)
    df = sensitivity(sol).set_index("dim")
    # the budget binds and the scale-out sits at its 200 GB/s cap
    assert_allclose(sol.network_cost_usd, scen.budget_usd, rtol=1e-6)
    assert_allclose(sol.bw_gbps[1], 200.0, rtol=1e-6)
    budget_fd = central(problem, "budget_usd", scen.budget_usd, 1e-4 * scen.budget_usd)
    assert budget_fd < 0
    assert_allclose(df["budget_objective_per_usd"], budget_fd, rtol=1e-3)
    cap = next(c.label for c in scen.constraints if c.label.startswith("bw.scaleout <="))
    cap_fd = central(problem, cap, 200.0, 0.05)
    assert cap_fd < 0
    assert_allclose(df.loc["scaleout", "bound_objective_per_gbps"], cap_fd, rtol=1e-3)
    assert df.loc["hb", "bound_objective_per_gbps"] == 0.0   # no HB bound binds


def test_model_derivative_by_hand_and_kkt():
    # sequential collectives: step = 0.01 + 1 / B_node + 0.5 / B_pod (GB over GB/s)
    sol = solve(dataclasses.replace(toy_scenario(), collective_model="sequential"))
    b = sol.bw_gbps
    df = sensitivity(sol)
    assert_allclose(df["step_s_per_gbps"], [-1 / b[0] ** 2, -0.5 / b[1] ** 2], rtol=1e-5)
    k = toy_scenario().coefficients.usd_per_gbps
    assert_allclose(df["step_s_per_usd"], df["step_s_per_gbps"] / k, rtol=1e-12)
    # at a smooth optimum of sum(bw) == 300, both dimensions' marginal values equal the
    # total-bandwidth row's dual (KKT stationarity): d step / d B_d = shadow price
    total = df.attrs["total_bw_objective_per_gbps"]["sum(bw) == 300"]
    assert_allclose(df["step_s_per_gbps"], total, rtol=1e-4)
    assert np.isnan(df.attrs["budget_objective_per_usd"])


def test_interior_dimension_per_dollar_equals_budget_dual():
    """KKT: a dimension strictly inside its bounds earns the budget's dual per $ spent."""
    sol = solve(load_scenario("deepseek_v3_rail_only"))
    df = sensitivity(sol).set_index("dim")
    assert 100 < sol.bw_gbps[0] < 900
    assert_allclose(df.loc["hb", "step_s_per_usd"], df.loc["hb", "budget_objective_per_usd"],
                    rtol=1e-3)
