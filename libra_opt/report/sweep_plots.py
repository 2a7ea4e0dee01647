"""Plots of sweeps: step time and bandwidth over a swept quantity, the Pareto front and the
bandwidth stack. A sweep over several axes draws one series (or panel) per combination of the
other axes' values, at most :data:`MAX_GROUPS` of them (evenly spaced, the title saying how
many are shown), never one line through every point."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from libra_opt.errors import InputError
from libra_opt.explore.pareto import dominated
from libra_opt.optimize.solution import Solution
from libra_opt.options import POINT_COLUMN
from libra_opt.report._style import _OWN, _axes, _axis, _legend_below, _num, format_value, quantity
from libra_opt.report.text import allocations

__all__ = ["plot_sweep", "plot_pareto", "plot_bandwidth_vs_budget", "sweep_axes", "MAX_GROUPS"]

#: Most combinations of the other axes' values drawn as series or panels.
MAX_GROUPS = 12

_BASELINE_MARKERS = {"equal split": "s", "traffic-proportional": "^"}


def _series_label(name: str, feasible: bool) -> str:
    return name if feasible else f"{name} (infeasible)"


def _sweep_x(df: pd.DataFrame, x: str | None) -> str:
    """``x``, else the sweep's first axis, else its first column."""
    if x is None:
        axes = sweep_axes(df)
        x = axes[0] if axes else str(df.columns[0])
    if x not in df.columns:
        raise InputError(f"no column {x!r} in the sweep (columns: {', '.join(map(str, df.columns))})",
                         field="x")
    return x


def _bw_cols(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if c.startswith("bw_") and c.endswith("_gbps")]


_LINESTYLES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)))
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _value_ticks(ax, values) -> None:
    """Ticks at the swept values when there are 2 to 8 of them."""
    v = pd.to_numeric(pd.Series(values), errors="coerce").dropna().unique()
    if 2 <= len(v) <= 8:
        ax.set_xticks(sorted(float(x) for x in v))


def sweep_axes(df: pd.DataFrame) -> list[str]:
    """The axis columns of a sweep's DataFrame: those before ``status``, except the ``point``
    column of a sweep streamed to a folder (its grid index).

    Examples
    --------
    >>> import pandas as pd
    >>> sweep_axes(pd.DataFrame(columns=["budget_usd", "fabric.hb_domain", "status", "bw_a_gbps"]))
    ['budget_usd', 'fabric.hb_domain']
    >>> sweep_axes(pd.DataFrame(columns=["point", "budget_usd", "status", "bw_a_gbps"]))
    ['budget_usd']
    """
    cols = [str(c) for c in df.columns]
    head = cols[: cols.index("status")] if "status" in cols else []
    return [c for c in head if c != POINT_COLUMN]


def _other_axes(df: pd.DataFrame, x: str) -> list[str]:
    """Axes besides ``x`` that take more than one value in ``df``."""
    return [c for c in sweep_axes(df) if c != x and df[c].nunique(dropna=False) > 1]


def _group_label(names: Sequence[str], key) -> str:
    """``'hb_domain = 16, network budget = $100M'``: one value of each other axis."""
    key = key if isinstance(key, tuple) else (key,)
    parts = []
    for name, v in zip(names, key, strict=False):
        kind = quantity(name)[1]
        try:
            text = format_value(float(v), kind) if kind else _num(float(v))
        except (TypeError, ValueError):
            text = str(v)
        parts.append(f"{_short(name)} = {text}")
    return ", ".join(parts)


def _groups(df: pd.DataFrame, by: list[str]
            ) -> tuple[list[tuple[tuple[Any, ...], pd.DataFrame]], int]:
    """``(key, rows)`` of at most :data:`MAX_GROUPS` combinations of ``by``'s values (evenly
    spaced in sorted order, first and last kept), and how many there are."""
    ids = df.groupby(by, sort=True, dropna=False).ngroup().to_numpy()
    total = int(ids.max()) + 1 if len(ids) else 0
    keep = (range(total) if total <= MAX_GROUPS else
            np.unique(np.linspace(0, total - 1, MAX_GROUPS).round().astype(int)))
    groups = [df[ids == k] for k in keep]
    return [(tuple(g[c].iloc[0] for c in by), g) for g in groups], total


def _what(others: Sequence[str]) -> str:
    """What the groups of ``others`` are: ``values`` of one axis, or ``combinations``."""
    return "values" if len(others) == 1 else "combinations"


def _shown(others: Sequence[str], shown: int, total: int) -> str:
    """What a thinned plot's title adds: ``'12 of 40 values shown, evenly spaced'``."""
    return "" if shown >= total else f"{shown} of {total} {_what(others)} shown, evenly spaced"


def _series(df: pd.DataFrame, x: str) -> tuple[list[tuple[str, pd.DataFrame]], str]:
    """One ``(label, rows)`` per combination of the other axes' values (one unlabelled series
    without them), rows sorted by ``x``; and the title's note (:func:`_shown`)."""
    others = _other_axes(df, x)
    if not others:
        return [("", df.sort_values(x))], ""
    groups, total = _groups(df, others)
    return ([(_group_label(others, k), g.sort_values(x)) for k, g in groups],
            _shown(others, len(groups), total))


def plot_sweep(df: pd.DataFrame, x_label: str | None = None, ax=None, *, x: str | None = None):
    """Step time (left axis) and bandwidth per dimension (right axis) over a sweep.

    A sweep over several axes draws one colour per combination of the other axes' values;
    without ``ax`` its figure has two panels: step time above, bandwidth below.

    ``x`` is the column on the x axis (default the first axis); ``x_label`` what was swept,
    a column name whose label and unit are used, or free text.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"budget_usd": [2e7, 4e7], "status": ["optimal"] * 2,
    ...                    "weighted_step_time_s": [0.0065, 0.005], "bw_pod_gbps": [50, 90]})
    >>> ax = plot_sweep(df).axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('network budget ($M)', 'weighted step time (ms)')
    """
    x = _sweep_x(df, x)
    name = x_label or x
    series, note = _series(df, x)
    ok = df[df["status"] == "optimal"].sort_values(x)
    bad = df[df["status"] != "optimal"]
    if len(series) > 1:
        fig, ax, axb, handles = _sweep_groups(df, x, series, ax)
    else:
        fig, ax = _axes(ax, (7.5, 4.4))
        ax.plot(ok[x], ok["weighted_step_time_s"], "k-o", ms=3, label="weighted step time")
        axb = ax.twinx()
        for col in _bw_cols(ok):
            axb.plot(ok[x], ok[col], "--", label=f"bw {col[3:-5]}")
    no_design = [] if bad.empty else ax.plot(bad[x], np.zeros(len(bad)), "x", color="tab:red",
                                             ms=7, clip_on=False,
                                             label=f"no design ({len(bad)} points)")
    _axis(ax, "x", df[x], name)
    _axis(ax, "y", ok["weighted_step_time_s"], "weighted_step_time_s")
    axb.set_ylabel("bandwidth per NPU (GB/s)")
    axb.set_ylim(bottom=0)
    if not ok.empty:
        ax.set_ylim(0, 1.08 * float(ok["weighted_step_time_s"].max()))
    title = f"Optimal allocation over the {quantity(name)[0]} sweep"
    if len(series) == 1:
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = axb.get_legend_handles_labels()
        _legend_below(ax, h1 + h2, l1 + l2, ncols=min(len(h1) + len(h2), 5))
        ax.set_title(title)
        return fig
    _value_ticks(ax, df[x])
    if axb.get_shared_x_axes().joined(ax, axb):   # two panels: the x label once, below
        _axis(axb, "x", df[x], name)
        ax.set_xlabel("")
    handles += no_design
    _legend_below(ax, handles, [h.get_label() for h in handles], ncols=3)
    ax.set_title(f"{title}\none colour per {', '.join(_short(c) for c in _other_axes(df, x))}"
                 + (f" ({note})" if note else ""), fontsize=10)
    return fig


def _sweep_groups(df, x, series, ax):
    """The lines of :func:`plot_sweep` for a multi-axis sweep, one colour per group of
    ``series``: ``(figure, step-time axes, bandwidth axes, legend handles)``."""
    if ax is None:
        fig, (ax, axb) = plt.subplots(2, 1, figsize=(7.5, 6.6), sharex=True,
                                      layout="constrained")
        _OWN.add(fig)
    else:
        fig, axb = ax.figure, ax.twinx()
    cols = _bw_cols(df)
    handles = []
    for i, (label, g) in enumerate(series):
        c, m = f"C{i}", _MARKERS[i % len(_MARKERS)]
        ok = g[g["status"] == "optimal"]
        ax.plot(ok[x], ok["weighted_step_time_s"], "-", marker=m, color=c, ms=4, label=label)
        for j, col in enumerate(cols):
            axb.plot(ok[x], ok[col], linestyle=_LINESTYLES[j % len(_LINESTYLES)], marker=m,
                     ms=3, color=c)
        handles.append(Line2D([], [], label=label, color=c, marker=m))
    handles += [Line2D([], [], label=f"bw {col[3:-5]}", color="0.3",
                       linestyle=_LINESTYLES[j % len(_LINESTYLES)]) for j, col in enumerate(cols)]
    return fig, ax, axb, handles


def _short(name: str) -> str:
    label, kind = quantity(name)
    return label if kind else name.rsplit(".", 1)[-1]


def plot_pareto(df: pd.DataFrame, x: str = "network_cost_usd", y: str = "weighted_step_time_s",
                *, solution: Solution | None = None, ax=None, label: str = "sweep"):
    """Step time against network cost (or power): every design of a sweep and its front.

    In a sweep over several axes each combination of the axes' values (budgets and caps
    aside) has its own colour and marker, the front taken over all; beyond
    :data:`MAX_GROUPS` combinations they are not told apart, and the title says so.

    Parameters
    ----------
    df : pandas.DataFrame
        Sweep rows with columns ``x``, ``y`` and ``status``.
    x, y : str
        Columns; ``x="network_power_w"`` draws the power/step-time front.
    solution : Solution, optional
        Marks its optimum (star) and its baselines (hollow: infeasible).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"status": ["optimal"] * 3, "network_cost_usd": [1e7, 2e7, 3e7],
    ...                    "weighted_step_time_s": [0.02, 0.012, 0.013]})
    >>> ax = plot_pareto(df).axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('network cost ($M)', 'weighted step time (ms)')
    """
    for col in (x, y):
        if col not in df.columns:
            raise InputError(f"no column {col!r} in the sweep", field="x" if col == x else "y")
    ok = df[df["status"] == "optimal"] if "status" in df.columns else df
    ok = ok[pd.to_numeric(ok[x], errors="coerce").notna()
            & pd.to_numeric(ok[y], errors="coerce").notna()]
    if ok.empty:
        raise InputError(f"no optimal row with a value of {x!r} to plot", field="df")
    fig, ax = _axes(ax, (7.0, 4.6))
    xs, ys = ok[x].astype(float).to_numpy(), ok[y].astype(float).to_numpy()
    front = ~dominated(xs, ys)
    order = np.argsort(xs[front])
    fx, fy = xs[front][order], ys[front][order]
    allx, ally = list(xs), list(ys)
    # axes along which a design moves on its own front (a budget, a cap) are not split
    split = [c for c in sweep_axes(ok) if ok[c].nunique(dropna=False) > 1
             and quantity(c)[1] not in ("usd", "w")]
    groups, total = _groups(ok, split) if split else ([], 0)
    # too many combinations to tell apart: every design in one style, the title says so
    unsplit = (f"\n({total} {_what(split)} of {', '.join(_short(c) for c in split)}: not "
               "told apart)" if total > len(groups) else "")
    if groups and not unsplit:
        on_front = pd.Series(front, index=ok.index)
        for i, (key, g) in enumerate(groups):
            c, m = f"C{i}", _MARKERS[i % len(_MARKERS)]
            f = on_front[g.index].to_numpy()
            gx, gy = g[x].astype(float).to_numpy(), g[y].astype(float).to_numpy()
            ax.plot(gx[f], gy[f], m, color=c, ms=5, linestyle="none",
                    label=_group_label(split, key))
            ax.plot(gx[~f], gy[~f], m, mfc="none", mec=c, ms=5, alpha=0.6, linestyle="none")
        ax.step(fx, fy, where="post", color="0.2", lw=1.2, alpha=0.7,
                label=f"{label}: Pareto front (filled: on it)")
    else:
        if (~front).any():
            ax.scatter(xs[~front], ys[~front], s=10, color="0.7", label=f"{label}: dominated")
        ax.step(fx, fy, where="post", color="tab:blue", lw=1.2, alpha=0.6)
        ax.plot(fx, fy, "o", color="tab:blue", ms=3.5, label=f"{label}: Pareto front")
    if solution is not None:
        power = x == "network_power_w"
        for name, ev, ok_, *_ in allocations(solution):
            px = ev.cost.network_power_w if power else ev.cost.network_cost_usd
            if px is None:
                continue
            py = ev.weighted_step_time_s
            allx.append(px)
            ally.append(py)
            if name == "optimum":
                ax.plot(px, py, "*", color="tab:orange", ms=14, mec="black", mew=0.6,
                        label="scenario optimum", zorder=4)
                continue
            m = _BASELINE_MARKERS.get(name, "D")
            style = dict(color="tab:red") if ok_ else dict(mfc="none", mec="tab:red", mew=1.5)
            ax.plot(px, py, m, ms=9, zorder=4, label=_series_label(name, ok_), **style)
    _axis(ax, "x", allx, x)
    _axis(ax, "y", ally, y)
    ax.grid(alpha=0.3)
    what = "power" if x == "network_power_w" else "cost"
    ax.set_title(f"Step time vs network {what}: the Pareto front{unsplit}")
    _legend_below(ax, ncols=3)
    return fig


def plot_bandwidth_vs_budget(df: pd.DataFrame, x: str | None = None, ax=None):
    """Stacked areas: the optimal bandwidth of each dimension over a budget (or any) sweep.

    A sweep over several axes gets one panel per combination of the other axes' values, or
    in the given ``ax`` one line per dimension (colour) and combination (line style).

    ``x`` is the column on the x axis (default the first axis).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"budget_usd": [1e7, 2e7], "status": ["optimal"] * 2,
    ...                    "bw_hb_gbps": [300, 450], "bw_so_gbps": [20, 50]})
    >>> ax = plot_bandwidth_vs_budget(df).axes[0]
    >>> ax.get_xlabel(), ax.get_ylabel()
    ('network budget ($M)', 'bandwidth per NPU (GB/s)')
    """
    x = _sweep_x(df, x)
    cols = _bw_cols(df)
    if not cols:
        raise InputError("no bw_<dim>_gbps columns in the sweep", field="df")
    series, note = _series(df, x)
    if len(series) > 1 and ax is not None:
        fig = ax.figure
        for i, (label, g) in enumerate(series):
            ok = g[g["status"] == "optimal"]
            for j, c in enumerate(cols):
                ax.plot(ok[x].astype(float), ok[c].astype(float), color=f"C{j}",
                        linestyle=_LINESTYLES[i % len(_LINESTYLES)],
                        marker=_MARKERS[i % len(_MARKERS)], ms=3, label=f"{c[3:-5]}, {label}")
        _axis(ax, "x", df[x], x)
        ax.set_ylabel("bandwidth per NPU (GB/s)")
        ax.set_ylim(bottom=0)
        ax.set_title("Optimal bandwidth per dimension" + (f"\n{note}" if note else ""))
        _legend_below(ax, ncols=2)
        return fig
    if len(series) > 1:
        ncols = min(len(series), 3)
        nrows = math.ceil(len(series) / ncols)
        fig, grid = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows + 0.6),
                                 sharey=True, squeeze=False, layout="constrained")
        _OWN.add(fig)
        axes_ = list(grid.ravel())
        for extra in axes_[len(series):]:
            extra.remove()
    else:
        fig, a0 = _axes(ax, (7.0, 4.4))
        axes_ = [a0]
    top = 0.0   # the highest stack of any panel: the panels share their y axis
    for a, (label, g) in zip(axes_, series, strict=False):
        ok = g[g["status"] == "optimal"]
        stacks = [ok[c].astype(float) for c in cols]
        a.stackplot(ok[x].astype(float), *stacks, labels=[c[3:-5] for c in cols], alpha=0.85)
        if not ok.empty:
            top = max(top, float(np.nanmax(np.sum(stacks, axis=0))))
        _axis(a, "x", df[x], x)
        a.set_ylabel("bandwidth per NPU (GB/s)")
        a.margins(x=0)
        a.set_title(label or "Optimal bandwidth per dimension (stacked)", fontsize=10)
    # once, after every panel is drawn: a limit set per panel (``set_ylim(bottom=0)``) froze
    # the shared top at the first panel's data and cut off the higher stacks of the others
    for a in axes_:
        a.set_ylim(0, 1.05 * top if top > 0 else 1.0)
    if len(series) > 1:
        fig.suptitle("Optimal bandwidth per dimension (stacked), one panel per "
                     + ", ".join(_short(c) for c in _other_axes(df, x))
                     + (f"\n{note}" if note else ""))
    handles, labels = axes_[0].get_legend_handles_labels()
    _legend_below(axes_[0], handles[::-1], labels[::-1], ncols=len(cols))
    return fig
