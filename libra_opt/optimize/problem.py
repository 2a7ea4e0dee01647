"""Exact bandwidth allocation: build a problem from a scenario, then solve it.

:func:`build_problem` compiles a scenario into a convex program (:mod:`~.conic`, or the cvxpy
reference :mod:`~.program`); :func:`solve` sets new right-hand sides and weights as data,
checks feasibility and boundedness with linear programs, solves with Clarabel, re-checks the
answer with the independent numpy evaluator and returns a frozen
:class:`~libra_opt.optimize.solution.Solution`. A solve that fails or disagrees with the
check is retried rescaled (:mod:`~.attempts`); idle and unbounded-but-harmless dimensions
get the least bandwidth the constraints allow (an LP after the solve).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
from collections.abc import Mapping, Sequence
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
from libra_opt.fabric.frozen import freeze_arrays
from libra_opt.optimize._verify import (
    CONSTRAINT_REL_TOL,
    MAX_BW_GBPS,
    MAX_STEP_S,
    OBJECTIVE_REL_TOL,
    check_magnitudes,
)
from libra_opt.optimize.attempts import (  # the retry helpers stay reachable from here
    _boxed_program,  # noqa: F401
    _build_program,
    _fresh_program,
    _in_trouble,
    _pinned_answer,
    _program_at,
    _solve_once,  # noqa: F401
    _solve_with_retries,
    _SolveAttempt,
    _SolverAttemptFailed,  # noqa: F401
)
from libra_opt.optimize.feasibility import (
    cost_can_vanish,
    lp_extreme,
    minimal_bandwidth,
    raise_infeasible,
    row_bounds,
    unbounded_dims,
)
from libra_opt.optimize.scaling import reference_bw, reference_scales
from libra_opt.optimize.solution import Solution, SolverInfo, constraint_reports
from libra_opt.optimize.terms import AggregatedTerms, aggregate_terms
from libra_opt.scenario.constraints import Row
from libra_opt.scenario.evaluate import evaluate, scenario_walks
from libra_opt.scenario.scenario import Scenario, scenario_rows, unique_labels
from libra_opt.traffic.step_time import WalkArrays

__all__ = ["BandwidthProblem", "build_problem", "solve", "same_terms", "OBJECTIVE_REL_TOL",
           "MAX_STEP_S", "MAX_BW_GBPS", "BACKENDS"]

logger = logging.getLogger(__name__)

# A bandwidth nothing bounds is capped at this multiple of the problem's bandwidth scale
# while solving; the answer is then probed for further improvement.
_CAP_FACTOR = 1e4
#: ``clarabel``: the program assembled directly as Clarabel's conic data (default, fast);
#: ``cvxpy``: the same program written in cvxpy (the reference formulation, slower to build).
BACKENDS = ("clarabel", "cvxpy")


@dataclass
class BandwidthProblem:
    """A scenario compiled into a convex program (:func:`build_problem`), re-solvable by
    :func:`solve` with new caps, right-hand sides and weights without rebuilding it."""

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

    @functools.cached_property
    def floors_s(self) -> np.ndarray:
        """Each workload's step time at unlimited bandwidth, bounded above (compute, and every
        collective at its largest latency), s: the weighted sum must stay finite."""
        t = self.terms
        with np.errstate(over="ignore", invalid="ignore"):
            return t.compute_s + t.collective_counts @ t.latency_s.max(axis=1, initial=0.0)

    @functools.cached_property
    def labels(self) -> tuple[list[str], list[str]]:
        """The rows' labels and the scenario's constraints' (repeats numbered)."""
        return ([r.label for r in self.rows],
                unique_labels([c.label for c in self.scenario.constraints]))


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


def same_terms(a: Scenario, b: Scenario) -> bool:
    """Whether ``a`` and ``b`` have the same workloads (the same objects, as a compiled edit
    that leaves them alone keeps them), fabric and timing: then the same terms and walks."""
    return (len(a.workloads) == len(b.workloads)
            and all(x is y for x, y in zip(a.workloads, b.workloads, strict=True))
            and (a.fabric is b.fabric or a.fabric == b.fabric) and a.timing == b.timing)


def build_problem(scenario: Scenario, *, backend: str = "clarabel",
                  like: BandwidthProblem | None = None) -> BandwidthProblem:
    """Compile ``scenario`` into a :class:`BandwidthProblem`.

    Parameters
    ----------
    scenario : Scenario
    backend : {'clarabel', 'cvxpy'}
        ``clarabel`` assembles Clarabel's conic data directly (default);
        ``cvxpy`` builds the reference cvxpy formulation (DCP/DPP, slower).
    like : BandwidthProblem, optional
        A problem built earlier (a sweep's base): what ``scenario`` shares with it is taken
        from it, not built again. The same workloads, fabric and timing give the same
        terms and walks; with the objective's form and the rows' senses unchanged too (an
        edit of weights, bounds, prices, caps or TCO parameters), the program is
        ``like``'s with new numbers (:meth:`~libra_opt.optimize.conic.ConicProgram.with_rows`).
        The answer is the same either way.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> build_problem(toy_scenario()).backend
    'clarabel'
    >>> p = build_problem(toy_scenario(), backend="cvxpy")
    >>> p.program.problem.is_dcp(dpp=True)
    True
    >>> s = toy_scenario()
    >>> base = build_problem(s)
    >>> q = build_problem(s.with_limits(weights=(2.0,)), like=base)
    >>> q.terms is base.terms, q.program.q_by_workload is base.program.q_by_workload
    (True, True)
    """
    if backend not in BACKENDS:
        raise InputError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}",
                         field="backend")
    shared = like is not None and like.backend == backend and same_terms(
        like.scenario, scenario)
    coeffs = scenario.coefficients
    rows = scenario_rows(scenario, coeffs)
    if shared:
        assert like is not None
        terms, walks = like.terms, like.walks
    else:
        walks = freeze_arrays(scenario_walks(scenario))
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused just below
            terms = aggregate_terms(scenario.workloads, scenario.fabric, scenario.timing,
                                    walks)
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
    program = None
    if shared and hasattr(like.program, "with_rows"):  # type: ignore[union-attr]
        assert like is not None
        unit = like.program.ref_cost  # any positive cost unit gives the same optimum
        program = like.program.with_rows(
            rows, None if rate is None else (k0 / unit, rate / unit))
        if program is not None:
            ref_cost = unit
            terms.check_windows(weights, scenario.timing, rate is not None)
    if program is None:
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
        walks=walks,
    )


def _weights(scen: Scenario, weights: Mapping[str, float] | Sequence[float]) -> tuple[float, ...]:
    """The scenario's workload weights with ``weights`` (by name, or one per workload)."""
    names = [w.name for w in scen.workloads]
    if isinstance(weights, Mapping):
        unknown = [k for k in weights if k not in names]
        if unknown:
            raise InputError(f"no workload named {short_repr(unknown[0])} (workloads: "
                             f"{', '.join(names)})", field="weights")
        new = dict(zip(names, scen.weights or (), strict=True)) | dict(weights)
        values: Sequence[Any] = [new[k] for k in names]
    elif isinstance(weights, str) or not isinstance(weights, Sequence | np.ndarray):
        raise InputError(f"weights must map workload names to numbers, got "
                         f"{short_repr(weights)}", field="weights")
    else:
        values = list(weights)
    try:
        if any(isinstance(v, bool | np.bool_) for v in values):
            raise TypeError
        return tuple(float(v) for v in values)
    except (TypeError, ValueError):
        raise InputError(f"weights must be numbers, got {short_repr(weights)}",
                         field="weights") from None


def _override(problem: BandwidthProblem, overrides: Mapping[str, float],
              weights: Mapping[str, float] | Sequence[float] | None = None
              ) -> tuple[Scenario, tuple[Row, ...]]:
    """New scenario and rows with some right-hand sides (labels as in the rows) and
    workload weights replaced."""
    scen = problem.scenario
    labels, cons_labels = problem.labels
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
        if not math.isfinite(v):
            raise InputError(f"override {label}={value!r} must be finite", field=label)
        if label not in labels:
            raise InputError(
                f"no constraint labelled {label!r} in the built problem "
                f"(labels: {', '.join(sorted(labels)) or 'none'}); "
                "build the problem with that constraint to sweep it",
                field=label,
            )
        if label in ("budget_usd", "power_w") and label not in cons_labels:
            if v != getattr(scen, label):
                changes[label] = v
        else:
            i = cons_labels.index(label)
            if v != new_cons[i].rhs:
                new_cons[i] = dataclasses.replace(new_cons[i], rhs=v)
                changes["constraints"] = tuple(new_cons)
    if weights is not None:
        w = _weights(scen, weights)
        if w != scen.weights:
            changes["weights"] = w
    if not changes:
        return scen, problem.rows
    try:
        new = scen.with_limits(**changes)  # checked (and priced) as dataclasses.replace would
    except InputError as exc:
        if "weights" not in changes or "weight" not in (exc.field or ""):
            raise
        raise InputError(exc.message, field="weights") from None
    return new, (problem.rows if set(changes) == {"weights"} else scenario_rows(new))


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


def _idle_minimum(
    problem: BandwidthProblem, scen: Scenario, rows: tuple[Row, ...], run: _SolveAttempt,
    free: np.ndarray,
) -> _SolveAttempt:
    """Give idle dimensions (no traffic, or ``free``: unbounded, no bottleneck) the least
    bandwidth the constraints allow; a free one keeps every collective's time,
    ``B_d >= c_kd / (T_k - l_kd)`` (``T_k`` on its other dimensions), so the step cannot grow.
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


def _prepare(
    problem: BandwidthProblem, budget_usd: float | None, power_w: float | None,
    rhs: Mapping[str, float] | None, weights: Mapping[str, float] | Sequence[float] | None,
) -> tuple[Scenario, tuple[Row, ...], np.ndarray, tuple[Row, ...], Any, float]:
    """What :func:`solve` solves: the edited scenario, its rows, the free dimensions, the
    rows to solve (capped on the free ones), the first program and its build time to count.
    """
    if rhs is not None and not isinstance(rhs, Mapping):
        raise InputError(f"rhs must map constraint labels to numbers, got {short_repr(rhs)}",
                         field="rhs")
    overrides = dict(rhs or {})
    if budget_usd is not None:
        overrides["budget_usd"] = budget_usd
    if power_w is not None:
        overrides["power_w"] = power_w
    scen, rows = (_override(problem, overrides, weights) if overrides or weights is not None
                  else (problem.scenario, problem.rows))
    if scen.weights != problem.scenario.weights:
        w = np.array(scen.weights)
        if not float(w @ problem.floors_s) <= MAX_STEP_S:
            _check_step_floor(scen, problem.terms, w)
        problem.terms.check_windows(w, scen.timing, problem.program.product is not None)
    free = _free_dims(problem, scen, rows)
    first_build = problem.program.build_s if problem.n_solves == 0 else 0.0
    solve_rows = rows
    if free.size:
        solve_rows = _capped(problem, scen, rows, free)
        first = _fresh_program(problem, scen, solve_rows)
        first_build = 0.0  # counted by the attempt itself
    elif problem.backend == "cvxpy" and scen.weights != problem.scenario.weights:
        first = _program_at(problem, scen, rows, problem.program.b_ref, problem.program.t_ref)
        first_build = 0.0
    else:
        first = problem.program
    return scen, rows, free, solve_rows, first, first_build


def solve(
    problem: Scenario | BandwidthProblem,
    *,
    budget_usd: float | None = None,
    power_w: float | None = None,
    rhs: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | Sequence[float] | None = None,
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
    weights : mapping or sequence, optional
        New workload weights, by workload name or one per workload (the objective's
        coefficients: the built program is re-solved with new numbers).
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
    scen, rows, free, solve_rows, first, first_build = _prepare(
        problem, budget_usd, power_w, rhs, weights)
    try:
        run, compile_s, solve_s, attempts = _solve_with_retries(problem, scen, solve_rows, first)
        if run.failure is not None:
            raise VerificationError(run.failure)
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
