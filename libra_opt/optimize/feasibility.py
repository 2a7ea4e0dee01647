"""Linear-programming checks of the constraint set: feasibility, bounds, conflicting sets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from libra_opt.errors import InfeasibleDesignError
from libra_opt.scenario.constraints import Row

__all__ = [
    "POSITIVE_LABEL",
    "lp_extreme",
    "is_feasible",
    "conflicting_set",
    "raise_infeasible",
    "unbounded_dims",
    "minimal_bandwidth",
    "row_bounds",
    "cost_can_vanish",
    "snap_to_rows",
]

#: Label of the implicit constraint "a dimension that carries traffic has bandwidth > 0".
POSITIVE_LABEL = "bandwidth > 0 on every dimension that carries traffic"
_EPS_BW = 1e-5  # GB/s (10 kB/s): what "> 0" means in the linear checks
_ROW_SCALE_RANGE = (1e-3, 1e9)  # largest |coefficient| of a row passed to HiGHS unscaled


def _lp_arrays(rows: Sequence[Row], n_dims: int):
    """Rows as HiGHS arrays. HiGHS drops entries below 1e-9 and rejects those above 1e15 in
    absolute terms, so a row whose largest coefficient lies outside ``_ROW_SCALE_RANGE``
    (a $ or W row on a huge fabric, a row of tiny coefficients) is divided by it; other rows
    are passed as they are (so ordinary answers do not move)."""
    lo, hi = _ROW_SCALE_RANGE
    a_ub, b_ub, a_eq, b_eq = [], [], [], []
    for r in rows:
        a, rhs = np.asarray(r.a, dtype=float), float(r.rhs)
        s = float(np.max(np.abs(a))) if a.size else 0.0
        if np.isfinite(s) and (s > hi or 0 < s < lo):
            a, rhs = a / s, rhs / s
        if r.sense == "<=":
            a_ub.append(a)
            b_ub.append(rhs)
        elif r.sense == ">=":
            a_ub.append(-a)
            b_ub.append(-rhs)
        else:
            a_eq.append(a)
            b_eq.append(rhs)

    def arr(x):
        return np.array(x).reshape(-1, n_dims) if x else None

    return arr(a_ub), (np.array(b_ub) if b_ub else None), arr(a_eq), (np.array(b_eq) if b_eq else None)


def _bounds(n_dims: int, positive_dims: Sequence[int] | np.ndarray):
    lb = np.zeros(n_dims)
    lb[list(positive_dims)] = _EPS_BW
    return [(lo, None) for lo in lb]


def lp_extreme(
    rows: Sequence[Row],
    n_dims: int,
    c: np.ndarray,
    positive_dims: Sequence[int] | np.ndarray = (),
    bounds: Sequence[tuple[float | None, float | None]] | None = None,
) -> tuple[str, float, np.ndarray | None]:
    """Minimise ``c . B`` over the constraint rows and ``B >= 0`` (``> 0`` on
    ``positive_dims``), or over explicit per-dimension ``bounds``.

    Returns
    -------
    status : {'optimal', 'infeasible', 'unbounded'}
    value : float
    bw_gbps : numpy.ndarray or None
    """
    from scipy.optimize import linprog  # imported on first use: a second to import

    a_ub, b_ub, a_eq, b_eq = _lp_arrays(rows, n_dims)
    res = linprog(
        c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq,
        bounds=bounds if bounds is not None else _bounds(n_dims, positive_dims), method="highs",
    )
    if res.status == 0:
        return "optimal", float(res.fun), np.asarray(res.x)
    if res.status == 2:
        return "infeasible", float("nan"), None
    if res.status == 3:
        return "unbounded", float("-inf"), None
    return "error", float("nan"), None


def row_bounds(rows: Sequence[Row], n_dims: int) -> np.ndarray:
    """Upper bound on each ``B_d >= 0`` implied by single rows, without solving an LP.

    A row whose coefficients are all >= 0 and that bounds its left side from above
    (``<=`` or ``==``), or all <= 0 and bounded from below, caps every dimension it
    involves at ``max(rhs, 0) / a_d``. A dimension no such row involves gets ``inf``.
    Finite bounds hold for every right-hand side, since they come from the rows' signs.

    Examples
    --------
    >>> from libra_opt.scenario.constraints import Row
    >>> rows = (Row("t", np.array([1.0, 1.0, 0.0]), "==", 1000.0),
    ...         Row("o", np.array([1.0, -1.0, 0.0]), ">=", 0.0))
    >>> row_bounds(rows, 3).tolist()
    [1000.0, 1000.0, inf]
    """
    ub = np.full(n_dims, np.inf)
    for r in rows:
        a = np.asarray(r.a, dtype=float)
        if r.sense in ("<=", "==") and (a >= 0).all():
            coef, rhs = a, r.rhs
        elif r.sense in (">=", "==") and (a <= 0).all():
            coef, rhs = -a, -r.rhs
        else:
            continue
        pos = coef > 0
        ub[pos] = np.minimum(ub[pos], max(float(rhs), 0.0) / coef[pos])
    return ub


def is_feasible(rows: Sequence[Row], n_dims: int, positive_dims: Sequence[int] | np.ndarray = ()) -> bool:
    """True when some ``B >= 0`` (``> 0`` on ``positive_dims``) satisfies every row."""
    status, _, _ = lp_extreme(rows, n_dims, np.zeros(n_dims), positive_dims)
    return status == "optimal"


def conflicting_set(
    rows: Sequence[Row], n_dims: int, positive_dims: Sequence[int] | np.ndarray = ()
) -> tuple[str, ...]:
    """Labels of an irreducible infeasible subset of ``rows`` (deletion filter).

    The implicit positivity of used dimensions is included as :data:`POSITIVE_LABEL`
    when it is part of the conflict.
    """
    keep = list(rows)
    i = 0
    while i < len(keep):
        trial = keep[:i] + keep[i + 1 :]
        if not is_feasible(trial, n_dims, positive_dims):
            keep = trial
        else:
            i += 1
    labels = [r.label for r in keep]
    if len(positive_dims) and is_feasible(keep, n_dims, ()):
        labels.append(POSITIVE_LABEL)
    return tuple(labels)


def raise_infeasible(rows: Sequence[Row], n_dims: int, positive_dims: Sequence[int] | np.ndarray = ()) -> None:
    """Raise :class:`InfeasibleDesignError` naming a conflicting set of constraints."""
    conflict = conflicting_set(rows, n_dims, positive_dims)
    listing = "; ".join(f"'{c}'" for c in conflict)
    raise InfeasibleDesignError(
        f"infeasible design: these constraints cannot hold together: {listing}", conflict
    )


def unbounded_dims(
    rows: Sequence[Row], n_dims: int, dims: Sequence[int] | np.ndarray,
    positive_dims: Sequence[int] | np.ndarray = (),
) -> np.ndarray:
    """The dimensions among ``dims`` whose bandwidth the rows do not bound above."""
    out = []
    for d in dims:
        e = np.zeros(n_dims)
        e[d] = -1.0
        if lp_extreme(rows, n_dims, e, positive_dims)[0] == "unbounded":
            out.append(int(d))
    return np.array(out, dtype=int)


def minimal_bandwidth(
    rows: Sequence[Row], bw_gbps: np.ndarray, dims: Sequence[int] | np.ndarray,
    lower_gbps: np.ndarray,
) -> np.ndarray | None:
    """Least total bandwidth on ``dims`` (each at least ``lower_gbps``) with every other
    dimension held at ``bw_gbps``; ``None`` when no such point satisfies the rows."""
    n = len(bw_gbps)
    idle = set(int(d) for d in dims)
    bounds = [(float(lower_gbps[d]), None) if d in idle else (float(bw_gbps[d]),) * 2 for d in range(n)]
    c = np.zeros(n)
    c[list(idle)] = 1.0
    # The held dimensions come from the conic solver: a row it makes binding may be exceeded
    # by round-off, which would make this LP infeasible. Relax every row by a tolerance far
    # below the re-check's (1e-6 of the row's scale).
    held = np.asarray(bw_gbps, dtype=float)
    relaxed: list[Row] = []
    for r in rows:
        tol = 1e-9 * max(1.0, abs(r.rhs), float(np.abs(r.a) @ np.abs(held)))
        if r.sense in ("<=", "=="):
            relaxed.append(Row(r.label, r.a, "<=", r.rhs + tol))
        if r.sense in (">=", "=="):
            relaxed.append(Row(r.label, r.a, ">=", r.rhs - tol))
    status, _, bw = lp_extreme(relaxed, n, c, bounds=bounds)
    if status != "optimal" or bw is None:
        return None
    out = np.asarray(bw_gbps, dtype=float).copy()
    out[list(idle)] = np.maximum(bw[list(idle)], lower_gbps[list(idle)])
    return out


def cost_can_vanish(rows: tuple[Row, ...], n: int, rate: np.ndarray | None) -> bool:
    """Whether the rows let the network cost ``rate . B`` go to (nearly) zero.

    With every dimension priced that means ``B = 0`` meets every row (checked directly);
    otherwise a linear program finds the least cost.
    """
    assert rate is not None
    if (rate > 0).all():
        return all(
            (r.sense == "<=" and 0.0 <= r.rhs) or (r.sense == ">=" and 0.0 >= r.rhs)
            or (r.sense == "==" and r.rhs == 0.0)
            for r in rows
        )
    st, c_min, _ = lp_extreme(rows, n, rate)
    return st == "optimal" and c_min <= 1e-12 * float(rate.sum())


def snap_to_rows(rows: tuple[Row, ...], bw_gbps: np.ndarray) -> np.ndarray:
    """``bw_gbps`` moved onto its equality rows and inside its single-dimension bounds.

    An interior-point answer meets ``bw[0] == 450`` to about 1e-9; a caller that prices the
    answer and re-imposes that price as a budget would then see an infeasible design. The
    answer is projected (least squares) onto the equality rows and bound rows are clipped;
    a move larger than 1e-6 relative is not made (that would not be round-off). The numpy
    re-check then evaluates the moved point.
    """
    bw = bw_gbps.copy()
    eq = [r for r in rows if r.sense == "=="]
    if len(eq) == 1:  # the usual total-bandwidth row: the projection in closed form
        a1 = eq[0].a
        resid1 = float(a1 @ bw) - eq[0].rhs
        if resid1 != 0:
            bw = bw - a1 * (resid1 / float(a1 @ a1))
    elif eq:
        a = np.array([r.a for r in eq])
        resid = a @ bw - np.array([r.rhs for r in eq])
        if np.any(resid != 0):
            bw = bw - np.linalg.lstsq(a, resid, rcond=None)[0]
    for r in rows:
        if r.sense != "==" and np.count_nonzero(r.a) == 1:
            d = int(np.flatnonzero(r.a)[0])
            bound = r.rhs / r.a[d]
            upper = (r.sense == "<=") == (r.a[d] > 0)
            bw[d] = min(bw[d], bound) if upper else max(bw[d], bound)
    np.maximum(bw, 0.0, out=bw)
    return bw if (np.abs(bw - bw_gbps) <= 1e-6 * np.abs(bw_gbps)).all() else bw_gbps
