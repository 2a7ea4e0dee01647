"""Extreme but finite numbers (1e-300 .. 1e308), NaN, infinities, and numpy and pandas
scalar types, fed to ``evaluate``, ``solve`` (caps and right-hand sides) and overrides on a
small scenario: each answer is right, or an :class:`InputError` (or, for caps, an
infeasible / unbounded verdict) -- never another exception, a numpy warning, or a NaN."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.errors import InfeasibleDesignError, InputError, UnboundedDesignError
from libra_opt.explore.overrides import apply_overrides
from libra_opt.io import examples
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate
from tests.fixtures import scenario_2d

FAST = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=list(HealthCheck))

MAGNITUDES = st.one_of(
    st.floats(min_value=1e-300, max_value=1e308),
    st.sampled_from([0.0, 1e-300, 5e-324, 1e308, 1.7976931348623157e308, -1.0, -1e308]),
    st.just(math.nan), st.just(math.inf), st.just(-math.inf),
)


@st.composite
def numbers(draw):
    """A number as a user may hold it: Python float or int, numpy or pandas scalar."""
    x = draw(MAGNITUDES)
    kind = draw(st.sampled_from(["float", "np64", "np32", "int", "npint", "pandas", "series"]))
    if kind == "np64":
        return np.float64(x)
    if kind == "np32":
        with np.errstate(over="ignore"):
            return np.float32(x)  # above 3.4e38 this is inf: refused like any inf
    if kind in ("int", "npint"):
        if not math.isfinite(x) or abs(x) > 9e18:
            return x
        return int(x) if kind == "int" else np.int64(int(x))
    if kind == "pandas":
        return pd.Series([x]).iloc[0]
    if kind == "series":
        return pd.Series([x], dtype="Float64").iloc[0]  # pandas' nullable float (NA for NaN)
    return x


def hand_step_time_s(b0, b1):
    """``tests.fixtures.workload_2d`` by hand (pipelined, no overlap; traffic in GB):
    compute 3.5 ms + 1.5/B0 + max(2/B0, 1.75/B1) + max(0.375/B0, 0.4375/B1)."""
    return (3.5e-3 + 1.5 / b0 + max(2.0 / b0, 1.75 / b1) + max(0.375 / b0, 0.4375 / b1))


@FAST
@given(b0=numbers(), b1=numbers())
def test_evaluate_is_right_or_refuses(b0, b1):
    scen = scenario_2d(constraints=("sum(bw) == 300",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            ev = evaluate(scen, [b0, b1])
        except InputError:
            return
    f0, f1 = float(b0), float(b1)
    assert f0 > 0 and f1 > 0 and math.isfinite(f0) and math.isfinite(f1)
    # (a zero bandwidth carries traffic here: refused, so both are positive)
    assert_allclose(ev.weighted_step_time_s, hand_step_time_s(f0, f1), rtol=1e-12)
    assert_allclose(ev.cost.network_cost_usd, 64 * f0 + 1088 * f1, rtol=1e-12)
    total = f0 + f1
    assert_allclose(ev.residuals["sum(bw) == 300"], abs(total - 300), rtol=1e-9, atol=1e-9)
    assert ev.feasible() == (abs(total - 300) <= 1e-6 * max(1.0, 300, total))
    assert all(math.isfinite(v) for v in ev.residuals.values())


@pytest.fixture(scope="module")
def capped_problem():
    return build_problem(scenario_2d(constraints=("sum(bw) <= 300", "bw[0] >= 1"),
                                     budget_usd=1e5, power_w=1e4))


def check_solution(scen_problem, sol):
    """The numpy evaluator confirms the answer: objective, constraints, finite figures."""
    ev = evaluate(sol.scenario, sol.bw_gbps)
    assert ev.feasible(1e-6)
    assert_allclose(sol.objective_value, ev.objective_value, rtol=1e-6)
    assert math.isfinite(sol.objective_value) and np.all(np.isfinite(sol.bw_gbps))
    assert_allclose(sol.objective_value,
                    hand_step_time_s(float(sol.bw_gbps[0]), float(sol.bw_gbps[1])), rtol=1e-9)


@FAST
@given(budget=numbers(), power=numbers(), total=numbers())
def test_solve_caps_and_rhs_are_right_or_refused(capped_problem, budget, power, total):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            sol = solve(capped_problem, budget_usd=budget, power_w=power,
                        rhs={"sum(bw) <= 300": total}, with_baselines=False)
        except (InputError, InfeasibleDesignError, UnboundedDesignError):
            return
    check_solution(capped_problem, sol)
    assert sol.network_cost_usd <= float(budget) * (1 + 1e-9)
    assert sol.network_power_w <= float(power) * (1 + 1e-9)
    assert float(sol.bw_gbps.sum()) <= float(total) * (1 + 1e-9)


@pytest.fixture(scope="module")
def gpt3():
    return examples.load("gpt3_175b_4d")


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(["budget_usd", "fabric.dims.pod.latency_s",
                             "fabric.dims.chiplet.latency_s"]), value=numbers())
def test_overrides_are_right_or_refused(gpt3, path, value):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            scen = apply_overrides(gpt3, {path: value})
            sol = solve(scen, with_baselines=False)
        except (InputError, InfeasibleDesignError):
            return
    ev = evaluate(sol.scenario, sol.bw_gbps)
    assert ev.feasible(1e-6) and math.isfinite(ev.objective_value)
    assert_allclose(sol.objective_value, ev.objective_value, rtol=1e-6)
