"""Plots for design reviews (matplotlib): each takes ``ax=None`` and returns the figure.
Infeasible baselines are drawn hollow and hatched, and say so in the legend."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.graphs import fabric_graph
from libra_opt.optimize.solution import Solution
from libra_opt.report._style import (
    _OWN,
    _axes,
    _axis,
    _legend_below,
    _num,
    _unit,
    format_value,
    quantity,
)
from libra_opt.report.notes import family_label
from libra_opt.report.sweep_plots import (
    _series_label,
    plot_bandwidth_vs_budget,
    plot_pareto,
    plot_sweep,
    sweep_axes,
)
from libra_opt.report.text import allocations

__all__ = ["plot_allocation", "plot_step_breakdown", "plot_dim_time", "plot_sweep", "sweep_axes",
           "plot_pareto", "plot_bandwidth_vs_budget", "plot_sensitivity", "plot_comparison",
           "plot_fabric", "plot_goodput_by_size", "quantity", "format_value"]


def plot_allocation(sol: Solution, ax=None):
    """Grouped bars: bandwidth per dimension for the optimum and the baselines (GB/s per NPU).

    Infeasible baselines are hollow and hatched.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> fig = plot_allocation(solve(toy_scenario()))
    >>> fig.axes[0].get_ylabel()
    'bandwidth per NPU (GB/s)'
    """
    fig, ax = _axes(ax)
    series = [(name, ev.bw_gbps, ok) for name, ev, ok, *_ in allocations(sol)]
    ax.bar_label(_grouped_bars(ax, series)[0], fmt="%.0f", fontsize=8)
    ax.set_xticks(range(sol.scenario.fabric.n_dims),
                  [f"{d.name}\n({d.topology}, {d.size})" for d in sol.scenario.fabric.dims])
    ax.set_ylabel("bandwidth per NPU (GB/s)")
    ax.set_ylim(0, 1.12 * max(float(np.max(bw)) for _, bw, _ in series))
    ax.set_title(f"{sol.scenario.name}: bandwidth allocation ({sol.objective})")
    _legend_below(ax, ncols=len(series))
    return fig


def _grouped_bars(ax, series) -> list:
    """One bar per dimension for each ``(label, values, feasible)`` of ``series``, side by
    side; infeasible series hollow and hatched. Returns the bar containers."""
    width = 0.8 / len(series)
    out = []
    for i, (label, values, ok) in enumerate(series):
        style = {"color": f"C{i}"} if ok else {"facecolor": "none", "edgecolor": f"C{i}",
                                               "hatch": "///"}
        out.append(ax.bar(np.arange(len(values)) + (i - (len(series) - 1) / 2) * width, values,
                          width, label=_series_label(label, ok), **style))
    return out


def plot_step_breakdown(sol: Solution, ax=None):
    """Horizontal stacked bars: compute, then exposed communication split by group.

    One bar per allocation and workload, labelled with its total and its ratio to the
    optimum's; a group's exposed time is its share of the communication times the exposed.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> fig = plot_step_breakdown(solve(toy_scenario()))
    >>> fig.axes[0].get_xlabel()
    'time per training step (ms)'
    """
    rows = []   # (label, compute, {group: exposed}, feasible)
    ref = []    # the optimum's step time of the same workload
    for name, ev, ok, *_ in allocations(sol):
        for i, t in enumerate(ev.workloads):
            label = f"{name} — {t.name}" if len(ev.workloads) > 1 else name
            comm = sum(t.comm_by_group_s.values())
            share = t.exposed_comm_s / comm if comm > 0 else 0.0
            exposed = {g: v * share for g, v in t.comm_by_group_s.items() if v > 0}
            rows.append((_series_label(label, ok), t.compute_s, exposed, ok))
            ref.append(sol.evaluation.workloads[i].step_time_s)
    fig, ax = _axes(ax, (7.5, 1.2 + 0.45 * len(rows)))
    groups = list(dict.fromkeys(g for r in rows for g in r[2]))
    totals = [c + sum(gs.values()) for _, c, gs, _ in rows]
    scale = _axis(ax, "x", totals, "time per training step", "s")
    unit = _unit(totals, "s")[1]
    y = np.arange(len(rows))[::-1]
    left = np.array([r[1] for r in rows])
    containers = [ax.barh(y, left, color="0.75", label="compute", edgecolor="white")]
    tiny = 0.002 * max(max(totals), 1e-30)   # invisible groups stay out of the legend
    for i, g in enumerate(groups):
        vals = np.array([r[2].get(g, 0.0) for r in rows])
        label = f"exposed comm: {g}" if vals.max() > tiny else "_nolegend_"
        containers.append(ax.barh(y, vals, left=left, color=f"C{i}",
                                  edgecolor="white", label=label))
        left = left + vals
    for bars in containers:   # infeasible allocations hatched
        for patch, r in zip(bars, rows, strict=True):
            if not r[3]:
                patch.set_hatch("///")
    for yi, tot, t_opt in zip(y, totals, ref, strict=True):
        ratio = f" ({tot / t_opt:.2f}x)" if t_opt > 0 else ""
        ax.annotate(f"{_num(tot / scale)} {unit}{ratio}", (tot, yi), xytext=(3, 0),
                    textcoords="offset points", va="center", fontsize=8)
    ax.set_yticks(y, [r[0] for r in rows])
    ax.set_xlim(0, 1.3 * max(max(totals), 1e-30))
    ax.set_title(f"{sol.scenario.name}: where the step time goes")
    _legend_below(ax)
    return fig


def plot_dim_time(sol: Solution, ax=None):
    """Grouped bars: time each dimension is busy per step, optimum vs baselines.

    A baseline's tallest bar is its bottleneck.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> fig = plot_dim_time(solve(toy_scenario()))
    >>> fig.axes[0].get_ylabel()
    'busy time per step (ms)'
    """
    fig, ax = _axes(ax)
    weights = sol.scenario.weights or (1.0,) * len(sol.scenario.workloads)
    series = [(name, np.asarray(sum(w * t.busy_by_dim_s for w, t in
                                    zip(weights, ev.workloads, strict=True)), dtype=float), ok)
              for name, ev, ok, *_ in allocations(sol)]
    _axis(ax, "y", np.concatenate([s[1] for s in series]), "busy time per step", "s")
    _grouped_bars(ax, series)
    ax.set_xticks(range(sol.scenario.fabric.n_dims), list(sol.scenario.fabric.names))
    ax.set_title(f"{sol.scenario.name}: time per step each dimension is busy (weighted)")
    _legend_below(ax, ncols=len(series))
    return fig


def _sens_col(df: pd.DataFrame, unit: str) -> str | None:
    return next((c for c in df.columns if unit in c and "step" in c), None) or next(
        (c for c in df.columns if unit in c), None)


def plot_sensitivity(df: pd.DataFrame, ax=None):
    """Bars per dimension: step time saved per extra $ and per extra GB/s.

    ``df`` has one row per dimension (column ``dim``, else the index) and columns whose
    names hold ``per_usd`` (s per $) and ``per_gbps`` (s per GB/s), as from
    :func:`libra_opt.explore.sensitivity.sensitivity`; the bars show ``-value``. One ``ax``
    draws only the per-$ panel, a pair both.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"dim": ["hb", "so"], "step_s_per_usd": [-2e-9, -5e-9],
    ...                    "step_s_per_gbps": [-1e-6, -4e-6]})
    >>> fig = plot_sensitivity(df)
    >>> [a.get_xlabel() for a in fig.axes]
    ['step time saved per $1M (ms)', 'step time saved per GB/s (µs)']
    """
    usd, gbps = _sens_col(df, "per_usd"), _sens_col(df, "per_gbps")
    if usd is None and gbps is None:
        raise InputError("expected columns with per_usd or per_gbps in their names", field="df")
    dims = df["dim"].astype(str).tolist() if "dim" in df.columns else [str(i) for i in df.index]
    if ax is None:
        fig, axes = plt.subplots(1, 2, figsize=(9.0, 0.9 + 0.45 * len(dims)), layout="constrained",
                                 sharey=True)
    elif isinstance(ax, Sequence | np.ndarray):
        axes = list(ax)
        fig = axes[0].figure
    else:
        fig, axes = ax.figure, [ax]
    y = np.arange(len(dims))[::-1]
    panels = [(usd, 1e6, "step time saved per $1M"), (gbps, 1.0, "step time saved per GB/s")]
    for a, (col, per, title) in zip(axes, [p for p in panels if p[0] is not None], strict=False):
        vals = -pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float) * per
        vals = np.where(np.isfinite(vals), vals, 0.0)
        a.barh(y, vals, color=["tab:green" if v >= 0 else "tab:red" for v in vals])
        scale = _axis(a, "x", vals, title, "s")
        for yi, v in zip(y, vals, strict=True):
            a.annotate(_num(v / scale), (v, yi), xytext=(3 if v >= 0 else -3, 0),
                       textcoords="offset points", va="center",
                       ha="left" if v >= 0 else "right", fontsize=8)
        a.axvline(0, color="0.3", lw=0.8)
        a.set_yticks(y, dims)
        a.margins(x=0.2)
    fig.suptitle("Sensitivity: step time saved by more $ or GB/s on one dimension "
                 "(the others fixed)")
    return fig


def plot_comparison(df, ax=None, *, mode: str = "equal_bw",
                    metrics: Sequence[str] = ("network_cost_usd", "network_power_w",
                                              "step_time_s", "run_cost_usd")):
    """Grouped bars of each metric relative to the baseline fabric (1.0 = baseline).

    ``df`` is from :func:`libra_opt.explore.compare.compare_fabrics`, ``mode`` one of its
    modes; ``metrics`` missing or empty in it are skipped.

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
    fig, ax = _axes(ax, (7.0, 4.2))
    width = 0.8 / max(len(sub), 1)
    x = np.arange(len(cols))
    top = 1.0
    for i, (_, row) in enumerate(sub.iterrows()):
        vals = [float(row[c]) / float(base[c]) for c in cols]
        top = max(top, *vals) if vals else top
        tiers = row.get("scaleout_tiers")
        extra = f", {int(tiers)}-tier scale-out" if pd.notna(tiers) and tiers else ""
        bars = ax.bar(x + (i - (len(sub) - 1) / 2) * width, vals, width,
                      label=f"{family_label(str(row['fabric']))}{extra}")
        ax.bar_label(bars, fmt="%.2f", fontsize=7)
    labels = {"network_cost_usd": "network cost", "network_power_w": "network power",
              "step_time_s": "step time", "run_cost_usd": "training-run cost"}
    ax.set_xticks(x, [labels.get(c, c) for c in cols])
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel(f"relative to {baseline} (1.0 = same)")
    ax.set_title(f"Fabric comparison ({mode.replace('_', ' ')})")
    if fig in _OWN:
        ax.set_ylim(0, 1.12 * top)
        _legend_below(ax, ncols=min(len(sub), 3))
    else:   # the caller's axes: legend in headroom above the bars, never over them
        ax.set_ylim(0, (1.12 + 0.09 * len(sub)) * top)
        ax.legend(loc="upper left", frameon=False, fontsize=8)
    return fig


def plot_fabric(fabric: Fabric, ax=None, *, max_npus: int = 256, bw_gbps=None):
    """Draw a small fabric: NPUs at the bottom, NICs, then switch levels, coloured by dim.

    Fabrics of more than ``max_npus`` are refused; line widths follow ``bw_gbps``.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> fig = plot_fabric(rail_only(16, 4, 4))
    >>> len(fig.axes)
    1
    """
    if fabric.n_npus > max_npus:
        raise InputError(f"fabric has {fabric.n_npus} NPUs; plot_fabric draws at most "
                         f"{max_npus}", field="max_npus")
    g = fabric_graph(fabric, bw_gbps)
    fig, ax = _axes(ax, (max(6.0, 0.25 * fabric.n_npus), 5.0))
    n_npus = fabric.n_npus
    pos = {("npu", i): (i / max(n_npus - 1, 1), 0.0) for i in range(n_npus)}
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
    widths = [a["bw_gbps"] for _, _, a in g.edges(data=True)]
    scale = 2.0 / max(max(widths, default=1.0), 1e-12)
    for u, v, a in g.edges(data=True):
        (x0, y0), (x1, y1) = pos[u], pos[v]
        style = dict(color=f"C{a['dim']}", lw=0.3 + scale * a["bw_gbps"],
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
        ax.plot([], [], color=f"C{d}",
                label=f"{dim.name}: {dim.topology} x{dim.size}{extra}{scope}")
    ax.set_title(f"{n_npus} NPUs, dims {' x '.join(map(str, fabric.sizes))}")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.legend(loc="upper left", fontsize=7, frameon=False)
    return fig


def plot_goodput_by_size(table: pd.DataFrame, ax=None):
    """Goodput (and the throughput fraction kept with degraded parts) against cluster size,
    one line per fabric family.

    ``table`` is from :func:`libra_opt.explore.failures.goodput_by_size`.
    """
    fig, ax = _axes(ax)
    for i, (family, rows) in enumerate(table.groupby("family", sort=False)):
        rows = rows.sort_values("n_npus")
        color = f"C{i}"
        ax.plot(rows["n_npus"], 100 * rows["goodput"], "o-", color=color,
                label=f"{family}: goodput")
        ax.plot(rows["n_npus"], 100 * rows["throughput_fraction"], "s--", color=color,
                label=f"{family}: with degraded parts")
    ax.set_xscale("log", base=2)
    sizes = sorted(set(table["n_npus"]))
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("cluster size (NPUs)")
    ax.set_ylabel("% of failure-free throughput")
    ax.set_title("Goodput under failures by fabric family")
    ax.grid(True, alpha=0.3)
    _legend_below(ax, ncols=2)
    return fig
