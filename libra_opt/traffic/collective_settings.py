"""Settings of the ``topology_aware`` collective model, per dimension and per collective
kind: algorithm, chunks, endpoint delay, local memory speed, link latency, achievable
fraction of the line rate (a fraction, a line-rate preset or a measured NCCL curve), in-network
reduction and the ASTRA-sim backend. The model itself is
:mod:`libra_opt.traffic.topology_aware`; :class:`~libra_opt.traffic.timing.TimingModel`
carries the per-dimension efficiency to the other collective models.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.topology import TOPOLOGY_CLASSES
from libra_opt.options import (
    ALL_REDUCE_VARIANTS,
    COLLECTIVE_ALGORITHMS,
    AllReduceVariant,
    CollectiveAlgorithm,
)
from libra_opt.traffic.astra_sim_model import BACKENDS, Backend
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.links import LINE_RATE_PRESETS
from libra_opt.traffic.nccl_curves import NCCL_CURVES

__all__ = ["CollectiveSettings", "link_efficiency_value"]

_KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p")


#: Topologies halving-doubling runs on (not where messages are forwarded).
HD_TOPOLOGIES = " or ".join(t.name for t in TOPOLOGY_CLASSES if not t.forwards)


def _pairs(value: Mapping | Sequence | None, field: str) -> tuple[tuple[str, object], ...]:
    """Per-dimension values as a sorted tuple of ``(dim name, value)`` pairs."""
    if value is None:
        return ()
    items = value.items() if isinstance(value, Mapping) else value
    try:
        pairs = tuple((str(k), v) for k, v in items)
    except (TypeError, ValueError):
        raise InputError(f"expected a mapping dim name -> value, got {value!r}",
                         field=field) from None
    return tuple(sorted(pairs))


def link_efficiency_value(value: object, field: str) -> float | str:
    """What collectives reach of a link's line rate, checked: a measured curve's name (kept:
    the fraction depends on each collective's size), a line-rate preset's fraction, a
    fraction in (0, 1], or ``none`` (the line rate, 1.0).

    Examples
    --------
    >>> link_efficiency_value("a100_nvlink_nccl", "e"), link_efficiency_value("none", "e")
    ('a100_nvlink_nccl', 1.0)
    >>> link_efficiency_value(1.5, "collectives.efficiency.hb")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: collectives.efficiency.hb: efficiency 1.5 must be a fraction in (0, 1]
    """
    v = value
    if isinstance(v, str) and v in NCCL_CURVES:
        return v  # a measured curve: the fraction depends on the size
    if v == "none":
        return 1.0
    if isinstance(v, str):
        if v not in LINE_RATE_PRESETS:
            raise InputError(
                f"{v!r} is neither a fraction in (0, 1], none nor a preset "
                f"({', '.join([*LINE_RATE_PRESETS, *NCCL_CURVES])})", field=field)
        v = LINE_RATE_PRESETS[v].fraction
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
        raise InputError(f"efficiency {v!r} must be a fraction in (0, 1]", field=field)
    return float(v)


@dataclass(frozen=True)
class CollectiveSettings:
    """Settings of the ``topology_aware`` collective model (defaults: one chunk, no endpoint
    delay, no reduction cost, ideal line rate, the topology's default algorithm).

    Parameters
    ----------
    algorithm : mapping dim name -> {'ring', 'direct', 'halving_doubling'}
        Algorithm per dimension; a dimension not named runs ``ring`` on a ring or mesh and
        ``direct`` on a fully-connected or switch dimension. ``halving_doubling`` needs a
        fully-connected or switch dimension; all-to-all and
        point-to-point run ``direct`` on a ``halving_doubling`` dimension.
    chunks : int
        Chunks ``S`` each collective is split into (ASTRA-sim's ``preferred-dataset-splits``).
    active_chunks : int, optional
        Chunks in flight at once (``None``: as many as the pipeline holds).
    endpoint_delay_s : float
        Delay per message at the endpoints (s).
    local_memory_gbps : float, optional
        Local memory bandwidth (GB/s) of the reductions; ``None``: reductions are free.
    all_reduce : {'hierarchical', 'full'}
        Multi-dimensional all-reduce variant.
    efficiency : mapping dim name -> float or preset name
        Achievable fraction of line rate, in (0, 1] (default 1; ``none``: 1); a name of
        :data:`LINE_RATE_PRESETS` stands for its fraction, a name of
        :data:`~libra_opt.traffic.nccl_curves.NCCL_CURVES` for a measured bus-bandwidth
        curve (the fraction at each collective's size on the dimension).
    link_latency_s : mapping dim name -> float
        Latency per link hop (s); a dimension not named uses its ``Dim.latency_s``.
    in_network_reduction : tuple of str
        Switch dimensions that reduce and multicast in the network (SHARP class; see
        :func:`~libra_opt.traffic.topology_aware.phase_time_terms` and :mod:`libra_opt.traffic.in_network`).
    backend : {None, 'congestion_unaware', 'congestion_aware'}
        ``None``: this module's physical model (cut-through switches, two counter-rotating
        rings on a ring, chunks on a dimension one after another). Otherwise the times
        ASTRA-sim 2.0 gives on that analytical network backend
        (:mod:`libra_opt.traffic.astra_sim_model`), with the three settings below.
    queues_per_dim : int
        ASTRA-sim's ``num-queues-per-dim`` ``Q`` (with ``backend``): chunks are dealt
        round-robin to a dimension's queues; a ring runs one way, clockwise on the first
        half of the queues and anticlockwise on the second (one queue: clockwise).
    active_chunks_per_dim : int
        ASTRA-sim's ``active-chunks-per-dimension`` ``A`` (with ``backend``): a queue runs
        ``ceil(A / Q)`` chunks at once.
    collective_algorithm : mapping (collective kind, dim name) -> algorithm
        Algorithm of one collective kind on one dimension, over ``algorithm`` (ASTRA-sim's
        per-collective ``*-implementation`` lists; an all-reduce's phases all run the
        all-reduce's algorithm).

    Examples
    --------
    >>> s = CollectiveSettings(chunks=4, efficiency={"nvl": "h100_nvlink"})
    >>> round(dict(s.efficiency)["nvl"], 4)
    0.8222
    """

    algorithm: tuple[tuple[str, CollectiveAlgorithm], ...] = ()
    chunks: int = 1
    active_chunks: int | None = None
    endpoint_delay_s: float = 0.0
    local_memory_gbps: float | None = None
    all_reduce: AllReduceVariant = "hierarchical"
    efficiency: tuple[tuple[str, float | str], ...] = ()
    link_latency_s: tuple[tuple[str, float], ...] = ()
    in_network_reduction: tuple[str, ...] = ()
    backend: Backend | None = None
    queues_per_dim: int = 1
    active_chunks_per_dim: int = 1
    collective_algorithm: tuple[tuple[tuple[str, str], CollectiveAlgorithm], ...] = ()

    def __post_init__(self) -> None:
        if self.backend is not None and self.backend not in BACKENDS:
            raise InputError(f"{self.backend!r} is not one of {', '.join(BACKENDS)} (or null)",
                             field="collectives.backend")
        for key in ("queues_per_dim", "active_chunks_per_dim"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{key} {v!r} must be an integer >= 1",
                                 field=f"collectives.{key}")
        if self.backend is not None and self.in_network_reduction:
            raise InputError("ASTRA-sim's analytical backends have no in-network reduction; "
                             "give backend or in_network_reduction, not both",
                             field="collectives.in_network_reduction")
        per_kind: list[tuple[tuple[str, str], CollectiveAlgorithm]] = []
        items = (self.collective_algorithm.items()
                 if isinstance(self.collective_algorithm, Mapping)
                 else self.collective_algorithm)
        for pair, a in items:
            if (not isinstance(pair, tuple) or len(pair) != 2
                    or pair[0] not in _KINDS or not isinstance(pair[1], str)):
                raise InputError(f"expected (collective kind, dim name) keys, got {pair!r}",
                                 field="collectives.collective_algorithm")
            if a not in COLLECTIVE_ALGORITHMS:
                raise InputError(f"{a!r} is not one of {', '.join(COLLECTIVE_ALGORITHMS)}",
                                 field=f"collectives.collective_algorithm.{pair[0]}.{pair[1]}")
            per_kind.append(((str(pair[0]), str(pair[1])), a))
        object.__setattr__(self, "collective_algorithm", tuple(sorted(per_kind)))
        inr = self.in_network_reduction
        if isinstance(inr, str) or not all(isinstance(n, str) for n in inr):
            raise InputError(f"expected a list of dimension names, got {inr!r}",
                             field="collectives.in_network_reduction")
        object.__setattr__(self, "in_network_reduction", tuple(sorted(set(inr))))
        algo = _pairs(self.algorithm, "collectives.algorithm")  # type: ignore[arg-type]
        for name, a in algo:
            if a not in COLLECTIVE_ALGORITHMS:
                raise InputError(f"{a!r} is not one of {', '.join(COLLECTIVE_ALGORITHMS)}",
                                 field=f"collectives.algorithm.{name}")
        object.__setattr__(self, "algorithm", algo)
        object.__setattr__(self, "efficiency", tuple(
            (name, link_efficiency_value(v, f"collectives.efficiency.{name}"))
            for name, v in _pairs(self.efficiency, "collectives.efficiency")))  # type: ignore[arg-type]
        lat = []
        for name, v in _pairs(self.link_latency_s, "collectives.link_latency_s"):  # type: ignore[arg-type]
            if isinstance(v, bool) or not isinstance(v, int | float) or not (
                    math.isfinite(v) and v >= 0):
                raise InputError(f"link latency {v!r} must be a finite number >= 0 (s)",
                                 field=f"collectives.link_latency_s.{name}")
            lat.append((name, float(v)))
        object.__setattr__(self, "link_latency_s", tuple(lat))
        if isinstance(self.chunks, bool) or not isinstance(self.chunks, int) or self.chunks < 1:
            raise InputError(f"chunks {self.chunks!r} must be an integer >= 1",
                             field="collectives.chunks")
        a = self.active_chunks
        if a is not None and (isinstance(a, bool) or not isinstance(a, int) or a < 1):
            raise InputError(f"active_chunks {a!r} must be an integer >= 1",
                             field="collectives.active_chunks")
        e = self.endpoint_delay_s
        if not (math.isfinite(e) and e >= 0):
            raise InputError(f"endpoint delay {e!r} must be a finite number >= 0 (s)",
                             field="collectives.endpoint_delay_s")
        m = self.local_memory_gbps
        if m is not None and not (math.isfinite(m) and m > 0):
            raise InputError(f"local memory bandwidth {m!r} must be a finite number > 0 (GB/s)",
                             field="collectives.local_memory_gbps")
        if self.all_reduce not in ALL_REDUCE_VARIANTS:
            raise InputError(
                f"{self.all_reduce!r} is not one of {', '.join(ALL_REDUCE_VARIANTS)}",
                field="collectives.all_reduce")

    def check(self, fabric: Fabric) -> None:
        """Raise :class:`InputError` when a named dimension is not in ``fabric``, an
        algorithm does not apply to its dimension's topology, or a dimension priced with a
        measured curve has a latency of its own (the curve includes it)."""
        names = set(fabric.names)
        for key in ("algorithm", "efficiency", "link_latency_s"):
            for name, _ in getattr(self, key):
                if name not in names:
                    raise InputError(
                        f"no dimension named {name!r}; names: {', '.join(fabric.names)}",
                        field=f"collectives.{key}.{name}")
        for (kind, name), _ in self.collective_algorithm:
            if name not in names:
                raise InputError(
                    f"no dimension named {name!r}; names: {', '.join(fabric.names)}",
                    field=f"collectives.collective_algorithm.{kind}.{name}")
        pairs = [(name, a, f"collectives.algorithm.{name}") for name, a in self.algorithm]
        pairs += [(name, a, f"collectives.collective_algorithm.{kind}.{name}")
                  for (kind, name), a in self.collective_algorithm]
        for name, a, field in pairs:
            dim = fabric.dims[fabric.index(name)]
            if self.backend is None and a == "halving_doubling" and dim.topology.forwards:
                raise InputError(
                    f"algorithm {a!r} needs a {HD_TOPOLOGIES} dimension; "
                    f"{name!r} is a {dim.topology} (use 'ring' or 'direct')", field=field)
        for dim in fabric.dims if self.backend is not None else ():
            if dim.topology.astra_sim_name is None:
                raise InputError(
                    f"ASTRA-sim's analytical backends have no {dim.topology}: dimension "
                    f"{dim.name!r} is a {dim.topology}; give the backend a fabric of "
                    "Ring, FullyConnected and Switch dimensions", field="collectives.backend")
        in_network_dims(self.in_network_reduction, fabric,
                        field="collectives.in_network_reduction")
        for name, v in self.efficiency:
            lat = self.latency_of(fabric.dims[fabric.index(name)])
            if isinstance(v, str) and v in NCCL_CURVES and lat > 0:
                raise InputError(
                    f"{name!r} is priced with the measured curve {v!r}, whose measurement "
                    f"includes the link's latency, and has a latency of {lat:g} s of its own; "
                    "give the dimension latency 0 or a fraction instead of the curve",
                    field=f"collectives.efficiency.{name}")

    def algorithm_of(self, dim: Dim, kind: str | None = None) -> CollectiveAlgorithm:
        """The algorithm ``dim`` runs (for collectives of ``kind`` when given)."""
        if kind is not None:
            per_kind = dict(self.collective_algorithm).get((kind, dim.name))
            if per_kind is not None:
                return per_kind
        return dict(self.algorithm).get(dim.name, "ring" if dim.topology.forwards else "direct")

    def efficiency_of(self, dim: Dim, size_bytes: float | None = None,
                      group_npus: int | None = None) -> float:
        """The achievable fraction of ``dim``'s line rate (for a collective of
        ``size_bytes`` over ``group_npus`` of its NPUs when the dimension is priced with a
        measured curve, :mod:`libra_opt.traffic.nccl_curves`)."""
        v = dict(self.efficiency).get(dim.name, 1.0)
        if isinstance(v, str):
            if size_bytes is None:
                raise InputError(f"the efficiency of {dim.name!r} is the curve {v!r}: it "
                                 "depends on the collective's size",
                                 field=f"collectives.efficiency.{dim.name}")
            return NCCL_CURVES[v].efficiency_at(size_bytes, group_npus)
        return float(v)

    def latency_of(self, dim: Dim) -> float:
        """Latency per link hop on ``dim`` (s)."""
        return dict(self.link_latency_s).get(dim.name, dim.latency_s)
