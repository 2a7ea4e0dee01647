"""pareto_front against a brute-force O(n^2) dominance check, and on a real budget sweep."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.explore.pareto import pareto_front
from libra_opt.explore.sweep import sweep
from libra_opt.scenario.examples import toy_scenario


def brute_force_front(xs, ys, ok):
    """Indices of the usable points no other usable point dominates (both <=, one <)."""
    idx = [i for i in range(len(xs)) if ok[i] and np.isfinite(xs[i]) and np.isfinite(ys[i])]
    keep = []
    for i in idx:
        if not any(xs[j] <= xs[i] and ys[j] <= ys[i] and (xs[j] < xs[i] or ys[j] < ys[i])
                   for j in idx if j != i):
            keep.append(i)
    return sorted(keep, key=lambda i: (xs[i], ys[i]))


values = st.one_of(st.integers(0, 6).map(float), st.just(float("nan")),
                   st.floats(0, 10, allow_nan=False))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(values, values, st.booleans()), max_size=30))
def test_matches_brute_force(points):
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    ok = [p[2] for p in points]
    df = pd.DataFrame({"cost": xs, "time": ys,
                       "status": ["optimal" if o else "infeasible" for o in ok]},
                      index=[10 * i for i in range(len(points))])
    taking_part = [i for i in range(len(points)) if ok[i]]
    if taking_part and any(all(math.isnan(v[i]) for i in taking_part) for v in (xs, ys)):
        with pytest.raises(InputError, match="has no finite number"):  # not an empty front
            pareto_front(df, x="cost", y="time")
        return
    front = pareto_front(df, x="cost", y="time")
    want = brute_force_front(xs, ys, ok)
    # equal (x, y) pairs may come in either order: compare as sorted (x, y, index) rows
    assert sorted(front.index.tolist()) == sorted(10 * i for i in want)
    assert front[["cost", "time"]].values.tolist() == [[xs[i], ys[i]] for i in want]


def test_budget_sweep_front_is_monotone():
    k = toy_scenario().coefficients.usd_per_gbps
    budgets = np.linspace(k[0] * 300 * 1.02, 150_000, 15)
    df = sweep(toy_scenario(), {"budget_usd": budgets}, progress=False)
    front = pareto_front(df)
    assert len(front) >= 5
    assert np.all(np.diff(front["network_cost_usd"]) > 0)
    assert np.all(np.diff(front["weighted_step_time_s"]) < 0)
    # the points beyond the balanced optimum's cost ($121,600) all cost the same: at most
    # one of them (the cheapest, up to rounding) is on the front
    assert (front["network_cost_usd"] > 121_600 * (1 + 1e-6)).sum() == 0


def test_missing_column_names_it():
    with pytest.raises(InputError) as exc:
        pareto_front(pd.DataFrame({"a": [1.0]}), x="a", y="b")
    assert exc.value.field == "y" and "'b'" in exc.value.message
