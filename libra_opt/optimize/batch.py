"""Many solves of one problem that differ only in data (right-hand sides, workload weights),
their answers re-checked by the numpy evaluator in one pass.

A sweep over a budget or a weight solves one built program again and again with new numbers.
:func:`solve_many` runs each point as :func:`~libra_opt.optimize.problem.solve` does up to the
solver's answer, then evaluates every answer at once
(:func:`~libra_opt.scenario.evaluate.evaluate_many`, the same bits as one by one) and accepts
the answers :func:`~libra_opt.optimize.problem.solve` would accept at its first attempt: a
certified optimum the evaluation confirms to a tenth of the tolerance, no row broken beyond
round-off, sane magnitudes. Every other point (an error, a polish, a retry, an answer pinned on
a sliver, idle or unbounded dimensions, a failure model) is left to
:func:`~libra_opt.optimize.problem.solve`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from libra_opt.errors import LibraOptError
from libra_opt.optimize._verify import CONSTRAINT_REL_TOL, MAX_BW_GBPS, MAX_STEP_S
from libra_opt.optimize.attempts import _polish_wanted, _read_run, _rel_gap, _SolverAttemptFailed
from libra_opt.optimize.problem import BandwidthProblem, _prepare
from libra_opt.optimize.solution import shadow_prices
from libra_opt.scenario.accuracy import same_each
from libra_opt.scenario.evaluate import evaluate_many

__all__ = ["PointAnswer", "solve_many"]


@dataclass(frozen=True)
class PointAnswer:
    """The verified optimum of one point of :func:`solve_many`: what a sweep's row reports.

    Attributes
    ----------
    bw_gbps : tuple of float
        Bandwidth per dimension (GB/s per NPU), in the fabric's order.
    step_time_s : tuple of float
        Step time of each workload (s), in the scenario's order.
    weighted_step_time_s, network_cost_usd, objective_value : float
    network_power_w : float or None
    shadow : tuple of (label, float)
        Each constraint's shadow price (0 where it is slack), as
        :attr:`~libra_opt.optimize.solution.ConstraintReport.shadow_price`.
    compile_s, solve_s : float
        Time filling in the program's data and in Clarabel.
    wall_s : float
        The point's own wall time and its share of the batch's evaluation.
    """

    bw_gbps: tuple[float, ...]
    step_time_s: tuple[float, ...]
    weighted_step_time_s: float
    network_cost_usd: float
    network_power_w: float | None
    objective_value: float
    shadow: tuple[tuple[str, float], ...]
    compile_s: float
    solve_s: float
    wall_s: float


def solve_many(
    problem: BandwidthProblem,
    points: Sequence[tuple[Mapping[str, float], Mapping[str, float]]],
) -> list[PointAnswer | None]:
    """Solve ``problem`` at every ``(rhs, weights)`` point (as ``solve(problem, rhs=rhs,
    weights=weights or None)``), re-checking the answers together.

    Returns
    -------
    list of PointAnswer or None
        One per point: its verified optimum, or ``None`` where the point needs what only
        :func:`~libra_opt.optimize.problem.solve` does (an error to raise, polishing or
        retries, a pinned or idle answer, a failure report): call it for those.

    Examples
    --------
    >>> from libra_opt.optimize.problem import build_problem, solve
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> p = build_problem(toy_scenario().with_limits(budget_usd=2e5))
    >>> a, b = solve_many(p, [({"budget_usd": 1.5e5}, {}), ({"budget_usd": 2e5}, {})])
    >>> sol = solve(p, budget_usd=1.5e5)
    >>> a.objective_value == sol.objective_value, a.bw_gbps == tuple(sol.bw_gbps.tolist())
    (True, True)
    """
    n_dims = problem.scenario.fabric.n_dims
    if (problem.backend != "clarabel" or problem.scenario.reliability is not None
            or problem.terms.used_dims.size != n_dims):
        return [None] * len(points)
    used = problem.terms.used_dims
    kept, scens, bws, walls = [], [], [], []
    for i, (rhs, weights) in enumerate(points):
        t0 = time.perf_counter()
        try:
            scen, rows, free, _, first, _ = _prepare(
                problem, None, None, rhs, weights or None)
        except LibraOptError:
            continue  # solve() raises it again, with its message
        if free.size or first is not problem.program:
            continue
        run = first.run(rows, 0, np.asarray(scen.weights, dtype=float))
        try:
            bw, solver_obj, factor = _read_run(problem, first, run, rows)
        except _SolverAttemptFailed:
            continue
        if not np.isfinite(bw).all():
            continue  # solve() refuses it, naming the figure
        kept.append((i, rows, run, solver_obj, factor))
        scens.append(scen)
        bws.append(bw)
        walls.append(time.perf_counter() - t0)
    out: list[PointAnswer | None] = [None] * len(points)
    if not kept:
        return out
    t0 = time.perf_counter()
    try:
        ev = evaluate_many(scens, np.array(bws), problem.walks)
    except LibraOptError:
        return out  # solve() decides each point, naming what is wrong
    ok = ev.finite()
    rows0 = kept[0][1]
    inequality = np.array([r.sense != "==" for r in rows0], dtype=bool)
    scale = ev.residual_scales
    # broken beyond the constraint tolerance (a failed check), or an inequality beyond
    # round-off (1e-11 of its scale: perhaps a sliver, which solve() decides exactly)
    ok &= ~(ev.residuals > CONSTRAINT_REL_TOL * scale).any(axis=1)
    ok &= ~((ev.residuals > 1e-11 * scale) & inequality).any(axis=1)
    ok &= (ev.bw_gbps <= MAX_BW_GBPS).all(axis=1) & (ev.step_time_s <= MAX_STEP_S).all(axis=1)
    # active rows as constraint_reports finds them: |a . B - rhs| (the residual's size, the
    # same bits) the same as 0 at the row's scale
    near = same_each(ev.residuals, np.zeros_like(scale), scale)
    runs = [k[2] for k in kept]
    shadow = shadow_prices(problem.program, np.array([r.le_dual for r in runs]),
                           np.array([r.eq_dual for r in runs]), np.array([k[4] for k in kept]),
                           len(rows0))
    shadows = np.where(near | ~inequality, shadow[:, : len(rows0)], 0.0)
    share = (time.perf_counter() - t0) / len(kept)
    names = ev.labels
    for j, (i, _, run, solver_obj, _) in enumerate(kept):
        value = float(ev.objective_value[j])
        gap = _rel_gap(value, solver_obj)
        if not ok[j] or _polish_wanted(run, used, gap, None):
            continue
        # a point left to solve() counts its own solves (and the build, if it is the first)
        first_build = problem.program.build_s if problem.n_solves == 0 else 0.0
        problem.n_solves += 1
        power = None if ev.network_power_w is None else float(ev.network_power_w[j])
        out[i] = PointAnswer(
            bw_gbps=tuple(ev.bw_gbps[j].tolist()),
            step_time_s=tuple(ev.step_time_s[j].tolist()),
            weighted_step_time_s=float(ev.weighted_step_time_s[j]),
            network_cost_usd=float(ev.network_cost_usd[j]),
            network_power_w=power,
            objective_value=value,
            shadow=tuple(zip(names, shadows[j].tolist(), strict=True)),
            compile_s=run.compile_s + first_build,
            solve_s=run.solve_s,
            wall_s=walls[j] + share,
        )
    return out
