"""The convex program assembled directly as Clarabel's conic data (the default backend).

The same program as :mod:`libra_opt.optimize.program` (the cvxpy reference formulation),
written out by hand in Clarabel's standard form

.. math::

    \\min_z \\; q^T z \\quad \\text{s.t.} \\quad A z + s = b, \\; s \\in K

with ``K`` a product of a zero cone (equalities), a nonnegative cone (inequalities) and
3-dimensional second-order cones. Variables, in order: ``x`` (bandwidth in units of
``b_ref``, or ``y = u B`` in the perspective form), ``inv`` (one per used dimension,
``inv_j >= 1 / x_j``), ``t`` (collective times, pipelined model), ``z`` (the max part of a
chunked collective, ``topology_aware`` model: ``T_k = s_k . inv + s0_k + w_k z_k`` with
``z_k >= p_r . inv + p0_r``), ``s`` (phase times, overlapped loop), ``e`` (the exposed step
time ``e_w >= T_w - W_w``, ``e_w >= 0`` of each workload with a hidden window ``W_w``, e.g.
DiLoCo's overlapped outer sync; none without one), and in the perspective form ``u`` and
``inv_u >= 1 / u``.

``inv_j x_j >= 1`` with ``inv_j, x_j >= 0`` is the second-order cone
``(inv_j + x_j, inv_j - x_j, 2)``: ``(inv + x)^2 >= (inv - x)^2 + 4``.

The sparsity pattern depends on the scenario's structure only: new right-hand sides, weights,
bounds, prices or TCO parameters change numbers (in ``b``, in the ``u`` column of ``A``, in
``q``, in rows of ``A``: :meth:`ConicProgram.with_rows`), and a re-solve updates the data of
one Clarabel solver kept with the structure: a sweep point costs one solve, no assembly.

References
----------
.. [1] P. J. Goulart and Y. Chen, "Clarabel: An interior-point solver for conic programs
   with quadratic objectives", arXiv:2405.12762, 2024.
.. [2] W. Won et al., "LIBRA: Enabling Workload-aware Multi-dimensional Network Topology
   Optimization for Distributed Training of Large AI Models", ISPASS 2024.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from libra_opt.optimize.scaling import (
    UNUSED_REG,
    ProgramRun,
    RowScaling,
    clarabel_settings,
    scale_rows,
)
from libra_opt.optimize.terms import AggregatedTerms
from libra_opt.scenario.constraints import Row
from libra_opt.traffic.timing import TimingModel

__all__ = ["ConicProgram", "build_conic_program", "CscMatrix"]

_STATUS = {
    "Solved": "optimal",
    "AlmostSolved": "optimal_inaccurate",
    "PrimalInfeasible": "infeasible",
    "AlmostPrimalInfeasible": "infeasible_inaccurate",
    "DualInfeasible": "unbounded",
    "AlmostDualInfeasible": "unbounded_inaccurate",
}


@dataclass(frozen=True)
class CscMatrix:
    """A compressed-sparse-column matrix in the form Clarabel reads (no scipy needed).

    Examples
    --------
    >>> m = CscMatrix.from_dense(np.array([[1.0, 0.0], [0.0, 2.0]]))
    >>> m.indptr.tolist(), m.indices.tolist(), m.data.tolist()
    ([0, 1, 2], [0, 1], [1.0, 2.0])
    """

    shape: tuple[int, int]
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray
    format: str = "csc"
    has_canonical_format: bool = True
    has_sorted_indices: bool = True

    @classmethod
    def from_dense(cls, a: np.ndarray, keep: np.ndarray | None = None) -> CscMatrix:
        """Columns of ``a`` with its nonzeros (and the entries ``keep`` marks) stored."""
        mask = a != 0 if keep is None else (a != 0) | keep
        cols, rows = np.nonzero(mask.T)
        counts = np.bincount(cols, minlength=a.shape[1])
        indptr = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(a.shape, indptr, rows.astype(np.int64), a[rows, cols].astype(float))


class _Clarabel:
    """The Clarabel solver of one program structure (default settings), made once from the
    building program's data and updated in place (``q``, ``b``) for every solve with the
    same constraint matrix, so that a point's answer does not depend on the points solved
    before it; a solve whose matrix has other numbers (the perspective form's ``u`` column)
    gets a solver of its own."""

    def __init__(self, q: np.ndarray, a: CscMatrix, b: np.ndarray, cones: list) -> None:
        self.data: tuple | None = (q, a, b, cones)
        self.cones = cones
        self.solver: Any = None
        self.held: tuple[np.ndarray, ...] = ()  # the q, A data and b the solver holds

    def solve(self, q: np.ndarray, a: CscMatrix, b: np.ndarray) -> Any:
        """Clarabel's solution of ``min q.z, A z + s = b, s in K`` for this structure."""
        if self.solver is None:
            assert self.data is not None
            q0, a0, b0, cones = self.data
            self.solver = _solver(q0, a0, b0, cones, 0)
            self.held, self.data = (q0, a0.data, b0), None
        q0, a0, b0 = self.held
        if a.data is not a0 and not np.array_equal(a.data, a0):
            return _solver(q, a, b, self.cones, 0).solve()
        update = {}
        if q is not q0 and not np.array_equal(q, q0):
            update["q"] = q
        if not np.array_equal(b, b0):
            update["b"] = b
        if update:
            self.solver.update(**update)
            self.held = (q, a0, b)
        return self.solver.solve()


def _solver(q: np.ndarray, a: CscMatrix, b: np.ndarray, cones: list, profile: int) -> Any:
    """A new Clarabel solver with the settings of retry ``profile``."""
    import clarabel

    settings = clarabel.DefaultSettings()
    settings.verbose = False
    for key, value in clarabel_settings(profile).items():
        setattr(settings, key, value)
    n = q.size
    p = CscMatrix((n, n), np.zeros(n + 1, dtype=np.int64), np.zeros(0, np.int64), np.zeros(0))
    return clarabel.DefaultSolver(p, q, a, b, cones, settings)


@dataclass
class ConicProgram(RowScaling):
    """Clarabel data of one scenario at one scaling, re-solvable with new right-hand sides
    and workload weights (the structure and, with the default settings, the solver kept).

    Attributes (besides :class:`~libra_opt.optimize.scaling.RowScaling`)
    ----------
    a_dense : numpy.ndarray
        Constraint matrix without the right-hand-side entries (filled per solve).
    b0 : numpy.ndarray
        Constant part of ``b``.
    q_by_workload, const_by_workload : numpy.ndarray
        ``(W, n)`` and ``(W,)``: the objective (step time in units of ``t_ref``) is
        ``weights @ q_by_workload`` plus the regulariser ``q_reg``, plus the constant
        ``weights @ const_by_workload`` (compute without overlap, ``perf`` only).
    weights : numpy.ndarray
        The workload weights the program was built with (a solve may give others).
    cones : list
        Clarabel cone objects, in row order.
    le_at, eq_at : numpy.ndarray
        Row of ``A`` of each scaled ``<=`` / ``==`` constraint row.
    norm_at : int
        Row of ``A`` of the perspective form's normalisation (``-1`` without it).
    n_x, u_col : int
        Number of bandwidth variables; column of ``u`` (``-1`` without the perspective form).
    """

    a_dense: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    b0: np.ndarray = field(default_factory=lambda: np.zeros(0))
    q_by_workload: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    const_by_workload: np.ndarray = field(default_factory=lambda: np.zeros(0))
    q_reg: np.ndarray = field(default_factory=lambda: np.zeros(0))
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    cones: list = field(default_factory=list)
    le_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    eq_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    norm_at: int = -1
    n_x: int = 0
    u_col: int = -1
    _a_csc: CscMatrix | None = None
    _rhs_slots: np.ndarray | None = None
    _clarabel: _Clarabel | None = None

    def objective(self, weights: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray, float]:
        """``q``, the step time's part of it (``q`` less the regulariser) and the objective's
        constant for ``weights`` (default: the built ones)."""
        if weights is None or np.array_equal(weights, self.weights):
            return self._objective
        q_step = weights @ self.q_by_workload
        return q_step + self.q_reg, q_step, float(weights @ self.const_by_workload)

    def constraint_data(self, rows: tuple[Row, ...]) -> tuple[CscMatrix, np.ndarray]:
        """``A`` and ``b`` with the right-hand sides of ``rows`` (scaled, in ``b``, or in the
        ``u`` column of ``A`` in the perspective form)."""
        order, divisor = self._rhs_scaling
        rhs = np.array([rows[i].rhs for i in order]) / divisor
        a_csc = self._a_csc
        assert a_csc is not None
        b = self.b0.copy()
        if self.u_col < 0:
            b[self._rhs_at] = rhs
            return a_csc, b
        assert self._rhs_slots is not None
        data = a_csc.data.copy()
        data[self._rhs_slots] = -rhs
        return CscMatrix(a_csc.shape, a_csc.indptr, a_csc.indices, data), b

    @functools.cached_property
    def _rhs_scaling(self) -> tuple[list[int], np.ndarray]:
        """The rows whose right-hand sides enter the program, ``<=`` rows first, and what
        each is divided by (its scale, with the sign that turns ``>=`` into ``<=``)."""
        return ([*self.le_rows, *self.eq_rows],
                np.concatenate((self.le_scale * self.le_sign, self.eq_scale)))

    @functools.cached_property
    def _rhs_at(self) -> np.ndarray:
        return np.concatenate((self.le_at, self.eq_at)).astype(int)

    @functools.cached_property
    def _objective(self) -> tuple[np.ndarray, np.ndarray, float]:
        q_step = self.weights @ self.q_by_workload
        return q_step + self.q_reg, q_step, float(self.weights @ self.const_by_workload)

    def run(self, rows: tuple[Row, ...], profile: int = 0,
            weights: np.ndarray | None = None) -> ProgramRun:
        """Solve with the right-hand sides of ``rows`` (the built rows, new numbers), the
        workload ``weights`` (default: the built ones) and the settings of retry ``profile``;
        ``solve_s`` is the time in Clarabel (set-up or update, and solve), ``compile_s`` the
        time filling in the data."""
        t0 = time.perf_counter()
        q, q_step, const_step = self.objective(weights)
        a_csc, b = self.constraint_data(rows)
        assert self._clarabel is not None
        t1 = time.perf_counter()
        if profile == 0:
            sol = self._clarabel.solve(q, a_csc, b)
        else:
            sol = _solver(q, a_csc, b, self.cones, profile).solve()
        solve_s = time.perf_counter() - t1
        status = str(sol.status)
        status = _STATUS.get(status, status)
        z = np.asarray(sol.x, dtype=float)
        duals = np.asarray(sol.z, dtype=float)
        return ProgramRun(
            status=status,
            x=z[: self.n_x].copy(),
            u=float(z[self.u_col]) if self.u_col >= 0 else None,
            step_value=const_step + float(q_step @ z),
            le_dual=duals[self.le_at] if self.le_at.size else np.zeros(0),
            eq_dual=duals[self.eq_at] if self.eq_at.size else np.zeros(0),
            compile_s=t1 - t0,
            solve_s=solve_s,
        )

    def with_rows(self, rows: tuple[Row, ...], product: tuple[float, np.ndarray] | None
                  ) -> ConicProgram | None:
        """This program with other constraint rows and cost unit (``product``), structure,
        scales and solver kept (an edit of bounds, prices or TCO parameters); ``None`` when
        the senses, the order, the objective's form or the nonzero pattern differ.

        Examples
        --------
        >>> from libra_opt.optimize.problem import build_problem
        >>> from libra_opt.scenario.examples import toy_scenario
        >>> p = build_problem(toy_scenario())
        >>> rows = build_problem(toy_scenario().with_limits(budget_usd=4e5)).rows
        >>> p.program.with_rows(rows, None) is None    # one more row: another structure
        True
        """
        t0 = time.perf_counter()
        scaling = scale_rows(rows, self.n_x, self.b_ref, self.t_ref, product)
        if (scaling.le_rows != self.le_rows or scaling.eq_rows != self.eq_rows
                or (product is None) != (self.product is None)):
            return None
        a = self.a_dense.copy()
        a[self.le_at, : self.n_x] = scaling.le_a
        a[self.eq_at, : self.n_x] = scaling.eq_a
        if product is not None:
            a[self.norm_at, self.u_col] = product[0]
            a[self.norm_at, : self.n_x] = product[1] * self.b_ref
        csc = self._a_csc
        assert csc is not None
        data = a[csc.indices, np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr))]
        if np.count_nonzero(a) > np.count_nonzero(data):
            return None  # a coefficient outside the stored pattern
        return dataclasses.replace(
            self, **scaling.scaling_fields(), build_s=time.perf_counter() - t0, a_dense=a,
            _a_csc=CscMatrix(csc.shape, csc.indptr, csc.indices, data))


class _Builder:
    """Rows of ``A z + s = b`` by cone: equalities, inequalities, second-order cones."""

    def __init__(self, n_var: int):
        self.n_var = n_var
        self.eq: list[tuple[np.ndarray, float]] = []
        self.le: list[tuple[np.ndarray, float]] = []
        self.soc: list[tuple[np.ndarray, float]] = []

    def row(self) -> np.ndarray:
        return np.zeros(self.n_var)

    def add_le(self, a: np.ndarray, b: float = 0.0) -> int:
        """``a . z <= b``; returns its index among the inequalities."""
        self.le.append((a, b))
        return len(self.le) - 1

    def add_eq(self, a: np.ndarray, b: float = 0.0) -> int:
        self.eq.append((a, b))
        return len(self.eq) - 1

    def add_inverse(self, inv_col: int, x_col: int) -> None:
        """``inv * x >= 1`` as ``(inv + x, inv - x, 2)`` in the second-order cone."""
        r1, r2, r3 = self.row(), self.row(), self.row()
        r1[[inv_col, x_col]] = -1.0  # s = b - A z = inv + x
        r2[inv_col], r2[x_col] = -1.0, 1.0  # s = inv - x
        self.soc += [(r1, 0.0), (r2, 0.0), (r3, 2.0)]


def build_conic_program(
    terms: AggregatedTerms,
    weights: np.ndarray,
    rows: tuple[Row, ...],
    n_dims: int,
    timing: TimingModel,
    product: tuple[float, np.ndarray] | None,
    b_ref: np.ndarray,
    t_ref: float,
) -> ConicProgram:
    """Assemble the program in scaled units: ``B_d = b_ref_d * x_d``, times over ``t_ref``.

    Same arguments and the same optimum as :func:`libra_opt.optimize.program.build_program`.

    Examples
    --------
    >>> from libra_opt.optimize.problem import build_problem
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> p = build_problem(toy_scenario())
    >>> run = p.program.run(p.rows)
    >>> run.status, (p.program.b_ref * run.x).round(3).tolist()
    ('optimal', [200.0, 100.0])
    """
    t0 = time.perf_counter()
    scaling = scale_rows(rows, n_dims, b_ref, t_ref, product)
    b_ref = scaling.b_ref
    used = terms.used_dims
    n_k = terms.traffic_gb.shape[0]
    n_p = terms.phase_compute_s.size
    m = used.size if n_k else 0
    chunked = terms.chunked if n_k else None
    pipelined = timing.is_pipelined and n_k > 0 and chunked is None
    overlap = timing.overlapped
    z_of = np.full(n_k, -1, dtype=int)
    if chunked is not None:  # one epigraph variable per collective with a max part
        with_max = np.flatnonzero(chunked.max_weight > 0)
        z_of[with_max] = np.arange(with_max.size)
    n_z = int((z_of >= 0).sum())
    # Column layout.
    col_x = 0
    col_inv = n_dims
    col_t = col_inv + m
    n_t = n_k if pipelined else 0
    col_z = col_t + n_t
    col_s = col_z + n_z
    n_s = n_p if overlap else 0
    # Hidden windows: e_w >= T_w - W_w, e_w >= 0 for each workload with one (terms.py).
    win = terms.windowed
    if win.size:
        terms.check_windows(weights, timing, product is not None)
    col_e = col_s + n_s
    col_u = col_e + win.size
    n_var = col_u + (2 if product is not None else 0)
    col_inv_u = col_u + 1
    bld = _Builder(n_var)

    c = terms.traffic_gb[:, used] / (b_ref[used][None, :] * t_ref) if n_k else np.zeros((0, 0))
    lat = terms.latency_s[:, used] / t_ref if n_k else np.zeros((0, 0))

    # x >= 0 (and u >= 0).
    for d in range(n_dims):
        r = bld.row()
        r[col_x + d] = -1.0
        bld.add_le(r)
    if product is not None:
        r = bld.row()
        r[col_u] = -1.0
        bld.add_le(r)
        bld.add_inverse(col_inv_u, col_u)
    for j, d in enumerate(used[:m]):
        bld.add_inverse(col_inv + j, col_x + d)

    def inv_u_term(r: np.ndarray, value: float) -> float:
        """Add ``value * inv_u`` to row ``r`` (perspective form) or return it as a constant."""
        if product is not None:
            r[col_inv_u] += value
            return 0.0
        return value

    # Collective times T_k as linear forms in z (plus a constant in the perf form).
    coll_forms = np.zeros((n_k, n_var))
    coll_const = np.zeros(n_k)
    if pipelined:
        k_idx, j_idx = np.nonzero(c > 0)
        for k, j in zip(k_idx.tolist(), j_idx.tolist(), strict=True):
            r = bld.row()
            r[col_inv + j] = c[k, j]
            r[col_t + k] = -1.0
            const = inv_u_term(r, lat[k, j]) if lat[k, j] > 0 else 0.0
            bld.add_le(r, -const)
        coll_forms[np.arange(n_k), col_t + np.arange(n_k)] = 1.0
    elif chunked is not None:
        # T_k = s_k . inv + s0_k + w_k z_k, z_k >= p_r . inv + p0_r (terms.ChunkedTerms).
        scale = b_ref[used][None, :] * t_ref
        coll_forms[:, col_inv : col_inv + m] = chunked.sum_gb[:, used] / scale
        if product is not None:
            coll_forms[:, col_inv_u] = chunked.sum_const_s / t_ref
        else:
            coll_const = chunked.sum_const_s / t_ref
        # z_k is kept in units of w_k (z_k >= w_k (p_r . inv + p0_r)): with thousands of
        # chunks a weight w_k ~ 1e3 on a variable of order 1 / w_k is badly scaled.
        has_z = z_of >= 0
        coll_forms[np.flatnonzero(has_z), col_z + z_of[has_z]] = 1.0
        piece_c = chunked.piece_gb[:, used] / scale
        for i, owner in enumerate(chunked.piece_owner.tolist()):
            w_k = float(chunked.max_weight[owner])
            r = bld.row()
            r[col_inv : col_inv + m] = w_k * piece_c[i]
            r[col_z + z_of[owner]] = -1.0
            p0 = w_k * chunked.piece_const_s[i] / t_ref
            const = inv_u_term(r, p0) if p0 != 0 else 0.0  # pieces may subtract
            bld.add_le(r, -const)
    elif n_k:
        coll_forms[:, col_inv : col_inv + m] = c
        lat_sum = lat.sum(axis=1)
        if product is not None:
            coll_forms[:, col_inv_u] = lat_sum
        else:
            coll_const = lat_sum

    # The objective, one row per workload: weights @ q_w (+ weights @ c_w in the perf form),
    # so new weights change numbers only. A workload with a hidden window weighs e_w.
    n_w = weights.size
    q_w = np.zeros((n_w, n_var))
    c_w = np.zeros(n_w)
    plain = np.ones(n_w)  # workloads whose step time is T_w itself
    plain[win] = 0.0
    if not overlap:
        compute = plain * terms.compute_s / t_ref
        if product is not None:
            q_w[:, col_inv_u] += compute
        else:
            c_w += compute
        if n_k:
            counts = plain[:, None] * terms.collective_counts
            q_w += counts @ coll_forms
            c_w += counts @ coll_const
    else:
        for p in range(n_p):
            r = bld.row()
            r[col_s + p] = -1.0
            const = inv_u_term(r, terms.phase_compute_s[p] / t_ref)
            bld.add_le(r, -const)
            if n_k and terms.phase_members[p].any():
                r = terms.phase_members[p] @ coll_forms
                r[col_s + p] -= 1.0
                bld.add_le(r, -float(terms.phase_members[p] @ coll_const))
        q_w[:, col_s : col_s + n_p] = plain[:, None] * terms.phase_counts
    if win.size:
        assert terms.hidden_window_s is not None
        compute_w = terms.compute_s
        counts_w = terms.collective_counts
        for i, w in enumerate(win.tolist()):
            # T_w as a linear form (plus a constant in the perf form), less W_w: e_w >= it.
            if not overlap:
                r = counts_w[w] @ coll_forms
                const = float(counts_w[w] @ coll_const)
                const += inv_u_term(r, (compute_w[w] - terms.hidden_window_s[w]) / t_ref)
            else:
                r = bld.row()
                r[col_s : col_s + n_p] = terms.phase_counts[w]
                const = inv_u_term(r, -terms.hidden_window_s[w] / t_ref)
            r[col_e + i] = -1.0
            bld.add_le(r, -const)
            r = bld.row()
            r[col_e + i] = -1.0
            bld.add_le(r)
            q_w[w, col_e + i] = 1.0
    q_reg = np.full(n_var, 0.0)
    q_reg[col_x : col_x + n_dims] = UNUSED_REG
    q_reg[col_x + used] = 0.0  # the regulariser pulls dimensions without traffic down

    # The perspective normalisation and the constraint rows.
    norm_at = -1
    if product is not None:
        k0_hat, kappa_hat = product
        r = bld.row()
        r[col_u] = k0_hat
        r[col_x : col_x + n_dims] = kappa_hat * b_ref
        norm_at = bld.add_eq(r, 1.0)
    le_at = [bld.add_le(np.concatenate((a, np.zeros(n_var - n_dims)))) for a in scaling.le_a]
    eq_at = [bld.add_eq(np.concatenate((a, np.zeros(n_var - n_dims)))) for a in scaling.eq_a]

    import clarabel

    n_eq, n_le = len(bld.eq), len(bld.le)
    rows_all = bld.eq + bld.le + bld.soc
    a_dense = np.array([r for r, _ in rows_all]).reshape(len(rows_all), n_var)
    b0 = np.array([b for _, b in rows_all], dtype=float)
    le_at_arr = n_eq + np.array(le_at, dtype=int)
    eq_at_arr = np.array(eq_at, dtype=int)
    cones: list = []
    if n_eq:
        cones.append(clarabel.ZeroConeT(n_eq))
    if n_le:
        cones.append(clarabel.NonnegativeConeT(n_le))
    cones += [clarabel.SecondOrderConeT(3) for _ in range(len(bld.soc) // 3)]
    # In the perspective form -rhs * u is stored in each constraint row even when zero, so
    # that new right-hand sides change numbers, not the pattern.
    rhs_rows = np.concatenate((le_at_arr, eq_at_arr)).astype(int)
    keep = None
    if product is not None:
        keep = np.zeros(a_dense.shape, dtype=bool)
        keep[rhs_rows, col_u] = True
    a_csc = CscMatrix.from_dense(a_dense, keep)
    slots = None
    if product is not None:
        start, stop = a_csc.indptr[col_u], a_csc.indptr[col_u + 1]
        where = {int(r): start + i for i, r in enumerate(a_csc.indices[start:stop])}
        slots = np.array([where[int(r)] for r in rhs_rows], dtype=np.int64)
    program = ConicProgram(
        **scaling.scaling_fields(),
        build_s=time.perf_counter() - t0,
        a_dense=a_dense,
        b0=b0,
        q_by_workload=q_w,
        const_by_workload=c_w,
        q_reg=q_reg,
        weights=np.array(weights, dtype=float),
        cones=cones,
        le_at=le_at_arr,
        eq_at=eq_at_arr,
        norm_at=norm_at,
        n_x=n_dims,
        u_col=col_u if product is not None else -1,
        _a_csc=a_csc,
        _rhs_slots=slots,
    )
    # the solver's first data: the built rows' right-hand sides and weights
    program._clarabel = _Clarabel(program.objective()[0], *program.constraint_data(rows), cones)
    return program
