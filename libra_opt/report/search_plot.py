"""Plot of a co-design search: each solved candidate's step time (or training cost per
million tokens) against its network cost, with the Pareto front marked."""

from __future__ import annotations

from typing import Any

import numpy as np

from libra_opt.explore.pareto import dominated
from libra_opt.scenario.objective import objective_of

__all__ = ["plot_search", "search_plot_columns"]


def search_plot_columns(table: Any, objective: str) -> tuple[str, str]:
    """The (x, y) columns plotted for ``objective``: network cost against the training
    run's cost per million tokens (``tco``, when present) or the step time.

    Examples
    --------
    >>> import pandas as pd
    >>> search_plot_columns(pd.DataFrame({"tco_usd_per_mtoken": [1.0]}), "tco")
    ('network_cost_usd', 'tco_usd_per_mtoken')
    >>> search_plot_columns(pd.DataFrame({"tco_usd_per_mtoken": [float("nan")]}), "perf")
    ('network_cost_usd', 'step_time_s')
    """
    col = "tco_usd_per_mtoken"
    if objective_of(objective).needs_tco and col in table and np.isfinite(table[col].to_numpy(float)).any():
        return "network_cost_usd", col
    return "network_cost_usd", "step_time_s"


def plot_search(result: Any, ax: Any = None, *, top: int = 5, title: str | None = None) -> Any:
    """Scatter the solved candidates of a search; mark the Pareto front (least network cost
    for a given step time or cost per token) and the ``top`` best by the objective.

    Parameters
    ----------
    result : SearchResult
        From :func:`libra_opt.explore.search.run_search` (or :func:`libra_opt.search`).
    ax : matplotlib Axes, optional
        Draw here (default: a new figure).
    top : int
        How many of the best candidates to label.
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure

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
    """
    import matplotlib.pyplot as plt

    table = result.table
    solved = table[table["status"] == "optimal"]
    if ax is None:
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
    else:
        fig = ax.figure
    xcol, ycol = search_plot_columns(solved, result.objective)
    x = solved[xcol].to_numpy(float)
    y = solved[ycol].to_numpy(float)
    ax.scatter(x / 1e6, y, s=10, alpha=0.35, color="tab:gray", label="solved candidates")
    if len(solved):
        # costs equal to the solver's tolerance are one cost (no front drawn through noise)
        front = ~dominated(np.round(x, 0), np.round(y, 9))
        order = np.argsort(x[front])
        ax.plot((x[front] / 1e6)[order], y[front][order], color="tab:blue", lw=1)
        ax.scatter(x[front] / 1e6, y[front], s=22, color="tab:blue", label="Pareto front")
        best = solved[(solved["rank"] >= 1) & (solved["rank"] <= top)].sort_values("rank")
        ax.scatter(best[xcol].to_numpy(float) / 1e6, best[ycol].to_numpy(float), s=60,
                   marker="*", color="tab:red", label=f"top {len(best)} by {result.objective}")
        for _, r in best.iterrows():
            ax.annotate(f"#{int(r['rank'])} TP{r['tp']} CP{r['cp']} PP{r['pp']} DP{r['dp']}",
                        (r[xcol] / 1e6, r[ycol]), fontsize=7, xytext=(4, 4),
                        textcoords="offset points")
    ax.ticklabel_format(axis="both", useOffset=False)
    ax.set_xlabel("network cost (M$)")
    ax.set_ylabel("training cost per million tokens ($)" if ycol == "tco_usd_per_mtoken"
                  else "step time (s)")
    ax.set_title(title or f"Co-design search: {len(solved):,} solved candidates")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig
