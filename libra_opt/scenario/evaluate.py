"""Independent numpy evaluation of a scenario at one bandwidth allocation.

Step times come from :func:`libra_opt.traffic.step_time.step_time`, which walks every
workload layer by layer and phase by phase, exactly as written, with no aggregation and no
solver; cost, power, the objective and every constraint's residual are computed here with
plain numpy. This is the reference every optimizer answer is checked against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from libra_opt.cost.prices import CostBreakdown, network_cost_breakdown
from libra_opt.cost.tco import cluster_rate_coefficients
from libra_opt.scenario.scenario import Scenario, scenario_rows
from libra_opt.traffic.step_time import WorkloadTimes, check_bandwidth, step_time

__all__ = ["Evaluation", "evaluate"]


@dataclass(frozen=True)
class Evaluation:
    """A scenario evaluated at one bandwidth allocation.

    Attributes
    ----------
    bw_gbps : numpy.ndarray
        Bandwidth per dimension (GB/s per NPU).
    workloads : tuple of WorkloadTimes
    weighted_step_time_s : float
        ``sum_w weight_w * step_time_w``.
    cost : CostBreakdown
    objective_value : float
        ``weighted_step_time_s`` for ``perf``; times network cost ($) for
        ``perf_per_cost`` (units s x $); for ``tco`` the cost of one training run in $,
        ``steps x weighted_step_time_s x (r0 + r . B)`` (:mod:`libra_opt.cost.tco`).
    residuals : mapping
        Constraint label -> signed violation (> 0 means violated) in the row's units.
    residual_scales : mapping
        Constraint label -> ``max(1, |rhs|, |a| . B)``, the scale violations are judged by.
    """

    bw_gbps: np.ndarray
    workloads: tuple[WorkloadTimes, ...]
    weighted_step_time_s: float
    cost: CostBreakdown
    objective_value: float
    residuals: Mapping[str, float]
    residual_scales: Mapping[str, float]

    def feasible(self, rel_tol: float = 1e-6) -> bool:
        """True when every constraint holds within ``rel_tol`` of its scale."""
        return all(
            self.residuals[k] <= rel_tol * self.residual_scales[k] for k in self.residuals
        )

    @property
    def step_time_s(self) -> dict[str, float]:
        """Workload name -> step time in seconds."""
        return {w.name: w.step_time_s for w in self.workloads}


def evaluate(scenario: Scenario, bw_gbps: npt.ArrayLike) -> Evaluation:
    """Evaluate ``scenario`` at ``bw_gbps`` with plain numpy.

    Examples
    --------
    >>> from libra_opt.cost.prices import CostModel
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> w = Workload("w", (Layer("l", Phase(0.5, (Collective("all_reduce", 4e9, "g"),))),),
    ...              {"g": (4,)})
    >>> s = Scenario(f, CostModel.from_tables({"T": {"link": 2.0}}), (w,))
    >>> e = evaluate(s, [100.0])
    >>> round(e.objective_value, 6), e.cost.network_cost_usd   # cost = 2 $ x 4 NPUs x 100
    (0.56, 800.0)
    """
    fabric = scenario.fabric
    bw = check_bandwidth(fabric, bw_gbps)
    times = tuple(
        step_time(
            w, fabric, bw, scenario.collective_model, scenario.training_loop,
            scenario.traffic_model,
        )
        for w in scenario.workloads
    )
    assert scenario.weights is not None
    weighted = float(sum(wt * t.step_time_s for wt, t in zip(scenario.weights, times, strict=True)))
    coeffs = scenario.coefficients
    cost = network_cost_breakdown(coeffs, bw)
    if scenario.objective == "perf":
        objective = weighted
    elif scenario.objective == "perf_per_cost":
        objective = weighted * cost.network_cost_usd
    else:
        assert scenario.tco is not None
        r0, r = cluster_rate_coefficients(scenario.tco, fabric, coeffs)
        objective = scenario.tco.n_steps * weighted * (r0 + float(r @ bw))
    residuals, scales = {}, {}
    for row in scenario_rows(scenario, coeffs):
        lhs = float(row.a @ bw)
        scales[row.label] = max(1.0, abs(row.rhs), float(np.abs(row.a) @ bw))
        if row.sense == "<=":
            residuals[row.label] = lhs - row.rhs
        elif row.sense == ">=":
            residuals[row.label] = row.rhs - lhs
        else:
            residuals[row.label] = abs(lhs - row.rhs)
    return Evaluation(
        bw,
        times,
        weighted,
        cost,
        objective,
        MappingProxyType(residuals),
        MappingProxyType(scales),
    )
