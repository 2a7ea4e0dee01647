"""Step time of one workload on a fabric at a given bandwidth: the layer-by-layer walk.

This is the reference model of a training step (no aggregation, no solver): for every
phase of every layer, its compute time and the times of its collectives under the chosen
traffic model (:func:`libra_opt.traffic.routing.collective_traffic`) and collective model
(:func:`libra_opt.traffic.collectives.collective_time_s`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.options import PHASES, TRAINING_LOOPS, TrafficModel
from libra_opt.traffic.collectives import collective_time_s
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.workload import Workload, walk_collectives, walk_phases

__all__ = ["WorkloadTimes", "check_bandwidth", "step_time", "traffic_by_group_bytes"]


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
    times from :func:`libra_opt.traffic.collectives.collective_time_s`:

    * ``no_overlap``: ``T = sum_l count_l sum_p (compute_lp + sum_c t_c)``;
    * ``overlap``: ``T = sum_l count_l sum_p max(compute_lp, sum_c t_c)``.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> w = Workload("w", (Layer("l", Phase(0.5, (Collective("all_reduce", 4e9, "g"),))),),
    ...              {"g": (4,)})
    >>> step_time(w, f, [100.0]).step_time_s   # 0.5 + 2*4e9*3/4 / 100e9
    0.56
    """
    bw = check_bandwidth(fabric, bw_gbps)
    if training_loop not in TRAINING_LOOPS:
        raise InputError(
            f"training_loop {training_loop!r} is not one of {', '.join(TRAINING_LOOPS)}",
            field="training_loop",
        )
    n_dims = fabric.n_dims
    by_phase: dict[str, float] = dict.fromkeys(PHASES, 0.0)
    by_group = dict.fromkeys(workload.groups, 0.0)
    busy = np.zeros(n_dims)
    traffic_total = np.zeros(n_dims)
    total = compute = comm = 0.0
    memo: dict[tuple[str, float, str], tuple[float, np.ndarray, np.ndarray]] = {}
    for step in walk_phases(workload):
        phase, count = step.phase, step.count
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
            busy += count * busy_c
            traffic_total += count * traffic
            by_group[coll.group] += count * t
            by_phase[step.name] += count * t
            phase_comm += t
        compute += count * phase.compute_s
        comm += count * phase_comm
        if training_loop == "no_overlap":
            total += count * (phase.compute_s + phase_comm)
        else:
            total += count * max(phase.compute_s, phase_comm)
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


def traffic_by_group_bytes(
    workload: Workload, fabric: Fabric, traffic_model: TrafficModel = "hierarchical"
) -> dict[str, tuple[int, np.ndarray]]:
    """Per group: (collectives per step, bytes per NPU per dimension per step).

    Bytes follow ``traffic_model`` (:func:`libra_opt.traffic.routing.collective_traffic`).

    Examples
    --------
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1e6, "dp"),)),
    ...                     count=3),), {"dp": (4, 2)})
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 2, "T")))
    >>> n, b = traffic_by_group_bytes(w, f)["dp"]
    >>> n, b.tolist()
    (3, [4500000.0, 750000.0])
    """
    out: dict[str, tuple[int, np.ndarray]] = {}
    for step in walk_collectives(workload):
        c = step.collective
        t, _ = collective_traffic(c.kind, c.size_bytes, step.span, fabric, traffic_model)
        n, acc = out.get(c.group, (0, np.zeros(fabric.n_dims)))
        out[c.group] = (n + step.count, acc + step.count * t)
    return out
