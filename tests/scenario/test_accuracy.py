"""The one sameness rule (libra_opt.scenario.accuracy.same) and the decisions made with it."""

import numpy as np
import pandas as pd
import pytest

from libra_opt.report.notes import family_notes, identical_rows_note
from libra_opt.scenario.accuracy import CONSTRAINT_REL_TOL, OBJECTIVE_REL_TOL, SAME_REL_TOL, same
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario


def test_the_rule_is_ten_times_the_verification_tolerance():
    assert SAME_REL_TOL == pytest.approx(10 * max(OBJECTIVE_REL_TOL, CONSTRAINT_REL_TOL))


@pytest.mark.parametrize(("a", "b", "want"), [
    # the two solver builds of the compare note: $9 and $86 of $51.3M are round-off
    (51_349_667.0, 51_349_658.0, True),
    (51_349_667.0, 51_349_581.0, True),
    # 1e-5 relative is the edge; 2e-5 is a difference
    (1.0, 1.0 + 0.9e-5, True),
    (1.0, 1.0 + 2e-5, False),
    (0.0, 0.0, True),
    (0.0, 1e-300, False),
    (float("nan"), float("nan"), False),
])
def test_numbers(a, b, want):
    assert same(a, b) is want
    assert same(b, a) is want


def test_vectors_are_judged_at_their_largest_entry():
    # an unused dimension at 1e-9 in one solve and 3e-9 in another: same design
    assert same([449.5, 66.9, 1e-9], [449.5, 66.9, 3e-9])
    # 0.01 GB/s moved between dimensions of ~450: 2.2e-5 of the design, a different one
    assert not same([449.5, 66.9], [449.49, 66.91])
    assert not same([1.0, 2.0], [1.0, 2.0, 3.0])


def test_an_explicit_scale():
    # a constraint row of scale 600 met to 4.8e-9: binding
    assert same(600.0 - 4.8e-9, 600.0, scale=600.0)
    assert not same(1e-3, 0.0, scale=1.0)


def test_evaluation_violated_uses_the_rule():
    # toy scenario: sum(bw) == 300 (and positivity)
    scen = toy_scenario()
    ok = evaluate(scen, [200.0, 100.0 + 300 * 0.5e-5])  # off by 5e-6 of 300: round-off
    assert ok.violated() == () and ok.feasible()
    # the optimizer's acceptance test stays at the verification tolerance
    assert not ok.feasible(CONSTRAINT_REL_TOL)
    bad = evaluate(scen, [200.0, 100.0 + 300 * 3e-5])
    assert bad.violated() == ("sum(bw) == 300",) and not bad.feasible()


def _sweep(bw2):
    return pd.DataFrame({"budget_usd": [1e5, 2e5, 3e5], "status": ["optimal"] * 3,
                         "bw_node_gbps": [100.0, 200.0, 200.0],
                         "bw_pod_gbps": [50.0, 100.0, bw2],
                         "network_cost_usd": [5e4, 1e5, 1e5]})


@pytest.mark.parametrize(("bw2", "repeats"), [(100.0 * (1 + 2e-7), True),
                                             (100.0 * (1 + 1.7e-6), True),
                                             (100.0 * (1 + 1e-4), False)])
def test_sweep_rows_repeat_up_to_round_off(bw2, repeats):
    note = identical_rows_note(_sweep(bw2), toy_scenario())
    assert (note is not None) is repeats


@pytest.mark.parametrize(("rel", "modes"), [
    (2e-7, "equal_budget and equal_budget_joint rows repeat"),
    (1.7e-6, "equal_budget and equal_budget_joint rows repeat"),
    (1e-4, "equal_budget rows repeat"),
])
def test_comparison_modes_repeat_up_to_round_off(rel, modes):
    bw = [200.0, 100.0]
    joint = list(np.array(bw) * (1 + rel))
    df = pd.DataFrame({"mode": ["equal_bw", "equal_budget", "equal_budget_joint"],
                       "fabric": ["fat_tree"] * 3,
                       "bw_gbps": [bw, bw, joint],
                       "network_cost_usd": [1e6, 1e6, 1e6 * (1 + rel)]})
    notes = [n for n in family_notes(df, toy_scenario()) if "repeat" in n]
    assert len(notes) == 1 and notes[0].startswith(modes + " the equal_bw rows")
    assert "sum(bw) == 300" in notes[0]


def test_same_each_is_same_entry_by_entry():
    from libra_opt.scenario.accuracy import same_each

    a = np.array([600.0 - 4.8e-9, 1.0, 0.0, np.nan, np.inf, 5.0])
    b = np.array([600.0, 1.1, 0.0, np.nan, np.inf, 5.0 + 1e-3])
    scale = np.array([600.0, 1.1, 0.0, 1.0, np.inf, 1e3])
    want = [same(x, y, scale=s) for x, y, s in zip(a, b, scale, strict=True)]
    assert same_each(a, b, scale).tolist() == want == [True, False, True, False, True, True]
