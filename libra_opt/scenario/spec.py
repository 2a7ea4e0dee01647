"""The design as a value: :class:`ScenarioSpec`, the recipe a scenario is compiled from.

A frozen tree of dataclasses whose field names are the scenario file's keys; a field's type
(and :func:`bounded` range) is its one check, run on every construction: when a file is
read, when a spec is built in Python and when :meth:`ScenarioSpec.replace` edits it. An entry
read from a file or a preset is a :class:`Ref`; open parts whose checks live with the model
that reads them (parallelism, device fields, builder parameters, TCO) are :class:`FrozenMap`
values. :func:`libra_opt.scenario.compile.compile` turns a spec into a
:class:`~libra_opt.scenario.scenario.Scenario` without touching a file.

Examples
--------
>>> spec = ScenarioSpec(
...     fabric=FabricSpec(dims=(DimSpec("node", "ring", 4, "NVLink"),
...                             DimSpec("pod", "switch", 8, "IB"))),
...     cost_model={"NVLink": {"link": 1.0}, "IB": {"link": 2.0, "switch": 1.0, "nic": 1.0}},
...     workloads=(WorkloadSpec("w", astra_sim=Ref("w.txt"), communicator=Ref("c.yml")),),
...     constraints=ConstraintsSpec(linear=("sum(bw) == 300",)))
>>> spec.replace("fabric.dims.pod.size", 16.0).fabric.dims[1].size
16
>>> spec.replace("objective", "fast")
Traceback (most recent call last):
...
libra_opt.errors.InputError: <api>: objective: 'fast' is not one of perf, perf_per_cost, tco
"""

from __future__ import annotations

import dataclasses
import importlib
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from libra_opt.cost.aggregators import (
    USD_PER_PORT_GBPS,
    USD_PER_STATE_GB,
    W_PER_PORT_GBPS,
    W_PER_STATE_GB,
)
from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.builders import FABRIC_FAMILIES
from libra_opt.options import (
    AllReduceVariant,
    CollectiveAlgorithm,
    CollectiveModel,
    Objective,
    SwitchPricing,
    SwitchScope,
    TopologyName,
    TrafficModel,
    TrainingLoop,
)
from libra_opt.scenario._values import (
    API_SOURCE,
    FrozenMap,
    Ref,
    _Node,
    bounded,
    freeze,
    from_mapping,
    missing_error,
    thaw,
    union_members,
    unique_labels,
)
from libra_opt.scenario.edit import set_path
from libra_opt.traffic.astra_sim_model import Backend

__all__ = [
    "API_SOURCE",
    "CatalogSpec",
    "CollectivesSpec",
    "CompressionSpec",
    "ConstraintsSpec",
    "DiLoCoSpec",
    "DimSpec",
    "FabricSpec",
    "FrozenMap",
    "InNetworkOptimizerSpec",
    "OverlapSpec",
    "Ref",
    "ScenarioSpec",
    "WorkloadSpec",
    "freeze",
    "from_mapping",
    "thaw",
    "with_read",
]

_EMPTY = FrozenMap()


@dataclass(frozen=True)
class DimSpec(_Node):
    """One inline fabric dimension: the fields of :class:`~libra_opt.fabric.dims.Dim`, which
    checks them when a file is read and when the spec is compiled (an edit may pass through
    a combination only its next edit makes valid)."""

    name: str
    topology: TopologyName
    size: int
    tier: str
    latency_s: float = 0.0
    switch_radix: int | None = None
    switch_scope: SwitchScope = "block"
    switch_pricing: SwitchPricing = "whole_switch"
    copper_levels: int = 0
    members: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class FabricSpec(_Node):
    """``fabric:``: exactly one of inline ``dims``, a ``builder`` call (its parameters in
    ``args``; paths ``fabric.<parameter>`` reach them) or a LIBRA ``libra_network`` file;
    ``members`` (by dimension name) beside any of them."""

    dims: tuple[DimSpec, ...] | None = None
    builder: str | None = None
    args: Mapping[str, Any] = _EMPTY
    libra_network: Ref | None = None
    members: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        given = [k for k in ("dims", "builder", "libra_network") if getattr(self, k) is not None]
        if len(given) != 1:
            raise InputError("give exactly one of 'dims' (inline), 'libra_network' (path) or "
                             f"'builder' ({', '.join(FABRIC_FAMILIES)})", source=API_SOURCE)
        if self.args and self.builder is None:
            raise InputError("builder parameters without a builder", source=API_SOURCE)


@dataclass(frozen=True)
class CatalogSpec(_Node):
    """``cost_model: {catalog: ..., overrides: ...}``: a parts catalog (its document in
    ``catalog.value``) with dotted-path overrides (:mod:`libra_opt.cost.catalog`)."""

    catalog: Ref
    overrides: Mapping[str, Any] = _EMPTY


def _parallelism_key_type(key: str) -> Any:
    """The annotated type of a ``parallelism`` key (:class:`~libra_opt.generators.parallelism.
    Parallelism`) when it is a plain one (numbers, text, flags, choices); else ``None``."""
    from libra_opt.generators.parallelism import Parallelism

    f = Parallelism.model_fields.get(key)
    if f is None:
        return None
    tp = f.annotation
    plain = all(m in (int, float, bool, str, type(None)) or typing.get_origin(m) is typing.Literal
                for m in union_members(tp))
    return tp if plain else None


@dataclass(frozen=True)
class WorkloadSpec(_Node):
    """One ``workloads:`` entry: ``model`` + ``parallelism`` + ``device`` (generated,
    :func:`~libra_opt.generators.generator.generate_workload`) or ``astra_sim`` +
    ``communicator`` files."""

    name: str
    weight: float = bounded(1.0, gt=0)
    astra_sim: Ref | None = None
    communicator: Ref | None = None
    model: Ref | None = None
    parallelism: Mapping[str, Any] | None = None
    device: Ref | None = None
    mapping: Mapping[str, Any] | None = None
    efficiency: float | Mapping[str, Any] | None = None
    check_memory: bool | None = None
    #: The fields that are a :class:`Ref` (a Ref's kind is its field's name).
    REFS: ClassVar[tuple[str, ...]] = ("astra_sim", "communicator", "model", "device")
    #: Open mappings whose keys have types (checked by :meth:`ScenarioSpec.replace`).
    _OPEN: ClassVar[dict[str, Callable[[str], Any]]] = {"parallelism": _parallelism_key_type}

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.name:
            raise InputError("a workload needs a name", source=API_SOURCE, field="name")
        if self.model is not None:
            stray = [k for k in ("astra_sim", "communicator") if getattr(self, k) is not None]
            if stray:
                raise InputError(f"a model-based workload takes no {', '.join(stray)}",
                                 source=API_SOURCE)
            missing = [k for k in ("parallelism", "device") if getattr(self, k) is None]
            if missing:
                raise missing_error(missing)


@dataclass(frozen=True)
class ConstraintsSpec(_Node):
    """``constraints:``: linear constraints as text, per-dimension ``bounds`` ``[min, max]``
    in GB/s, the caps, and ``rhs``: right-hand sides replaced by constraint label."""

    linear: tuple[str, ...] = ()
    bounds: Mapping[str, tuple[float | None, ...]] = _EMPTY
    budget_usd: float | None = bounded(None, gt=0)
    power_w: float | None = bounded(None, gt=0)
    rhs: Mapping[str, float] = _EMPTY

    def __post_init__(self) -> None:
        super().__post_init__()
        for key, pair in self.bounds.items():
            if len(pair) != 2:
                raise InputError(f"bounds of {short_repr(key, 80)} must be [min, max] (null "
                                 "for none)", source=API_SOURCE, field=f"bounds.{key}")

    def labels(self) -> list[str]:
        """The labels of the constraints' rows, in order, before repeats are numbered."""
        out = [" ".join(t.split()) for t in self.linear]
        for key, (lo, hi) in self.bounds.items():
            if lo is not None:
                out.append(f"bw.{key} >= {float(lo)!r}")
            if hi is not None:
                out.append(f"bw.{key} <= {float(hi)!r}")
        return out


@dataclass(frozen=True)
class CollectivesSpec(_Node):
    """``collectives:`` (:class:`~libra_opt.traffic.topology_aware.CollectiveSettings`), or
    an ASTRA-sim system file (``astra_sim_system``) with only ``backend`` (required there:
    the file does not say which binary ran it) and ``queues_per_dim`` beside it.
    ``efficiency`` applies under every collective model, the other settings under
    ``topology_aware`` only.
    """

    algorithm: Mapping[str, CollectiveAlgorithm] = _EMPTY
    chunks: int = bounded(1, ge=1, le=1_000_000)
    active_chunks: int | None = bounded(None, ge=1)
    endpoint_delay_s: float = bounded(0.0, ge=0)
    local_memory_gbps: float | None = bounded(None, gt=0)
    all_reduce: AllReduceVariant = "hierarchical"
    efficiency: Mapping[str, float | str] = _EMPTY
    link_latency_s: Mapping[str, float] = _EMPTY
    backend: Backend | None = None
    queues_per_dim: int = bounded(1, ge=1)
    active_chunks_per_dim: int = bounded(1, ge=1)
    collective_algorithm: Mapping[str, Mapping[str, CollectiveAlgorithm]] = _EMPTY
    astra_sim_system: Ref | None = None
    #: Keys that may be given beside ``astra_sim_system`` (not in ASTRA-sim's system file).
    BESIDE_SYSTEM: ClassVar[tuple[str, ...]] = ("backend", "queues_per_dim")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.astra_sim_system is not None:
            given = sorted(f.name for f in dataclasses.fields(self) if f.name not in (
                "astra_sim_system", *self.BESIDE_SYSTEM) and getattr(self, f.name) != f.default)
            if given:
                raise InputError(f"give either astra_sim_system or the settings "
                                 f"({', '.join(given)}), not both", source=API_SOURCE)


@dataclass(frozen=True)
class CompressionSpec(_Node):
    """``compression:`` (:class:`~libra_opt.traffic.compression.Compression`): bytes per
    element by group and phase, against the ``baseline`` the workload's sizes assume."""

    baseline: str = "bf16"
    groups: Mapping[str, str | Mapping[str, str]] = _EMPTY


@dataclass(frozen=True)
class OverlapSpec(_Node):
    """``fine_grained_overlap:`` (:class:`~libra_opt.traffic.overlap.OverlapPolicy`)."""

    presets: tuple[str, ...] = ()
    groups: Mapping[str, float | Mapping[str, float]] = _EMPTY


@dataclass(frozen=True)
class DiLoCoSpec(_Node):
    """``diloco:`` (:func:`~libra_opt.traffic.diloco.diloco_workloads`)."""

    site_dim: str
    params_per_npu: float = bounded(gt=0)
    sync_every_steps: int = bounded(ge=1)
    fragments: int = bounded(1, ge=1)
    delta_bits: float = bounded(16.0, gt=0, le=32)
    overlap_steps: float = bounded(0.0, ge=0)
    dp_group: str = "dp"


@dataclass(frozen=True)
class InNetworkOptimizerSpec(_Node):
    """``in_network_optimizer:`` (aggregators of ``dp_mode: in_network_optimizer``,
    :class:`~libra_opt.cost.aggregators.Aggregators`)."""

    dims: tuple[str, ...] | None = None
    usd_per_port_gbps: float = bounded(USD_PER_PORT_GBPS, ge=0)
    w_per_port_gbps: float = bounded(W_PER_PORT_GBPS, ge=0)
    usd_per_state_gb: float = bounded(USD_PER_STATE_GB, ge=0)
    w_per_state_gb: float = bounded(W_PER_STATE_GB, ge=0)


@dataclass(frozen=True)
class ScenarioSpec(_Node):
    """Everything a scenario says, as one frozen value (see the module notes).

    ``source`` (the file it was read from) and ``base_dir`` (the directory relative paths
    are resolved against) serve messages and resolving only; they are not compared.
    """

    fabric: FabricSpec
    cost_model: CatalogSpec | Ref | Mapping[str, Any]
    workloads: tuple[WorkloadSpec, ...]
    power_model: Ref | Mapping[str, Any] | None = None
    constraints: ConstraintsSpec = ConstraintsSpec()
    objective: Objective = "perf"
    collective_model: CollectiveModel = "pipelined"
    training_loop: TrainingLoop = "no_overlap"
    traffic_model: TrafficModel = "hierarchical"
    collectives: CollectivesSpec | None = None
    in_network_reduction: tuple[str, ...] = ()
    compression: CompressionSpec | None = None
    fine_grained_overlap: OverlapSpec | None = None
    diloco: DiLoCoSpec | None = None
    in_network_optimizer: InNetworkOptimizerSpec | None = None
    tco: Mapping[str, Any] | None = None
    reliability: Mapping[str, Any] | None = None
    name: str | None = None
    source: str | None = field(default=None, compare=False)
    base_dir: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.workloads:
            raise InputError("a scenario needs at least one workload", source=API_SOURCE,
                             field="workloads")
        object.__setattr__(self, "in_network_reduction",
                           tuple(sorted(set(self.in_network_reduction))))

    def replace(self, path: str, value: Any) -> ScenarioSpec:
        """A new spec with the field at dotted ``path`` set to ``value`` (the grammar of
        :mod:`libra_opt.scenario.edit`); a name or path given for a file-backed entry is left
        unresolved for :func:`libra_opt.compile` to read.

        Raises
        ------
        InputError
            Naming ``path`` and what was expected.
        """
        return set_path(self, path, value)

    def edit(self, changes: Mapping[str, Any]) -> ScenarioSpec:
        """:meth:`replace` for each ``path -> value`` of ``changes``, in order."""
        spec = self
        for path, value in changes.items():
            spec = spec.replace(path, value)
        return spec

    def rhs_labels(self) -> list[str]:
        """Labels of the linear constraints' rows (repeats numbered, as in the scenario)."""
        return unique_labels(self.constraints.labels())

    @property
    def unresolved(self) -> tuple[str, ...]:
        """Paths of the file-backed entries not read yet (see :class:`Ref`)."""
        return tuple(p for p, r in iter_refs(self) if not r.resolved)

    def to_yaml(self) -> str:
        """The spec as scenario YAML text (:func:`libra_opt.io.spec_to_yaml`)."""
        # io writes files and sits above this layer: reached at run time through the
        # public face, never imported here
        return importlib.import_module("libra_opt").spec_to_yaml(self)


_N = typing.TypeVar("_N", bound=_Node)


def _reads_only(old: Any, new: Any) -> bool:
    """Whether ``new`` can only be ``old`` with file-backed entries read: a Ref naming the
    same entry, or a spec node (or a tuple of them) of the same class in its place."""
    if isinstance(new, Ref):
        return isinstance(old, Ref) and new.ref == old.ref
    if isinstance(new, _Node):
        return type(new) is type(old)
    if type(new) is tuple and type(old) is tuple and len(new) == len(old):
        return all(isinstance(a, _Node) and type(a) is type(b) for a, b in zip(new, old, strict=True))
    return False


def with_read(node: _N, **changes: Any) -> _N:
    """``dataclasses.replace(node, **changes)`` that skips the node's checks when the changes
    only read file-backed entries (a :class:`Ref` of the same name with its value, or a node
    of the same class): reading changes no value the checks look at.

    Examples
    --------
    >>> w = WorkloadSpec("w", astra_sim=Ref("w.txt"), communicator=Ref("c.yml"))
    >>> r = with_read(w, astra_sim=Ref("w.txt", "parsed"))
    >>> r.astra_sim.resolved, r == dataclasses.replace(w, astra_sim=Ref("w.txt", "parsed"))
    (True, True)
    """
    if not all(_reads_only(getattr(node, k), v) for k, v in changes.items()):
        return dataclasses.replace(node, **changes)  # type: ignore[type-var]
    new = object.__new__(type(node))  # a copy of the fields, with the read entries
    new.__dict__.update(node.__dict__)
    new.__dict__.update(changes)
    return new


def iter_refs(spec: ScenarioSpec) -> Iterator[tuple[str, Ref]]:
    """Every :class:`Ref` of ``spec`` with its path (``workloads[0].model``)."""
    for key in ("cost_model", "power_model"):
        v = getattr(spec, key)
        if isinstance(v, Ref):
            yield key, v
    if isinstance(spec.cost_model, CatalogSpec):
        yield "cost_model.catalog", spec.cost_model.catalog
    if spec.fabric.libra_network is not None:
        yield "fabric.libra_network", spec.fabric.libra_network
    for i, w in enumerate(spec.workloads):
        for key in WorkloadSpec.REFS:
            v = getattr(w, key)
            if v is not None:
                yield f"workloads[{i}].{key}", v
    if spec.collectives is not None and spec.collectives.astra_sim_system is not None:
        yield "collectives.astra_sim_system", spec.collectives.astra_sim_system
