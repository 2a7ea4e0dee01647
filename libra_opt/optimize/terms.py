"""Aggregation of a workload into the few distinct terms the optimizer needs.

A 96-layer transformer repeats the same handful of collectives; identical terms are merged
with a count so the convex program's size does not grow with the number of layers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from libra_opt.fabric.dims import Fabric
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.workload import Workload, walk_phases

__all__ = ["AggregatedTerms", "aggregate_terms", "native_terms"]


@dataclass(frozen=True)
class AggregatedTerms:
    """Distinct collectives and phases of a set of workloads.

    Attributes
    ----------
    traffic_gb : numpy.ndarray
        ``(K, D)``: GB (1e9 bytes) per NPU of each distinct collective on each dimension.
    latency_s : numpy.ndarray
        ``(K, D)``: constant latency of each collective on each dimension.
    phase_compute_s : numpy.ndarray
        ``(P,)``: compute time of each distinct phase.
    phase_members : numpy.ndarray
        ``(P, K)``: how many times each collective occurs in each distinct phase.
    phase_counts : numpy.ndarray
        ``(W, P)``: how many times each distinct phase occurs in a step of each workload.
    """

    traffic_gb: np.ndarray
    latency_s: np.ndarray
    phase_compute_s: np.ndarray
    phase_members: np.ndarray
    phase_counts: np.ndarray

    @property
    def compute_s(self) -> np.ndarray:
        """``(W,)`` total compute per step of each workload."""
        return self.phase_counts @ self.phase_compute_s

    @property
    def collective_counts(self) -> np.ndarray:
        """``(W, K)`` occurrences of each collective per step of each workload."""
        return self.phase_counts @ self.phase_members

    @property
    def used_dims(self) -> np.ndarray:
        """Indices of dimensions that carry traffic."""
        return np.flatnonzero((self.traffic_gb > 0).any(axis=0))

    @property
    def has_latency(self) -> bool:
        """True when any collective pays a latency term."""
        return bool((self.latency_s > 0).any())


def aggregate_terms(
    workloads: Sequence[Workload], fabric: Fabric, traffic_model: str = "hierarchical"
) -> AggregatedTerms:
    """Merge identical collectives and phases of ``workloads`` on ``fabric``.

    ``traffic_model`` is ``hierarchical`` (LIBRA) or ``native`` (see :mod:`libra_opt.traffic.routing`).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> ar = Collective("all_reduce", 4e9, "g")
    >>> w = Workload("w", (Layer("l", Phase(0.5, (ar,)), count=96),), {"g": (4,)})
    >>> t = aggregate_terms([w], f)
    >>> t.traffic_gb.tolist(), t.collective_counts.tolist()
    ([[6.0]], [[96.0]])
    """
    coll_index: dict[bytes, int] = {}
    traffic_rows: list[np.ndarray] = []
    latency_rows: list[np.ndarray] = []
    phase_index: dict[tuple[float, tuple[int, ...]], int] = {}
    phase_list: list[tuple[float, tuple[int, ...]]] = []
    counts: list[dict[int, float]] = []
    seen: dict[tuple[str, float, tuple[int, ...]], int] = {}
    for wl in workloads:
        wcounts: dict[int, float] = {}
        for step in walk_phases(wl):
            members = []
            for coll in step.phase.collectives:
                span = wl.groups[coll.group]
                ckey = (coll.kind, coll.size_bytes, span)
                if ckey not in seen:
                    traffic, lat = collective_traffic(
                        coll.kind, coll.size_bytes, span, fabric, traffic_model
                    )
                    traffic = traffic / 1e9
                    if not (traffic > 0).any():
                        seen[ckey] = -1
                        continue
                    key = traffic.tobytes() + lat.tobytes()
                    if key not in coll_index:
                        coll_index[key] = len(traffic_rows)
                        traffic_rows.append(traffic)
                        latency_rows.append(lat)
                    seen[ckey] = coll_index[key]
                if seen[ckey] >= 0:
                    members.append(seen[ckey])
            pkey = (float(step.phase.compute_s), tuple(sorted(members)))
            if pkey not in phase_index:
                phase_index[pkey] = len(phase_list)
                phase_list.append(pkey)
            p = phase_index[pkey]
            wcounts[p] = wcounts.get(p, 0.0) + step.count
        counts.append(wcounts)
    n_k, n_p, n_d = len(traffic_rows), len(phase_list), fabric.n_dims
    traffic_gb = np.array(traffic_rows).reshape(n_k, n_d)
    latency_s = np.array(latency_rows).reshape(n_k, n_d)
    phase_compute = np.array([p[0] for p in phase_list])
    members_m = np.zeros((n_p, n_k))
    for i, (_, mem) in enumerate(phase_list):
        for k in mem:
            members_m[i, k] += 1
    phase_counts = np.zeros((len(workloads), n_p))
    for w, wc in enumerate(counts):
        for p, c in wc.items():
            phase_counts[w, p] = c
    return AggregatedTerms(traffic_gb, latency_s, phase_compute, members_m, phase_counts)


def native_terms(workloads: Sequence[Workload], fabric: Fabric) -> AggregatedTerms:
    """:func:`aggregate_terms` with :func:`libra_opt.traffic.routing.native_traffic_bytes`.

    The result has the same layout, so the optimizer's ``_build_program`` accepts it
    unchanged (a ``traffic_model: native`` option needs only this swap).

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> a2a = Collective("all_to_all", 64.0, "ep")
    >>> w = Workload("w", (Layer("l", Phase(0.5, (a2a,)), count=10),), {"ep": (8, 4)})
    >>> t = native_terms([w], rail_only(32, 8, 8))
    >>> (t.traffic_gb * 1e9).tolist(), t.collective_counts.tolist()
    ([[56.0, 48.0]], [[10.0]])
    """
    return aggregate_terms(workloads, fabric, traffic_model="native")
