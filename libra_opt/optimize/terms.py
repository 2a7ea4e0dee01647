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
from libra_opt.traffic.workload import Workload

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
    n_d = fabric.n_dims
    coll_index: dict[bytes, int] = {}
    traffic_rows: list[np.ndarray] = []
    latency_rows: list[np.ndarray] = []
    agg_ids = []
    for wl in workloads:
        flat = wl.flat
        agg_of = np.full(len(flat.collectives), -1, dtype=int)
        for i, (kind, size, group) in enumerate(flat.collectives):
            traffic, lat = collective_traffic(kind, size, wl.groups[group], fabric, traffic_model)
            traffic = traffic / 1e9
            if not (traffic > 0).any():
                continue  # a collective that moves nothing is no term
            key = traffic.tobytes() + lat.tobytes()
            if key not in coll_index:
                coll_index[key] = len(traffic_rows)
                traffic_rows.append(traffic)
                latency_rows.append(lat)
            agg_of[i] = coll_index[key]
        agg_ids.append(agg_of)
    n_k = len(traffic_rows)
    # A phase is its compute time and how many times it runs each distinct collective.
    keys, counts, owner = [], [], []
    for w, (wl, agg_of) in enumerate(zip(workloads, agg_ids, strict=True)):
        flat = wl.flat
        members = np.zeros((flat.phase_compute_s.size, n_k))
        ids = agg_of[flat.coll_id]
        keep = ids >= 0
        np.add.at(members, (flat.coll_phase[keep], ids[keep]), 1.0)
        keys.append(np.column_stack((flat.phase_compute_s, members)))
        counts.append(flat.phase_count)
        owner.append(np.full(flat.phase_count.size, w))
    distinct, inverse = _distinct_rows(np.vstack(keys) if keys else np.zeros((0, n_k + 1)))
    phase_counts = np.zeros((len(workloads), distinct.shape[0]))
    if keys:
        np.add.at(phase_counts, (np.concatenate(owner), inverse), np.concatenate(counts))
    traffic_gb = np.array(traffic_rows).reshape(n_k, n_d)
    latency_s = np.array(latency_rows).reshape(n_k, n_d)
    return AggregatedTerms(traffic_gb, latency_s, distinct[:, 0].copy(),
                           distinct[:, 1:].copy(), phase_counts)


def _distinct_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of ``a`` (sorted) and the index of each row among them (a lexsort,
    much faster than ``numpy.unique(axis=0)`` on float rows)."""
    if a.shape[0] == 0:
        return a, np.zeros(0, dtype=int)
    order = np.lexsort(a.T[::-1])
    ranked = a[order]
    new = np.ones(a.shape[0], dtype=bool)
    new[1:] = (ranked[1:] != ranked[:-1]).any(axis=1)
    inverse = np.empty(a.shape[0], dtype=int)
    inverse[order] = np.cumsum(new) - 1
    return ranked[new], inverse


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
