"""The convex program behind every objective, built in scaled units.

``perf`` (weighted step time) is a DCP program: every step time is built from constants and
terms ``c / B_d`` by sums and maxes, so with ``t >= c * inv_pos(B)`` it is convex and the
solver returns the global optimum.

``perf_per_cost`` (step time x network cost) and ``tco`` (steps x step time x cluster $/s,
with cluster $/s = ``r0 + r . B``) look non-convex, but with ``u = 1 / K(B)`` (``K`` the
normalised cost, affine) and ``y = u B`` every term of ``step(B) * K(B)`` becomes convex in
``(y, u)``: a constant ``a`` becomes ``a / u`` and a term ``c / B_d`` becomes ``c / y_d`` (the
perspective transform), while ``K(y, u) = 1`` and each linear constraint ``a . B <= r``
becomes ``a . y <= r u``. This is exact for any linear constraints, with latency terms and
with overlapped training loops alike.

Right-hand sides are ``cvxpy.Parameter`` objects (DPP), so re-solves skip compilation.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from libra_opt.optimize.feasibility import lp_extreme
from libra_opt.optimize.terms import AggregatedTerms
from libra_opt.scenario.constraints import Row

__all__ = [
    "CLARABEL_SETTINGS",
    "ConvexProgram",
    "build_program",
    "reference_bw",
    "reference_scales",
]

# Objective weight (scaled units per unit of x) pulling dimensions without traffic down.
_UNUSED_REG = 1e-9
#: Tighter than Clarabel's defaults: optima tie several dimensions inside a max.
CLARABEL_SETTINGS = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-9, "tol_feas": 1e-9}


@dataclass
class ConvexProgram:
    """A built cvxpy problem with handles on its variables, parameters and scales."""

    problem: cp.Problem
    x: cp.Variable  # bandwidth (perf) or y = u * B (product form)
    u: cp.Variable | None
    step_value: cp.Expression  # objective without the regulariser
    le_rows: list[int]
    le_sign: np.ndarray
    le_scale: np.ndarray
    le_param: cp.Parameter | None
    le_con: cp.Constraint | None
    eq_rows: list[int]
    eq_scale: np.ndarray
    eq_param: cp.Parameter | None
    eq_con: cp.Constraint | None
    b_ref: np.ndarray  # GB/s per unit of x, per dimension
    product: tuple[float, np.ndarray] | None
    t_ref: float  # seconds per unit of objective
    build_s: float


def time_terms(c, lat, used, x: cp.Variable, inv_u, mode: str, cons: list):
    """Per-collective time expressions ``T_k`` (scaled units) in terms of ``x`` and ``1/u``."""
    inv = cp.Variable(len(used), name="inv_bw")
    cons.append(inv >= cp.inv_pos(x[used]))
    c = c[:, used]
    lat = lat[:, used]
    n_k = c.shape[0]
    if mode == "pipelined":
        t = cp.Variable(n_k, name="coll_time")
        k_idx, j_idx = np.nonzero(c > 0)
        rhs = cp.multiply(c[k_idx, j_idx], inv[j_idx])
        if (lat > 0).any():
            rhs = rhs + lat[k_idx, j_idx] * inv_u
        cons.append(t[k_idx] >= rhs)
        return t
    expr = c @ inv
    if (lat > 0).any():
        expr = expr + lat.sum(axis=1) * inv_u
    return expr


def build_program(
    terms: AggregatedTerms,
    weights: np.ndarray,
    rows: tuple[Row, ...],
    n_dims: int,
    mode: str,
    loop: str,
    product: tuple[float, np.ndarray] | None,
    b_ref: np.ndarray,
    t_ref: float,
) -> ConvexProgram:
    """Build the program in scaled units: ``B_d = b_ref_d * x_d``, times divided by ``t_ref``."""
    t0 = time.perf_counter()
    b_ref = np.broadcast_to(np.asarray(b_ref, dtype=float), (n_dims,)).copy()
    x = cp.Variable(n_dims, nonneg=True, name="bw" if product is None else "y")
    cons: list[cp.Constraint] = []
    u = None
    inv_u: cp.Expression | float = 1.0
    if product is not None:
        u = cp.Variable(nonneg=True, name="u")
        inv_u_var = cp.Variable(name="inv_u")
        cons.append(inv_u_var >= cp.inv_pos(u))
        inv_u = inv_u_var
        k0_hat, kappa_hat = product
        cons.append(k0_hat * u + (kappa_hat * b_ref) @ x == 1)
    n_k = terms.traffic_gb.shape[0]
    if n_k:
        c_scaled = terms.traffic_gb / (b_ref[None, :] * t_ref)
        t = time_terms(c_scaled, terms.latency_s / t_ref, terms.used_dims, x, inv_u, mode, cons)
    if loop == "no_overlap":
        step = cp.Constant(float(weights @ terms.compute_s) / t_ref) * inv_u
        if n_k:
            step = step + (weights @ terms.collective_counts) @ t
    else:
        n_p = terms.phase_compute_s.size
        s = cp.Variable(n_p, name="phase_time")
        cons.append(s >= terms.phase_compute_s / t_ref * inv_u)
        if n_k:
            cons.append(s >= terms.phase_members @ t)
        step = (weights @ terms.phase_counts) @ s
    unused = np.setdiff1d(np.arange(n_dims), terms.used_dims)
    reg = _UNUSED_REG * cp.sum(x[unused]) if unused.size else 0.0

    le_rows = [i for i, r in enumerate(rows) if r.sense != "=="]
    eq_rows = [i for i, r in enumerate(rows) if r.sense == "=="]

    def scale(idx):
        return np.array([max(np.abs(rows[i].a * b_ref).max(), 1e-300) for i in idx])

    le_scale, eq_scale = scale(le_rows), scale(eq_rows)
    le_sign = np.array([1.0 if rows[i].sense == "<=" else -1.0 for i in le_rows])
    le_param = eq_param = le_con = eq_con = None
    if le_rows:
        a = np.array([rows[i].a * b_ref for i in le_rows]) * (le_sign / le_scale)[:, None]
        le_param = cp.Parameter(len(le_rows), name="rhs_le")
        le_con = a @ x - (le_param if u is None else le_param * u) <= 0
        cons.append(le_con)
    if eq_rows:
        a = np.array([rows[i].a * b_ref for i in eq_rows]) / eq_scale[:, None]
        eq_param = cp.Parameter(len(eq_rows), name="rhs_eq")
        # Written as ``lhs - rhs == 0`` so the dual's sign does not depend on operand order.
        eq_con = a @ x - (eq_param if u is None else eq_param * u) == 0
        cons.append(eq_con)
    problem = cp.Problem(cp.Minimize(step + reg), cons)
    return ConvexProgram(
        problem=problem,
        x=x,
        u=u,
        step_value=step,
        le_rows=le_rows,
        le_sign=le_sign,
        le_scale=le_scale,
        le_param=le_param,
        le_con=le_con,
        eq_rows=eq_rows,
        eq_scale=eq_scale,
        eq_param=eq_param,
        eq_con=eq_con,
        b_ref=b_ref,
        product=product,
        t_ref=t_ref,
        build_s=time.perf_counter() - t0,
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
    if terms.traffic_gb.size:
        comm = (terms.traffic_gb / b_ref[None, :] + terms.latency_s).max(axis=1)
        t_ref = float(weights @ (terms.compute_s + terms.collective_counts @ comm))
    else:
        t_ref = float(weights @ terms.compute_s)
    return b_ref, (t_ref if t_ref > 0 else 1.0)


def reference_bw(rows: tuple[Row, ...], n_dims: int, used: np.ndarray) -> np.ndarray | None:
    """A feasible bandwidth vertex for scaling: the most total bandwidth on the used
    dimensions, or, when that is unbounded, the least total bandwidth."""
    c = np.zeros(n_dims)
    c[used] = -1.0
    status, _, bw = lp_extreme(rows, n_dims, c, used)
    if status != "optimal":
        status, _, bw = lp_extreme(rows, n_dims, np.ones(n_dims), used)
    return bw if status == "optimal" else None
