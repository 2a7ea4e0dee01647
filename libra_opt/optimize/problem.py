"""Exact bandwidth allocation: build a problem from a scenario, then solve it.

:func:`build_problem` compiles a scenario into a convex program
(:mod:`libra_opt.optimize.program`: DCP for ``perf``, a perspective transform for ``perf_per_cost``
and ``tco``); :func:`solve` sets the right-hand sides (DPP parameters, so sweeps re-solve
without re-compiling), checks feasibility and boundedness with linear programs, solves with
Clarabel, re-evaluates the answer with the independent numpy evaluator and returns a frozen
:class:`~libra_opt.optimize.solution.Solution`.

Robustness: a solve that fails or disagrees with the numpy check is repeated with the
program rescaled, per dimension, to the first answer (a polish) and then rebuilt with fresh
scales for the current right-hand sides; only if every attempt fails is an error raised.
Dimensions that carry no traffic, and dimensions whose bandwidth nothing bounds but that are
never a bottleneck, get the least bandwidth the constraints allow (an LP after the solve).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from libra_opt.cost.tco import cluster_rate_coefficients
from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    SolverError,
    UnboundedDesignError,
    VerificationError,
    short_repr,
)
from libra_opt.optimize._verify import (
    CONSTRAINT_REL_TOL,
    MAX_BW_GBPS,
    MAX_STEP_S,
    OBJECTIVE_REL_TOL,
    check_magnitudes,
    verification_failure,
)
from libra_opt.optimize.conic import build_conic_program
from libra_opt.optimize.feasibility import (
    cost_can_vanish,
    is_feasible,
    lp_extreme,
    minimal_bandwidth,
    raise_infeasible,
    row_bounds,
    snap_to_rows,
    unbounded_dims,
)
from libra_opt.optimize.scaling import (
    ProgramRun,
    RowScaling,
    reference_bw,
    reference_scales,
    time_reference,
)
from libra_opt.optimize.solution import Solution, SolverInfo, constraint_reports
from libra_opt.optimize.terms import AggregatedTerms, aggregate_terms
from libra_opt.scenario.constraints import Row
from libra_opt.scenario.evaluate import Evaluation, evaluate, scenario_walks
from libra_opt.scenario.scenario import Scenario, scenario_rows, unique_labels
from libra_opt.traffic.step_time import WalkArrays

__all__ = ["BandwidthProblem", "build_problem", "solve", "OBJECTIVE_REL_TOL", "MAX_STEP_S",
           "MAX_BW_GBPS", "BACKENDS"]

logger = logging.getLogger(__name__)

# A bandwidth nothing bounds is capped at this multiple of the problem's bandwidth scale
# while solving; the answer is then probed for further improvement.
_CAP_FACTOR = 1e4
# Re-solves scaled to the previous answer, at most, when an answer needs polishing.
_MAX_POLISH = 3
#: ``clarabel``: the program assembled directly as Clarabel's conic data (default, fast);
#: ``cvxpy``: the same program written in cvxpy (the reference formulation, slower to build).
BACKENDS = ("clarabel", "cvxpy")


def _build_program(backend: str, *args) -> RowScaling:
    """Build the program with ``backend`` (see :data:`BACKENDS`)."""
    if backend == "cvxpy":
        from libra_opt.optimize.program import build_program

        return build_program(*args)
    return build_conic_program(*args)


@dataclass
class BandwidthProblem:
    """A scenario compiled into a convex program that can be re-solved with new bounds.

    Build it with :func:`build_problem`; solve it with :func:`solve` (or :meth:`solve`),
    optionally overriding ``budget_usd``, ``power_w`` or the right-hand side of any
    labelled constraint — those are DPP parameters, so re-solves skip compilation.
    """

    scenario: Scenario
    terms: AggregatedTerms
    rows: tuple[Row, ...]
    program: Any  # a ConicProgram (clarabel backend) or a ConvexProgram (cvxpy backend)
    ref_cost: float
    lp_status: str
    objective_scale: float = 1.0  # steps per run for ``tco``
    rate: np.ndarray | None = None  # $ (per second for tco) per GB/s of each dimension
    n_solves: int = 0
    backend: str = "clarabel"
    walks: tuple[WalkArrays, ...] = ()  # the workloads' walks, for the numpy re-check

    def solve(self, **kwargs) -> Solution:
        """Shorthand for :func:`solve` on this problem."""
        return solve(self, **kwargs)


def _check_step_floor(scenario: Scenario, terms: AggregatedTerms, weights: np.ndarray) -> None:
    """Refuse a scenario whose step cannot be timed: traffic or latency terms that overflow,
    or compute and latency alone (the step at unlimited bandwidth, bounded above by every
    collective paying its largest latency) beyond :data:`MAX_STEP_S`."""
    with np.errstate(over="ignore", invalid="ignore"):
        floor = float(weights @ (terms.compute_s + terms.collective_counts
                                 @ terms.latency_s.max(axis=1, initial=0.0)))
        finite = bool(np.isfinite(terms.traffic_gb).all() and np.isfinite(terms.latency_s).all())
    if finite and floor <= MAX_STEP_S:
        return
    raise InputError(
        f"compute and collective latency alone take {floor:.6g} s per step (at unlimited "
        f"bandwidth), beyond {MAX_STEP_S:g} s, or a collective's traffic overflows: check "
        "the fabric's latency_s and the workloads' compute times and sizes",
        source=scenario.source, field="fabric.dims.latency_s")


def build_problem(scenario: Scenario, *, backend: str = "clarabel") -> BandwidthProblem:
    """Compile ``scenario`` into a :class:`BandwidthProblem`.

    Parameters
    ----------
    scenario : Scenario
    backend : {'clarabel', 'cvxpy'}
        ``clarabel`` assembles Clarabel's conic data directly (default);
        ``cvxpy`` builds the reference cvxpy formulation (DCP/DPP, slower).

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> build_problem(toy_scenario()).backend
    'clarabel'
    >>> p = build_problem(toy_scenario(), backend="cvxpy")
    >>> p.program.problem.is_dcp(dpp=True)
    True
    """
    if backend not in BACKENDS:
        raise InputError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}",
                         field="backend")
    coeffs = scenario.coefficients
    rows = scenario_rows(scenario, coeffs)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused just below
        terms = aggregate_terms(scenario.workloads, scenario.fabric, scenario.timing)
    assert scenario.weights is not None
    weights = np.array(scenario.weights)
    _check_step_floor(scenario, terms, weights)
    n = scenario.fabric.n_dims
    used = terms.used_dims
    ub = row_bounds(rows, n)
    bw_ref: np.ndarray | None
    if used.size and np.isfinite(ub[used]).all():
        # Every used bandwidth is capped by a row of one sign: bounded whatever the
        # right-hand sides (feasibility is left to the conic solve, diagnosed if it fails).
        status, bw_ref = "bounded", ub
    else:
        c = np.zeros(n)
        c[used] = -1.0
        status, _, bw_max = lp_extreme(rows, n, c, used)
        bw_ref = reference_bw(rows, n, used) if status != "optimal" else bw_max
    product = None
    ref_cost, k0, obj_scale, rate = 1.0, 0.0, 1.0, None
    objective = scenario.objective_model
    if objective.needs_tco:
        assert scenario.tco is not None
        k0, rate = cluster_rate_coefficients(scenario.tco, scenario.fabric, coeffs)
        ref_cost = k0 + (float(rate @ bw_ref) if bw_ref is not None else 0.0)
        obj_scale = scenario.tco.n_steps
    elif objective.prices_network:
        rate, k0 = coeffs.usd_per_gbps, coeffs.fixed_usd  # cost = k0 + rate . B
        if not (rate > 0).any():
            raise InputError(
                "perf_per_cost needs a cost model with nonzero prices",
                source=scenario.source,
                field="cost_model",
            )
        # Normalise cost by the design at the reference bandwidths (a scale only: any
        # positive value gives the same optimum); else by the cheapest feasible design.
        ref_cost = float(rate @ bw_ref) if status == "bounded" else 0.0
        if not ref_cost > 0:
            st, c_min, _ = lp_extreme(rows, n, rate, used)
            ref_cost = c_min if st == "optimal" and c_min > 0 else float(rate.sum())
        ref_cost += k0
    if rate is not None:
        product = (k0 / ref_cost, rate / ref_cost)
    b_ref, t_ref = reference_scales(terms, weights, n, bw_ref)
    program = _build_program(
        backend, terms, weights, rows, n, scenario.timing, product, b_ref, t_ref,
    )
    program.ref_cost = ref_cost
    return BandwidthProblem(
        scenario=scenario,
        terms=terms,
        rows=rows,
        program=program,
        ref_cost=ref_cost,
        lp_status=status,
        objective_scale=obj_scale,
        rate=rate,
        backend=backend,
        walks=scenario_walks(scenario),
    )


def _override(problem: BandwidthProblem, overrides: Mapping[str, float]) -> tuple[Scenario, tuple[Row, ...]]:
    """New scenario and rows with some right-hand sides replaced (labels as in the rows)."""
    scen = problem.scenario
    labels = [r.label for r in problem.rows]
    cons_labels = unique_labels([c.label for c in scen.constraints])
    changes: dict[str, Any] = {}
    new_cons = list(scen.constraints)
    for label, value in overrides.items():
        if value is None:
            continue  # no override: the built right-hand side stands
        try:
            if isinstance(value, (bool, np.bool_)):
                raise TypeError
            v = float(value)
        except (TypeError, ValueError):
            raise InputError(f"override {label}={short_repr(value)} must be a number",
                             field=label) from None
        if not np.isfinite(v):
            raise InputError(f"override {label}={value!r} must be finite", field=label)
        if label not in labels:
            raise InputError(
                f"no constraint labelled {label!r} in the built problem "
                f"(labels: {', '.join(sorted(labels)) or 'none'}); "
                "build the problem with that constraint to sweep it",
                field=label,
            )
        if label in ("budget_usd", "power_w") and label not in cons_labels:
            changes[label] = v
        else:
            i = cons_labels.index(label)
            new_cons[i] = dataclasses.replace(new_cons[i], rhs=v)
    if new_cons != list(scen.constraints):
        changes["constraints"] = tuple(new_cons)
    if not changes:
        return scen, problem.rows
    new = scen.with_limits(**changes)  # checked (and priced) as dataclasses.replace would
    return new, scenario_rows(new)


def _free_dims(problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...]) -> np.ndarray:
    """Check feasibility and boundedness; return the used dimensions nothing bounds.

    Raises
    ------
    InfeasibleDesignError, UnboundedDesignError
    """
    n = scen.fabric.n_dims
    used = problem.terms.used_dims
    if used.size == 0:
        status, _, _ = lp_extreme(rows, n, np.zeros(n))
        if status == "infeasible":
            raise_infeasible(rows, n, used)
    if (scen.objective_model.prices_network and not scen.coefficients.fixed_usd > 0
            and cost_can_vanish(rows, n, problem.rate)):
        raise UnboundedDesignError(
            "objective 'perf_per_cost' has no attained optimum: the constraints let the "
            "network cost go to zero (add a total-bandwidth or per-dimension minimum)"
        )
    if used.size == 0:
        return used
    if problem.lp_status in ("optimal", "bounded"):
        # build_problem found every used bandwidth bounded; boundedness of a feasible
        # polyhedron depends on its recession cone, not on the right-hand sides, so this
        # holds for every override too. Infeasibility shows in the conic solve.
        return np.array([], dtype=int)
    c = np.zeros(n)
    c[used] = -1.0
    status, _, _ = lp_extreme(rows, n, c, used)
    if status == "infeasible":
        raise_infeasible(rows, n, used)
    if status != "unbounded":
        return np.array([], dtype=int)
    # A priced dimension is bounded by the objective itself under perf_per_cost and tco:
    # along a ray B = s B0, T(s B0) (cost) grows without end when the step has a floor
    # (compute or latency), or stays flat (no floor, no fixed cost). With a fixed cost
    # (perf_per_cost's aggregator memory, tco's cluster) and no floor it falls toward its
    # infimum without reaching it: every used dimension may then be unbounded.
    terms = problem.terms
    floor = float(np.asarray(scen.weights) @ terms.compute_s) > 0 or bool(terms.latency_s.any())
    fixed = scen.objective_model.fixed_cost or scen.coefficients.fixed_usd > 0
    if problem.rate is None or (fixed and not floor):
        candidates = used
    else:
        candidates = used[problem.rate[used] <= 0]
    free = unbounded_dims(rows, n, candidates, used)
    if free.size and scen.timing.is_sequential:
        raise UnboundedDesignError(
            f"objective {scen.objective!r} has no finite optimum: nothing bounds the bandwidth "
            f"of {', '.join(scen.fabric.names[d] for d in free)}, and with sequential "
            "collectives every GB/s shortens the step (add budget_usd, a total-bandwidth or "
            "a per-dimension cap)"
        )
    return free


class _SolverAttemptFailed(Exception):
    """Clarabel raised or returned a non-optimal status, so an attempt has no answer to check.

    ``status`` says why (the solver status, or the solver's error); the retry loop keeps the
    last one to name the failure when every attempt fails.
    """

    def __init__(self, status: str):
        self.status = status
        super().__init__(status)


@dataclass
class _SolveAttempt:
    """One solve of one program, with its answer re-evaluated by the numpy evaluator."""

    prog: Any
    run: ProgramRun
    status: str
    bw: np.ndarray
    ev: Evaluation
    solver_obj: float
    gap: float
    factor: float
    compile_s: float
    solve_s: float
    needs_polish: bool


def _solve_once(
    problem: BandwidthProblem, prog: Any, scen: Scenario, rows: tuple[Row, ...],
    profile: int = 0,
) -> _SolveAttempt:
    """Set the right-hand sides, solve once (Clarabel settings of retry ``profile``),
    evaluate the answer with numpy."""
    run = prog.run(rows, profile)
    problem.n_solves += 1
    status = run.status
    if status not in ("optimal", "optimal_inaccurate"):
        raise _SolverAttemptFailed(status)
    x = run.x
    if not np.isfinite(x).all() or not np.isfinite(run.step_value):
        raise _SolverAttemptFailed(f"{status} with a non-finite answer")
    if prog.product is None:
        bw = prog.b_ref * x
        solver_obj = prog.t_ref * run.step_value
        factor = prog.t_ref
    else:
        u = float(run.u)
        if not u > 0:
            raise _SolverAttemptFailed(f"{status} with u = {u!r}")
        bw = prog.b_ref * x / u
        solver_obj = problem.objective_scale * prog.ref_cost * prog.t_ref * run.step_value
        factor = problem.objective_scale * prog.ref_cost * prog.t_ref * u
    bw = snap_to_rows(rows, np.where(bw < 0, 0.0, bw))
    ev = evaluate(scen, bw, problem.walks)
    # Relative gap; an optimum of exactly 0 (no traffic, no compute) is met by solver noise
    # of ~1e-306, which no objective in s, $ or s x $ can mean: 1e-30 is the floor.
    gap = abs(ev.objective_value - solver_obj) / max(abs(ev.objective_value), abs(solver_obj),
                                                     1e-30)
    used = problem.terms.used_dims
    spread = float(np.max(x[used]) / max(np.min(x[used]), 1e-300)) if used.size else 1.0
    # An "almost solved" answer, or one the numpy re-check confirms only to more than a
    # tenth of the tolerance, is polished (re-solved scaled to itself).
    needs_polish = (
        status != "optimal"
        or not np.isfinite(gap)
        or gap > 0.1 * OBJECTIVE_REL_TOL
        or spread > 1e3
        or not ev.feasible(CONSTRAINT_REL_TOL)
    )
    return _SolveAttempt(
        prog=prog,
        run=run,
        status=status,
        bw=bw,
        ev=ev,
        solver_obj=solver_obj,
        gap=float(gap),
        factor=factor,
        compile_s=run.compile_s,
        solve_s=run.solve_s,
        needs_polish=needs_polish,
    )


#: A feasible set no wider than this (relative, per dimension) is a point to the solver.
_PINNED_REL = 1e-6


def _in_trouble(run: _SolveAttempt, rows: tuple[Row, ...]) -> bool:
    """Whether an answer is uncertified or breaks an inequality row by more than 1e-11 of
    the row's scale (an interior-point answer on a binding budget breaks it by about 1e-12):
    then the feasible set may be a sliver."""
    if run.status != "optimal":
        return True
    for r in rows:
        if r.sense != "==":
            v = run.ev.residuals.get(r.label, 0.0)
            if v > 1e-11 * run.ev.residual_scales.get(r.label, 1.0):
                return True
    return False


def _pinned_answer(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...]
) -> _SolveAttempt | None:
    """The answer when the rows pin every used bandwidth to within :data:`_PINNED_REL`
    (a budget or power cap at its floor, bounds that meet), decided exactly; ``None`` when
    the feasible set is wider (the solver's own answer or failure stands).

    Two linear programs per used dimension give its least and greatest feasible bandwidth.
    When every range is that narrow, the least-cost vertex is moved exactly onto its bound
    rows (:func:`~libra_opt.optimize.feasibility.snap_to_rows`) and every row is checked in
    numpy: a row still broken beyond round-off (1e-12 of its scale) means the rows cannot
    hold together (a budget below its floor), reported with the rows that meet there;
    otherwise the point is the optimum to within the range.

    Raises
    ------
    InfeasibleDesignError
    """
    n, used = scen.fabric.n_dims, problem.terms.used_dims
    if used.size == 0:
        return None
    point = None
    for d in used:
        e = np.zeros(n)
        e[d] = 1.0
        lo_status, lo, lo_bw = lp_extreme(rows, n, e, used)
        hi_status, hi, _ = lp_extreme(rows, n, -e, used)
        if lo_status == "infeasible" or hi_status == "infeasible":
            raise_infeasible(rows, n, used)
        if lo_status != "optimal" or hi_status != "optimal" or lo_bw is None:
            return None
        if -hi - lo > _PINNED_REL * max(abs(hi), 1e-300):
            return None
        point = lo_bw if point is None else point
    assert point is not None
    bw = snap_to_rows(rows, np.where(point < 0, 0.0, point))
    ev = evaluate(scen, bw, problem.walks)
    broken = [r.label for r in rows
              if ev.residuals[r.label] > 1e-12 * ev.residual_scales[r.label]]
    if broken:
        tight = [r.label for r in rows
                 if ev.residuals[r.label] >= -_PINNED_REL * ev.residual_scales[r.label]]
        listing = "; ".join(f"'{c}'" for c in dict.fromkeys(tight + broken))
        by = ", ".join(f"'{b}' by {ev.residuals[b]:.6g}" for b in broken)
        raise InfeasibleDesignError(
            f"infeasible design: these constraints cannot hold together: {listing} (at the "
            f"least bandwidths the other rows allow, {by} in its own units is still broken)",
            tuple(dict.fromkeys(tight + broken)),
        )
    return _SolveAttempt(
        # No conic solve, so no duals: the rows' shadow prices are reported as 0.
        prog=problem.program,
        run=ProgramRun("pinned", bw, None, ev.weighted_step_time_s, np.zeros(0), np.zeros(0),
                       0.0, 0.0),
        status="optimal", bw=bw, ev=ev, solver_obj=ev.objective_value, gap=0.0, factor=0.0,
        compile_s=0.0, solve_s=0.0, needs_polish=False,
    )


def _passes_verification(run: _SolveAttempt) -> bool:
    """Whether the numpy evaluator confirms ``run`` (:func:`verification_failure`)."""
    return verification_failure(run.ev, run.gap, run.solver_obj) is None


def _program_at(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], b_ref: np.ndarray,
    t_ref: float, product: tuple[float, np.ndarray] | None = None, ref_cost: float | None = None,
) -> Any:
    """``problem``'s program for ``rows`` in units ``b_ref`` (GB/s per dimension) and ``t_ref``
    (s); the perspective form's cost unit (``product``, ``ref_cost``) is the first build's
    unless given."""
    prog = _build_program(
        problem.backend, problem.terms, np.array(scen.weights), rows, scen.fabric.n_dims,
        scen.timing, problem.program.product if product is None else product, b_ref, t_ref,
    )
    prog.ref_cost = problem.program.ref_cost if ref_cost is None else ref_cost
    return prog


def _fresh_program(problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...]) -> Any:
    """A program scaled for these right-hand sides (a uniform scale from an LP vertex)."""
    n, used = scen.fabric.n_dims, problem.terms.used_dims
    b_ref, t_ref = reference_scales(problem.terms, np.array(scen.weights), n, reference_bw(rows, n, used))
    return _program_at(problem, scen, rows, b_ref, t_ref)


def _boxed_program(problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...]) -> Any:
    """A program scaled per dimension to the most bandwidth the rows allow that dimension
    (one LP each): for designs whose dimensions differ by orders of magnitude (a site link
    capped at a few MB/s beside a fixed 17 GB/s), where a uniform scale can leave the
    interior-point method without progress and there is no answer to polish from."""
    n, used = scen.fabric.n_dims, problem.terms.used_dims
    weights = np.array(scen.weights)
    b_ref, _ = reference_scales(problem.terms, weights, n, reference_bw(rows, n, used))
    for d in used:
        c = np.zeros(n)
        c[d] = -1.0
        status, _, bw = lp_extreme(rows, n, c, used)
        if status == "optimal" and bw is not None and bw[d] > 0:
            b_ref[d] = float(bw[d])
    return _program_at(problem, scen, rows, b_ref, time_reference(problem.terms, weights, b_ref))


def _polished_program(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], run: _SolveAttempt
) -> Any:
    """A program scaled per dimension to ``run``'s answer, and in time to its step time."""
    used = problem.terms.used_dims
    b_ref = np.full(scen.fabric.n_dims, max(float(np.max(run.bw)), 1e-9))
    b_ref[used] = np.maximum(run.bw[used], 1e-9 * b_ref[used])
    t_ref = max(run.ev.weighted_step_time_s, 1e-300)
    product, ref_cost = problem.program.product, problem.program.ref_cost
    if product is not None and problem.rate is not None:
        # The cost unit too: u = ref_cost / cost(B) is then O(1) at the answer.
        k0 = product[0] * ref_cost
        cost = k0 + float(problem.rate @ run.bw)
        if np.isfinite(cost) and cost > 0:
            ref_cost = cost
            product = (k0 / ref_cost, problem.rate / ref_cost)
    return _program_at(problem, scen, rows, b_ref, t_ref, product, ref_cost)


def _rank(run: _SolveAttempt) -> tuple[bool, bool, float]:
    """Order of preference between attempts: verified, then certified optimal, then the
    smaller gap between the solver's objective and the numpy evaluation."""
    return (_passes_verification(run), run.status == "optimal", -run.gap)


def _solve_with_retries(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], first: Any
) -> tuple[_SolveAttempt, float, float, int]:
    """Solve ``first``; on a solver failure or a failed numpy check, polish, then rebuild fresh."""
    compile_s = solve_s = 0.0
    attempts = 0
    best: _SolveAttempt | None = None
    last_failure: _SolverAttemptFailed | None = None

    def attempt(prog: Any) -> None:
        nonlocal best, last_failure, compile_s, solve_s, attempts
        attempts += 1
        try:
            run = _solve_once(problem, prog, scen, rows, profile=attempts - 1)
        except _SolverAttemptFailed as exc:
            last_failure = exc
            return
        compile_s += run.compile_s + (prog.build_s if prog is not problem.program else 0.0)
        solve_s += run.solve_s
        if best is None or _rank(run) > _rank(best):
            best = run

    attempt(first)
    n, used = scen.fabric.n_dims, problem.terms.used_dims
    if best is None and not is_feasible(rows, n, used):
        # An infeasibility certificate (or a numerical failure where the rows force a used
        # dimension to zero), confirmed by a linear program that names the conflict.
        raise_infeasible(rows, n, used)

    def polish() -> None:
        # Re-solve scaled to the best answer so far (an answer far from the optimum gives a
        # poor scaling; each polish rescales to a better one), each time with the next
        # settings profile.
        for _ in range(_MAX_POLISH):
            if best is None or not best.needs_polish:
                return
            attempt(_polished_program(problem, scen, rows, best))

    polish()
    if best is None or not _passes_verification(best):
        logger.info("re-solving with scales fresh for these right-hand sides")
        attempt(_fresh_program(problem, scen, rows))
        polish()
    if best is None or not _passes_verification(best):
        logger.info("re-solving scaled per dimension to the rows' largest bandwidths")
        attempt(_boxed_program(problem, scen, rows))
        polish()
    if best is None:
        assert last_failure is not None
        if "unbounded" in last_failure.status:
            raise UnboundedDesignError(f"objective {scen.objective!r} is unbounded")
        raise SolverError(f"Clarabel returned status {last_failure.status!r}")
    return best, compile_s, solve_s, attempts


def _idle_minimum(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], run: _SolveAttempt,
    free: np.ndarray,
) -> _SolveAttempt:
    """Give idle dimensions the least bandwidth the constraints allow.

    Idle: dimensions without traffic, and ``free`` dimensions (nothing bounds them; with
    pipelined collectives they are no bottleneck). A free dimension keeps every collective's
    time: ``B_d >= c_kd / (T_k - l_kd)`` with ``T_k`` the time of collective ``k`` on its
    other dimensions. The step time cannot grow, so the objective is unchanged or better.
    """
    n = scen.fabric.n_dims
    used = problem.terms.used_dims
    if used.size == n and free.size == 0:
        return run  # every dimension carries traffic and is bounded: nothing is idle
    idle = np.union1d(np.setdiff1d(np.arange(n), used), free).astype(int)
    lower = np.zeros(n)
    c, lat = problem.terms.traffic_gb, problem.terms.latency_s
    with np.errstate(divide="ignore", invalid="ignore"):
        t_dim = np.where(c > 0, c / run.bw[None, :] + lat, -np.inf)
    others = np.ones(n, dtype=bool)
    others[idle] = False
    for d in free:
        need = 0.0
        for k in np.flatnonzero(c[:, d] > 0):
            t_other = float(np.max(t_dim[k, others])) if others.any() else -np.inf
            if not np.isfinite(t_other) or t_other <= lat[k, d]:
                need = run.bw[d]  # the dimension is this collective's only path: keep it
                break
            need = max(need, c[k, d] / (t_other - lat[k, d]))
        lower[d] = min(need, run.bw[d])
    bw = minimal_bandwidth(rows, run.bw, idle, lower)
    if bw is None:
        return run
    ev = evaluate(scen, bw, problem.walks)
    if not ev.feasible(CONSTRAINT_REL_TOL) or ev.objective_value > run.ev.objective_value * (1 + 1e-9):
        return run
    return dataclasses.replace(run, bw=bw, ev=ev)


def _capped(problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], free: np.ndarray) -> tuple[Row, ...]:
    """Rows with a cap on every free dimension (``_CAP_FACTOR`` x the bandwidth scale)."""
    n, used = scen.fabric.n_dims, problem.terms.used_dims
    bounded = np.setdiff1d(used, free)
    scale = 1.0
    if bounded.size:
        c = np.zeros(n)
        c[bounded] = -1.0
        status, _, bw = lp_extreme(rows, n, c, used)
        if status == "optimal" and bw is not None:
            scale = max(scale, float(np.max(bw[bounded])))
    cap = _CAP_FACTOR * scale
    # The caps must leave the rows feasible (``sum(bw) >= 1e5`` alone would otherwise be
    # reported infeasible against the caps): keep them 10x above a feasible point.
    c = np.zeros(n)
    c[free] = 1.0
    status, _, point = lp_extreme(rows, n, c, used)
    if status == "optimal" and point is not None:
        cap = max(cap, 10.0 * float(np.max(point)))
    extra = tuple(Row(f"cap on {scen.fabric.names[d]}", np.eye(n)[d], "<=", cap) for d in free)
    return rows + extra


def _keeps_improving(
    problem: BandwidthProblem, scen: Scenario, run: _SolveAttempt, free: np.ndarray
) -> bool:
    """Whether ten times the bandwidth on the free dimensions still shortens the step: then
    the optimum under the cap is an artefact of the cap, and the scenario has none."""
    probe = run.bw.copy()
    probe[free] *= 10.0
    return evaluate(scen, probe, problem.walks).objective_value < run.ev.objective_value * (1 - 1e-12)


def solve(
    problem: Scenario | BandwidthProblem,
    *,
    budget_usd: float | None = None,
    power_w: float | None = None,
    rhs: Mapping[str, float] | None = None,
    with_baselines: bool = True,
    backend: str = "clarabel",
) -> Solution:
    """Solve for the optimal bandwidth allocation.

    Parameters
    ----------
    problem : Scenario or BandwidthProblem
        A scenario (built on the fly) or a problem from :func:`build_problem`.
    budget_usd, power_w : float, optional
        New network budget / power cap (the problem must have been built with one).
    rhs : mapping, optional
        Constraint label -> new right-hand side; a value of ``None`` keeps the built one
        (as ``budget_usd=None`` does).
    with_baselines : bool
        Whether the solution reports the equal-split and traffic-proportional baselines
        (evaluated when :attr:`Solution.baselines` is first read).
    backend : {'clarabel', 'cvxpy'}
        Used when ``problem`` is a scenario (see :func:`build_problem`).

    Returns
    -------
    Solution
        Always re-checked by the numpy evaluator.

    Raises
    ------
    InfeasibleDesignError
        Naming an irreducible set of conflicting constraints.
    UnboundedDesignError
        When the objective has no attained optimum.
    VerificationError
        When the numpy evaluator disagrees with every solver attempt.
    SolverError
        When Clarabel fails on every attempt.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> sol = solve(toy_scenario())
    >>> sol.bw_gbps.round(3).tolist()
    [200.0, 100.0]
    """
    if isinstance(problem, Scenario):
        problem = build_problem(problem, backend=backend)
    elif not isinstance(problem, BandwidthProblem):
        raise InputError(
            f"expected a Scenario or a BandwidthProblem, got {type(problem).__name__} "
            "(libra_opt.solve also takes an example's name or a scenario file's path)",
            field="problem")
    if rhs is not None and not isinstance(rhs, Mapping):
        raise InputError(f"rhs must map constraint labels to numbers, got {short_repr(rhs)}",
                         field="rhs")
    overrides = dict(rhs or {})
    if budget_usd is not None:
        overrides["budget_usd"] = budget_usd
    if power_w is not None:
        overrides["power_w"] = power_w
    scen, rows = _override(problem, overrides) if overrides else (problem.scenario, problem.rows)
    free = _free_dims(problem, scen, rows)
    first_build = problem.program.build_s if problem.n_solves == 0 else 0.0
    solve_rows = rows
    if free.size:
        solve_rows = _capped(problem, scen, rows, free)
        first = _fresh_program(problem, scen, solve_rows)
        first_build = 0.0  # counted by the attempt itself
    else:
        first = problem.program
    try:
        run, compile_s, solve_s, attempts = _solve_with_retries(problem, scen, solve_rows, first)
        failure = verification_failure(run.ev, run.gap, run.solver_obj)
        if failure is not None:
            raise VerificationError(failure)
    except (InfeasibleDesignError, SolverError, VerificationError):
        # A sliver of a feasible set (a budget at its floor) defeats the interior point:
        # decide it exactly, or report the original failure.
        if free.size or (pinned := _pinned_answer(problem, scen, rows)) is None:
            raise
        run, compile_s, solve_s, attempts = pinned, 0.0, 0.0, problem.n_solves
    else:
        if (not free.size and _in_trouble(run, rows)
                and (pinned := _pinned_answer(problem, scen, rows)) is not None):
            run = pinned
    compile_s += first_build
    if free.size and _keeps_improving(problem, scen, run, free):
        names = ", ".join(scen.fabric.names[d] for d in free)
        raise UnboundedDesignError(
            f"objective {scen.objective!r} has no finite optimum: nothing bounds the bandwidth "
            f"of {names}, and more of it keeps shortening the step (add budget_usd, a "
            "total-bandwidth or a per-dimension cap)"
        )
    gap = run.gap
    run = _idle_minimum(problem, scen, rows, run, free)
    check_magnitudes(scen, run.bw, run.ev)
    reports = constraint_reports(rows, run.bw, run.prog, run.run, run.factor)
    info = SolverInfo(
        solver="CLARABEL" if problem.backend == "clarabel" else "CLARABEL via cvxpy",
        method=("pinned" if run.run.status == "pinned"
                else "convex" if run.prog.product is None else "convex-perspective"),
        status=run.status,
        compile_s=float(compile_s),
        solve_s=float(solve_s),
        n_solves=attempts,
        objective_rel_gap=float(gap),
    )
    bw = run.bw.copy()
    bw.setflags(write=False)
    return Solution(
        scenario=scen,
        bw_gbps=bw,
        objective=scen.objective,
        objective_value=run.ev.objective_value,
        evaluation=run.ev,
        constraints=reports,
        solver=info,
        with_baselines=with_baselines,
        walks=problem.walks,
    )
