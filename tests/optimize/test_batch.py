"""Data-only solves re-checked together (:func:`solve_many`): each answer is the hand optimum,
the same bits as :func:`solve` gives alone, and every point the batch does not decide is left
to :func:`solve` (``None``)."""

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.io import load_scenario
from libra_opt.optimize.batch import solve_many
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate, evaluate_many
from libra_opt.scenario.examples import toy_scenario
from libra_opt.traffic.step_time import step_time_from_walk, step_times_s, walk_arrays
from libra_opt.traffic.topology_aware import CollectiveSettings
from tests.optimize.test_data_updates import hand_optimum, two_workloads


def same_as_solve(problem_of, points, answers):
    """Every non-None answer equals a fresh :func:`solve` of its point, bit for bit."""
    for (rhs, weights), a in zip(points, answers, strict=True):
        if a is None:
            continue
        sol = solve(problem_of(), rhs=rhs, weights=weights or None, with_baselines=False)
        ev = sol.evaluation
        assert a.objective_value == sol.objective_value
        assert a.bw_gbps == tuple(sol.bw_gbps.tolist())
        assert a.step_time_s == tuple(t.step_time_s for t in ev.workloads)
        assert a.weighted_step_time_s == ev.weighted_step_time_s
        assert a.network_cost_usd == ev.cost.network_cost_usd
        assert a.network_power_w == ev.cost.network_power_w
        assert a.shadow == tuple((c.label, c.shadow_price) for c in sol.constraints)


def test_weights_give_the_hand_optimum_and_what_solve_gives():
    problem = build_problem(two_workloads())
    pairs = [(1.0, 1.0), (4.0, 1.0), (1.0, 9.0), (0.3, 2.5)]
    points = [({}, {"a": wa, "b": wb}) for wa, wb in pairs]
    answers = solve_many(problem, points)
    assert all(a is not None for a in answers)
    for (wa, wb), a in zip(pairs, answers, strict=True):
        bw, objective = hand_optimum(wa, wb)
        assert_allclose(a.objective_value, objective, rtol=1e-7)
        assert_allclose(a.bw_gbps, bw, rtol=1e-5)
    same_as_solve(lambda: build_problem(two_workloads()), points, answers)


@pytest.mark.parametrize("name, label, values", [
    ("gpt3_175b_4d", "sum(bw) == 1000", np.linspace(500.0, 2000.0, 7)),
    ("multi_4d", "budget_usd", np.linspace(3e7, 9e7, 7)),
    ("transformer_1t_4d_ppc", "bw.pod <= 100.0", np.linspace(20.0, 200.0, 7)),
    ("gpt3_175b_a100_cluster", "budget_usd", np.linspace(1e7, 6e7, 7)),
])
def test_right_hand_sides_of_the_examples_are_what_solve_gives(name, label, values):
    points = [({label: float(v)}, {}) for v in values]
    answers = solve_many(build_problem(load_scenario(name)), points)
    assert sum(a is not None for a in answers) >= 5  # the batch decides most of them
    same_as_solve(lambda: build_problem(load_scenario(name)), points, answers)


def test_points_the_batch_does_not_decide_are_left_to_solve():
    scen = load_scenario("gpt3_175b_a100_cluster")
    problem = build_problem(scen)
    # a budget below the bandwidth floors' cost (infeasible), a label the problem lacks,
    # a bad weight, then one the batch decides
    points = [({"budget_usd": 1e5}, {}), ({"power_w": 1e6}, {}),
              ({}, {"gpt3_175b": -1.0}), ({"budget_usd": 4e7}, {})]
    answers = solve_many(problem, points)
    assert answers[:3] == [None, None, None] and answers[3] is not None
    # a failure model needs the Solution's failure report: all left to solve()
    tco = build_problem(load_scenario("llama3_405b_h100_tco"))
    assert tco.scenario.reliability is not None
    assert solve_many(tco, [({}, {}), ({}, {})]) == [None, None]
    # the cvxpy reference backend, and a dimension without traffic (idle): solve() decides
    assert solve_many(build_problem(toy_scenario(), backend="cvxpy"), [({}, {})]) == [None]


def test_idle_dimensions_are_left_to_solve():
    scen = two_workloads()
    problem = build_problem(dataclasses.replace(scen, workloads=scen.workloads[:1],
                                                weights=None))  # pod carries nothing
    assert problem.terms.used_dims.tolist() == [0]
    assert solve_many(problem, [({}, {}), ({}, {})]) == [None, None]


@pytest.mark.parametrize("name", ["gpt3_175b_4d", "multi_4d", "transformer_1t_4d_ppc",
                                  "llama3_405b_h100_tco", "deepseek_v3_rail_only"])
def test_evaluate_many_is_evaluate_row_by_row(name):
    scen = load_scenario(name)
    rng = np.random.default_rng(7)
    bw = rng.uniform(5.0, 400.0, size=(6, scen.fabric.n_dims))
    many = evaluate_many([scen] * len(bw), bw)
    for i, b in enumerate(bw):
        ev = evaluate(scen, b)
        assert many.step_time_s[i].tolist() == [t.step_time_s for t in ev.workloads]
        assert many.weighted_step_time_s[i] == ev.weighted_step_time_s
        assert many.network_cost_usd[i] == ev.cost.network_cost_usd
        assert many.objective_value[i] == ev.objective_value
        assert many.labels == tuple(ev.residuals)
        assert many.residuals[i].tolist() == list(ev.residuals.values())
        assert many.residual_scales[i].tolist() == list(ev.residual_scales.values())
    assert many.finite().all()
    assert not many.bw_gbps.flags.writeable


def test_evaluate_many_refuses_bad_bandwidths_and_mixed_scenarios():
    scen = toy_scenario()
    with pytest.raises(InputError, match="expected 2 x 2 finite bandwidths") as e:
        evaluate_many([scen, scen], [[1.0, 2.0]])
    assert e.value.field == "bw"
    with pytest.raises(InputError, match="finite bandwidths"):
        evaluate_many([scen], [[1.0, -2.0]])
    with pytest.raises(InputError, match="differ only in weights") as e:
        evaluate_many([scen, scen.with_limits(budget_usd=1e6),
                       dataclasses.replace(scen, collective_model="sequential")], np.ones((3, 2)))
    assert e.value.field == "scenarios"


@pytest.mark.parametrize("timing", [
    {}, {"collective_model": "sequential"}, {"training_loop": "overlap"},
    {"collective_model": "topology_aware"},
    {"collectives": CollectiveSettings(efficiency={"chiplet": 0.5, "pod": "ndr400_ib_nccl"})},
])
def test_step_times_of_many_rows_are_each_rows_step_time(timing):
    scen = dataclasses.replace(load_scenario("gpt3_175b_4d"), **timing)
    walk = walk_arrays(scen.workloads[0], scen.fabric, scen.timing)
    bw = np.array([[100.0, 200.0, 300.0, 400.0], [1.0, 1.0, 1.0, 1.0], [50.0, 0.5, 80.0, 9.0]])
    many = step_times_s(walk, bw, scen.timing)
    assert many.tolist() == [step_time_from_walk(walk, b, scen.timing).step_time_s for b in bw]


def faulty(monkeypatch, problem, fault, at=1):
    """Make the ``at``-th answer :func:`solve_many` reads (0-based) wrong by ``fault(bw,
    solver_objective) -> (bw, solver_objective)``."""
    import libra_opt.optimize.batch as batch

    read, seen = batch._read_run, []

    def wrong(*args):
        bw, obj, factor = read(*args)
        seen.append(None)
        if len(seen) - 1 == at:
            bw, obj = fault(bw, obj)
        return bw, obj, factor

    monkeypatch.setattr(batch, "_read_run", wrong)


def true_objective(problem):
    return lambda bw: evaluate(problem.scenario, bw).objective_value


@pytest.mark.parametrize("what", ["non-finite", "broken cap", "sliver", "gap"])
def test_an_answer_solve_would_not_accept_at_once_is_left_to_solve(monkeypatch, what):
    """Each check of the batch on its own: the faulty point (the second) is left to solve(),
    the others are decided. The broken row and the sliver keep the solver's objective equal
    to the evaluation, so that only the rows fail."""
    problem = build_problem(load_scenario("gpt3_175b_a100_cluster"))
    value = true_objective(problem)
    faults = {
        "non-finite": lambda bw, obj: (bw * np.inf, obj),
        # the caps hb <= 600 and scaleout <= 100 broken by 1e-4 of their scale
        "broken cap": lambda bw, obj: ((b := np.array([600.06, 100.01])), value(b)),
        # the binding budget broken by 1e-9 of its scale: within the tolerance, beyond the
        # 1e-11 after which solve() looks for a sliver
        "sliver": lambda bw, obj: ((b := bw * (1 + 1e-9)), value(b)),
        "gap": lambda bw, obj: (bw, obj * (1 + 2e-7)),  # a tenth of the tolerance is 1e-7
    }
    faulty(monkeypatch, problem, faults[what])
    points = [({"budget_usd": b}, {}) for b in (8e6, 1e7, 1.2e7)]
    answers = solve_many(problem, points)
    assert [a is None for a in answers] == [False, True, False]
    rows = {c.label: c for c in solve(problem, budget_usd=1e7).constraints}
    assert rows["budget_usd"].active  # the sliver's row binds at this budget


def test_a_broken_equality_is_left_to_solve(monkeypatch):
    """``sum(bw) == total`` off by 1e-4 of its scale (the tolerance: 1e-6), the solver's
    objective equal to the evaluation's."""
    problem = build_problem(load_scenario("gpt3_175b_4d"))
    value = true_objective(problem)
    faulty(monkeypatch, problem, lambda bw, obj: ((b := bw * (1 + 1e-4)), value(b)))
    points = [({"sum(bw) == 1000": t}, {}) for t in (900.0, 1000.0, 1100.0)]
    assert [a is None for a in solve_many(problem, points)] == [False, True, False]


def test_an_absurd_optimum_is_left_to_solve_which_names_it():
    problem = build_problem(load_scenario("gpt3_175b_4d"))
    points = [({"sum(bw) == 1000": 1e3}, {}), ({"sum(bw) == 1000": 1e10}, {})]
    assert [a is None for a in solve_many(problem, points)] == [False, True]
    with pytest.raises(InputError, match="beyond the sane limit"):
        solve(problem, rhs={"sum(bw) == 1000": 1e10})


def test_evaluate_many_takes_equal_scenarios_built_apart():
    s, t = toy_scenario(), dataclasses.replace(toy_scenario(), weights=(2.0,))
    many = evaluate_many([s, t], [[200.0, 100.0], [200.0, 100.0]])
    assert many.weighted_step_time_s.tolist() == [evaluate(s, [200.0, 100.0]).weighted_step_time_s,
                                                  evaluate(t, [200.0, 100.0]).weighted_step_time_s]
    assert_allclose(many.weighted_step_time_s[1], 2 * many.weighted_step_time_s[0], rtol=1e-15)
