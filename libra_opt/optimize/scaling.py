"""What both backends share: scaled units, scaled constraint rows and the result of a solve.

The program is solved in units that make its numbers O(1): bandwidth ``B_d = b_ref_d x_d``,
times divided by ``t_ref``, and every constraint row divided by its largest coefficient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from libra_opt.optimize.feasibility import lp_extreme
from libra_opt.optimize.terms import AggregatedTerms
from libra_opt.scenario.constraints import Row

__all__ = [
    "CLARABEL_SETTINGS",
    "CLARABEL_RETRY_PROFILES",
    "clarabel_settings",
    "UNUSED_REG",
    "ProgramRun",
    "RowScaling",
    "scale_rows",
    "reference_bw",
    "reference_scales",
    "time_reference",
]

#: Objective weight (scaled units per unit of x) pulling dimensions without traffic down.
UNUSED_REG = 1e-9
#: Tighter than Clarabel's defaults: optima tie several dimensions inside a max, and the duals
#: (shadow prices) converge more slowly than the objective. A static regularization below the
#: default 1e-8 lets the solver finish ("solved", not "almost solved") when a dimension
#: without traffic sits at ~1e-9 beside ones at hundreds of GB/s.
CLARABEL_SETTINGS = {"tol_gap_abs": 1e-13, "tol_gap_rel": 1e-12, "tol_feas": 1e-9,
                     "static_regularization_constant": 1e-9}
#: Settings changed on retries (attempt ``i`` uses profile ``i % len``): an interior point
#: that stalls or stops "almost solved" under one regularization usually finishes under
#: another, or without equilibration.
CLARABEL_RETRY_PROFILES: tuple[dict[str, float | bool], ...] = (
    {},
    {"static_regularization_constant": 1e-8},
    {"static_regularization_constant": 1e-10},
    {"static_regularization_constant": 1e-8, "equilibrate_enable": False},
)


def clarabel_settings(profile: int = 0) -> dict[str, float | bool]:
    """Clarabel settings of retry ``profile`` (see :data:`CLARABEL_RETRY_PROFILES`).

    Examples
    --------
    >>> clarabel_settings(1)["static_regularization_constant"]
    1e-08
    """
    return {**CLARABEL_SETTINGS,
            **CLARABEL_RETRY_PROFILES[profile % len(CLARABEL_RETRY_PROFILES)]}


@dataclass(frozen=True)
class ProgramRun:
    """One solve of a built program, in its scaled units.

    Attributes
    ----------
    status : str
        ``optimal``, ``optimal_inaccurate``, ``infeasible``, ``unbounded`` (with an
        ``_inaccurate`` suffix when the certificate is approximate), or the solver's status.
    x : numpy.ndarray
        Bandwidth in units of ``b_ref`` (or ``y = u B`` in the perspective form).
    u : float or None
        ``1 / normalised cost`` in the perspective form.
    step_value : float
        Objective without the regulariser, in units of ``t_ref``.
    le_dual, eq_dual : numpy.ndarray
        Duals of the scaled ``<=`` and ``==`` constraint rows (``d objective / d b = -dual``).
    compile_s, solve_s : float
        Set-up (or compilation) and solver time of this solve, seconds.
    """

    status: str
    x: np.ndarray
    u: float | None
    step_value: float
    le_dual: np.ndarray
    eq_dual: np.ndarray
    compile_s: float
    solve_s: float


@dataclass
class RowScaling:
    """Scaled constraint rows of one program (both backends keep these).

    ``>=`` rows are negated into ``<=``; row ``i`` of ``le_a`` is
    ``le_sign_i * a_i * b_ref / le_scale_i`` and its right-hand side
    ``le_sign_i * rhs_i / le_scale_i``.
    """

    le_rows: list[int]
    le_sign: np.ndarray
    le_scale: np.ndarray
    le_a: np.ndarray
    eq_rows: list[int]
    eq_scale: np.ndarray
    eq_a: np.ndarray
    b_ref: np.ndarray
    t_ref: float
    product: tuple[float, np.ndarray] | None
    build_s: float = 0.0
    #: $ (or $/s for tco) per unit of normalised cost in the perspective form.
    ref_cost: float = 1.0

    def scaling_fields(self) -> dict:
        """The fields of this class (to build a subclass from it)."""
        return {k: getattr(self, k) for k in RowScaling.__dataclass_fields__
                if k not in ("build_s", "ref_cost")}


def scale_rows(
    rows: tuple[Row, ...], n_dims: int, b_ref: np.ndarray, t_ref: float,
    product: tuple[float, np.ndarray] | None,
) -> RowScaling:
    """Rows in program units: each divided by its largest coefficient times ``b_ref``.

    Examples
    --------
    >>> from libra_opt.scenario.constraints import Row
    >>> s = scale_rows((Row("r", np.array([2.0, 4.0]), ">=", 8.0),), 2, np.ones(2), 1.0, None)
    >>> s.le_a.tolist(), s.le_sign.tolist(), s.le_scale.tolist()
    ([[-0.5, -1.0]], [-1.0], [4.0])
    """
    b_ref = np.full(n_dims, b_ref, dtype=float) if np.ndim(b_ref) == 0 else \
        np.array(b_ref, dtype=float).reshape(n_dims)
    le_rows = [i for i, r in enumerate(rows) if r.sense != "=="]
    eq_rows = [i for i, r in enumerate(rows) if r.sense == "=="]
    a = np.array([r.a for r in rows], dtype=float).reshape(len(rows), n_dims) * b_ref
    scales = np.maximum(np.abs(a).max(axis=1, initial=0.0), 1e-300)
    le_scale, eq_scale = scales[le_rows], scales[eq_rows]
    le_sign = np.array([1.0 if rows[i].sense == "<=" else -1.0 for i in le_rows])
    le_a = a[le_rows] * (le_sign / le_scale)[:, None]
    eq_a = a[eq_rows] / eq_scale[:, None]
    return RowScaling(
        le_rows=le_rows, le_sign=le_sign, le_scale=le_scale, le_a=le_a,
        eq_rows=eq_rows, eq_scale=eq_scale, eq_a=eq_a,
        b_ref=b_ref, t_ref=float(t_ref), product=product,
    )


def reference_scales(
    terms: AggregatedTerms, weights: np.ndarray, n_dims: int, bw_lp: np.ndarray | None
) -> tuple[np.ndarray, float]:
    """Per-dimension bandwidth units and a time unit that make the program's numbers O(1).

    ``b_ref`` is the largest used-dimension bandwidth at a feasible LP vertex (1 GB/s when
    none is known), the same for every dimension; ``t_ref`` is the weighted step time there.
    A poorly scaled first answer is polished by a re-solve scaled per dimension to it.
    """
    used = terms.used_dims
    b_ref = np.ones(n_dims)
    if bw_lp is not None and used.size and np.max(bw_lp[used]) > 0:
        b_ref[:] = float(np.max(bw_lp[used]))
    return b_ref, time_reference(terms, weights, b_ref)


def time_reference(terms: AggregatedTerms, weights: np.ndarray, b_ref: np.ndarray) -> float:
    """The weighted step time at bandwidths ``b_ref`` (1 when it is not positive): the
    program's time unit."""
    if terms.traffic_gb.size:
        comm = (terms.traffic_gb / b_ref[None, :] + terms.latency_s).max(axis=1)
        t_ref = float(weights @ (terms.compute_s + terms.collective_counts @ comm))
    else:
        t_ref = float(weights @ terms.compute_s)
    return t_ref if t_ref > 0 else 1.0


def reference_bw(rows: tuple[Row, ...], n_dims: int, used: np.ndarray) -> np.ndarray | None:
    """A feasible bandwidth vertex for scaling: the most total bandwidth on the used
    dimensions, or, when that is unbounded, the least total bandwidth."""
    c = np.zeros(n_dims)
    c[used] = -1.0
    status, _, bw = lp_extreme(rows, n_dims, c, used)
    if status != "optimal":
        status, _, bw = lp_extreme(rows, n_dims, np.ones(n_dims), used)
    return bw if status == "optimal" else None
