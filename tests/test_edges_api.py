"""The Python API at its edges: names and paths where a scenario is expected, right-hand
sides that are not numbers, arguments of the wrong shape, columns with nothing to plot."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.errors import InputError
from libra_opt.explore.pareto import pareto_front
from libra_opt.io.examples import path as example_path


@pytest.fixture(scope="module")
def gpt3():
    return lo.examples.load("gpt3_175b_4d")


def test_solve_and_evaluate_take_a_name_or_a_path(gpt3):
    ref = lo.solve(gpt3, with_baselines=False)
    by_name = lo.solve("gpt3_175b_4d", with_baselines=False)
    by_path = lo.solve(example_path("gpt3_175b_4d"), with_baselines=False)
    assert_allclose(by_name.bw_gbps, ref.bw_gbps, rtol=1e-12)
    assert_allclose(by_path.bw_gbps, ref.bw_gbps, rtol=1e-12)
    bw = [450.0, 280.0, 200.0, 70.0]
    assert lo.evaluate("gpt3_175b_4d", bw).objective_value == lo.evaluate(gpt3, bw).objective_value


def test_solve_refuses_what_is_not_a_problem():
    with pytest.raises(InputError, match="expected a Scenario or a BandwidthProblem, got dict"):
        lo.solve({"fabric": "x"})


def test_rhs_none_keeps_the_built_bound_and_non_numbers_are_refused(gpt3):
    ref = lo.solve(gpt3, with_baselines=False)
    kept = lo.solve(gpt3, rhs={"sum(bw) == 1000": None}, with_baselines=False)
    assert_allclose(kept.bw_gbps, ref.bw_gbps, rtol=1e-12)
    # a numpy or pandas number is a number: sum(bw) == 1200 scales the bandwidth, and the
    # total is the new right-hand side
    for v in (np.float32(1200.0), np.int64(1200), pd.Series([1200.0]).iloc[0]):
        sol = lo.solve(gpt3, rhs={"sum(bw) == 1000": v}, with_baselines=False)
        assert_allclose(sol.bw_gbps.sum(), 1200.0, rtol=1e-9)
    for bad in ("lots", True, pd.NA, [1000.0]):
        with pytest.raises(InputError, match="sum\\(bw\\) == 1000"):
            lo.solve(gpt3, rhs={"sum(bw) == 1000": bad})
    with pytest.raises(InputError, match="rhs must map"):
        lo.solve(gpt3, rhs=[("sum(bw) == 1000", 1.0)])


def test_compare_fabrics_refuses_a_list_of_family_names(gpt3):
    with pytest.raises(InputError, match="fabrics must map a label to a Fabric"):
        lo.compare_fabrics(gpt3, ["fat_tree", "rail_only"])


def test_pareto_front_refuses_an_all_nan_column():
    df = pd.DataFrame({"network_cost_usd": [1.0, 2.0], "network_power_w": [np.nan, np.nan],
                       "weighted_step_time_s": [2.0, 1.0], "status": ["optimal"] * 2})
    with pytest.raises(InputError, match="'network_power_w' has no finite number") as info:
        pareto_front(df, x="network_power_w")
    assert info.value.field == "x"
    assert pareto_front(df).index.tolist() == [0, 1]  # both are on the cost front
    # no optimal row at all is an empty front, not an error
    assert pareto_front(df.assign(status="infeasible"), x="network_power_w").empty


def test_evaluation_html_names_the_dimensions(gpt3):
    html = lo.evaluate(gpt3, [450.0, 280.0, 200.0, 70.0])._repr_html_()
    for name in gpt3.fabric.names:
        assert f"<td>{name}</td>" in html
    assert "dim #" not in html
