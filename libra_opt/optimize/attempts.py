"""Solver attempts: one solve of a compiled program checked by the numpy evaluator, the
rescaled re-solves (polish, fresh scales, per-dimension box scales) tried when an answer fails
that check, and the exact answer when the constraints pin every used bandwidth.

:func:`~libra_opt.optimize.problem.solve` drives these; see its module notes for the order.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from libra_opt.errors import InfeasibleDesignError, SolverError, UnboundedDesignError
from libra_opt.optimize._verify import OBJECTIVE_REL_TOL, verification_failure
from libra_opt.optimize.conic import build_conic_program
from libra_opt.optimize.feasibility import is_feasible, lp_extreme, raise_infeasible, snap_to_rows
from libra_opt.optimize.scaling import (
    ProgramRun,
    RowScaling,
    reference_bw,
    reference_scales,
    time_reference,
)
from libra_opt.scenario.constraints import Row
from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.scenario import Scenario

#: A :class:`~libra_opt.optimize.problem.BandwidthProblem` (which imports this module: named
#: here without importing it, so the package has no import cycle).
BandwidthProblem = Any

logger = logging.getLogger("libra_opt.optimize.problem")  # the solve's log, as before

# Re-solves scaled to the previous answer, at most, when an answer needs polishing.
_MAX_POLISH = 3


def _build_program(backend: str, *args) -> RowScaling:
    """Build the program with ``backend`` (see :data:`~libra_opt.optimize.problem.BACKENDS`)."""
    if backend == "cvxpy":
        from libra_opt.optimize.program import build_program

        return build_program(*args)
    return build_conic_program(*args)


class _SolverAttemptFailed(Exception):
    """Clarabel raised or returned a non-optimal status (``status``: why); the retry loop
    keeps the last one to name the failure when every attempt fails."""

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
    #: Why the numpy evaluation does not confirm it (:func:`verification_failure`), or None.
    failure: str | None = None


def _read_run(problem: BandwidthProblem, prog: Any, run: ProgramRun, rows: tuple[Row, ...]
              ) -> tuple[np.ndarray, float, float]:
    """A solved run's bandwidths (GB/s, snapped onto the rows), the solver's objective and the
    factor of its shadow prices; :class:`_SolverAttemptFailed` for a run without an answer."""
    status = run.status
    if status not in ("optimal", "optimal_inaccurate"):
        raise _SolverAttemptFailed(status)
    x = run.x
    if not (np.isfinite(x).all() and np.isfinite(run.step_value)):
        raise _SolverAttemptFailed(f"{status} with a non-finite answer")
    if prog.product is None:
        bw = prog.b_ref * x
        solver_obj = prog.t_ref * run.step_value
        factor = prog.t_ref
    else:
        u = float("nan") if run.u is None else float(run.u)
        if not u > 0:
            raise _SolverAttemptFailed(f"{status} with u = {u!r}")
        bw = prog.b_ref * x / u
        solver_obj = problem.objective_scale * prog.ref_cost * prog.t_ref * run.step_value
        factor = problem.objective_scale * prog.ref_cost * prog.t_ref * u
    return snap_to_rows(rows, np.maximum(bw, 0.0)), solver_obj, factor


def _rel_gap(value: float, solver_obj: float) -> float:
    """Relative gap between the numpy evaluation and the solver's objective. An optimum of
    exactly 0 (no traffic, no compute) is met by solver noise of ~1e-306, which no objective
    in s, $ or s x $ can mean: 1e-30 is the floor."""
    return abs(value - solver_obj) / max(abs(value), abs(solver_obj), 1e-30)


def _polish_wanted(run: ProgramRun, used: np.ndarray, gap: float, failure: str | None) -> bool:
    """An "almost solved" answer, one the numpy re-check confirms only to more than a tenth
    of the tolerance (or not at all), or one spread over more than three decades is polished
    (re-solved scaled to itself)."""
    xu = run.x[used].tolist()
    spread = max(xu) / max(min(xu), 1e-300) if xu else 1.0
    return (run.status != "optimal" or not gap <= 0.1 * OBJECTIVE_REL_TOL or spread > 1e3
            or failure is not None)


def _solve_once(
    problem: BandwidthProblem, prog: Any, scen: Scenario, rows: tuple[Row, ...],
    profile: int = 0,
) -> _SolveAttempt:
    """Set the right-hand sides and weights, solve once (Clarabel settings of retry
    ``profile``), evaluate the answer with numpy."""
    run = prog.run(rows, profile, np.asarray(scen.weights, dtype=float))
    problem.n_solves += 1
    bw, solver_obj, factor = _read_run(problem, prog, run, rows)
    ev = evaluate(scen, bw, problem.walks)
    gap = _rel_gap(ev.objective_value, solver_obj)
    failure = verification_failure(ev, gap, solver_obj)
    return _SolveAttempt(
        prog=prog,
        run=run,
        status=run.status,
        bw=bw,
        ev=ev,
        solver_obj=solver_obj,
        gap=float(gap),
        factor=factor,
        compile_s=run.compile_s,
        solve_s=run.solve_s,
        needs_polish=_polish_wanted(run, problem.terms.used_dims, gap, failure),
        failure=failure,
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
    """The answer when the rows pin every used bandwidth to within :data:`_PINNED_REL` (a
    cap at its floor, bounds that meet), decided exactly; ``None`` when the set is wider.

    Two LPs per used dimension give its feasible range; when every range is that narrow, the
    vertex is snapped onto its bound rows and every row checked in numpy: a row still broken
    beyond round-off (1e-12 of its scale) means the rows cannot hold together.

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
    """A program scaled per dimension to the most bandwidth the rows allow it (one LP each),
    for dimensions orders of magnitude apart, where a uniform scale can stall the solver."""
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
    return (run.failure is None, run.status == "optimal", -run.gap)


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

    if best is not None and not best.needs_polish:
        return best, compile_s, solve_s, attempts  # the usual case: verified at once
    polish()
    if best is None or best.failure is not None:
        logger.info("re-solving with scales fresh for these right-hand sides")
        attempt(_fresh_program(problem, scen, rows))
        polish()
    if best is None or best.failure is not None:
        logger.info("re-solving scaled per dimension to the rows' largest bandwidths")
        attempt(_boxed_program(problem, scen, rows))
        polish()
    if best is None:
        assert last_failure is not None
        if "unbounded" in last_failure.status:
            raise UnboundedDesignError(f"objective {scen.objective!r} is unbounded")
        raise SolverError(f"Clarabel returned status {last_failure.status!r}")
    return best, compile_s, solve_s, attempts
