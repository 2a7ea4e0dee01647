"""The convex program behind every objective, built in scaled units.

``perf`` (weighted step time) is a DCP program: every step time is built from constants and
terms ``c / B_d`` by sums and maxes, so with ``t >= c * inv_pos(B)`` it is convex and the
solver returns the global optimum. A workload with a hidden window ``W`` (DiLoCo's outer
sync overlapped with compute) adds ``cp.pos(T_w - W)``, convex too.

``perf_per_cost`` (step time x network cost) and ``tco`` (steps x step time x cluster $/s,
with cluster $/s = ``r0 + r . B``) look non-convex, but with ``u = 1 / K(B)`` (``K`` the
normalised cost, affine) and ``y = u B`` every term of ``step(B) * K(B)`` becomes convex in
``(y, u)``: a constant ``a`` becomes ``a / u`` and a term ``c / B_d`` becomes ``c / y_d`` (the
perspective transform), while ``K(y, u) = 1`` and each linear constraint ``a . B <= r``
becomes ``a . y <= r u``. This is exact for any linear constraints, with latency terms and
with overlapped training loops alike.

Right-hand sides are ``cvxpy.Parameter`` objects (DPP), so re-solves skip compilation.

This is the reference formulation (``backend="cvxpy"``); the default backend,
:mod:`libra_opt.optimize.conic`, assembles the same program directly as Clarabel's data, and
the tests check that the two agree.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import cvxpy as cp
import numpy as np

from libra_opt.optimize.scaling import (
    CLARABEL_SETTINGS,
    UNUSED_REG,
    ProgramRun,
    RowScaling,
    clarabel_settings,
    reference_bw,
    reference_scales,
    scale_rows,
)
from libra_opt.optimize.terms import AggregatedTerms, ChunkedTerms
from libra_opt.scenario.constraints import Row
from libra_opt.traffic.timing import TimingModel

__all__ = [
    "CLARABEL_SETTINGS",
    "ConvexProgram",
    "build_program",
    "reference_bw",
    "reference_scales",
]

_STATUS = {
    cp.OPTIMAL: "optimal",
    cp.OPTIMAL_INACCURATE: "optimal_inaccurate",
    cp.INFEASIBLE: "infeasible",
    cp.INFEASIBLE_INACCURATE: "infeasible_inaccurate",
    cp.UNBOUNDED: "unbounded",
    cp.UNBOUNDED_INACCURATE: "unbounded_inaccurate",
}


@dataclass
class ConvexProgram(RowScaling):
    """A built cvxpy problem with handles on its variables and parameters (the reference)."""

    problem: cp.Problem | None = None
    x: cp.Variable | None = None  # bandwidth (perf) or y = u * B (product form)
    u: cp.Variable | None = None
    step_value: cp.Expression | None = None  # objective without the regulariser
    le_param: cp.Parameter | None = None
    le_con: cp.Constraint | None = None
    eq_param: cp.Parameter | None = None
    eq_con: cp.Constraint | None = None
    weights: np.ndarray | None = None

    def run(self, rows: tuple[Row, ...], profile: int = 0,
            weights: np.ndarray | None = None) -> ProgramRun:
        """Set the right-hand sides of ``rows`` and solve with Clarabel through cvxpy (with
        the settings of retry ``profile``). The weights are the built ones (other
        ``weights`` need a new program: :func:`~libra_opt.optimize.problem.solve` builds
        it)."""
        assert self.problem is not None and self.x is not None and self.step_value is not None
        if (weights is not None and self.weights is not None
                and not np.array_equal(weights, self.weights)):
            raise ValueError("a cvxpy program is solved with the weights it was built with")
        if self.le_param is not None:
            self.le_param.value = np.array([rows[i].rhs for i in self.le_rows]) * self.le_sign / self.le_scale
        if self.eq_param is not None:
            self.eq_param.value = np.array([rows[i].rhs for i in self.eq_rows]) / self.eq_scale
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # the status is reported
                self.problem.solve(solver=cp.CLARABEL, **clarabel_settings(profile))
        except cp.error.SolverError as exc:
            return ProgramRun(f"Clarabel failed ({exc})", np.zeros(0), None, float("nan"),
                              np.zeros(0), np.zeros(0), 0.0, 0.0)
        status = _STATUS.get(self.problem.status, str(self.problem.status))
        ok = status.startswith("optimal")

        def dual(con):
            if con is None or con.dual_value is None:
                return np.zeros(0)
            return np.atleast_1d(np.asarray(con.dual_value, dtype=float))

        return ProgramRun(
            status=status,
            x=np.asarray(self.x.value, dtype=float) if ok else np.zeros(0),
            u=float(np.asarray(self.u.value)) if ok and self.u is not None else None,
            step_value=float(np.asarray(self.step_value.value)) if ok else float("nan"),
            le_dual=dual(self.le_con) if ok else np.zeros(0),
            eq_dual=dual(self.eq_con) if ok else np.zeros(0),
            compile_s=float(self.problem.compilation_time or 0.0),
            solve_s=float(self.problem.solver_stats.solve_time or 0.0) if ok else 0.0,
        )


def chunked_time_terms(chunked: ChunkedTerms, scale: np.ndarray, t_ref: float, used,
                       x: cp.Variable, inv_u, cons: list):
    """``T_k = s_k . inv + s0_k + w_k max_r (p_r . inv + p0_r)`` (scaled units) of the
    ``topology_aware`` model (:class:`~libra_opt.optimize.terms.ChunkedTerms`)."""
    inv = cp.Variable(len(used), name="inv_bw")
    cons.append(inv >= cp.inv_pos(x[used]))
    n_k = chunked.sum_gb.shape[0]
    expr = (chunked.sum_gb[:, used] / scale[None, used]) @ inv
    expr = expr + (chunked.sum_const_s / t_ref) * inv_u
    owners = np.unique(chunked.piece_owner)
    if owners.size:
        # z_k in units of w_k (z_k >= w_k pieces): a weight ~1e3 on a variable ~1e-3 is
        # badly scaled for the interior point.
        z = cp.Variable(n_k, name="chunk_cycle")
        w_r = chunked.max_weight[chunked.piece_owner]
        piece = (w_r[:, None] * chunked.piece_gb[:, used] / scale[None, used]) @ inv
        piece = piece + (w_r * chunked.piece_const_s / t_ref) * inv_u
        cons.append(z[chunked.piece_owner] >= piece)
        has = np.zeros(n_k)
        has[owners] = 1.0
        expr = expr + cp.multiply(has, z)
    return expr


def time_terms(c, lat, used, x: cp.Variable, inv_u, pipelined: bool, cons: list):
    """Per-collective time expressions ``T_k`` (scaled units) in terms of ``x`` and ``1/u``:
    the largest of the dimensions' times when ``pipelined``, else their sum."""
    inv = cp.Variable(len(used), name="inv_bw")
    cons.append(inv >= cp.inv_pos(x[used]))
    c = c[:, used]
    lat = lat[:, used]
    n_k = c.shape[0]
    if pipelined:
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
    timing: TimingModel,
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
    if n_k and terms.chunked is not None:
        t = chunked_time_terms(terms.chunked, b_ref * t_ref, t_ref, terms.used_dims, x, inv_u,
                               cons)
    elif n_k:
        c_scaled = terms.traffic_gb / (b_ref[None, :] * t_ref)
        t = time_terms(c_scaled, terms.latency_s / t_ref, terms.used_dims, x, inv_u,
                       timing.is_pipelined, cons)
    win = terms.windowed
    w_step = weights
    if win.size:  # hidden windows: those workloads weigh max(T_w - W_w, 0) (terms.py)
        terms.check_windows(weights, timing, product is not None)
        w_step = np.array(weights, dtype=float)
        w_step[win] = 0.0
        assert terms.hidden_window_s is not None
        window = terms.hidden_window_s[win] / t_ref
    if not timing.overlapped:
        step = cp.Constant(float(w_step @ terms.compute_s) / t_ref) * inv_u
        if n_k:
            step = step + (w_step @ terms.collective_counts) @ t
        if win.size:
            t_win = (terms.compute_s[win] / t_ref - window) * inv_u
            if n_k:
                t_win = t_win + terms.collective_counts[win] @ t
            step = step + weights[win] @ cp.pos(t_win)
    else:
        n_p = terms.phase_compute_s.size
        s = cp.Variable(n_p, name="phase_time")
        cons.append(s >= terms.phase_compute_s / t_ref * inv_u)
        if n_k:
            cons.append(s >= terms.phase_members @ t)
        step = (w_step @ terms.phase_counts) @ s
        if win.size:
            step = step + weights[win] @ cp.pos(terms.phase_counts[win] @ s - window * inv_u)
    unused = np.setdiff1d(np.arange(n_dims), terms.used_dims)
    reg = UNUSED_REG * cp.sum(x[unused]) if unused.size else 0.0

    scaling = scale_rows(rows, n_dims, b_ref, t_ref, product)
    le_param = eq_param = le_con = eq_con = None
    if scaling.le_rows:
        le_param = cp.Parameter(len(scaling.le_rows), name="rhs_le")
        le_con = scaling.le_a @ x - (le_param if u is None else le_param * u) <= 0
        cons.append(le_con)
    if scaling.eq_rows:
        eq_param = cp.Parameter(len(scaling.eq_rows), name="rhs_eq")
        # Written as ``lhs - rhs == 0`` so the dual's sign does not depend on operand order.
        eq_con = scaling.eq_a @ x - (eq_param if u is None else eq_param * u) == 0
        cons.append(eq_con)
    problem = cp.Problem(cp.Minimize(step + reg), cons)
    return ConvexProgram(
        **scaling.scaling_fields(),
        build_s=time.perf_counter() - t0,
        problem=problem,
        x=x,
        u=u,
        step_value=step,
        le_param=le_param,
        le_con=le_con,
        eq_param=eq_param,
        eq_con=eq_con,
        weights=np.array(weights, dtype=float),
    )
