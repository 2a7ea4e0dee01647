"""Settings of the ``topology_aware`` collective model (:mod:`libra_opt.traffic.topology_aware`),
per dimension and per collective kind.
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
    COLLECTIVE_KINDS,
    AllReduceVariant,
    CollectiveAlgorithm,
)
from libra_opt.traffic.astra_sim_model import BACKENDS, Backend
from libra_opt.traffic.in_network import in_network_dims
from libra_opt.traffic.links import LINE_RATE_PRESETS
from libra_opt.traffic.nccl_curves import NCCL_CURVES

__all__ = ["CollectiveSettings", "link_efficiency_value"]

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
    """What collectives reach of a link's line rate, checked: a measured curve's name (kept), a
    line-rate preset's fraction, a fraction in (0, 1], or ``none`` (1.0).

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
    """Settings of the ``topology_aware`` collective model.

    Parameters
    ----------
    algorithm : mapping dim name -> {'ring', 'direct', 'halving_doubling'}
        Default: ``ring`` on a ring or mesh, ``direct`` elsewhere. ``halving_doubling`` needs a
        fully-connected or switch dimension (its all-to-all and p2p run ``direct``).
    chunks : int
        Chunks ``S`` per collective (ASTRA-sim's ``preferred-dataset-splits``).
    active_chunks : int, optional
        Chunks in flight at once (``None``: as many as the pipeline holds).
    endpoint_delay_s : float
        Delay per message at the endpoints (s).
    local_memory_gbps : float, optional
        Local memory bandwidth (GB/s) of the reductions; ``None``: reductions are free.
    all_reduce : {'hierarchical', 'full'}
        Multi-dimensional all-reduce variant.
    efficiency : mapping dim name -> float or preset name
        Achievable fraction of line rate in (0, 1]; a :data:`LINE_RATE_PRESETS` name stands for
        its fraction, a :data:`~libra_opt.traffic.nccl_curves.NCCL_CURVES` name for a measured
        curve (the fraction at each collective's size).
    link_latency_s : mapping dim name -> float
        Latency per link hop (s); default the dimension's ``latency_s``.
    in_network_reduction : tuple of str
        Switch dimensions that reduce and multicast in the network (SHARP class).
    backend : {None, 'congestion_unaware', 'congestion_aware'}
        ``None``: this package's physical model; otherwise ASTRA-sim 2.0's analytical backend
        (:mod:`libra_opt.traffic.astra_sim_model`) with the settings below.
    queues_per_dim : int
        ASTRA-sim's ``num-queues-per-dim`` ``Q``.
    active_chunks_per_dim : int
        ASTRA-sim's ``active-chunks-per-dimension`` ``A``.
    collective_algorithm : mapping (collective kind, dim name) -> algorithm
        Algorithm of one collective kind on one dimension, over ``algorithm``.

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
        for key in ("queues_per_dim", "active_chunks_per_dim", "chunks", "active_chunks"):
            v = getattr(self, key)
            if v is None and key == "active_chunks":
                continue
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
                    or pair[0] not in COLLECTIVE_KINDS or not isinstance(pair[1], str)):
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
        """Raise :class:`InputError` when a named dimension is not in ``fabric``, an algorithm does
        not fit its topology, or a curve-priced dimension has a latency of its own.
        """
        named = [(name, f"{key}.{name}") for key in ("algorithm", "efficiency", "link_latency_s")
                 for name, _ in getattr(self, key)]
        named += [(name, f"collective_algorithm.{kind}.{name}")
                  for (kind, name), _ in self.collective_algorithm]
        for name, field in named:
            if name not in fabric.names:
                raise InputError(
                    f"no dimension named {name!r}; names: {', '.join(fabric.names)}",
                    field=f"collectives.{field}")
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
        """The achievable fraction of ``dim``'s line rate (of a curve-priced dimension: at
        ``size_bytes`` over ``group_npus``).
        """
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
