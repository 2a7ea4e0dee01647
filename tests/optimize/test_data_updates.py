"""Re-solves with new numbers: workload weights, right-hand sides, bounds and prices change the
built program's data (one Clarabel solver updated in place), and give what a fresh build
gives; a point's answer does not depend on the points solved before it."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, same_terms, solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
from tests.fixtures import cost_2d, fabric_2d

S = 300.0  # GB/s, the total both dimensions share


def two_workloads(objective="perf"):
    """``a`` all-reduces 2 GB over the ring of 4 (node: 2 x 2 x 3/4 = 3 GB per NPU), ``b``
    1 GB over the switch of 8 (pod: 2 x 1 x 7/8 = 1.75 GB); compute 10 and 20 ms."""
    a = Workload("a", (Layer("l", Phase(0.01, (Collective("all_reduce", 2e9, "g"),))),),
                 {"g": (4, 1)})
    b = Workload("b", (Layer("l", Phase(0.02, (Collective("all_reduce", 1e9, "g"),))),),
                 {"g": (1, 8)})
    f = fabric_2d()
    return Scenario(f, cost_2d(), (a, b), constraints=(parse_constraint(f"sum(bw) == {S}", f),),
                    objective=objective)


def hand_optimum(wa, wb):
    """min wa (0.01 + 3 / B0) + wb (0.02 + 1.75 / B1) on B0 + B1 = S: by Cauchy-Schwarz
    B_i is proportional to sqrt(w_i c_i), the optimum wa 0.01 + wb 0.02 + (sqrt(3 wa) +
    sqrt(1.75 wb))^2 / S."""
    ra, rb = math.sqrt(3.0 * wa), math.sqrt(1.75 * wb)
    return np.array([S * ra / (ra + rb), S * rb / (ra + rb)]), \
        wa * 0.01 + wb * 0.02 + (ra + rb) ** 2 / S


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_new_weights_are_new_numbers_in_q_and_the_hand_optimum(backend):
    problem = build_problem(two_workloads(), backend=backend)
    for wa, wb in [(1.0, 1.0), (4.0, 1.0), (1.0, 9.0), (0.3, 2.5)]:
        sol = solve(problem, weights={"a": wa, "b": wb}, with_baselines=False)
        bw, objective = hand_optimum(wa, wb)
        assert sol.scenario.weights == (wa, wb)
        assert_allclose(sol.objective_value, objective, rtol=1e-7)
        assert_allclose(sol.bw_gbps, bw, rtol=1e-5)
        same = solve(problem, weights=[wa, wb], with_baselines=False)  # one per workload
        assert_allclose(same.objective_value, objective, rtol=1e-7)
    if backend == "clarabel":  # one structure and one solver served every point
        assert problem.program.q_by_workload.shape[0] == 2


def test_bad_weights_are_refused_naming_weights():
    problem = build_problem(two_workloads())
    for weights, needle in [({"c": 1.0}, "no workload named 'c'"),
                            ({"a": "x"}, "must be numbers"), ({"a": True}, "must be numbers"),
                            ({"a": 0.0}, "must be a finite number > 0"),
                            ([1.0, float("nan")], "must be a finite number > 0"),
                            ([1.0], "1 weights for 2 workloads"), ("a", "must map")]:
        with pytest.raises(InputError, match=needle) as exc:
            solve(problem, weights=weights)
        assert exc.value.field == "weights"


def test_an_answer_does_not_depend_on_the_points_solved_before():
    """The solver kept with a structure is made from the program's own data: a point gives
    the same bits whether it is the first solved or the fourth."""
    scen = load_scenario("gpt3_175b_4d").with_limits(budget_usd=4e7)
    first = solve(build_problem(scen), budget_usd=3e7, with_baselines=False).bw_gbps
    problem = build_problem(scen)
    for budget in (2.2e7, 5.5e7, 3.3e7):
        solve(problem, budget_usd=budget, with_baselines=False)
    solve(problem, weights=[2.0], with_baselines=False)
    assert np.array_equal(solve(problem, budget_usd=3e7, with_baselines=False).bw_gbps, first)


def test_a_perspective_answer_does_not_depend_on_the_points_solved_before():
    """Under ``tco`` a budget sits in the perspective form's matrix (its ``u`` column): a
    sweep point gives the same bits first or after others (the solver once kept from the
    solve before gave 724.5361529 GB/s at $200M after $100M, 724.5351137 alone)."""
    import libra_opt as lo

    after = lo.sweep("llama3_405b_h100_tco", {"budget_usd": [1e8, 2e8]}, progress=False)
    alone = lo.sweep("llama3_405b_h100_tco", {"budget_usd": [2e8]}, progress=False)
    cols = ["bw_hb_gbps", "bw_scaleout_gbps", "objective"]
    assert np.array_equal(after[cols].to_numpy()[1], alone[cols].to_numpy()[0])


def test_a_compiled_edit_of_bounds_and_prices_keeps_the_program_and_its_solver():
    """``build_problem(scen, like=base)``: new bounds (and a new price) change numbers in the
    constraint rows of the base's program (same structure, same solver, same terms); the
    answer is a fresh build's."""
    from libra_opt.explore.overrides import apply_overrides

    base = load_scenario("gpt3_175b_a100_cluster")
    like = build_problem(base)
    prices = {"parts.ib_ndr_switch_64x400g.price_usd": 30_000}  # the switch: $35k in the catalog
    for edit in ({"constraints.bounds.scaleout[1]": 60.0},
                 {"constraints.bounds.hb": [150, 500], "budget_usd": 3e7},
                 {"cost_model.overrides": prices, "budget_usd": 2.5e7}):
        scen = apply_overrides(base, edit)
        assert same_terms(base, scen)
        reused = build_problem(scen, like=like)
        assert reused.terms is like.terms and reused.walks is like.walks
        assert reused.program._clarabel is like.program._clarabel
        fresh = build_problem(scen)
        a = solve(reused, with_baselines=False)
        b = solve(fresh, with_baselines=False)
        assert_allclose(a.objective_value, b.objective_value, rtol=1e-7)
        assert_allclose(a.bw_gbps, b.bw_gbps, rtol=1e-5)


def test_another_form_or_other_rows_build_a_new_program():
    scen = two_workloads()
    like = build_problem(scen)
    more_rows = scen.with_limits(budget_usd=1e7)  # one more row: another structure
    assert build_problem(more_rows, like=like).program._clarabel is not like.program._clarabel
    other = two_workloads("perf_per_cost")
    assert not same_terms(scen, other)  # other workload objects
