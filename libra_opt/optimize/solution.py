"""Results: frozen records of an optimized design, its constraints, baselines and solver data."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.scenario import Scenario

__all__ = [
    "ConstraintReport",
    "SolverInfo",
    "Baseline",
    "Solution",
    "baselines",
]


@dataclass(frozen=True)
class ConstraintReport:
    """One constraint at the optimum.

    Attributes
    ----------
    label : str
    lhs : float
        ``a . B`` at the optimum.
    sense : str
    rhs : float
    slack : float
        Distance to the bound (>= 0 when satisfied; 0 for equalities).
    active : bool
        The constraint holds with equality (relative tolerance 1e-6).
    shadow_price : float
        d objective / d rhs at the optimum: objective units per unit of rhs (GB/s, $ or W).
        Negative means relaxing the bound improves the objective.
    """

    label: str
    lhs: float
    sense: str
    rhs: float
    slack: float
    active: bool
    shadow_price: float


@dataclass(frozen=True)
class SolverInfo:
    """How the answer was found.

    Attributes
    ----------
    solver : str
        Numerical solver (``CLARABEL``).
    method : str
        ``convex`` (perf), ``convex-homogeneous`` (exact perf-per-cost transform) or
        ``1d-search`` (certified search over the cost level with convex solves inside).
    status : str
    compile_s, solve_s : float
        Problem construction/canonicalisation time and numerical solve time, seconds.
    n_solves : int
        Convex solves performed.
    objective_rel_gap : float
        Relative difference between the solver's objective and the numpy evaluator's.
    """

    solver: str
    method: str
    status: str
    compile_s: float
    solve_s: float
    n_solves: int
    objective_rel_gap: float


@dataclass(frozen=True)
class Baseline:
    """A reference allocation with the same total bandwidth as the optimum."""

    name: str
    evaluation: Evaluation
    feasible: bool
    speedup: float
    """Baseline weighted step time / optimal weighted step time."""
    objective_ratio: float
    """Baseline objective / optimal objective (equals ``speedup`` for ``perf``)."""


@dataclass(frozen=True)
class Solution:
    """An optimized bandwidth allocation, re-checked by the numpy evaluator.

    Attributes
    ----------
    scenario : Scenario
    bw_gbps : numpy.ndarray
        Bandwidth per NPU of each dimension in GB/s (read-only).
    objective : str
    objective_value : float
        Seconds (``perf``) or seconds x $ (``perf_per_cost``).
    evaluation : Evaluation
        Step times, breakdowns, cost and power at ``bw_gbps``.
    constraints : tuple of ConstraintReport
    baselines : tuple of Baseline
    solver : SolverInfo
    """

    scenario: Scenario
    bw_gbps: np.ndarray
    objective: str
    objective_value: float
    evaluation: Evaluation
    constraints: tuple[ConstraintReport, ...]
    baselines: tuple[Baseline, ...]
    solver: SolverInfo

    @property
    def step_time_s(self) -> dict[str, float]:
        """Workload name -> step time (s)."""
        return self.evaluation.step_time_s

    @property
    def network_cost_usd(self) -> float:
        """Network cost in $."""
        return self.evaluation.cost.network_cost_usd

    @property
    def network_power_w(self) -> float | None:
        """Network power in W, ``None`` when no power model was given."""
        return self.evaluation.cost.network_power_w

    @property
    def active_constraints(self) -> tuple[ConstraintReport, ...]:
        """Constraints that hold with equality at the optimum."""
        return tuple(c for c in self.constraints if c.active)


def _ratio(a: float, b: float) -> float:
    """``a / b``, with 0 / 0 = 1 (nothing to speed up)."""
    if b == 0:
        return 1.0 if a == 0 else float("inf")
    return a / b


def baselines(
    scenario: Scenario, optimum: Evaluation, feas_tol: float = 1e-6
) -> tuple[Baseline, ...]:
    """Equal split and traffic-proportional split at the optimum's total bandwidth.

    The traffic-proportional split gives dimension ``d`` a share of the total equal to its
    share of the weighted per-NPU bytes per step.
    """
    total = float(np.sum(optimum.bw_gbps))
    n = scenario.fabric.n_dims
    assert scenario.weights is not None
    traffic = sum(
        wt * t.traffic_by_dim_bytes
        for wt, t in zip(scenario.weights, optimum.workloads, strict=True)
    )
    splits = [("equal split", np.full(n, total / n))]
    if np.sum(traffic) > 0:
        splits.append(("traffic-proportional", total * traffic / np.sum(traffic)))
    out = []
    for name, bw in splits:
        ev = evaluate(scenario, bw)
        feasible = ev.feasible(feas_tol)
        speed = _ratio(ev.weighted_step_time_s, optimum.weighted_step_time_s)
        ratio = _ratio(ev.objective_value, optimum.objective_value)
        out.append(Baseline(name, ev, feasible, float(speed), float(ratio)))
    return tuple(out)
