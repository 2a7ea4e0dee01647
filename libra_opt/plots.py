"""Plots for design reviews (matplotlib). Every function takes ``ax=None`` and returns the figure."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg", force=False)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from libra_opt.solution import Solution  # noqa: E402

__all__ = ["plot_allocation", "plot_step_breakdown", "plot_sweep"]


def _axes(ax, figsize=(7.0, 4.0)):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


def plot_allocation(sol: Solution, ax=None):
    """Grouped bars: bandwidth per dimension for the optimum and the baselines (GB/s per NPU).

    Examples
    --------
    >>> from libra_opt.examples import toy_scenario
    >>> from libra_opt.optimize import solve
    >>> fig = plot_allocation(solve(toy_scenario()))
    >>> fig.axes[0].get_ylabel()
    'bandwidth per NPU (GB/s)'
    """
    fig, ax = _axes(ax)
    names = sol.scenario.fabric.names
    series = [("optimum", sol.bw_gbps)] + [(b.name, b.evaluation.bw_gbps) for b in sol.baselines]
    x = np.arange(len(names))
    width = 0.8 / len(series)
    for i, (label, bw) in enumerate(series):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, bw, width, label=label)
        if i == 0:
            ax.bar_label(bars, fmt="%.0f", fontsize=8)
    ax.set_xticks(x, [f"{n}\n({d.topology}, {d.size})" for n, d in zip(names, sol.scenario.fabric.dims, strict=True)])
    ax.set_ylabel("bandwidth per NPU (GB/s)")
    ax.set_title(f"{sol.scenario.name}: bandwidth allocation ({sol.objective})")
    ax.legend(frameon=False)
    return fig


def plot_step_breakdown(sol: Solution, ax=None):
    """Stacked bars: compute and exposed communication per workload, optimum vs baselines (s)."""
    fig, ax = _axes(ax)
    evals = [("optimum", sol.evaluation)] + [(b.name, b.evaluation) for b in sol.baselines]
    labels, compute, exposed = [], [], []
    for name, ev in evals:
        for t in ev.workloads:
            labels.append(f"{name}\n{t.name}" if len(ev.workloads) > 1 else name)
            compute.append(t.compute_s)
            exposed.append(t.exposed_comm_s)
    x = np.arange(len(labels))
    ax.bar(x, compute, label="compute")
    top = ax.bar(x, exposed, bottom=compute, label="exposed communication")
    ax.bar_label(top, labels=[f"{c + e:.4g} s" for c, e in zip(compute, exposed, strict=True)], fontsize=8)
    ax.set_xticks(x, labels)
    ax.set_ylabel("time per training step (s)")
    ax.set_title(f"{sol.scenario.name}: step time breakdown")
    ax.set_ylim(0, 1.18 * max(c + e for c, e in zip(compute, exposed, strict=True)))
    ax.legend(frameon=False, loc="upper center", ncols=2)
    return fig


def plot_sweep(df: pd.DataFrame, x_label: str = "value", ax=None):
    """Step time (left axis) and bandwidth per dimension (right axis) over a sweep."""
    fig, ax = _axes(ax, (7.5, 4.2))
    ok = df[df["status"] == "optimal"]
    ax.plot(ok["value"], ok["weighted_step_time_s"], "k-o", ms=3, label="weighted step time")
    ax.set_xlabel(x_label)
    ax.set_ylabel("weighted step time (s)")
    ax2 = ax.twinx()
    for col in [c for c in ok.columns if c.startswith("bw_") and c.endswith("_gbps")]:
        ax2.plot(ok["value"], ok[col], "--", label=col[3:-5])
    ax2.set_ylabel("bandwidth per NPU (GB/s)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, frameon=False, fontsize=8, loc="upper center")
    ax.set_title("optimal allocation over the sweep")
    return fig
