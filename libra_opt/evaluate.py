"""Independent numpy evaluation of a bandwidth allocation.

This walks the workload layer by layer and phase by phase, exactly as written, with no
aggregation and no solver: it is the reference every optimizer answer is checked against.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from libra_opt.collectives import collective_time_s
from libra_opt.cost import CostBreakdown, network_cost_breakdown
from libra_opt.errors import InputError
from libra_opt.fabric import Fabric
from libra_opt.scenario import Scenario, scenario_rows
from libra_opt.tco import cluster_rate_coefficients
from libra_opt.traffic import collective_traffic
from libra_opt.workload import PHASES, Workload

__all__ = ["WorkloadTimes", "Evaluation", "step_time", "evaluate", "check_bandwidth"]


@dataclass(frozen=True)
class WorkloadTimes:
    """Step time of one workload and where it goes.

    Attributes
    ----------
    name : str
    step_time_s : float
        Time of one training step.
    compute_s : float
        Sum of compute times.
    comm_s : float
        Sum of collective times (whether or not hidden behind compute).
    exposed_comm_s : float
        ``step_time_s - compute_s``.
    comm_by_phase_s : mapping
        Phase name -> collective time.
    comm_by_group_s : mapping
        Parallelism group -> collective time.
    busy_by_dim_s : numpy.ndarray
        Per dimension, the sum over collectives of ``traffic_d / B_d + latency_d`` (time
        each dimension is busy; in the pipelined model collectives overlap across dims).
    traffic_by_dim_bytes : numpy.ndarray
        Bytes each NPU sends on each dimension per step.
    """

    name: str
    step_time_s: float
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    comm_by_phase_s: Mapping[str, float]
    comm_by_group_s: Mapping[str, float]
    busy_by_dim_s: np.ndarray
    traffic_by_dim_bytes: np.ndarray


def check_bandwidth(fabric: Fabric, bw_gbps: npt.ArrayLike, field: str = "bw") -> np.ndarray:
    """Validate a bandwidth vector: one finite value >= 0 per dimension, in GB/s."""
    try:
        bw = np.asarray(bw_gbps, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"bandwidths {bw_gbps!r} must be numbers (GB/s)", field=field) from None
    if bw.shape != (fabric.n_dims,):
        raise InputError(
            f"expected {fabric.n_dims} bandwidths ({', '.join(fabric.names)}), got {bw.size}",
            field=field,
        )
    if not np.all(np.isfinite(bw)) or np.any(bw < 0):
        raise InputError(f"bandwidths {bw.tolist()} must be finite and >= 0 GB/s", field=field)
    return bw


def step_time(
    workload: Workload,
    fabric: Fabric,
    bw_gbps: npt.ArrayLike,
    collective_model: str = "pipelined",
    training_loop: str = "no_overlap",
    traffic_model: str = "hierarchical",
) -> WorkloadTimes:
    """Step time of ``workload`` on ``fabric`` at bandwidth ``bw_gbps``.

    Notes
    -----
    For every layer ``l`` (repeated ``count_l`` times) and phase ``p``, with collective
    times from :func:`libra_opt.collectives.collective_time_s`:

    * ``no_overlap``: ``T = sum_l count_l sum_p (compute_lp + sum_c t_c)``;
    * ``overlap``: ``T = sum_l count_l sum_p max(compute_lp, sum_c t_c)``.

    Examples
    --------
    >>> from libra_opt.fabric import Dim
    >>> from libra_opt.workload import Collective, Layer, Phase
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> w = Workload("w", (Layer("l", Phase(0.5, (Collective("all_reduce", 4e9, "g"),))),),
    ...              {"g": (4,)})
    >>> step_time(w, f, [100.0]).step_time_s   # 0.5 + 2*4e9*3/4 / 100e9
    0.56
    """
    bw = check_bandwidth(fabric, bw_gbps)
    n_dims = fabric.n_dims
    by_phase = dict.fromkeys(PHASES, 0.0)
    by_group = dict.fromkeys(workload.groups, 0.0)
    busy = np.zeros(n_dims)
    traffic_total = np.zeros(n_dims)
    total = compute = comm = 0.0
    memo: dict[tuple[str, float, str], tuple[float, np.ndarray, np.ndarray]] = {}
    for layer in workload.layers:
        for pname, phase in layer.phases():
            phase_comm = 0.0
            for coll in phase.collectives:
                key = (coll.kind, coll.size_bytes, coll.group)
                if key not in memo:  # the same collective recurs in every repeated layer
                    span = workload.groups[coll.group]
                    traffic, lat = collective_traffic(
                        coll.kind, coll.size_bytes, span, fabric, traffic_model
                    )
                    used = traffic > 0
                    busy_c = np.zeros(n_dims)
                    with np.errstate(divide="ignore"):
                        busy_c[used] = traffic[used] / (1e9 * bw[used]) + lat[used]
                    memo[key] = (collective_time_s(traffic, bw, lat, collective_model), traffic, busy_c)
                t, traffic, busy_c = memo[key]
                busy += layer.count * busy_c
                traffic_total += layer.count * traffic
                by_group[coll.group] += layer.count * t
                by_phase[pname] += layer.count * t
                phase_comm += t
            compute += layer.count * phase.compute_s
            comm += layer.count * phase_comm
            if training_loop == "no_overlap":
                total += layer.count * (phase.compute_s + phase_comm)
            elif training_loop == "overlap":
                total += layer.count * max(phase.compute_s, phase_comm)
            else:
                raise InputError(
                    f"training_loop {training_loop!r} is not 'no_overlap' or 'overlap'",
                    field="training_loop",
                )
    return WorkloadTimes(
        name=workload.name,
        step_time_s=total,
        compute_s=compute,
        comm_s=comm,
        exposed_comm_s=total - compute,
        comm_by_phase_s=MappingProxyType(by_phase),
        comm_by_group_s=MappingProxyType(by_group),
        busy_by_dim_s=busy,
        traffic_by_dim_bytes=traffic_total,
    )


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
        ``steps x weighted_step_time_s x (r0 + r . B)`` (:mod:`libra_opt.tco`).
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
    >>> from libra_opt.cost import CostModel
    >>> from libra_opt.fabric import Dim
    >>> from libra_opt.workload import Collective, Layer, Phase
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
