"""The search plot spreads no round-off over an axis and draws the front its legend names."""

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402

from libra_opt.report.search_plot import plot_search  # noqa: E402


def _result(costs, steps):
    n = len(costs)
    t = pd.DataFrame({"status": ["optimal"] * n, "network_cost_usd": costs,
                      "step_time_s": steps, "rank": pd.array(range(1, n + 1), dtype="Int64"),
                      "tp": [8] * n, "cp": [1] * n, "pp": list(range(1, n + 1)), "dp": [4] * n})
    return SimpleNamespace(table=t, objective="perf")


def test_costs_equal_but_for_round_off_are_one_cost():
    # $17.3888M and $17.3887999992M: the axis must not run over that 8e-4 $ spread
    fig = plot_search(_result([17_388_800.0, 17_388_799.9992, 17_388_800.0], [3.0, 2.0, 2.5]))
    ax = fig.axes[0]
    lo, hi = ax.get_xlim()
    assert hi - lo > 0.01 * 17.3888   # a 2 % window around the one cost, in $M
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "every candidate costs $17.39M: no cost trade-off" in labels
    assert not any(s.startswith("Pareto front") for s in labels)
    assert not [ln for ln in ax.lines if len(ln.get_xdata())]   # no front drawn through noise


def test_distinct_costs_draw_the_front_they_name():
    fig = plot_search(_result([1e6, 2e6, 3e6, 2.5e6], [3.0, 2.0, 1.5, 2.5]))
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(s.startswith("Pareto front") for s in labels)
    # the front: (1, 3.0), (2, 2.0), (3, 1.5); (2.5, 2.5) is dominated by (2, 2.0)
    (front,) = ax.lines
    assert front.get_xdata().tolist() == [1.0, 2.0, 3.0]
    assert front.get_ydata().tolist() == [3.0, 2.0, 1.5]


def test_snapped_takes_the_smallest_of_values_alike_up_to_round_off():
    import numpy as np

    from libra_opt.report.search_plot import _snapped

    got = _snapped(np.array([17388800.0, 17388799.9992, 17100000.0])).tolist()
    assert got == [17388799.9992, 17388799.9992, 17100000.0]


def test_layouts_tell_apart_designs_that_differ_in_placement_only():
    from libra_opt.report.search_plot import _layouts

    best = pd.DataFrame({"rank": [1, 2], "tp": [4, 4], "cp": [4, 4], "pp": [16, 16],
                         "dp": [64, 64], "placement": [
                             "tp: hb 4 | cp: hb 2, scaleout 2 | dp: scaleout 64 | pp: scaleout 16",
                             "tp: hb 4 | cp: scaleout 4 | dp: hb 2, scaleout 32 | pp: scaleout 16"]})
    assert _layouts(best) == ["TP4 CP4 PP16 DP64 [cp: hb 2, scaleout 2]",
                              "TP4 CP4 PP16 DP64 [cp: scaleout 4]"]
