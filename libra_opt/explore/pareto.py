"""Pareto fronts of sweep results: the designs no other design beats on both axes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from libra_opt.errors import InputError

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["pareto_front", "dominated"]


def dominated(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Which points are dominated (minimising both): another point is no worse on both and
    better on one; exact duplicates do not dominate each other. ``O(n log n)``: sorted by ``x``
    then ``y``, a point is kept when its ``y`` is the least of its ``x`` and below every ``y``
    of a smaller ``x``.

    Examples
    --------
    >>> dominated(np.array([1.0, 2.0, 2.0, 3.0]), np.array([5.0, 4.0, 6.0, 4.0])).tolist()
    [False, False, True, True]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    order = np.lexsort((y, x))
    out = np.ones(len(x), dtype=bool)
    best = np.inf  # least y over strictly smaller x
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and x[order[j]] == x[order[i]]:
            j += 1
        group = order[i:j]
        y_min = y[group[0]]  # sorted by y within the same x
        if y_min < best:
            out[group[y[group] == y_min]] = False
        best = min(best, y_min)
        i = j
    return out


def pareto_front(
    df: pd.DataFrame, x: str = "network_cost_usd", y: str = "weighted_step_time_s"
) -> pd.DataFrame:
    """The non-dominated rows of ``df`` (minimising ``x`` and ``y``; ``x="network_power_w"`` for
    the power front), sorted by ``x`` then ``y``, with their index; only rows with ``status ==
    "optimal"`` (when there is a status) and finite ``x`` and ``y`` take part. A column missing,
    or without a finite number in those rows, is an :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"network_cost_usd": [3.0, 1.0, 2.0, 2.5],
    ...                    "weighted_step_time_s": [1.0, 3.0, 2.0, 2.5],
    ...                    "status": ["optimal"] * 4})
    >>> pareto_front(df).index.tolist()          # row 3 is beaten by row 2 on both
    [1, 2, 0]
    """
    for col, what in ((x, "x"), (y, "y")):
        if col not in df.columns:
            raise InputError(f"no column {col!r} (columns: {', '.join(map(str, df.columns))})",
                             field=what)
    ok = df
    if "status" in df.columns:
        ok = ok[ok["status"] == "optimal"]
    import pandas as pd

    xs = pd.to_numeric(ok[x], errors="coerce").to_numpy(dtype=float)
    ys = pd.to_numeric(ok[y], errors="coerce").to_numpy(dtype=float)
    for col, what, vals in ((x, "x", xs), (y, "y", ys)):
        if len(vals) and not np.isfinite(vals).any():
            raise InputError(
                f"column {col!r} has no finite number in the {len(vals)} rows that take part "
                "(network_power_w is NaN when the scenario has no power model)", field=what)
    finite = np.isfinite(xs) & np.isfinite(ys)
    ok, xs, ys = ok[finite], xs[finite], ys[finite]
    keep = ~dominated(xs, ys)
    front = ok[keep]
    order = np.lexsort((ys[keep], xs[keep]))
    return front.iloc[order]
