"""Training workloads: layers x phases (forward, input grad, weight grad), each with a compute
time and collectives bound to a named parallelism group, whose span ``k_d`` on every fabric
dimension the workload's ``groups`` gives (LIBRA's "communicator").
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenAtInit, FrozenMap, FrozenOnUnpickle
from libra_opt.options import COLLECTIVE_KINDS, PHASES, CollectiveKind, PhaseName

__all__ = ["Collective", "Phase", "Layer", "StepMetrics", "Workload", "PhaseStep", "CollectiveStep",
           "FlatWalk", "flat_walk", "walk_phases", "walk_collectives", "check_on_fabric",
           "MAX_COLLECTIVE_BYTES", "MAX_COMPUTE_S"]

#: Largest collective input accepted, in bytes (1 EB); larger sizes are taken as mistakes.
MAX_COLLECTIVE_BYTES = 1e18
#: Largest compute (and weight-update) time of one phase accepted, in seconds (about 32 years).
MAX_COMPUTE_S = 1e9


def _finite_nonneg(value: float, what: str, field_name: str, limit: float, unit: str) -> float:
    """``value`` as a float in ``[0, limit]``, or an :class:`InputError` naming the range."""
    try:
        v = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{what} {value!r} is not a number", field=field_name) from None
    if not math.isfinite(v) or v < 0 or v > limit:
        raise InputError(f"{what} {value!r} is out of range: expected a number in [0, {limit:g}] "
                         f"{unit}", field=field_name)
    return v


@dataclass(frozen=True)
class Collective:
    """One collective: ``kind`` over parallelism group ``group`` with ``size_bytes`` input.

    Examples
    --------
    >>> Collective("all_reduce", 1e6, "dp").kind
    'all_reduce'
    """

    kind: CollectiveKind
    size_bytes: float
    group: str

    def __post_init__(self) -> None:
        if self.kind not in COLLECTIVE_KINDS:
            raise InputError(f"collective kind {self.kind!r} is not one of "
                             f"{', '.join(COLLECTIVE_KINDS)}", field="collective.kind")
        size = _finite_nonneg(self.size_bytes, "collective size", "collective.size_bytes",
                              MAX_COLLECTIVE_BYTES, "bytes")
        object.__setattr__(self, "size_bytes", size)
        if not isinstance(self.group, str) or not self.group:
            raise InputError("collective group must be a non-empty name", field="collective.group")


@dataclass(frozen=True)
class Phase:
    """Compute time (s) and the collectives issued in one phase of one layer."""

    compute_s: float = 0.0
    collectives: tuple[Collective, ...] = ()

    def __post_init__(self) -> None:
        compute_s = _finite_nonneg(self.compute_s, "compute time", "phase.compute_s",
                                   MAX_COMPUTE_S, "s")
        object.__setattr__(self, "compute_s", compute_s)
        object.__setattr__(self, "collectives", tuple(self.collectives))


@dataclass(frozen=True)
class Layer:
    """A layer with its three phases, repeated ``count`` times in the step.

    ``update_s`` is the ASTRA-sim 1.0 text format's weight-update time, kept so files round-trip;
    as in LIBRA it is not part of the step time.
    """

    name: str
    forward: Phase = field(default_factory=Phase)
    input_grad: Phase = field(default_factory=Phase)
    weight_grad: Phase = field(default_factory=Phase)
    count: int = 1
    update_s: float = 0.0

    def __post_init__(self) -> None:
        update_s = _finite_nonneg(self.update_s, "update time", "layer.update_s", MAX_COMPUTE_S,
                                  "s")
        object.__setattr__(self, "update_s", update_s)
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise InputError(f"layer {self.name!r}: count {self.count!r} must be a positive "
                             "integer", field="layer.count")

    def phases(self) -> tuple[tuple[PhaseName, Phase], ...]:
        """``(phase name, Phase)`` pairs in :data:`~libra_opt.options.PHASES` order."""
        return tuple((name, getattr(self, name)) for name in PHASES)

    @property
    def empty(self) -> bool:
        """No compute and no collective in any phase (the layer adds nothing to a step)."""
        return all(p.compute_s == 0 and not p.collectives for _, p in self.phases())


@dataclass(frozen=True)
class StepMetrics:
    """What one training step accomplishes, for throughput and MFU reports.

    Attributes
    ----------
    tokens_per_step, samples_per_step : float
        Tokens (samples for non-transformers) and sequences per step, whole cluster.
    model_flops_per_step : float
        Useful FLOPs per step over the cluster (no recomputation): the numerator of MFU.
    peak_flops_per_npu : float
        Device peak FLOP/s for the compute data type.
    memory_per_npu_bytes, memory_capacity_bytes : float, optional
        Peak memory of the most loaded NPU; HBM capacity of one NPU.
    checkpoint_bytes : float, optional
        One checkpoint (:func:`~libra_opt.generators.memory.checkpoint_bytes`).
    """

    tokens_per_step: float
    samples_per_step: float
    model_flops_per_step: float
    n_npus: int
    peak_flops_per_npu: float
    memory_per_npu_bytes: float | None = None
    memory_capacity_bytes: float | None = None
    checkpoint_bytes: float | None = None

    def throughput_tokens_per_s(self, step_time_s: float) -> float:
        """Tokens (or samples) per second of the whole cluster."""
        return self.tokens_per_step / step_time_s

    def mfu(self, step_time_s: float) -> float:
        """Model FLOPs utilisation: model FLOP/s per NPU over the peak (Chowdhery et al. 2022)."""
        return self.model_flops_per_step / (step_time_s * self.n_npus * self.peak_flops_per_npu)


@dataclass(frozen=True)
class Workload(FrozenOnUnpickle):
    """A training step: layers and the spans of the parallelism groups they use.

    Parameters
    ----------
    layers : tuple of Layer
        Layers in forward order.
    groups : mapping of str to tuple of int
        Group name -> ``k_d`` for every fabric dimension (1 = not spanned).
    metrics : StepMetrics, optional
        Tokens and FLOPs per step (set by the model-config generators).
    hidden_window_s : float
        ``W``: seconds of compute elsewhere in the step behind which this workload's
        communication runs: its step time is ``max(T - W, 0)`` (convex in ``1 / B``). Such a
        workload has no compute of its own and needs ``training_loop: no_overlap``; DiLoCo's outer
        sync is one (:func:`libra_opt.traffic.diloco.diloco_workloads`).
    overlap_form : bool
        Each phase's collectives run behind that phase's compute and nothing else hides: timed by
        the ``overlap`` training loop (``tp_comm_overlap`` / ``dp_comm_overlap``,
        :mod:`libra_opt.generators.comm_overlap`).
    flat_ring_groups : frozenset of str
        Groups whose all-reduce, reduce-scatter and all-gather run as one flat ring over all
        members, as NCCL runs a communicator
        (:func:`libra_opt.traffic.collectives.flat_ring_traffic_bytes`); set by the model-config
        generators for tp, cp and ep, empty for workload files.

    Examples
    --------
    >>> w = Workload("toy", (Layer("l0", Phase(1e-3, (Collective("all_reduce", 1e6, "dp"),))),),
    ...              {"dp": (4, 2)})
    >>> w.n_layers, w.compute_s
    (1, 0.001)
    """

    name: str
    layers: tuple[Layer, ...]
    groups: Mapping[str, tuple[int, ...]]
    metrics: StepMetrics | None = None
    hidden_window_s: float = 0.0
    overlap_form: bool = False
    flat_ring_groups: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(self.layers))
        object.__setattr__(self, "flat_ring_groups", frozenset(self.flat_ring_groups))
        if not isinstance(self.overlap_form, bool):
            raise InputError(f"workload {self.name!r}: overlap_form {self.overlap_form!r} is "
                             "not true or false", field="workload.overlap_form")
        if not self.layers:
            raise InputError(f"workload {self.name!r} has no layers", field="workload.layers")
        if self.hidden_window_s != 0.0 or not isinstance(self.hidden_window_s, float):
            window = _finite_nonneg(self.hidden_window_s, f"workload {self.name!r}: hidden "
                                    "window", "workload.hidden_window_s", MAX_COMPUTE_S, "s")
            object.__setattr__(self, "hidden_window_s", window)
            if window > 0 and self.compute_s > 0:
                raise InputError(
                    f"workload {self.name!r} has a hidden window ({window:g} s of other "
                    f"workloads' compute) and compute of its own ({self.compute_s:g} s): a "
                    "window hides communication only, so such a workload has no compute",
                    field="workload.hidden_window_s",
                )
        groups = {str(k): tuple(int(x) for x in v) for k, v in dict(self.groups).items()}
        object.__setattr__(self, "groups", FrozenMap(groups))
        unknown = sorted(self.flat_ring_groups - set(groups))
        if unknown:
            raise InputError(
                f"workload {self.name!r}: flat_ring_groups {', '.join(unknown)} are not "
                f"defined (groups: {', '.join(sorted(groups)) or 'none'})",
                field="workload.flat_ring_groups",
            )
        checked: set[int] = set()  # repeated layers share their phases: check each once
        for layer in dict(zip(map(id, self.layers), self.layers, strict=True)).values():
            for pname in PHASES:
                phase = getattr(layer, pname)
                if id(phase) in checked:
                    continue
                checked.add(id(phase))
                for c in phase.collectives:
                    if c.group not in groups:
                        raise InputError(f"workload {self.name!r}, layer {layer.name!r}, {pname}: "
                                         f"collective uses group {c.group!r}, which is not defined "
                                         f"(groups: {', '.join(sorted(groups)) or 'none'})",
                                         field="workload.groups")

    def __repr__(self) -> str:
        kinds = sorted({c.kind for c in walk_collectives(self)} - {None})
        window = f", hidden window {self.hidden_window_s:g} s" if self.hidden_window_s else ""
        form = ", overlap form" if self.overlap_form else ""
        return (
            f"Workload({self.name!r}: {len(self.layers)} distinct layers, {self.n_layers} in "
            f"all, groups {dict(self.groups)}, collectives {', '.join(kinds) or 'none'}"
            f"{window}{form})"
        )

    @functools.cached_property
    def flat(self) -> FlatWalk:
        """The walk as arrays (:func:`flat_walk`), built on first use and kept."""
        return flat_walk(self)

    @property
    def n_layers(self) -> int:
        """Number of layers, counting repeats."""
        return sum(layer.count for layer in self.layers)

    @property
    def compute_s(self) -> float:
        """Total compute time of one step in seconds."""
        return sum(step.count * step.phase.compute_s for step in walk_phases(self))


@dataclass(frozen=True)
class PhaseStep:
    """One phase of one distinct layer, as visited by :func:`walk_phases` (``count``: the layer's
    repeat count).
    """

    layer: Layer
    name: PhaseName
    phase: Phase
    count: int


@dataclass(frozen=True)
class CollectiveStep:
    """One collective of one phase, as visited by :func:`walk_collectives` (``span``: ``k_d`` of its
    group on every dimension; ``count``: the layer's repeat count).
    """

    layer: Layer
    phase_name: PhaseName
    collective: Collective
    span: tuple[int, ...]
    count: int

    @property
    def kind(self) -> str:
        """The collective's kind."""
        return self.collective.kind


def walk_phases(workload: Workload) -> Iterator[PhaseStep]:
    """Every (layer, phase) of ``workload`` in step order, with its repeat count: the one walk
    over a workload.

    Examples
    --------
    >>> ar = Collective("all_reduce", 1e6, "dp")
    >>> w = Workload("w", (Layer("l", Phase(1e-3), weight_grad=Phase(0.0, (ar,)), count=4),),
    ...              {"dp": (2,)})
    >>> [(s.name, s.count, len(s.phase.collectives)) for s in walk_phases(w)]
    [('forward', 4, 0), ('input_grad', 4, 0), ('weight_grad', 4, 1)]
    """
    for layer in workload.layers:
        for name, phase in layer.phases():
            yield PhaseStep(layer, name, phase, layer.count)


@dataclass(frozen=True)
class FlatWalk(FrozenAtInit):
    """:func:`walk_phases` of a workload as arrays, independent of any fabric.

    Attributes
    ----------
    phase_compute_s, phase_count, phase_kind : numpy.ndarray
        ``(P,)`` compute time, repeat count and :data:`~libra_opt.options.PHASES` index of every
        phase step.
    coll_phase, coll_id : numpy.ndarray
        ``(C,)`` phase step and index into ``collectives`` of every collective occurrence.
    collectives : tuple of (kind, size_bytes, group)
        The distinct collectives, in order of first occurrence.
    phase_key : numpy.ndarray
        ``(P,)`` index into ``phase_table``.
    phase_table : tuple of (compute_s, collective indices)
        The distinct phases.
    """

    phase_compute_s: np.ndarray
    phase_count: np.ndarray
    phase_kind: np.ndarray
    coll_phase: np.ndarray
    coll_id: np.ndarray
    collectives: tuple[tuple[str, float, str], ...]
    phase_key: np.ndarray
    phase_table: tuple[tuple[float, tuple[int, ...]], ...]

_count_of = operator.attrgetter("count")


def flat_walk(workload: Workload) -> FlatWalk:
    """Walk ``workload`` once (in :func:`walk_phases` order) into a :class:`FlatWalk`.

    Examples
    --------
    >>> ar = Collective("all_reduce", 1e6, "dp")
    >>> w = Workload("w", (Layer("a", weight_grad=Phase(1e-3, (ar,)), count=4),
    ...                    Layer("b", weight_grad=Phase(2e-3, (ar, ar)))), {"dp": (2,)})
    >>> f = flat_walk(w)
    >>> f.phase_count.tolist(), f.coll_phase.tolist(), f.coll_id.tolist(), f.collectives
    ([4.0, 4.0, 4.0, 1.0, 1.0, 1.0], [2, 5, 5], [0, 0, 0], (('all_reduce', 1000000.0, 'dp'),))
    """
    ids: dict[tuple[str, float, str], int] = {}
    # walk_phases' order; phases shared by many layers are read once, numpy expands the keys
    table: dict[tuple[float, tuple[int, ...]], int] = {}
    by_phase: dict[int, int] = {}

    def key_of(phase: Phase) -> int:
        key = by_phase.get(id(phase))
        if key is None:
            members = tuple(ids.setdefault((c.kind, c.size_bytes, c.group), len(ids))
                            for c in phase.collectives)
            key = by_phase[id(phase)] = table.setdefault((phase.compute_s, members), len(table))
        return key

    # each distinct layer object -> the row of its phase keys
    layers = workload.layers
    object_ids = list(map(id, layers))
    by_phases: dict[tuple[int, int, int], int] = {}
    kind_of: dict[int, int] = {}
    rows: list[tuple[int, int, int]] = []
    for layer in dict(zip(object_ids, layers, strict=True)).values():
        ident = (id(layer.forward), id(layer.input_grad), id(layer.weight_grad))
        kind = by_phases.get(ident)
        if kind is None:
            kind = by_phases[ident] = len(rows)
            rows.append((key_of(layer.forward), key_of(layer.input_grad),
                         key_of(layer.weight_grad)))
        kind_of[id(layer)] = kind
    kinds = list(map(kind_of.__getitem__, object_ids))
    n_phases = len(PHASES)
    p_key = np.array(rows, dtype=int)[np.array(kinds, dtype=int)].reshape(-1)
    entries = tuple(table)
    table_compute = np.array([c for c, _ in entries], dtype=float)
    lengths = np.array([len(m) for _, m in entries], dtype=int)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(int)
    members_flat = np.array([i for _, m in entries for i in m], dtype=int)
    per_step = lengths[p_key]
    coll_phase = np.repeat(np.arange(p_key.size), per_step)
    first = np.concatenate(([0], np.cumsum(per_step)[:-1])).astype(int)
    offset = np.arange(int(per_step.sum())) - np.repeat(first, per_step)
    coll_id = members_flat[np.repeat(starts[p_key], per_step) + offset]
    return FlatWalk(
        phase_compute_s=table_compute[p_key],
        phase_count=np.repeat(np.array(list(map(_count_of, layers)), dtype=float), n_phases),
        phase_kind=np.tile(np.arange(n_phases), len(layers)),
        coll_phase=coll_phase,
        coll_id=coll_id,
        collectives=tuple(ids),
        phase_key=p_key,
        phase_table=entries,
    )


def walk_collectives(workload: Workload) -> Iterator[CollectiveStep]:
    """Every collective of ``workload`` in step order, with its group's span and count.

    Examples
    --------
    >>> ar = Collective("all_reduce", 1e6, "dp")
    >>> w = Workload("w", (Layer("l", weight_grad=Phase(0.0, (ar,)), count=4),), {"dp": (2,)})
    >>> [(s.phase_name, s.kind, s.span, s.count) for s in walk_collectives(w)]
    [('weight_grad', 'all_reduce', (2,), 4)]
    """
    for step in walk_phases(workload):
        for c in step.phase.collectives:
            yield CollectiveStep(step.layer, step.name, c, workload.groups[c.group], step.count)


def check_on_fabric(workload: Workload, fabric: Fabric) -> None:
    """Check that every group of ``workload`` has one ``k_d`` per dimension of ``fabric``, each
    dividing the dimension's size.

    Raises
    ------
    InputError
        Naming the group, the dimension and the expected values.
    """
    for gname, span in workload.groups.items():
        fld = f"workloads[{workload.name}].groups.{gname}"
        if len(span) != fabric.n_dims:
            raise InputError(f"group {gname!r} spans {len(span)} dimensions {span}, the fabric has "
                             f"{fabric.n_dims} ({', '.join(fabric.names)})", field=fld)
        for k, dim in zip(span, fabric.dims, strict=True):
            if k < 1 or dim.size % k:
                raise InputError(f"group {gname!r} takes {k} NPUs of dimension {dim.name!r} (size "
                                 f"{dim.size}); expected a positive divisor of {dim.size}",
                                 field=fld)
