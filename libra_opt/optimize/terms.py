"""Aggregation of a workload into the few distinct terms the optimizer needs.

A 96-layer transformer repeats the same handful of collectives; identical terms are merged
with a count so the convex program's size does not grow with the number of layers.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenOnUnpickle
from libra_opt.fabric.heterogeneous import slowest_fractions
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.step_time import WalkArrays
from libra_opt.traffic.timing import TimingModel, as_timing
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases
from libra_opt.traffic.workload import Workload

__all__ = ["AggregatedTerms", "ChunkedTerms", "aggregate_terms", "native_terms"]


@dataclass(frozen=True)
class ChunkedTerms(FrozenOnUnpickle):
    r"""Collective times of the ``topology_aware`` model as sums and one max of affine terms.

    For distinct collective ``k``, with ``inv_d = 1 / B_d``:

    .. math:: T_k = s_k \cdot inv + s^0_k + w_k \max_{r: o_r = k} (p_r \cdot inv + p^0_r)

    (:class:`~libra_opt.traffic.topology_aware.ChunkedCollective`: ``s`` the sum of one
    chunk's phases, ``w = 1`` and the pieces its pipeline pieces, already weighted). Convex in ``inv``: both backends compile it with one epigraph
    variable per collective.

    Attributes
    ----------
    sum_gb : numpy.ndarray
        ``(K, D)`` GB over bandwidth of the sum part.
    sum_const_s : numpy.ndarray
        ``(K,)`` constant seconds of the sum part.
    max_weight : numpy.ndarray
        ``(K,)`` weight ``S - 1`` of the max part (0: no max).
    piece_owner : numpy.ndarray
        ``(R,)`` collective of each piece of a max.
    piece_gb : numpy.ndarray
        ``(R, D)`` GB over bandwidth of each piece.
    piece_const_s : numpy.ndarray
        ``(R,)`` constant seconds of each piece.
    """

    sum_gb: np.ndarray
    sum_const_s: np.ndarray
    max_weight: np.ndarray
    piece_owner: np.ndarray
    piece_gb: np.ndarray
    piece_const_s: np.ndarray


def _chunked_rows(
    kind: str, size: float, span, fabric: Fabric, settings: CollectiveSettings
) -> tuple[np.ndarray, float, float, list[tuple[np.ndarray, float]]]:
    """Sum row, sum constant, max weight and pieces of one collective (see ChunkedTerms)."""
    c = collective_phases(kind, size, span, fabric, settings)
    n_d = fabric.n_dims
    rows = []
    for d, coef, const in zip(c.dims, c.coef_gb, c.const_s, strict=True):
        r = np.zeros(n_d)
        r[d] = coef
        rows.append((r, const))
    total = np.sum([r for r, _ in rows], axis=0) if rows else np.zeros(n_d)
    total_const = float(sum(k for _, k in rows))
    # the chunk pipeline's pieces (ChunkedCollective.pieces), already weighted: w = 1
    piece_gb, piece_s = c.piece_arrays(n_d)
    pieces: list[tuple[np.ndarray, float]] = [
        (piece_gb[r], float(piece_s[r])) for r in range(piece_s.size)] if rows else []
    weight = 1.0 if pieces else 0.0
    return total, total_const, weight, pieces


@dataclass(frozen=True)
class AggregatedTerms(FrozenOnUnpickle):
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
    chunked : ChunkedTerms, optional
        Under the ``topology_aware`` model, the collective times (then ``traffic_gb`` holds
        ``S`` times the sum part, a scale for the solver and for ``used_dims``, and
        ``latency_s`` its constants).
    hidden_window_s : numpy.ndarray, optional
        ``(W,)`` hidden window ``W_w`` of each workload
        (:attr:`~libra_opt.traffic.workload.Workload.hidden_window_s`), ``None`` when no
        workload has one (then the programs are built exactly as without this feature).
        Workload ``w``'s step time is then ``max(T_w - W_w, 0)``, with ``T_w`` its usual
        step time (a linear form in the program's variables); both backends add one
        epigraph variable ``e_w >= T_w - W_w``, ``e_w >= 0`` per such workload and
        weigh ``e_w`` instead of ``T_w``.
    """

    traffic_gb: np.ndarray
    latency_s: np.ndarray
    phase_compute_s: np.ndarray
    phase_members: np.ndarray
    phase_counts: np.ndarray
    chunked: ChunkedTerms | None = None
    hidden_window_s: np.ndarray | None = None

    @property
    def compute_s(self) -> np.ndarray:
        """``(W,)`` total compute per step of each workload."""
        return self.phase_counts @ self.phase_compute_s

    @property
    def collective_counts(self) -> np.ndarray:
        """``(W, K)`` occurrences of each collective per step of each workload."""
        return self.phase_counts @ self.phase_members

    @functools.cached_property
    def used_dims(self) -> np.ndarray:
        """Indices of dimensions that carry traffic (read-only; computed once)."""
        used = np.flatnonzero((self.traffic_gb > 0).any(axis=0))
        used.setflags(write=False)
        return used

    @property
    def windowed(self) -> np.ndarray:
        """Indices of the workloads with a hidden window (empty when none has one)."""
        if self.hidden_window_s is None:
            return np.zeros(0, dtype=int)
        return np.flatnonzero(self.hidden_window_s > 0)

    def check_windows(self, weights: np.ndarray, timing: TimingModel, perspective: bool) -> None:
        r"""Refuse hidden windows where the program would not be exact.

        Under ``perf`` every window is exact. Under ``perf_per_cost`` and ``tco`` (the
        perspective form, :mod:`libra_opt.optimize.program`), the step time is written
        ``Phi(1/u, 1/y)`` with ``Phi(s, v)`` positively homogeneous, and the program is
        convex (and the epigraph ``inv_u >= 1 / u`` tight) when ``Phi`` does not decrease in
        ``s``, the slot of every constant. A window enters as ``max(T_w - W_w s, 0)``, which
        decreases in ``s`` by up to ``a_w W_w``; under ``no_overlap`` the other workloads'
        compute enters as ``a_w C_w s`` and offsets it when

        .. math:: \sum_{w: W_w = 0} a_w C_w \ge \sum_{w: W_w > 0} a_w W_w

        (DiLoCo: ``tau F / H <= 1``, which :class:`~libra_opt.traffic.diloco.DiLoCoSettings`
        enforces). Windows under ``overlap`` are refused for every objective when the scenario
        is made (:class:`~libra_opt.scenario.scenario.Scenario`: the links would be busy with
        the step's own collectives during the compute that hides the window); this check
        refuses them again for programs built from terms directly.

        Raises
        ------
        InputError
            Naming ``diloco.overlap_steps`` (the option that creates windows).
        """
        win = self.windowed
        if not perspective or win.size == 0:
            return
        if timing.overlapped:
            raise InputError(
                "a hidden window (Workload.hidden_window_s, from DiLoCo's overlap_steps > 0) "
                "under objective perf_per_cost or tco needs training_loop: no_overlap (with "
                "overlapped phases the program is not convex); use objective perf, "
                "training_loop no_overlap or overlap_steps 0",
                field="diloco.overlap_steps",
            )
        assert self.hidden_window_s is not None
        plain = np.ones(weights.size, dtype=bool)
        plain[win] = False
        cover = float(weights[plain] @ self.compute_s[plain])
        need = float(weights[win] @ self.hidden_window_s[win])
        if need > cover * (1.0 + 1e-12):
            raise InputError(
                f"the weighted hidden windows ({need:.6g} s per step, Workload.hidden_window_s) "
                f"exceed the weighted compute of the other workloads ({cover:.6g} s): under "
                "objective perf_per_cost or tco the program is then not convex (DiLoCo: "
                "overlap_steps x fragments / sync_every_steps must be <= 1)",
                field="diloco.overlap_steps",
            )


def aggregate_terms(
    workloads: Sequence[Workload], fabric: Fabric, timing: TimingModel | None = None,
    walks: Sequence[WalkArrays] | None = None,
) -> AggregatedTerms:
    """Merge identical collectives and phases of ``workloads`` on ``fabric`` under ``timing``.

    ``walks`` (:func:`~libra_opt.traffic.step_time.walk_arrays` of each workload under the
    same ``timing``) lend their per-collective traffic, latency and efficiency instead of
    routing every collective a second time.

    ``timing``'s traffic model routes the bytes (:mod:`libra_opt.traffic.routing`); under
    ``topology_aware`` its collective settings add :class:`ChunkedTerms` (collectives are
    then merged when their chunk phases are identical); its ``in_network_dims`` name the
    switch dimensions that reduce in the network under the other collective models
    (:mod:`libra_opt.traffic.in_network`).

    On a heterogeneous dimension (:mod:`libra_opt.fabric.heterogeneous`) the slowest member
    bounds every collective: its bytes over bandwidth are divided by ``f_min``
    (``traffic_d / (f_min B_d)``; latency constants unchanged).

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
    timing = as_timing(timing)
    collectives = timing.collectives
    traffic_model = timing.traffic_model
    n_d = fabric.n_dims
    inr = in_network_dims(timing.in_network_dims, fabric)
    slow = slowest_fractions(fabric)  # 1 on a homogeneous dimension
    hetero = bool((slow < 1.0).any())
    coll_index: dict[bytes, int] = {}
    traffic_rows: list[np.ndarray] = []
    latency_rows: list[np.ndarray] = []
    chunked_rows: list[tuple[np.ndarray, float, float, list[tuple[np.ndarray, float]]]] = []
    agg_ids = []
    for w, wl in enumerate(workloads):
        flat = wl.flat
        walk = None if walks is None else walks[w]
        agg_of = np.full(len(flat.collectives), -1, dtype=int)
        for i, (kind, size, group) in enumerate(flat.collectives):
            if collectives is None and walk is not None:  # routed once, by the walk
                traffic, lat = walk.traffic_bytes[i] / 1e9, walk.latency_s[i]
                eff = None if walk.efficiency is None else walk.efficiency[i]
            elif collectives is None:
                traffic, lat = collective_traffic(kind, size, wl.groups[group], fabric,
                                                  traffic_model, inr,
                                                  group in wl.flat_ring_groups)
                traffic = traffic / 1e9
                eff = timing.efficiency_by_dim(fabric.dims, kind, size, wl.groups[group],
                                               group in wl.flat_ring_groups)
            if collectives is None:
                if eff is not None:   # a fraction of B_d per collective: still coef / B_d
                    traffic = traffic / eff
                if hetero:
                    traffic = traffic / slow
                key = traffic.tobytes() + lat.tobytes()
            else:
                row = _chunked_rows(kind, size, wl.groups[group], fabric, collectives)
                if hetero:
                    row = (row[0] / slow, row[1], row[2], [(r / slow, k) for r, k in row[3]])
                chunks = float(collectives.chunks) if row[3] else 1.0
                traffic = chunks * row[0]
                lat = np.where(row[0] > 0, chunks * row[1], 0.0)
                key = b"".join([row[0].tobytes(), np.float64(row[1]).tobytes(),
                                np.float64(row[2]).tobytes()]
                               + [r.tobytes() + np.float64(k).tobytes() for r, k in row[3]])
            if not (traffic > 0).any():
                continue  # a collective that moves nothing is no term
            if key not in coll_index:
                coll_index[key] = len(traffic_rows)
                traffic_rows.append(traffic)
                latency_rows.append(lat)
                if collectives is not None:
                    chunked_rows.append(row)
            agg_of[i] = coll_index[key]
        agg_ids.append(agg_of)
    n_k = len(traffic_rows)
    # A phase is its compute time and how many times it runs each distinct collective.
    keys, counts, owner = [], [], []
    for w, (wl, agg_of) in enumerate(zip(workloads, agg_ids, strict=True)):
        flat = wl.flat  # its distinct phases: merging starts from them, not from every layer
        n_pk = len(flat.phase_table)
        members = np.zeros((n_pk, n_k))
        for q, (_, mem) in enumerate(flat.phase_table):
            for cid in mem:
                if agg_of[cid] >= 0:
                    members[q, agg_of[cid]] += 1.0
        compute = np.array([c for c, _ in flat.phase_table], dtype=float).reshape(n_pk)
        keys.append(np.column_stack((compute, members)))
        counts.append(np.bincount(flat.phase_key, weights=flat.phase_count, minlength=n_pk))
        owner.append(np.full(n_pk, w))
    distinct, inverse = _distinct_rows(np.vstack(keys) if keys else np.zeros((0, n_k + 1)))
    phase_counts = np.zeros((len(workloads), distinct.shape[0]))
    if keys:
        np.add.at(phase_counts, (np.concatenate(owner), inverse), np.concatenate(counts))
    traffic_gb = np.array(traffic_rows).reshape(n_k, n_d)
    latency_s = np.array(latency_rows).reshape(n_k, n_d)
    chunked = None
    if collectives is not None:
        piece_owner = [k for k, row in enumerate(chunked_rows) for _ in row[3]]
        pieces = [p for row in chunked_rows for p in row[3]]
        chunked = ChunkedTerms(
            sum_gb=np.array([row[0] for row in chunked_rows]).reshape(n_k, n_d),
            sum_const_s=np.array([row[1] for row in chunked_rows], dtype=float),
            max_weight=np.array([row[2] for row in chunked_rows], dtype=float),
            piece_owner=np.array(piece_owner, dtype=int),
            piece_gb=np.array([r for r, _ in pieces]).reshape(len(pieces), n_d),
            piece_const_s=np.array([k for _, k in pieces], dtype=float),
        )
    windows = [wl.hidden_window_s for wl in workloads]
    hidden = np.array(windows, dtype=float) if any(windows) else None
    return AggregatedTerms(traffic_gb, latency_s, distinct[:, 0].copy(),
                           distinct[:, 1:].copy(), phase_counts, chunked, hidden)


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
    return aggregate_terms(workloads, fabric, TimingModel(traffic_model="native"))
