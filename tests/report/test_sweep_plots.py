"""Plots of sweeps over several axes: one series (or panel) per value of the other axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

import libra_opt
from libra_opt.explore.sweep import sweep
from libra_opt.report import plots as P
from libra_opt.scenario.examples import toy_scenario
from tests.figure_check import figure_problems


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def grid():
    """The toy over 3 budgets x 2 pod sizes: 6 designs, two per budget."""
    return sweep(toy_scenario(), {"budget_usd": [2e5, 3e5, 4e5], "fabric.dims.pod.size": [4, 8]},
                 progress=False)


def _monotone_lines(fig):
    """No line zig-zags: every data line's x values strictly increase (a polyline through
    every point of a two-axis grid would go back and forth)."""
    for ax in fig.axes:
        for line in ax.get_lines():
            x = np.asarray(line.get_xdata(), dtype=float)
            if len(x) > 1 and line.get_linestyle() not in ("None", ""):
                assert np.all(np.diff(x) > 0), (ax.get_title(), line.get_label(), x)


def test_sweep_axes_are_the_columns_before_status(grid):
    assert P.sweep_axes(grid) == ["budget_usd", "fabric.dims.pod.size"]


def test_plot_sweep_two_axes_one_series_per_other_value(grid):
    assert (grid.status == "optimal").all()
    fig = P.plot_sweep(grid, x="budget_usd")
    top, bottom = fig.axes[:2]
    steps = [ln for ln in top.get_lines() if len(ln.get_xdata()) == 3]
    assert len(steps) == 2   # one step-time series per pod size, 3 budgets each
    # each series is its own rows: pod size 4 and 8 give different step times at equal budget
    got = sorted(tuple(np.round(ln.get_ydata(), 12)) for ln in steps)
    want = sorted(tuple(np.round(g.sort_values("budget_usd").weighted_step_time_s, 12))
                  for _, g in grid.groupby("fabric.dims.pod.size"))
    assert got == want
    # bandwidth panel: 2 dimensions x 2 pod sizes
    assert len([ln for ln in bottom.get_lines() if len(ln.get_xdata()) == 3]) == 4
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "size = 4" in labels and "size = 8" in labels and "bw pod" in labels
    _monotone_lines(fig)
    assert figure_problems(fig) == []


def test_plot_sweep_cli_value_copy_of_first_axis(grid):
    """The command line passes ``value`` = its first axis: series still split by the rest."""
    fig = P.plot_sweep(grid.assign(value=grid["budget_usd"]), x_label="budget_usd")
    steps = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 3]
    assert len(steps) == 2
    _monotone_lines(fig)


def test_plot_sweep_two_axes_in_given_axes(grid):
    fig, ax = plt.subplots(layout="constrained")
    P.plot_sweep(grid, x="budget_usd", ax=ax)
    assert len([ln for ln in ax.get_lines() if len(ln.get_xdata()) == 3]) == 2
    _monotone_lines(fig)


def test_bandwidth_two_axes_one_panel_per_other_value(grid):
    fig = P.plot_bandwidth_vs_budget(grid, x="budget_usd")
    panels = [a for a in fig.axes if a.collections]
    assert len(panels) == 2 and all(len(a.collections) == 2 for a in panels)
    assert sorted(a.get_title() for a in panels) == ["size = 4", "size = 8"]
    # each panel's stack top is that pod size's total bandwidth
    for a in panels:
        size = int(a.get_title().split("= ")[1])
        g = grid[grid["fabric.dims.pod.size"] == size].sort_values("budget_usd")
        top = a.collections[-1].get_paths()[0].vertices[:, 1].max()
        np.testing.assert_allclose(top, (g.bw_node_gbps + g.bw_pod_gbps).max(), rtol=1e-9)
    assert figure_problems(fig) == []
    fig, ax = plt.subplots(layout="constrained")
    P.plot_bandwidth_vs_budget(grid, x="budget_usd", ax=ax)
    assert len(ax.get_lines()) == 4 and not ax.collections
    _monotone_lines(fig)


def test_pareto_two_axes_distinguishes_the_structural_axis(grid):
    fig = P.plot_pareto(grid)
    ax = fig.axes[0]
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "size = 4" in labels and "size = 8" in labels
    # every design is drawn once: filled (on the front) or hollow, coloured by its pod size
    pts = sum(len(ln.get_xdata()) for ln in ax.get_lines() if ln.get_linestyle() == "None")
    assert pts == len(grid)
    assert figure_problems(fig) == []


def test_one_axis_sweep_unchanged():
    df = pd.DataFrame({"budget_usd": [1e7, 2e7], "status": ["optimal"] * 2,
                       "weighted_step_time_s": [0.02, 0.01], "bw_a_gbps": [1.0, 2.0]})
    fig = P.plot_sweep(df)
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "bandwidth per NPU (GB/s)"


def test_few_swept_values_are_the_ticks(grid):
    """Two pod sizes on the x axis: ticks at 4 and 8, not 4.5, 5, ... in between."""
    fig = P.plot_sweep(grid, x="fabric.dims.pod.size")
    fig.canvas.draw()
    ticks = fig.axes[1].get_xticks()
    np.testing.assert_allclose(ticks, [4.0, 8.0])



def _legend(fig) -> list[str]:
    return [t.get_text() for lg in fig.legends for t in lg.get_texts()]


def test_the_point_column_of_a_streamed_sweep_is_not_an_axis(tmp_path, grid):
    """A sweep streamed to a folder carries ``point`` (its grid index) first: it is drawn as
    the same sweep held in memory, one series and one stack, never one per point."""
    df = libra_opt.sweep(toy_scenario(), {"budget_usd": [2e5, 3e5, 4e5]}, progress=False,
                         out=tmp_path / "run")
    assert df.columns[0] == "point" and df["point"].tolist() == [0, 1, 2]
    assert P.sweep_axes(df) == ["budget_usd"]
    fig = P.plot_sweep(df)
    assert len(fig.axes) == 2   # step time and its twin: not the two panels of groups
    assert _legend(fig) == ["weighted step time", "bw node", "bw pod"]
    assert [len(ln.get_xdata()) for ln in fig.axes[0].get_lines()] == [3]
    fig = P.plot_bandwidth_vs_budget(df, x="budget_usd")
    assert len(fig.axes) == 1 and len(fig.axes[0].collections) == 2   # one stack, 2 dims
    labels = _legend(P.plot_pareto(df))
    assert labels and not [t for t in labels if "point" in t]
    # a two-axis grid with its point column: still one panel per pod size
    numbered = grid.assign(point=range(len(grid)))[["point", *grid.columns]]
    assert P.sweep_axes(numbered) == ["budget_usd", "fabric.dims.pod.size"]
    assert len(P.plot_bandwidth_vs_budget(numbered, x="budget_usd").axes) == 2


def _many(n_sizes: int) -> pd.DataFrame:
    """3 budgets x ``n_sizes`` pod sizes (1, 2, ...): made-up optimal rows."""
    rows = [{"budget_usd": b, "fabric.dims.pod.size": s, "status": "optimal",
             "weighted_step_time_s": 1.0 / b + 1.0 / s, "network_cost_usd": b,
             "bw_node_gbps": b / 1e3, "bw_pod_gbps": float(s)}
            for b in (1e5, 2e5, 3e5) for s in range(1, n_sizes + 1)]
    return pd.DataFrame(rows)


#: 12 of 40 sizes, evenly spaced: round(39 k / 11) + 1 for k = 0..11, by hand.
SHOWN_OF_40 = [1, 5, 8, 12, 15, 19, 22, 26, 29, 33, 36, 40]


def test_a_second_axis_with_many_values_is_thinned_and_says_so():
    """40 pod sizes: 12 panels (and 12 series), evenly spaced, first and last included, the
    title saying so; the Pareto plot draws all 120 designs without telling sizes apart."""
    from libra_opt.report.sweep_plots import MAX_GROUPS

    assert MAX_GROUPS == 12
    df = _many(40)
    fig = P.plot_bandwidth_vs_budget(df, x="budget_usd")
    panels = [a for a in fig.axes if a.collections]
    assert len(fig.axes) == len(panels) == 12
    assert [int(a.get_title().split("= ")[1].split()[0]) for a in panels] == SHOWN_OF_40
    assert "12 of 40 values shown" in fig.get_suptitle()
    fig = P.plot_sweep(df, x="budget_usd")
    assert len([ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 3]) == 12
    assert len([t for t in _legend(fig) if t.startswith("size = ")]) == 12
    assert "12 of 40 values shown" in fig.axes[0].get_title()
    _, ax = plt.subplots()
    P.plot_bandwidth_vs_budget(df, x="budget_usd", ax=ax)
    assert len(ax.get_lines()) == 2 * 12 and "12 of 40" in ax.get_title()
    fig = P.plot_pareto(df)
    ax = fig.axes[0]
    assert not [t for t in _legend(fig) if t.startswith("size = ")]
    assert "40 values of size: not told apart" in ax.get_title()
    front = [ln for ln in ax.get_lines() if ln.get_linestyle() == "None"][0]
    assert len(front.get_xdata()) + sum(len(c.get_offsets()) for c in ax.collections) == 120


def test_twelve_values_are_all_drawn():
    fig = P.plot_bandwidth_vs_budget(_many(12), x="budget_usd")
    assert len(fig.axes) == 12 and "shown" not in fig.get_suptitle()
    assert len([t for t in _legend(P.plot_pareto(_many(12))) if t.startswith("size = ")]) == 12


def test_every_bandwidth_panel_shows_its_whole_stack():
    """Panels share their y axis: a limit set per panel froze it at the first panel's top
    (~525 GB/s) while the other stacks reached 2,000 GB/s, cut off. Here the first panel's
    stack tops at 250 GB/s and the last at 1,750 GB/s."""
    rows = [{"budget_usd": b, "fabric.dims.pod.size": s, "status": "optimal",
             "weighted_step_time_s": 1.0, "bw_node_gbps": 100.0 * s * s, "bw_pod_gbps": b / 2e3}
            for b in (1e5, 2e5, 3e5) for s in (1, 2, 4)]
    df = pd.DataFrame(rows)
    # each pod size's highest stack, by hand: 100 s^2 + 150
    want = {1: 250.0, 2: 550.0, 4: 1750.0}
    fig = P.plot_bandwidth_vs_budget(df, x="budget_usd")
    fig.canvas.draw()
    panels = [a for a in fig.axes if a.collections]
    assert len(panels) == 3
    for a in panels:
        size = int(a.get_title().split("= ")[1])
        lo, hi = a.get_ylim()
        assert lo == 0 and hi >= want[size], (a.get_title(), a.get_ylim())
        assert hi <= 1.1 * max(want.values())   # one shared scale, a small margin
    assert figure_problems(fig) == []


def test_a_legend_of_long_labels_fits_inside_the_figure():
    """A second axis named by a constraint's text gives labels such as "right-hand side of
    'sum(bw) == 1000' = 1,842 GB/s": in three columns the legend ran off both edges."""
    axis = "sum(bw) == 1000"
    rows = [{"budget_usd": b, axis: r, "status": "optimal", "weighted_step_time_s": 1e3 / r,
             "bw_node_gbps": r / 2, "bw_pod_gbps": r / 2}
            for b in (2e7, 4e7) for r in np.linspace(500, 2000, 12)]
    fig = P.plot_sweep(pd.DataFrame(rows), x="budget_usd")
    fig.canvas.draw()
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert "right-hand side of 'sum(bw) == 1000' = 1,864 GB/s" in texts   # whole labels
    box, page = legend.get_window_extent(), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
    for t in legend.get_texts():
        b = t.get_window_extent()
        assert page.x0 <= b.x0 and b.x1 <= page.x1, t.get_text()
    assert figure_problems(fig) == []


def test_a_label_wider_than_the_figure_is_wrapped():
    from libra_opt.report._style import _axes, _legend_below

    fig, ax = _axes(None, (4.0, 3.0))
    long = "a very long series label " * 6
    lines = [ax.plot([0, 1], [0, i], label=lab)[0] for i, lab in enumerate([long, "short"])]
    legend = _legend_below(ax, lines, [ln.get_label() for ln in lines], ncols=2)
    fig.canvas.draw()
    assert legend.get_window_extent().x1 <= fig.bbox.x1
    assert legend.get_window_extent().x0 >= fig.bbox.x0
    wrapped = legend.get_texts()[0].get_text()
    assert "\n" in wrapped and wrapped.split() == long.split()   # every word kept
