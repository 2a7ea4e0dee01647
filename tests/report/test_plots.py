"""Plots: human labels with units, no offset text, infeasible baselines marked, no overlaps."""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from libra_opt.optimize.problem import solve
from libra_opt.report import plots as P
from libra_opt.scenario.examples import toy_scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def budget_sol():
    """The toy with a $100,000 budget instead of 300 GB/s. The optimum spends it all on a
    2:1 split (traffic 1 GB : 0.5 GB); the traffic-proportional split is the same 2:1 split,
    so it is feasible; the equal split of the same total costs 32 (2 + 34) B / 2 per GB/s
    total = 576 $/GB/s against the optimum's 32 (2 * 2/3 + 34/3) = 405.3: infeasible."""
    scen = dataclasses.replace(toy_scenario(), constraints=(), budget_usd=1e5)
    return solve(scen)


def _sweep_df():
    return pd.DataFrame({
        "budget_usd": [2e7, 3e7, 4e7, 5e7],
        "status": ["infeasible", "optimal", "optimal", "optimal"],
        "weighted_step_time_s": [np.nan, 0.0065, 0.0052, 0.0053],
        "network_cost_usd": [np.nan, 3e7, 4e7, 4.9e7],
        "network_power_w": [np.nan, 1e5, 1.3e5, 1.6e5],
        "bw_hb_gbps": [np.nan, 300, 400, 420], "bw_so_gbps": [np.nan, 30, 50, 60],
    })


def _no_offsets(fig):
    fig.canvas.draw()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            assert axis.get_offset_text().get_text() == ""


def test_quantities_and_values():
    assert P.quantity("power_w") == ("network power cap", "w")
    assert P.format_value(0.00650, "s") == "6.5 ms"
    assert P.format_value(2.5e7, "usd") == "$25M"
    assert P.format_value(1.5e5, "w") == "150 kW"


def test_plot_sweep_names_the_swept_quantity_and_marks_failures():
    fig = P.plot_sweep(_sweep_df())
    ax = fig.axes[0]
    assert ax.get_xlabel() == "network budget ($M)"
    assert ax.get_ylabel() == "weighted step time (ms)"
    _no_offsets(fig)
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert "30" in ticks and not any("e" in t for t in ticks)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "no design (1 points)" in labels and "bw hb" in labels


def test_plot_sweep_labels_its_axis():
    ax = P.plot_sweep(_sweep_df(), x_label="budget_usd").axes[0]
    assert ax.get_xlabel() == "network budget ($M)"
    df = _sweep_df().rename(columns={"budget_usd": "sum(bw) == 1000"}).assign(
        **{"sum(bw) == 1000": [900.0, 1000, 1100, 1200]})
    ax = P.plot_sweep(df).axes[0]
    assert ax.get_xlabel() == "right-hand side of 'sum(bw) == 1000' (GB/s)"


def test_pareto_front_and_hollow_infeasible_baselines(budget_sol):
    assert [b.feasible for b in budget_sol.baselines] == [False, True]
    df = _sweep_df()
    fig = P.plot_pareto(df, solution=budget_sol)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "network cost ($M)" and ax.get_ylabel() == "weighted step time (ms)"
    labels = {t.get_text() for t in fig.legends[0].get_texts()}
    assert {"equal split (infeasible)", "traffic-proportional",
            "scenario optimum", "sweep: Pareto front", "sweep: dominated"} <= labels
    line = next(h for h in ax.get_lines() if h.get_label() == "equal split (infeasible)")
    assert line.get_markerfacecolor() == "none"
    filled = next(h for h in ax.get_lines() if h.get_label() == "traffic-proportional")
    assert filled.get_markerfacecolor() != "none"
    front = next(h for h in ax.get_lines() if h.get_label() == "sweep: Pareto front")
    # the $49M point (5.3 ms) is dominated by the $40M one (5.2 ms)
    assert front.get_xdata().tolist() == [3e7, 4e7]
    _no_offsets(fig)
    fig = P.plot_pareto(df, x="network_power_w")
    assert fig.axes[0].get_xlabel() == "network power (kW)"


def test_pareto_front_line_is_the_explore_front():
    from libra_opt.explore.pareto import pareto_front

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"status": ["optimal"] * 60, "network_cost_usd": rng.random(60) * 1e7,
                       "weighted_step_time_s": rng.random(60)})
    ax = P.plot_pareto(df).axes[0]
    front = next(h for h in ax.get_lines() if h.get_label() == "sweep: Pareto front")
    brute = [i for i in range(60) if not any(
        (df.network_cost_usd[j] <= df.network_cost_usd[i]
         and df.weighted_step_time_s[j] <= df.weighted_step_time_s[i]) and j != i
        for j in range(60))]
    assert sorted(front.get_xdata().tolist()) == sorted(df.network_cost_usd[brute].tolist())
    assert sorted(brute) == sorted(pareto_front(df).index.tolist())


def test_bandwidth_vs_budget_stacks_in_dimension_order():
    fig = P.plot_bandwidth_vs_budget(_sweep_df())
    ax = fig.axes[0]
    assert ax.get_xlabel() == "network budget ($M)"
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["so", "hb"]   # top first
    assert len(ax.collections) == 2


def test_step_breakdown_two_workloads_labels_do_not_overlap(budget_sol):
    wl = Workload("second", (Layer("l", Phase(0.004, (Collective("all_reduce", 2e8, "g"),))),),
                  {"g": (4, 1)})
    scen = dataclasses.replace(budget_sol.scenario, workloads=(*budget_sol.scenario.workloads, wl),
                               weights=(1.0, 1.0))
    sol = solve(scen)
    fig = P.plot_step_breakdown(sol)
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [t for t in ax.get_yticklabels() if t.get_text()]
    assert len(labels) == 6 and "equal split — second (infeasible)" in [t.get_text() for t in labels]
    boxes = [t.get_window_extent() for t in labels]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert hatched  # the infeasible baselines' bars
    assert ax.get_xlabel() == "time per training step (ms)"


def test_allocation_and_dim_time_take_given_axes(budget_sol):
    fig, (a1, a2) = plt.subplots(1, 2)
    assert P.plot_allocation(budget_sol, ax=a1) is fig
    assert P.plot_dim_time(budget_sol, ax=a2) is fig
    assert "equal split (infeasible)" in [t.get_text() for t in a1.get_legend().get_texts()]


def test_sensitivity_panels():
    df = pd.DataFrame({"dim": ["hb", "so"], "d_step_time_s_per_usd": [-2e-11, -5e-11],
                       "d_step_time_s_per_gbps": [-1e-6, -4e-6]})
    fig = P.plot_sensitivity(df)
    assert [a.get_xlabel() for a in fig.axes] == ["step time saved per $1M (µs)",   # 5e-11 s/$ x 1e6 = 50 µs
                                                   "step time saved per GB/s (µs)"]
    widths = [p.get_width() for p in fig.axes[0].patches]
    assert widths == pytest.approx([2e-5, 5e-5])
    _no_offsets(fig)


def test_goodput_by_size_plot_one_pair_of_lines_per_family():
    t = pd.DataFrame({"family": ["fat_tree"] * 2 + ["rail_only"] * 2,
                      "n_npus": [2048, 4096] * 2, "goodput": [0.98, 0.97, 0.98, 0.97],
                      "throughput_fraction": [0.979, 0.968, 0.979, 0.969]})
    fig = P.plot_goodput_by_size(t)
    (ax,) = fig.axes
    assert len(ax.lines) == 4 and ax.get_xscale() == "log"
    assert_allclose(ax.lines[1].get_ydata(), [97.9, 96.8])
    _, ax2 = plt.subplots()
    assert P.plot_goodput_by_size(t, ax=ax2) is ax2.figure
