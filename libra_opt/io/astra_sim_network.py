"""ASTRA-sim 2.0 analytical-backend inputs: the network YAML and the system JSON.

* Network YAML (``topology``, ``npus_count``, ``bandwidth`` in GB/s per link, ``latency`` in
  ns per link, one entry per dimension, innermost first) -> a :class:`Fabric` and the
  bandwidth ``B_d`` of every dimension (:func:`read_astra_sim_network`).
* System JSON (``preferred-dataset-splits``, ``*-implementation`` per dimension,
  ``endpoint-delay`` in ns, ``local-mem-bw`` in GB/s)
  -> :class:`~libra_opt.traffic.topology_aware.CollectiveSettings`
  (:func:`read_astra_sim_system`).

Units: ASTRA-sim's GB/s is 2^30 bytes/s (:data:`ASTRA_SIM_GB_BYTES`), ours 1e9; its
``bandwidth`` is per link, our ``B_d`` per NPU (``links_per_npu`` links: 2 on a ring,
``n - 1`` fully connected, 1 on a switch; see :mod:`libra_opt.traffic.topology_aware`), so
``B_d = links_per_npu x bandwidth x 2^30 / 1e9``. Times in ns ("cycles") become seconds.

Keys of the system file that the analytical model does not represent (scheduling policies,
collective optimization, boost mode, roofline and tracing switches) are accepted and
ignored; any other key is an error, as is an implementation with no counterpart.
``active-chunks-per-dimension`` is accepted and not mapped: the chunk pipeline already
lets each dimension work on one chunk at a time (more chunks per dimension share its
bandwidth and do not raise its throughput); ``CollectiveSettings.active_chunks`` is a
different limit (chunks in flight over the whole pipeline).

References
----------
.. [1] W. Won et al., "ASTRA-sim2.0: Modeling Hierarchical Networks and Disaggregated
   Systems for Large-model Training at Scale", ISPASS 2023; the ASTRA-sim documentation,
   https://astra-sim.github.io/astra-sim-docs/.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io.yaml_util import load_yaml
from libra_opt.options import CollectiveAlgorithm, Topology
from libra_opt.traffic.topology_aware import CollectiveSettings, bw_from_link_gbps

__all__ = [
    "ASTRA_SIM_GB_BYTES",
    "AstraSimNetwork",
    "astra_gbps_to_gbps",
    "read_astra_sim_network",
    "read_astra_sim_system",
    "network_from_mapping",
    "settings_from_mapping",
]

#: Bytes in ASTRA-sim's GB (its GB/s is 2^30 bytes/s).
ASTRA_SIM_GB_BYTES = 2**30

_TOPOLOGY: dict[str, Topology] = {
    "Ring": "ring", "FullyConnected": "fully_connected", "Switch": "switch",
}
_ALGORITHM: dict[str, CollectiveAlgorithm] = {
    "ring": "ring", "direct": "direct", "halvingDoubling": "halving_doubling",
}
_IMPLEMENTATIONS = ("reduce-scatter-implementation", "all-gather-implementation",
                    "all-reduce-implementation")
_IGNORED = frozenset({
    "scheduling-policy", "intra-dimension-scheduling", "inter-dimension-scheduling",
    "collective-optimization", "boost-mode", "roofline-enabled", "peak-perf",
    "trace-enabled", "replay-only", "track-local-mem", "local-mem-size", "sync_mode",
    "enable_network_logger", "mixed-percision", "active-chunks-per-dimension",
})
_USED = frozenset({
    "preferred-dataset-splits", "endpoint-delay",
    "local-mem-bw", "all-to-all-implementation", *_IMPLEMENTATIONS,
})


def astra_gbps_to_gbps(astra_gbps: float) -> float:
    """ASTRA-sim GB/s (2^30 bytes/s) -> our GB/s (1e9 bytes/s).

    Examples
    --------
    >>> round(astra_gbps_to_gbps(50.0), 6)
    53.687091
    """
    return float(astra_gbps) * ASTRA_SIM_GB_BYTES / 1e9


@dataclass(frozen=True)
class AstraSimNetwork:
    """A network read from an ASTRA-sim network YAML.

    Attributes
    ----------
    fabric : Fabric
        One dimension per entry (``dim0``, ``dim1``, ...; tier = name), latency per hop.
    bw_gbps : tuple of float
        ``B_d`` per dimension, GB/s (1e9 bytes/s) per NPU.
    link_gbps : tuple of float
        Bandwidth of one link, GB/s (1e9 bytes/s).
    """

    fabric: Fabric
    bw_gbps: tuple[float, ...]
    link_gbps: tuple[float, ...]


def _number_list(data: dict, key: str, source: str, *, integer: bool = False,
                 positive: bool = True) -> list:
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise InputError(f"expected a non-empty list (one entry per dimension), got {value!r}",
                         source=source, field=key)
    out = []
    for i, v in enumerate(value):
        ok = (isinstance(v, int) if integer else isinstance(v, int | float)) and not isinstance(
            v, bool)
        if not ok or (positive and not v > 0) or (not positive and not v >= 0) or v != v:
            kind = "an integer" if integer else "a number"
            raise InputError(f"expected {kind} {'> 0' if positive else '>= 0'}, got {v!r}",
                             source=source, field=f"{key}[{i}]")
        out.append(v)
    return out


def network_from_mapping(data: Any, source: str = "<network>") -> AstraSimNetwork:
    """:class:`AstraSimNetwork` of a parsed network YAML (see :func:`read_astra_sim_network`).

    Examples
    --------
    >>> n = network_from_mapping({"topology": ["Ring", "Switch"], "npus_count": [4, 2],
    ...                           "bandwidth": [50.0, 10.0], "latency": [500.0, 2500.0]})
    >>> [round(b, 4) for b in n.bw_gbps], n.fabric.dims[1].latency_s
    ([107.3742, 10.7374], 2.5e-06)
    """
    if not isinstance(data, dict):
        raise InputError("expected a mapping with topology, npus_count, bandwidth, latency",
                         source=source)
    unknown = sorted(set(data) - {"topology", "npus_count", "bandwidth", "latency"})
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(map(str, unknown))}; expected topology, "
                         "npus_count, bandwidth, latency", source=source, field=unknown[0])
    topo = data.get("topology")
    if not isinstance(topo, list) or not topo:
        raise InputError(f"expected a non-empty list of {', '.join(_TOPOLOGY)}, got {topo!r}",
                         source=source, field="topology")
    sizes = _number_list(data, "npus_count", source, integer=True)
    bw = _number_list(data, "bandwidth", source)
    lat = _number_list(data, "latency", source, positive=False)
    if not len(topo) == len(sizes) == len(bw) == len(lat):
        raise InputError(
            f"topology, npus_count, bandwidth and latency have {len(topo)}, {len(sizes)}, "
            f"{len(bw)} and {len(lat)} entries; expected one per dimension each",
            source=source, field="topology")
    dims = []
    for i, t in enumerate(topo):
        if t not in _TOPOLOGY:
            raise InputError(f"{t!r} is not one of {', '.join(_TOPOLOGY)}",
                             source=source, field=f"topology[{i}]")
        try:
            dims.append(Dim(f"dim{i}", _TOPOLOGY[t], int(sizes[i]), f"dim{i}",
                            latency_s=float(lat[i]) / 1e9))
        except InputError as exc:
            raise InputError(exc.message, source=source, field=f"npus_count[{i}]") from None
    fabric = Fabric(tuple(dims))
    link = tuple(astra_gbps_to_gbps(b) for b in bw)
    total = tuple(bw_from_link_gbps(d, b) for d, b in zip(dims, link, strict=True))
    return AstraSimNetwork(fabric, total, link)


def read_astra_sim_network(path: str | Path) -> AstraSimNetwork:
    """Read an ASTRA-sim 2.0 analytical network YAML.

    Raises
    ------
    InputError
        Naming the file and the key, for an unknown key, a topology other than ``Ring``,
        ``FullyConnected`` or ``Switch``, lists of different lengths or bad numbers.
    """
    return network_from_mapping(load_yaml(path), str(path))


def settings_from_mapping(
    data: Any, dim_names: Sequence[str], source: str = "<system>"
) -> CollectiveSettings:
    """:class:`CollectiveSettings` of a parsed system JSON for dimensions ``dim_names``.

    Notes
    -----
    ``preferred-dataset-splits`` -> ``chunks``; ``endpoint-delay`` (ns) -> ``endpoint_delay_s``; ``local-mem-bw``
    (2^30 bytes/s) -> ``local_memory_gbps`` (1e9 bytes/s); the reduce-scatter, all-gather
    and all-reduce implementations (which must agree per dimension) -> ``algorithm``; the
    all-to-all implementation must be the same, or ``direct`` where the others are
    ``halvingDoubling`` (the model's rule).

    Examples
    --------
    >>> s = settings_from_mapping({"preferred-dataset-splits": 4, "endpoint-delay": 10,
    ...     "all-reduce-implementation": ["ring", "direct"],
    ...     "all-to-all-implementation": ["ring", "direct"]}, ["a", "b"])
    >>> s.chunks, s.endpoint_delay_s, s.algorithm
    (4, 1e-08, (('a', 'ring'), ('b', 'direct')))
    """
    if not isinstance(data, dict):
        raise InputError("expected a mapping (the system configuration)", source=source)
    unknown = sorted(str(k) for k in set(data) - _USED - _IGNORED)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}", source=source, field=unknown[0])

    def integer(key: str, default: int | None) -> int | None:
        v = data.get(key, default)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(f"expected an integer >= 1, got {v!r}", source=source, field=key)
        return v

    def number(key: str) -> float | None:
        v = data.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
            raise InputError(f"expected a number >= 0, got {v!r}", source=source, field=key)
        return None if v is None else float(v)

    n = len(dim_names)
    algo: dict[str, CollectiveAlgorithm] = {}
    given = {}
    for key in (*_IMPLEMENTATIONS, "all-to-all-implementation"):
        if key not in data:
            continue
        v = data[key]
        if not isinstance(v, list) or len(v) != n:
            raise InputError(f"expected a list of {n} implementations (one per dimension), "
                             f"got {v!r}", source=source, field=key)
        for i, a in enumerate(v):
            if a not in _ALGORITHM:
                raise InputError(f"{a!r} is not one of {', '.join(_ALGORITHM)}",
                                 source=source, field=f"{key}[{i}]")
        given[key] = [_ALGORITHM[a] for a in v]
    for i, name in enumerate(dim_names):
        seen = {given[k][i] for k in _IMPLEMENTATIONS if k in given}
        integer("active-chunks-per-dimension", None)  # checked, not mapped (module notes)
        if len(seen) > 1:
            raise InputError(
                f"dimension {i} uses {', '.join(sorted(seen))} for reduce-scatter, "
                "all-gather and all-reduce; the model takes one algorithm per dimension",
                source=source, field=f"all-reduce-implementation[{i}]")
        a2a = given.get("all-to-all-implementation", [None] * n)[i]
        base = next(iter(seen)) if seen else a2a
        if a2a is not None and a2a != base and not (a2a == "direct"
                                                     and base == "halving_doubling"):
            raise InputError(
                f"all-to-all runs {a2a} on dimension {i}, the other collectives {base}; the "
                "model takes one algorithm per dimension (all-to-all on halvingDoubling "
                "runs direct)", source=source, field=f"all-to-all-implementation[{i}]")
        if base is not None:
            algo[name] = base
    mem = number("local-mem-bw")
    delay_ns = number("endpoint-delay")
    try:
        return CollectiveSettings(
            algorithm=tuple(algo.items()),
            chunks=integer("preferred-dataset-splits", 1) or 1,
            endpoint_delay_s=0.0 if delay_ns is None else delay_ns / 1e9,
            local_memory_gbps=None if not mem else astra_gbps_to_gbps(mem),
        )
    except InputError as exc:
        raise InputError(exc.message, source=source, field=exc.field) from None


def read_astra_sim_system(path: str | Path, dim_names: Sequence[str]) -> CollectiveSettings:
    """Read an ASTRA-sim 2.0 system JSON as :class:`CollectiveSettings` for the dimensions
    ``dim_names`` (innermost first; the per-dimension lists must have one entry each).

    Raises
    ------
    InputError
        Naming the file and the key.
    """
    return settings_from_mapping(load_yaml(path), dim_names, str(path))
