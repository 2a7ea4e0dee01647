"""Plot of a co-design search: each solved candidate's step time (or training cost per
million tokens) against its network cost, with the Pareto front marked and the best
candidates numbered by rank (their layouts listed in the legend)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from libra_opt.explore.pareto import dominated
from libra_opt.scenario.accuracy import same
from libra_opt.scenario.objective import objective_of

__all__ = ["plot_search", "search_plot_columns"]

#: Directions tried, in this order, around a point for its rank number.
_DIRECTIONS = ((1, 1), (1, 0), (1, -1), (0, 1), (0, -1), (-1, 1), (-1, 0), (-1, -1))
#: Distance between the rings of spots tried around a point (points), and how many rings;
#: half the size of a best candidate's star marker (points), kept free of numbers.
_RING_PT, _RINGS, _STAR_PT = 6.0, 60, 4.5
#: Knobs a legend entry names besides the degrees when they differ: column -> text.
_VARYING: dict[str, Callable[[Any], str]] = {
    "fabric": str, "ep": "EP{}".format, "micro_batch_size": "mb {}".format,
    "interleave": "v {}".format, "recompute": "recompute {}".format,
    "sequence_parallel": lambda v: "SP" if v else "no SP", "zero": "ZeRO {}".format}


def search_plot_columns(table: Any, objective: str) -> tuple[str, str]:
    """The (x, y) columns plotted: network cost against the training run's cost per million
    tokens (``tco``, when known) or the step time.

    Examples
    --------
    >>> import pandas as pd
    >>> search_plot_columns(pd.DataFrame({"run_cost_usd_per_mtoken": [1.0]}), "tco")
    ('network_cost_usd', 'run_cost_usd_per_mtoken')
    >>> search_plot_columns(pd.DataFrame({"run_cost_usd_per_mtoken": [float("nan")]}), "perf")
    ('network_cost_usd', 'step_time_s')
    """
    col = "run_cost_usd_per_mtoken"
    if objective_of(objective).needs_tco and col in table and np.isfinite(table[col].to_numpy(float)).any():
        return "network_cost_usd", col
    return "network_cost_usd", "step_time_s"


def plot_search(result: Any, ax: Any = None, *, top: int = 5, title: str | None = None) -> Any:
    """Scatter the solved candidates of a search; mark the Pareto front (least network cost
    for a given step time or cost per token) and the ``top`` best by the objective.

    Each of the best is numbered by its rank next to its point, where the number overlaps
    no other, and its layout is listed in the legend. ``result`` is a ``SearchResult``
    (:func:`libra_opt.explore.search.run_search`).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> from types import SimpleNamespace
    >>> t = pd.DataFrame({"status": ["optimal"] * 3, "network_cost_usd": [1e6, 2e6, 3e6],
    ...                   "step_time_s": [3.0, 2.0, 2.5], "rank": [3, 1, 2], "tp": [8] * 3,
    ...                   "cp": [1] * 3, "pp": [4, 8, 2], "dp": [4, 2, 8]})
    >>> fig = plot_search(SimpleNamespace(table=t, objective="perf"))
    >>> len(fig.axes[0].collections)   # all candidates, the Pareto front, the best
    3
    >>> [t.get_text() for t in fig.axes[0].texts]   # the ranks, by their points
    ['1', '2', '3']
    >>> [t.get_text() for t in fig.axes[0].get_legend().get_texts()][3:]
    ['TP8 CP1 PP8 DP2', 'TP8 CP1 PP2 DP8', 'TP8 CP1 PP4 DP4']
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    table = result.table
    solved = table[table["status"] == "optimal"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
    else:
        fig = ax.figure
    xcol, ycol = search_plot_columns(solved, result.objective)
    x = _snapped(solved[xcol].to_numpy(float))
    y = _snapped(solved[ycol].to_numpy(float))
    ax.scatter(x / 1e6, y, s=10, alpha=0.35, color="tab:gray", label="solved candidates")
    best = solved.iloc[:0]
    if len(solved):
        front = ~dominated(x, y)
        order = np.argsort(x[front])
        if len(np.unique(x)) > 1:
            ax.plot((x[front] / 1e6)[order], y[front][order], color="tab:blue", lw=1)
            ax.scatter(x[front] / 1e6, y[front], s=22, color="tab:blue",
                       label="Pareto front (least network cost for the step time)")
        else:  # one cost: no trade-off to draw, and no round-off spread over the axis
            ax.set_xlim(0.99 * x[0] / 1e6, 1.01 * x[0] / 1e6)
            ax.plot([], [], ls="none",
                    label=f"every candidate costs ${x[0] / 1e6:,.2f}M: no cost trade-off")
        best = solved[solved["rank"].notna() & (solved["rank"] <= top)].sort_values("rank")
        bx, by = best[xcol].to_numpy(float) / 1e6, best[ycol].to_numpy(float)
        ax.scatter(bx, by, s=60, marker="*", color="tab:red",
                   label=f"top {len(best)} by {result.objective}, numbered by rank:")
        if "band_pct" in best and len(best):
            b = best["band_pct"].to_numpy(float) / 100
            ax.errorbar(bx, by, yerr=[by - by / (1 + b), by / np.maximum(1 - b, 1e-9) - by],
                        fmt="none", ecolor="tab:red", elinewidth=0.8, capsize=2, alpha=0.6,
                        label="model error band of the top (E: outside the validated "
                              "envelope)")
    ax.ticklabel_format(axis="both", useOffset=False)
    ax.set_xlabel("network cost ($M)")
    ax.set_ylabel("training cost per million tokens ($)" if ycol == "run_cost_usd_per_mtoken"
                  else "step time (s)")
    ax.set_title(title or f"Co-design search: {len(solved):,} solved candidates")
    ax.grid(alpha=0.3)
    handles, _ = ax.get_legend_handles_labels()
    ranks = [str(int(r)) + ("E" if "outside_envelope" in best and r_out else "")
             for r, r_out in zip(best["rank"], best.get("outside_envelope", [""] * len(best)),
                                 strict=True)]
    handles += [Line2D([], [], ls="none", marker=f"${n}$", markersize=5 + 2.5 * len(n),
                       color="tab:red", label=layout)
                for n, layout in zip(ranks, _layouts(best), strict=True)]
    legend = ax.legend(handles=handles, fontsize=8, loc="best",
                       ncols=1 + (len(handles) - 1) // 12)
    if len(best):
        _number(ax, legend, best[xcol].to_numpy(float) / 1e6, best[ycol].to_numpy(float),
                ranks)
    return fig


def _snapped(v: np.ndarray) -> np.ndarray:
    """``v`` with values the same up to solver round-off replaced by the smallest of them
    (round-off is neither a Pareto step nor an axis range)."""
    out = v.copy()
    order = np.argsort(v, kind="stable")
    for i, j in zip(order[:-1], order[1:], strict=True):
        if same(out[i], v[j]):
            out[j] = out[i]
    return out


def _layouts(best: Any) -> list[str]:
    """``TP4 CP4 PP16 DP64`` for each row of ``best`` and the knobs of :data:`_VARYING` that
    differ among the rows; rows still alike get the placement of the first groups that tell
    them apart, then their rank."""
    varying = [c for c in _VARYING if c in best and best[c].nunique() > 1]
    rows = [r for _, r in best.iterrows()]
    out = [" ".join([f"TP{r['tp']} CP{r['cp']} PP{r['pp']} DP{r['dp']}",
                     *(_VARYING[c](r[c]) for c in varying)]) for r in rows]
    if "placement" in best:
        for same in _alike(out):
            groups = [_placement_groups(str(rows[i]["placement"])) for i in same]
            names = list(dict.fromkeys(n for g in groups for n in g))
            differ: list[str] = []   # the first groups, in order, that tell them apart
            for n in names:
                if len({g.get(n, "") for g in groups}) > 1:
                    differ.append(n)
                if len({tuple(g.get(d, "") for d in differ) for g in groups}) == len(groups):
                    break
            for i, g in zip(same, groups, strict=True):
                shown = [f"{n}: {g[n]}" if n else g[n] for n in differ if n in g]
                if shown:
                    out[i] += f" [{' | '.join(shown)}]"
    for same in _alike(out):
        for i in same:
            out[i] += f" (rank {int(rows[i]['rank'])})" if "rank" in best else f" ({i + 1})"
    return out


def _alike(texts: list[str]) -> list[list[int]]:
    """The positions of each text that occurs more than once in ``texts``."""
    where: dict[str, list[int]] = {}
    for i, t in enumerate(texts):
        where.setdefault(t, []).append(i)
    return [ix for ix in where.values() if len(ix) > 1]


def _placement_groups(placement: str) -> dict[str, str]:
    """``{'tp': 'hb 4', 'cp': 'hb 2, scaleout 2'}`` of ``tp: hb 4 | cp: hb 2, scaleout 2``;
    a text of another form is one unnamed group (``{'': text}``)."""
    parts = [p.partition(": ") for p in placement.split(" | ")]
    if not all(sep for _, sep, _ in parts):
        return {"": placement}
    return {name.strip(): rest.strip() for name, _, rest in parts}


def _number(ax: Any, legend: Any, x: np.ndarray, y: np.ndarray, labels: list[str]) -> None:
    """Write ``labels[i]`` by the point ``(x[i], y[i])`` where it overlaps no other label,
    star or ``legend``, inside the axes."""
    from matplotlib.transforms import Bbox

    fig = ax.figure
    fig.draw_without_rendering()  # final limits, legend place and text sizes
    # the legend stays where "best" put it (it would move away from the labels otherwise)
    legend.set_loc(tuple(legend.get_window_extent().transformed(ax.transAxes.inverted()).p0))
    pad = px = fig.dpi / 72.0  # pixels per point
    inside = ax.get_window_extent().padded(-pad)
    centres = ax.transData.transform(np.column_stack([x, y]))
    taken = [legend.get_window_extent().padded(pad),
             *(Bbox.from_bounds(cx - _STAR_PT * px, cy - _STAR_PT * px, 2 * _STAR_PT * px,
                                2 * _STAR_PT * px) for cx, cy in centres)]
    for xi, yi, text in zip(x, y, labels, strict=True):
        ann = ax.annotate(text, (xi, yi), xytext=(0, 0), textcoords="offset points", fontsize=9,
                          fontweight="bold", color="tab:red")
        spot = _free_spot(ann, inside, taken)
        ring, (dx, dy) = spot if spot is not None else (1, _DIRECTIONS[0])
        _put(ann, ring, dx, dy)
        taken.append(ann.get_window_extent().padded(pad))
        if ring > 1:  # away from its point: a leader line
            ax.annotate("", (xi, yi), xytext=ann.xyann, textcoords="offset points",
                        arrowprops={"arrowstyle": "-", "color": "tab:red", "lw": 0.6,
                                    "shrinkA": 0, "shrinkB": _STAR_PT})


def _put(ann: Any, ring: int, dx: int, dy: int) -> None:
    """Move ``ann``'s text ``ring`` rings from its point in direction ``(dx, dy)``."""
    ann.xyann = (ring * _RING_PT * dx, ring * _RING_PT * dy)
    ann.set_horizontalalignment({1: "left", 0: "center", -1: "right"}[dx])
    ann.set_verticalalignment({1: "bottom", 0: "center", -1: "top"}[dy])


def _free_spot(ann: Any, inside: Any, taken: list) -> tuple[int, tuple[int, int]] | None:
    """The first (ring, direction) where ``ann`` lies inside ``inside`` clear of ``taken``."""
    for ring in range(1, _RINGS + 1):
        for dx, dy in _DIRECTIONS:
            _put(ann, ring, dx, dy)
            box = ann.get_window_extent()
            if (inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0
                    and box.y1 <= inside.y1 and not any(box.overlaps(b) for b in taken)):
                return ring, (dx, dy)
    return None
