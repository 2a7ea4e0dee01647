"""Exact bandwidth allocation: build a convex program from a scenario, then solve it.

``perf`` (weighted step time) is a DCP program: every step time is built from constants and
terms ``c / B_d`` by sums and maxes, so with ``t >= c * inv_pos(B)`` it is convex and the
solver returns the global optimum.

``perf_per_cost`` (step time x network cost) and ``tco`` (steps x step time x cluster $/s,
with cluster $/s = ``r0 + r . B``) look non-convex, but with
``u = 1 / K(B)`` (``K`` the normalised cost, linear) and ``y = u B`` every term of
``step(B) * K(B)`` becomes convex in ``(y, u)``: a constant ``a`` becomes ``a / u`` and a term
``c / B_d`` becomes ``c / y_d`` (the perspective transform), while ``K(y) = 1`` and each
linear constraint ``a . B <= r`` becomes ``a . y <= r u``. This is exact for any linear
constraints, with latency terms and with overlapped training loops alike.

Right-hand sides of constraints are ``cvxpy.Parameter`` objects (DPP), so a budget sweep
re-solves without re-compiling.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cvxpy as cp
import numpy as np

from libra_opt.constraints import Row
from libra_opt.errors import InputError, SolverError, UnboundedDesignError, VerificationError
from libra_opt.evaluate import Evaluation, evaluate
from libra_opt.feasibility import lp_extreme, raise_infeasible
from libra_opt.scenario import Scenario, scenario_rows
from libra_opt.solution import ConstraintReport, Solution, SolverInfo, baselines
from libra_opt.tco import cluster_rate_coefficients
from libra_opt.terms import AggregatedTerms, aggregate_terms

__all__ = ["BandwidthProblem", "build_problem", "solve", "OBJECTIVE_REL_TOL"]

logger = logging.getLogger(__name__)

#: Relative agreement required between the solver's objective and the numpy evaluator's.
OBJECTIVE_REL_TOL = 1e-6
#: Relative constraint violation tolerated in the returned allocation.
CONSTRAINT_REL_TOL = 1e-6
# Objective weight (s per GB/s) pulling dimensions that carry no traffic to their minimum.
_UNUSED_REG = 1e-9
# Tighter than Clarabel's defaults: optima tie several dimensions inside a max.
_CLARABEL_SETTINGS = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-9, "tol_feas": 1e-9}


@dataclass
class _Program:
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


def _time_terms(c, lat, used, x: cp.Variable, inv_u, mode: str, cons: list):
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


def _build_program(
    terms: AggregatedTerms,
    weights: np.ndarray,
    rows: tuple[Row, ...],
    n_dims: int,
    mode: str,
    loop: str,
    product: tuple[float, np.ndarray] | None,
    b_ref: np.ndarray,
    t_ref: float,
) -> _Program:
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
        t = _time_terms(c_scaled, terms.latency_s / t_ref, terms.used_dims, x, inv_u, mode, cons)
    if loop == "no_overlap":
        step = float(weights @ terms.compute_s) / t_ref * inv_u
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
        le_con = a @ x <= (le_param if u is None else le_param * u)
        cons.append(le_con)
    if eq_rows:
        a = np.array([rows[i].a * b_ref for i in eq_rows]) / eq_scale[:, None]
        eq_param = cp.Parameter(len(eq_rows), name="rhs_eq")
        eq_con = a @ x == (eq_param if u is None else eq_param * u)
        cons.append(eq_con)
    problem = cp.Problem(cp.Minimize(step + reg), cons)
    return _Program(
        problem, x, u, step, le_rows, le_sign, le_scale, le_param, le_con,
        eq_rows, eq_scale, eq_param, eq_con, b_ref, product, t_ref, time.perf_counter() - t0,
    )


@dataclass
class BandwidthProblem:
    """A scenario compiled into a convex program that can be re-solved with new bounds.

    Build it with :func:`build_problem`; solve it with :func:`solve` (or
    :meth:`solve`), optionally overriding ``budget_usd``, ``power_w`` or the right-hand
    side of any labelled constraint — those are DPP parameters, so re-solves skip
    compilation.
    """

    scenario: Scenario
    terms: AggregatedTerms
    rows: tuple[Row, ...]
    program: _Program
    ref_cost: float
    k0_usd: float
    lp_status: str
    objective_scale: float = 1.0  # steps per run for ``tco``
    n_solves: int = 0

    def solve(self, **kwargs) -> Solution:
        """Shorthand for :func:`solve` on this problem."""
        return solve(self, **kwargs)


def _reference_scales(
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


def build_problem(scenario: Scenario) -> BandwidthProblem:
    """Compile ``scenario`` into a :class:`BandwidthProblem`.

    Examples
    --------
    >>> from libra_opt.examples import toy_scenario
    >>> p = build_problem(toy_scenario())
    >>> p.program.problem.is_dcp(dpp=True)
    True
    """
    coeffs = scenario.coefficients
    rows = scenario_rows(scenario, coeffs)
    terms = aggregate_terms(scenario.workloads, scenario.fabric, scenario.traffic_model)
    assert scenario.weights is not None
    weights = np.array(scenario.weights)
    product = None
    ref_cost = 1.0
    k0 = 0.0
    n = scenario.fabric.n_dims
    used = terms.used_dims
    obj_scale = 1.0
    if scenario.objective == "tco":
        assert scenario.tco is not None
        r0, rate = cluster_rate_coefficients(scenario.tco, scenario.fabric, coeffs)
        c = np.zeros(n)
        c[used] = -1.0
        status, _, bw_ref = lp_extreme(rows, n, c, used)
        ref_cost = r0 + (float(rate @ bw_ref) if status == "optimal" else 0.0)
        k0 = r0
        obj_scale = scenario.tco.n_steps
        product = (k0 / ref_cost, rate / ref_cost)
    elif scenario.objective == "perf_per_cost":
        kappa = coeffs.usd_per_gbps
        if not (kappa > 0).any():
            raise InputError(
                "perf_per_cost needs a cost model with nonzero prices",
                source=scenario.source,
                field="cost_model",
            )
        # Normalise cost by the cheapest feasible design (checked again at solve time).
        status, c_min, bw_ref = lp_extreme(rows, n, kappa, used)
        ref_cost = c_min if status == "optimal" and c_min > 0 else float(kappa.sum())
        product = (k0 / ref_cost, kappa / ref_cost)
    else:
        c = np.zeros(n)
        c[used] = -1.0
        status, _, bw_ref = lp_extreme(rows, n, c, used)
    b_ref, t_ref = _reference_scales(terms, weights, n, bw_ref if status == "optimal" else None)
    program = _build_program(
        terms,
        weights,
        rows,
        scenario.fabric.n_dims,
        scenario.collective_model,
        scenario.training_loop,
        product,
        b_ref,
        t_ref,
    )
    return BandwidthProblem(scenario, terms, rows, program, ref_cost, k0, status, obj_scale)


def _override(problem: BandwidthProblem, overrides: Mapping[str, float]) -> tuple[Scenario, tuple[Row, ...]]:
    """New scenario and rows with some right-hand sides replaced."""
    scen = problem.scenario
    labels = {r.label for r in problem.rows}
    changes: dict[str, Any] = {}
    new_cons = list(scen.constraints)
    for label, value in overrides.items():
        v = float(value)
        if not np.isfinite(v):
            raise InputError(f"override {label}={value!r} must be finite", field=label)
        if label not in labels:
            raise InputError(
                f"no constraint labelled {label!r} in the built problem "
                f"(labels: {', '.join(sorted(labels)) or 'none'}); "
                "build the problem with that constraint to sweep it",
                field=label,
            )
        if label in ("budget_usd", "power_w"):
            changes[label] = v
        else:
            for i, c in enumerate(new_cons):
                if c.label == label:
                    new_cons[i] = dataclasses.replace(c, rhs=v)
    if new_cons != list(scen.constraints):
        changes["constraints"] = tuple(new_cons)
    scen = dataclasses.replace(scen, **changes) if changes else scen
    return scen, scenario_rows(scen)


def _check_bounded(problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...]) -> None:
    n = scen.fabric.n_dims
    used = problem.terms.used_dims
    if scen.objective == "perf":
        if used.size == 0 or (rows is problem.rows and problem.lp_status == "optimal"):
            return  # build_problem ran this very LP on these rows
        c = np.zeros(n)
        c[used] = -1.0
        status, _, _ = lp_extreme(rows, n, c, used)
        if status == "infeasible":
            raise_infeasible(rows, n, used)
        if status == "unbounded":
            free = []
            for d in used:
                e = np.zeros(n)
                e[d] = -1.0
                if lp_extreme(rows, n, e, used)[0] == "unbounded":
                    free.append(scen.fabric.names[d])
            raise UnboundedDesignError(
                "objective 'perf' has no finite optimum: nothing bounds the bandwidth of "
                f"{', '.join(free)} (add budget_usd, a total-bandwidth or a per-dimension cap)"
            )
    elif scen.objective == "tco":
        status, _, _ = lp_extreme(rows, n, np.zeros(n), used)
        if status == "infeasible":
            raise_infeasible(rows, n, used)
        rate = problem.program.product[1] if problem.program.product is not None else np.ones(n)
        for d in used:
            if rate[d] <= 0:
                e = np.zeros(n)
                e[d] = -1.0
                if lp_extreme(rows, n, e, used)[0] == "unbounded":
                    raise UnboundedDesignError(
                        f"objective 'tco' has no finite optimum: dimension "
                        f"{scen.fabric.names[d]!r} costs nothing and nothing bounds its bandwidth"
                    )
    else:
        kappa = scen.coefficients.usd_per_gbps
        status, _, _ = lp_extreme(rows, n, kappa, used)
        if status == "infeasible":
            raise_infeasible(rows, n, used)
        status, c_min, _ = lp_extreme(rows, n, kappa)
        if status == "optimal" and c_min <= 1e-12 * float(kappa.sum()) and problem.k0_usd == 0:
            raise UnboundedDesignError(
                "objective 'perf_per_cost' has no attained optimum: the constraints let the "
                "network cost go to zero (add a total-bandwidth or per-dimension minimum)"
            )


def solve(
    problem: Scenario | BandwidthProblem,
    *,
    budget_usd: float | None = None,
    power_w: float | None = None,
    rhs: Mapping[str, float] | None = None,
    with_baselines: bool = True,
) -> Solution:
    """Solve for the optimal bandwidth allocation.

    Parameters
    ----------
    problem : Scenario or BandwidthProblem
        A scenario (built on the fly) or a problem from :func:`build_problem`.
    budget_usd, power_w : float, optional
        New network budget / power cap (the problem must have been built with one).
    rhs : mapping, optional
        Constraint label -> new right-hand side.
    with_baselines : bool
        Evaluate the equal-split and traffic-proportional baselines.

    Returns
    -------
    Solution

    Raises
    ------
    InfeasibleDesignError
        Naming an irreducible set of conflicting constraints.
    UnboundedDesignError
        When the objective has no attained optimum.
    VerificationError
        When the numpy evaluator disagrees with the solver.

    Examples
    --------
    >>> from libra_opt.examples import toy_scenario
    >>> sol = solve(toy_scenario())
    >>> sol.bw_gbps.round(3).tolist()
    [200.0, 100.0]
    """
    if isinstance(problem, Scenario):
        problem = build_problem(problem)
    overrides = dict(rhs or {})
    if budget_usd is not None:
        overrides["budget_usd"] = budget_usd
    if power_w is not None:
        overrides["power_w"] = power_w
    scen, rows = _override(problem, overrides) if overrides else (problem.scenario, problem.rows)
    _check_bounded(problem, scen, rows)
    first = problem.n_solves == 0
    prog = problem.program
    run = _run(problem, prog, scen, rows)
    compile_s = run.compile_s + (prog.build_s if first else 0.0)
    solve_s, n_solves = run.solve_s, 1
    if run.needs_polish:
        # Re-solve with every dimension and the objective rescaled to the first answer.
        used = problem.terms.used_dims
        b_ref = np.full(scen.fabric.n_dims, max(float(np.max(run.bw)), 1e-9))
        b_ref[used] = np.maximum(run.bw[used], 1e-9 * b_ref[used])
        t_ref = max(run.ev.weighted_step_time_s, 1e-300)
        polished = _build_program(
            problem.terms, np.array(scen.weights), rows, scen.fabric.n_dims,
            scen.collective_model, scen.training_loop, prog.product, b_ref, t_ref,
        )
        run2 = _run(problem, polished, scen, rows)
        compile_s += polished.build_s + run2.compile_s
        solve_s += run2.solve_s
        n_solves += 1
        logger.info("polished solve: relative gap %.2e -> %.2e", run.gap, run2.gap)
        if run2.gap <= run.gap or not np.isfinite(run.gap):
            run, prog = run2, polished
    ev, gap = run.ev, run.gap
    if not np.isfinite(ev.objective_value) or gap > OBJECTIVE_REL_TOL:
        raise VerificationError(
            f"numpy evaluation {ev.objective_value!r} disagrees with the solver's "
            f"objective {run.solver_obj!r} (relative gap {gap:.2e})"
        )
    if not ev.feasible(CONSTRAINT_REL_TOL):
        bad = [k for k, r in ev.residuals.items() if r > CONSTRAINT_REL_TOL * ev.residual_scales[k]]
        raise VerificationError(f"solver answer violates constraints: {', '.join(bad)}")
    reports = _constraint_reports(rows, run.bw, prog, run.factor)
    bl = baselines(scen, ev) if with_baselines else ()
    info = SolverInfo(
        solver="CLARABEL",
        method="convex" if prog.u is None else "convex-perspective",
        status=run.status,
        compile_s=float(compile_s),
        solve_s=float(solve_s),
        n_solves=n_solves,
        objective_rel_gap=float(gap),
    )
    bw = run.bw
    bw.setflags(write=False)
    return Solution(scen, bw, scen.objective, ev.objective_value, ev, reports, bl, info)


@dataclass
class _Run:
    status: str
    bw: np.ndarray
    ev: Evaluation
    solver_obj: float
    gap: float
    factor: float
    compile_s: float
    solve_s: float
    needs_polish: bool


def _run(problem: BandwidthProblem, prog: _Program, scen: Scenario, rows: tuple[Row, ...]) -> _Run:
    """Set the right-hand sides, solve once, map the status, evaluate with numpy."""
    if prog.le_param is not None:
        prog.le_param.value = np.array([rows[i].rhs for i in prog.le_rows]) * prog.le_sign / prog.le_scale
    if prog.eq_param is not None:
        prog.eq_param.value = np.array([rows[i].rhs for i in prog.eq_rows]) / prog.eq_scale
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # status is handled below
            prog.problem.solve(solver=cp.CLARABEL, **_CLARABEL_SETTINGS)
    except cp.error.SolverError as exc:
        raise SolverError(f"Clarabel failed: {exc}") from exc
    problem.n_solves += 1
    status = prog.problem.status
    n = scen.fabric.n_dims
    if status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise_infeasible(rows, n, problem.terms.used_dims)
    if status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        raise UnboundedDesignError(f"objective {scen.objective!r} is unbounded")
    if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"Clarabel returned status {status!r}")
    x = np.asarray(prog.x.value, dtype=float)
    step_value = float(np.asarray(prog.step_value.value))
    if prog.u is None:
        bw = prog.b_ref * x
        solver_obj = prog.t_ref * step_value
        factor = prog.t_ref
    else:
        u = float(np.asarray(prog.u.value))
        bw = prog.b_ref * x / u
        solver_obj = problem.objective_scale * problem.ref_cost * prog.t_ref * step_value
        factor = problem.objective_scale * problem.ref_cost * prog.t_ref * u
    bw = np.where(bw < 0, 0.0, bw)
    ev = evaluate(scen, bw)
    gap = abs(ev.objective_value - solver_obj) / max(abs(ev.objective_value), 1e-300)
    used = problem.terms.used_dims
    spread = float(np.max(x[used]) / max(np.min(x[used]), 1e-300)) if used.size else 1.0
    needs_polish = (
        status == cp.OPTIMAL_INACCURATE
        or not np.isfinite(gap)
        or gap > 0.1 * OBJECTIVE_REL_TOL
        or spread > 1e3
        or not ev.feasible(CONSTRAINT_REL_TOL)
    )
    return _Run(
        str(status), bw, ev, solver_obj, float(gap), factor,
        float(prog.problem.compilation_time or 0.0),
        float(prog.problem.solver_stats.solve_time or 0.0), needs_polish,
    )


def _constraint_reports(
    rows: tuple[Row, ...], bw: np.ndarray, prog: _Program, factor: float
) -> tuple[ConstraintReport, ...]:
    """Slack, activity and shadow price of every row.

    For ``perf`` the shadow price of a row ``a . B <= r`` is ``-lambda / s`` (``lambda`` the
    dual of the row scaled by ``s``). In the perspective form the objective is
    ``ref_cost * V`` and the row reads ``a . y <= r u``, so ``d f / d r`` gains the factor
    ``ref_cost * u``.
    """
    shadow = np.zeros(len(rows))
    if prog.le_con is not None and prog.le_con.dual_value is not None:
        lam = np.atleast_1d(prog.le_con.dual_value)
        for j, i in enumerate(prog.le_rows):
            shadow[i] = -lam[j] * prog.le_sign[j] / prog.le_scale[j] * factor
    if prog.eq_con is not None and prog.eq_con.dual_value is not None:
        nu = np.atleast_1d(prog.eq_con.dual_value)
        for j, i in enumerate(prog.eq_rows):
            shadow[i] = -nu[j] / prog.eq_scale[j] * factor
    out = []
    for i, r in enumerate(rows):
        lhs = float(r.a @ bw)
        slack = {"<=": r.rhs - lhs, ">=": lhs - r.rhs, "==": 0.0}[r.sense]
        scale = max(1.0, abs(r.rhs), float(np.abs(r.a) @ bw))
        active = r.sense == "==" or abs(slack) <= 1e-6 * scale
        out.append(ConstraintReport(r.label, lhs, r.sense, r.rhs, slack, active, float(shadow[i])))
    return tuple(out)
