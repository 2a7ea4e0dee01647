"""Step time of one workload on a fabric at a given bandwidth: the layer-by-layer walk, the
reference model of a training step (no aggregation, no solver).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenAtInit, FrozenMap, FrozenOnUnpickle
from libra_opt.fabric.heterogeneous import slowest_fractions
from libra_opt.options import PHASES
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.timing import TimingModel, as_timing
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases
from libra_opt.traffic.workload import Workload, walk_collectives

__all__ = ["PhaseArrays", "WalkArrays", "WorkloadTimes", "check_bandwidth", "step_time",
           "step_time_from_walk", "step_times_s", "traffic_by_group_bytes", "walk_arrays"]


@dataclass(frozen=True)
class WorkloadTimes(FrozenOnUnpickle):
    """Step time of one workload and where it goes.

    Attributes
    ----------
    step_time_s, compute_s, comm_s : float
        Step time (less a hidden window), compute and collective time (hidden or not).
    exposed_comm_s : float
        ``step_time_s - compute_s``.
    comm_by_phase_s, comm_by_group_s : mapping
        Collective time by phase name and by parallelism group.
    busy_by_dim_s : numpy.ndarray
        Per dimension, the sum over collectives of ``traffic_d / B_d + latency_d``.
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

    #: Its arrays are read-only from construction (:func:`~libra_opt.fabric.frozen.freeze_arrays`).
    ARRAYS_FROZEN_AT_INIT: ClassVar[bool] = True

    def __post_init__(self) -> None:
        self.busy_by_dim_s.setflags(write=False)  # a result: never writable
        self.traffic_by_dim_bytes.setflags(write=False)


def _is_labelled_series(values: object) -> bool:
    """A pandas Series whose index is not the default ``0..n-1`` (its labels mean names)."""
    if type(values).__name__ != "Series" or not type(values).__module__.startswith("pandas"):
        return False
    index = list(values.index)  # type: ignore[attr-defined]
    return index != list(range(len(index)))


def check_bandwidth(fabric: Fabric, bw_gbps: object, field: str = "bw") -> np.ndarray:
    """Validate a bandwidth vector (GB/s per NPU, one finite value >= 0 per dimension), returned in
    fabric order; a mapping or labelled ``pandas.Series`` is read by dimension name.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B")))
    >>> check_bandwidth(f, [200.0, 100.0]).tolist()
    [200.0, 100.0]
    >>> check_bandwidth(f, {"pod": 100.0, "node": 200.0}).tolist()
    [200.0, 100.0]
    >>> check_bandwidth(f, {"node": 200.0, "rack": 1.0})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: bw: bandwidths by dimension name need exactly node, pod: unknown 'rack'; missing 'pod'
    """
    if type(bw_gbps) is np.ndarray:  # the solver's answers: no names to read
        pass
    elif isinstance(bw_gbps, Mapping) or _is_labelled_series(bw_gbps):
        items = dict(bw_gbps.items())  # type: ignore[attr-defined]
        names = fabric.names
        unknown = [k for k in items if k not in names]
        missing = [n for n in names if n not in items]
        if unknown or missing:
            parts = ([f"unknown {', '.join(short_repr(k) for k in unknown[:8])}"] if unknown
                     else []) + ([f"missing {', '.join(map(repr, missing))}"] if missing else [])
            raise InputError(f"bandwidths by dimension name need exactly {', '.join(names)}: "
                             + "; ".join(parts), field=field)
        bw_gbps = [items[n] for n in names]
    try:
        bw = np.asarray(bw_gbps, dtype=float).ravel()
    except (TypeError, ValueError):
        raise InputError(f"bandwidths {short_repr(bw_gbps)} must be numbers (GB/s)",
                         field=field) from None
    if bw.shape != (fabric.n_dims,):
        raise InputError(f"expected {fabric.n_dims} bandwidths ({', '.join(fabric.names)}), got "
                         f"{bw.size}", field=field)
    if not (np.isfinite(bw).all() and (bw >= 0).all()):
        raise InputError(f"bandwidths {bw.tolist()} must be finite and >= 0 GB/s", field=field)
    return bw


@dataclass(frozen=True)
class PhaseArrays(FrozenAtInit):
    """The distinct collectives of a walk as chunk phases (``topology_aware`` model).

    Attributes
    ----------
    owner, dim, coef_gb, const_s : numpy.ndarray
        ``(Q,)`` collective, dimension and one-chunk time ``coef_gb / B_dim + const_s`` per phase.
    chunks : numpy.ndarray
        ``(J,)`` chunks ``S`` per collective.
    piece_owner, piece_gb, piece_const_s : numpy.ndarray
        ``(R,)``, ``(R, D)``, ``(R,)``: each pipeline piece's collective and affine time
        (:attr:`~libra_opt.traffic.topology_aware.ChunkedCollective.pieces`).
    """

    owner: np.ndarray
    dim: np.ndarray
    coef_gb: np.ndarray
    const_s: np.ndarray
    chunks: np.ndarray
    piece_owner: np.ndarray
    piece_gb: np.ndarray
    piece_const_s: np.ndarray

    def times_s(self, bw_gbps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(J,)`` collective times ``sum_q t_q + max_r piece_r`` and ``(J, D)`` busy time per
        dimension (``S sum_{q on d} t_q``).
        """
        n_j, n_d = self.chunks.size, bw_gbps.size
        with np.errstate(divide="ignore"):
            t_q = self.coef_gb / bw_gbps[self.dim] + self.const_s
        total = np.bincount(self.owner, weights=t_q, minlength=n_j)
        busy = np.bincount(self.owner * n_d + self.dim, weights=t_q,
                           minlength=n_j * n_d).reshape(n_j, n_d)
        extra = np.zeros(n_j)
        if self.piece_owner.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                per = np.where(self.piece_gb != 0, self.piece_gb / bw_gbps[None, :],
                               0.0).sum(axis=1) + self.piece_const_s
            extra = np.full(n_j, -np.inf)
            np.maximum.at(extra, self.piece_owner, per)
            extra = np.where(np.isfinite(extra) | (extra > 0), extra, 0.0)
        return total + extra, busy * self.chunks[:, None]


def phase_arrays(collectives: list[tuple[str, float, tuple[int, ...]]], fabric: Fabric,
                 settings: CollectiveSettings) -> PhaseArrays:
    """:class:`PhaseArrays` of ``(kind, size_bytes, span)`` collectives."""
    owner: list[int] = []
    dim: list[int] = []
    coef: list[float] = []
    const: list[float] = []
    p_owner: list[int] = []
    p_gb: list[np.ndarray] = []
    p_const: list[float] = []
    n_d = fabric.n_dims
    for j, (kind, size, span) in enumerate(collectives):
        c = collective_phases(kind, size, span, fabric, settings)
        owner += [j] * len(c.dims)
        dim += c.dims
        coef += c.coef_gb
        const += c.const_s
        if c.dims:
            pc, pk = c.piece_arrays(n_d)
            p_owner += [j] * pk.size
            p_gb += list(pc)
            p_const += pk.tolist()
    n_j = len(collectives)
    return PhaseArrays(
        owner=np.array(owner, dtype=int), dim=np.array(dim, dtype=int),
        coef_gb=np.array(coef, dtype=float), const_s=np.array(const, dtype=float),
        chunks=np.full(n_j, float(settings.chunks)),
        piece_owner=np.array(p_owner, dtype=int),
        piece_gb=np.array(p_gb, dtype=float).reshape(len(p_owner), n_d),
        piece_const_s=np.array(p_const, dtype=float),
    )


@dataclass(frozen=True)
class WalkArrays(FrozenAtInit):
    """A workload's layer-by-layer walk as arrays, ready to be timed at any bandwidth.

    One entry per phase of every distinct layer in step order, one per collective of each.

    Attributes
    ----------
    phase_compute_s, phase_count, phase_kind : numpy.ndarray
        ``(P,)`` compute time, repeat count and :data:`~libra_opt.options.PHASES` index.
    coll_phase, coll_group, coll_distinct : numpy.ndarray
        ``(C,)`` phase step, group and distinct-collective index of each occurrence.
    traffic_bytes, latency_s : numpy.ndarray
        ``(K, D)`` bytes per NPU and latency of each distinct collective on each dimension.
    phases : PhaseArrays, optional
        The distinct collectives as chunk phases (``topology_aware`` model).
    hidden_window_s : float
        ``W``: the step time is ``max(T - W, 0)``.
    efficiency : numpy.ndarray, optional
        ``(K, D)`` fraction of the bandwidth each distinct collective reaches (``None``: all 1).
    """

    name: str
    group_names: tuple[str, ...]
    phase_compute_s: np.ndarray
    phase_count: np.ndarray
    phase_kind: np.ndarray
    coll_phase: np.ndarray
    coll_group: np.ndarray
    coll_distinct: np.ndarray
    traffic_bytes: np.ndarray
    latency_s: np.ndarray
    phases: PhaseArrays | None = None
    hidden_window_s: float = 0.0
    efficiency: np.ndarray | None = None

    @cached_property
    def fixed(self) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
        """What no bandwidth changes (read-only): dimensions each distinct collective uses, compute
        per step (s), each occurrence's count, occurrences per distinct collective, bytes per
        dimension.
        """
        used = self.traffic_bytes > 0
        c_count = self.phase_count[self.coll_phase]
        per_distinct = np.bincount(self.coll_distinct, weights=c_count,
                                   minlength=self.traffic_bytes.shape[0])
        traffic = per_distinct @ self.traffic_bytes
        for a in (used, c_count, per_distinct, traffic):
            a.setflags(write=False)
        return (used, float(self.phase_count @ self.phase_compute_s), c_count, per_distinct,
                traffic)


def walk_arrays(workload: Workload, fabric: Fabric,
                timing: TimingModel | None = None) -> WalkArrays:
    """The walk of ``workload`` on ``fabric`` under ``timing`` as :class:`WalkArrays`.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> f = Fabric((Dim("a", "ring", 4, "T"),))
    >>> w = Workload("w", (Layer("l", Phase(0.5, (Collective("all_reduce", 4e9, "g"),)),
    ...                          count=3),), {"g": (4,)})
    >>> a = walk_arrays(w, f)
    >>> a.phase_count.tolist(), a.traffic_bytes.tolist()   # 2 * 4e9 * 3/4 bytes
    ([3.0, 3.0, 3.0], [[6000000000.0]])
    """
    timing = as_timing(timing)
    collectives = timing.collectives
    n_dims = fabric.n_dims
    flat = workload.flat
    groups = tuple(workload.groups)
    group_index = {g: i for i, g in enumerate(groups)}
    traffic = np.zeros((len(flat.collectives), n_dims))
    lat = np.zeros((len(flat.collectives), n_dims))
    inr = in_network_dims(timing.in_network_dims, fabric)
    eff = np.ones((len(flat.collectives), n_dims)) if timing.efficiency else None
    for i, (kind, size, group) in enumerate(flat.collectives):
        traffic[i], lat[i] = collective_traffic(kind, size, workload.groups[group], fabric,
                                                timing.traffic_model, inr,
                                                group in workload.flat_ring_groups)
        if eff is not None:
            eff[i] = timing.efficiency_by_dim(fabric.dims, kind, size, workload.groups[group],
                                              group in workload.flat_ring_groups)
    coll_group = np.array([group_index[g] for _, _, g in flat.collectives], dtype=int)
    phases = None
    if collectives is not None:
        phases = phase_arrays(
            [(k, s, workload.groups[g]) for k, s, g in flat.collectives], fabric, collectives)
    return WalkArrays(
        name=workload.name,
        group_names=groups,
        phase_compute_s=flat.phase_compute_s,
        phase_count=flat.phase_count,
        phase_kind=flat.phase_kind,
        coll_phase=flat.coll_phase,
        coll_group=coll_group[flat.coll_id].reshape(-1),
        coll_distinct=np.asarray(flat.coll_id, dtype=int).reshape(-1),
        traffic_bytes=traffic,
        latency_s=lat,
        phases=phases,
        hidden_window_s=workload.hidden_window_s,
        efficiency=eff,
    )


def step_time(workload: Workload, fabric: Fabric, bw_gbps: npt.ArrayLike,
              timing: TimingModel | None = None) -> WorkloadTimes:
    """Step time of ``workload`` on ``fabric`` at bandwidth ``bw_gbps`` under ``timing``.

    Notes
    -----
    For every layer ``l`` (``count_l`` times) and phase ``p``, with collective times from
    :func:`libra_opt.traffic.collectives.collective_time_s` (bytes divided by the timing's
    efficiency):

    * ``no_overlap``: ``T = sum_l count_l sum_p (compute_lp + sum_c t_c)``;
    * ``overlap``: ``T = sum_l count_l sum_p max(compute_lp, sum_c t_c)`` (required by a
      workload in overlap form).

    A hidden window ``W`` gives ``max(T - W, 0)``; a heterogeneous dimension runs at its slowest
    member's bandwidth ``f_min B_d``.

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
    timing = as_timing(timing)
    if workload.overlap_form and not timing.overlapped:
        raise InputError(
            f"workload {workload.name!r} is in overlap form (tp_comm_overlap or "
            "dp_comm_overlap): it is timed only by training_loop 'overlap'",
            field="training_loop")
    return step_time_from_walk(
        walk_arrays(workload, fabric, timing), bw * slowest_fractions(fabric), timing)


def _walk_times(walk: WalkArrays, bw_gbps: np.ndarray, timing: TimingModel
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, Any]:
    """The model of :func:`step_time_from_walk` at ``bw_gbps`` (checked; ``(D,)``, or ``(N, D)``
    for ``N`` allocations, a leading axis on every result): ``t_kd`` ``(K, D)``, every
    occurrence's ``t_c`` ``(C,)``, the collective time of every phase ``(P,)`` and the step time.
    Each allocation's figures are the same bits alone or among others."""
    used = walk.fixed[0]
    many = bw_gbps.ndim == 2
    # Per distinct collective k: t_kd on each dimension and its time t_k.
    if timing.uses_topology_aware:
        if walk.phases is None:
            raise InputError("the walk was built without topology_aware settings (walk_arrays(..., "
                             "collectives=CollectiveSettings(...)))", field="collective_model")
        if many:
            rows = [walk.phases.times_s(b) for b in bw_gbps]
            t_k = np.array([r[0] for r in rows]).reshape(len(rows), -1)
            t_kd = np.array([r[1] for r in rows]).reshape(len(rows), *used.shape)
        else:
            t_k, t_kd = walk.phases.times_s(bw_gbps)
    else:
        if timing.efficiency and walk.efficiency is None and used.any():
            raise InputError(
                "the walk was built without the timing's per-dimension efficiency "
                "(walk_arrays(workload, fabric, timing))", field="efficiency")
        rate = 1e9 * bw_gbps[..., None, :]
        if walk.efficiency is not None:
            rate = rate * walk.efficiency
        with np.errstate(divide="ignore", invalid="ignore"):
            t_kd = np.where(used, walk.traffic_bytes / rate + walk.latency_s, 0.0)
        if timing.is_pipelined:  # t_kd >= 0 where used, 0 elsewhere: the max over used
            t_k = t_kd.max(axis=-1, initial=0.0)
        else:
            t_k = t_kd.sum(axis=-1)
    t_c = t_k[..., walk.coll_distinct]  # every occurrence, layer by layer
    # summed into its phase in walk order (an allocation's own row of the bincount)
    n_p = walk.phase_compute_s.size
    if many:
        at = (walk.coll_phase + n_p * np.arange(len(t_c))[:, None]).ravel()
        phase_comm = np.bincount(at, weights=t_c.ravel(),
                                 minlength=len(t_c) * n_p).reshape(len(t_c), n_p)
    else:
        phase_comm = np.bincount(walk.coll_phase, weights=t_c, minlength=n_p)
    compute_p, count = walk.phase_compute_s, walk.phase_count
    per_phase = (np.maximum(compute_p, phase_comm) if timing.overlapped
                 else compute_p + phase_comm)
    total = np.array([row @ count for row in per_phase]) if many else float(per_phase @ count)
    if walk.hidden_window_s:
        total = np.maximum(total - walk.hidden_window_s, 0.0)
    return t_kd, t_c, phase_comm, total


def step_times_s(walk: WalkArrays, bw_gbps: np.ndarray,
                 timing: TimingModel | None = None) -> np.ndarray:
    """Step time (s) of a walk at each row of ``bw_gbps`` (``(N, D)`` GB/s, already checked
    and slowest-member scaled): :func:`step_time_from_walk`'s ``step_time_s`` for many
    allocations at once, the same bits as one by one.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> ag = Collective("all_gather", 1e9, "g")    # 7 x 1e9 bytes through each NPU
    >>> w = Workload("w", (Layer("l", Phase(0.1, (ag,)), count=2),), {"g": (8,)})
    >>> walk = walk_arrays(w, Fabric((Dim("s", "switch", 8, "T"),)))
    >>> step_times_s(walk, np.array([[100.0], [50.0]])).round(9).tolist()  # 2 (0.1 + 7e9 / B)
    [0.34, 0.48]
    """
    return _walk_times(walk, np.asarray(bw_gbps, dtype=float), as_timing(timing))[3]


def step_time_from_walk(walk: WalkArrays, bw_gbps: np.ndarray,
                        timing: TimingModel | None = None) -> WorkloadTimes:
    """:func:`step_time` of a walk built by :func:`walk_arrays`, ``bw_gbps`` already checked.

    Notes
    -----
    ``t_cd = traffic_cd / (1e9 B_d eta_cd) + latency_cd`` on every dimension with traffic; a
    collective takes ``max_d t_cd`` (pipelined), ``sum_d t_cd`` (sequential) or its chunk
    pipeline (``topology_aware``, :meth:`PhaseArrays.times_s`).
    """
    t_kd, t_c, phase_comm, total = _walk_times(walk, np.asarray(bw_gbps, dtype=float),
                                               as_timing(timing))
    _, compute, c_count, per_distinct, traffic_by_dim = walk.fixed
    count = walk.phase_count
    by_phase_arr = np.bincount(walk.phase_kind, weights=count * phase_comm, minlength=len(PHASES))
    by_group_arr = np.bincount(walk.coll_group, weights=c_count * t_c,
                               minlength=len(walk.group_names))
    step = float(total)
    return WorkloadTimes(
        name=walk.name,
        step_time_s=step,
        compute_s=compute,
        comm_s=float(count @ phase_comm),
        exposed_comm_s=step - compute,
        comm_by_phase_s=FrozenMap(
            {name: float(by_phase_arr[i]) for i, name in enumerate(PHASES)}),
        comm_by_group_s=FrozenMap(
            {g: float(by_group_arr[i]) for i, g in enumerate(walk.group_names)}),
        busy_by_dim_s=per_distinct @ t_kd,
        traffic_by_dim_bytes=traffic_by_dim,
    )


def traffic_by_group_bytes(workload: Workload, fabric: Fabric,
                           timing: TimingModel | None = None) -> dict[str, tuple[int, np.ndarray]]:
    """Per group: (collectives per step, bytes per NPU per dimension per step) under ``timing``.

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
    timing = as_timing(timing)
    out: dict[str, tuple[int, np.ndarray]] = {}
    inr = in_network_dims(timing.in_network_dims, fabric)
    for step in walk_collectives(workload):
        c = step.collective
        t, _ = collective_traffic(c.kind, c.size_bytes, step.span, fabric, timing.traffic_model,
                                  inr, c.group in workload.flat_ring_groups)
        n, acc = out.get(c.group, (0, np.zeros(fabric.n_dims)))
        out[c.group] = (n + step.count, acc + step.count * t)
    return out
