"""Plots for design reviews (matplotlib). Every function takes ``ax=None`` and returns the figure."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.graphs import fabric_graph
from libra_opt.optimize.solution import Solution

__all__ = [
    "plot_allocation",
    "plot_step_breakdown",
    "plot_sweep",
    "plot_comparison",
    "plot_fabric",
]


def _axes(ax, figsize=(7.0, 4.0)):
    if ax is None:
        fig, ax = plt.subplots(figsize=figsize, layout="constrained")
        return fig, ax
    return ax.figure, ax


def plot_allocation(sol: Solution, ax=None):
    """Grouped bars: bandwidth per dimension for the optimum and the baselines (GB/s per NPU).

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
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


def plot_comparison(df, ax=None, *, mode: str = "equal_bw",
                    metrics: Sequence[str] = ("network_cost_usd", "network_power_w",
                                              "step_time_s", "run_cost_usd")):
    """Grouped bars of each metric relative to the baseline fabric (1.0 = baseline).

    Parameters
    ----------
    df : pandas.DataFrame
        From :func:`libra_opt.explore.compare.compare_fabrics`.
    ax : matplotlib.axes.Axes, optional
    mode : {'equal_bw', 'equal_budget', 'equal_budget_joint'}
    metrics : sequence of str
        Columns to plot; missing or empty ones are skipped.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"mode": ["equal_bw"] * 2, "fabric": ["fat_tree", "rail_only"],
    ...                    "network_cost_usd": [10.0, 4.0], "step_time_s": [1.0, 1.0]})
    >>> df.attrs["baseline"] = "fat_tree"
    >>> fig = plot_comparison(df)
    >>> [t.get_text() for t in fig.axes[0].get_xticklabels()]
    ['network cost', 'step time']
    """
    sub = df[df["mode"] == mode]
    if sub.empty:
        raise InputError(f"no rows with mode {mode!r}", field="mode")
    baseline = df.attrs.get("baseline", sub["fabric"].iloc[0])
    base = sub[sub["fabric"] == baseline].iloc[0]
    cols = [c for c in metrics if c in sub and sub[c].notna().all() and base[c]]
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.0, 4.0))
    else:
        fig = ax.figure
    width = 0.8 / max(len(sub), 1)
    x = np.arange(len(cols))
    for i, (_, row) in enumerate(sub.iterrows()):
        vals = [float(row[c]) / float(base[c]) for c in cols]
        bars = ax.bar(x + (i - (len(sub) - 1) / 2) * width, vals, width, label=row["fabric"])
        for b, v in zip(bars, vals, strict=True):
            ax.annotate(f"{v:.2f}", (b.get_x() + b.get_width() / 2, v), ha="center",
                        va="bottom", fontsize=7)
    labels = {"network_cost_usd": "network cost", "network_power_w": "network power",
              "step_time_s": "step time", "run_cost_usd": "training-run cost"}
    ax.set_xticks(x, [labels.get(c, c) for c in cols])
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel(f"relative to {baseline}")
    ax.set_title(f"Fabric comparison ({mode.replace('_', ' ')})")
    ax.legend(frameon=False, fontsize=8)
    return fig


def plot_fabric(fabric: Fabric, ax=None, *, max_npus: int = 256, bw_gbps=None):
    """Draw a small fabric: NPUs at the bottom, NICs, then switch levels, coloured by dim.

    Parameters
    ----------
    fabric : Fabric
    ax : matplotlib.axes.Axes, optional
        Axes to draw into; a new figure is made when ``None``.
    max_npus : int
        Refuse larger fabrics (the drawing would be unreadable).
    bw_gbps : sequence of float, optional
        Line widths follow the link bandwidth.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> fig = plot_fabric(rail_only(16, 4, 4))
    >>> len(fig.axes)
    1
    """
    if fabric.n_npus > max_npus:
        raise InputError(
            f"fabric has {fabric.n_npus} NPUs; plot_fabric draws at most {max_npus}",
            field="max_npus",
        )
    g = fabric_graph(fabric, bw_gbps)
    if ax is None:
        fig, ax = plt.subplots(figsize=(max(6.0, 0.25 * fabric.n_npus), 5.0))
    else:
        fig = ax.figure
    n_npus = fabric.n_npus
    pos = {}
    for i in range(n_npus):
        pos[("npu", i)] = (i / max(n_npus - 1, 1), 0.0)
    level_rows: dict[tuple[int, int], list] = {}
    for node, a in g.nodes(data=True):
        if a["kind"] == "nic":
            pos[node] = (node[2] / max(n_npus - 1, 1), 0.6 + 0.15 * node[1])
        elif a["kind"] == "switch":
            level_rows.setdefault((a["dim"], a["level"]), []).append(node)
    base = 1.2 + 0.15 * fabric.n_dims
    for row, (_, nodes) in enumerate(sorted(level_rows.items())):
        nodes.sort(key=lambda x: (x[2], x[4]))
        for j, node in enumerate(nodes):
            pos[node] = ((j + 0.5) / len(nodes), base + 0.6 * row)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    widths = [a["bw_gbps"] for _, _, a in g.edges(data=True)]
    scale = 2.0 / max(max(widths, default=1.0), 1e-12)
    for u, v, a in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        style = dict(color=colors[a["dim"] % len(colors)], lw=0.3 + scale * a["bw_gbps"],
                     alpha=0.7)
        if a["kind"] == "direct":
            xm, ym = (x0 + x1) / 2, -0.15 - 0.3 * abs(x1 - x0)
            ax.plot([x0, xm, x1], [y0, ym, y1], **style)
        else:
            ax.plot([x0, x1], [y0, y1], **style)
    kinds = {"npu": ("o", "black"), "nic": ("s", "grey"), "switch": ("D", "tab:red")}
    for kind, (marker, color) in kinds.items():
        pts = np.array([pos[nd] for nd, a in g.nodes(data=True) if a["kind"] == kind])
        if pts.size:
            ax.scatter(pts[:, 0], pts[:, 1], marker=marker, color=color, s=18, zorder=3,
                       label=kind.upper() if kind != "switch" else "switch")
    for d, dim in enumerate(fabric.dims):
        extra = f", radix {dim.switch_radix}" if dim.switch_radix else ""
        scope = ", per rail" if dim.switch_scope == "rail" else ""
        ax.plot([], [], color=colors[d % len(colors)],
                label=f"{dim.name}: {dim.topology} x{dim.size}{extra}{scope}")
    ax.set_title(f"{n_npus} NPUs, dims {' x '.join(map(str, fabric.sizes))}")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    return fig
