"""ASTRA-sim 2.0 analytical-backend inputs: the network YAML and the system JSON.

* Network YAML (``topology``, ``npus_count``, ``bandwidth`` in GB/s per link, ``latency`` in
  ns per link, one entry per dimension, innermost first) -> a :class:`Fabric` and the
  bandwidth ``B_d`` of every dimension (:func:`read_astra_sim_network`).
* System JSON -> :class:`~libra_opt.traffic.topology_aware.CollectiveSettings`
  (:func:`read_astra_sim_system`), so the ``topology_aware`` model gives the times of
  ASTRA-sim's analytical backend (:mod:`libra_opt.traffic.astra_sim_model`). The backend
  and ``num-queues-per-dim`` are not in the file; they are arguments, and the backend has
  no default: a congestion-aware run priced as congestion-unaware comes out up to 30
  times too fast.

Every key of the system file, and what it becomes:

=================================  ========================================================
``preferred-dataset-splits``       ``chunks`` (required: the simulator divides by it)
``active-chunks-per-dimension``    ``active_chunks_per_dim`` (default 1)
``endpoint-delay`` (ns)            ``endpoint_delay_s`` (default 10 ns, the simulator's)
``local-mem-bw`` (GB/s = 1e9 B/s)  ``local_memory_gbps`` (the simulator multiplies by 1e9)
``all-reduce-implementation``      ``algorithm`` per dimension (``ring``, ``direct``,
                                   ``halvingDoubling``)
``reduce-scatter-``, ``all-gather-``, ``all-to-all-implementation``
                                   ``collective_algorithm`` where they differ
``collective-optimization``        ``all_reduce``: ``localBWAware`` -> ``hierarchical``,
                                   ``baseline`` -> ``full``
``scheduling-policy``              LIFO / FIFO / EXPLICIT order collectives against each
                                   other; one collective's time does not depend on it
``intra-``, ``inter-dimension-scheduling``
                                   not read by ASTRA-sim 2.0 (FIFO, ascending always)
``local-reduction-delay``, ``L``, ``o``, ``g``, ``G``
                                   used only by the shared-bus model (``model-shared-bus``
                                   1, refused); accepted
``boost-mode``, ``roofline-enabled``, ``peak-perf``, ``trace-enabled``, ``replay-only``,
``track-local-mem``, ``local-mem-trace-filename``, ``model-shared-bus: 0``
                                   no effect on collective times; accepted
=================================  ========================================================

Any other key or implementation (``doubleBinaryTree``, ``one*``, ``directN``, Chakra's
custom ones, halving-doubling all-to-all) is refused, naming the key.

Units: ASTRA-sim's network GB/s is 2^30 bytes/s (:data:`ASTRA_SIM_GB_BYTES`), ours 1e9; its
``bandwidth`` is per link, our ``B_d`` per NPU: ``B_d = links_per_npu x bandwidth x 2^30 /
1e9`` (:mod:`libra_opt.traffic.topology_aware`). Times in ns become seconds.

References
----------
.. [1] W. Won et al., "ASTRA-sim2.0: Modeling Hierarchical Networks and Disaggregated
   Systems for Large-model Training at Scale", ISPASS 2023; the ASTRA-sim documentation,
   https://astra-sim.github.io/astra-sim-docs/.
.. [2] ASTRA-sim source, https://github.com/astra-sim/astra-sim:
   ``astra-sim/system/Sys.cc`` (``initialize_sys``: the system-file keys and units),
   ``astra-sim/system/astraccl/CollectiveImplLookup.cc`` (implementation names),
   ``astra-sim/network_frontend/analytical/common/CmdLineParser.cc`` (``num-queues-per-dim``);
   https://github.com/astra-sim/astra-network-analytical ``common/NetworkFunction.cpp``
   (GB = 2^30 bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.topology import TOPOLOGY_CLASSES, Topology
from libra_opt.io._yaml import read_yaml
from libra_opt.options import CollectiveAlgorithm
from libra_opt.traffic.astra_sim_model import BACKENDS, Backend
from libra_opt.traffic.topology_aware import CollectiveSettings, bw_from_link_gbps

__all__ = [
    "ASTRA_SIM_GB_BYTES",
    "DEFAULT_ENDPOINT_DELAY_NS",
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
    t.astra_sim_name: t() for t in TOPOLOGY_CLASSES if t.astra_sim_name is not None}
_ALGORITHM: dict[str, CollectiveAlgorithm] = {
    "ring": "ring", "direct": "direct", "halvingDoubling": "halving_doubling",
}
_IMPLEMENTATIONS = {
    "all-reduce-implementation": "all_reduce",
    "reduce-scatter-implementation": "reduce_scatter",
    "all-gather-implementation": "all_gather",
    "all-to-all-implementation": "all_to_all",
}
_NO_EFFECT = frozenset({
    "boost-mode", "roofline-enabled", "peak-perf", "trace-enabled", "replay-only",
    "track-local-mem", "local-mem-trace-filename", "local-mem-size",
    "intra-dimension-scheduling", "inter-dimension-scheduling",
    "local-reduction-delay", "L", "o", "g", "G",
})
_USED = frozenset({
    "preferred-dataset-splits", "active-chunks-per-dimension", "endpoint-delay",
    "local-mem-bw", "collective-optimization", "scheduling-policy", "model-shared-bus",
    *_IMPLEMENTATIONS,
})
#: ASTRA-sim's endpoint delay when the system file has no ``endpoint-delay`` (ns).
DEFAULT_ENDPOINT_DELAY_NS = 10.0


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
    """An ASTRA-sim network: its fabric (dimensions ``dim0``, ``dim1``, ...), ``B_d`` per
    dimension (``bw_gbps``, per NPU) and one link's bandwidth (``link_gbps``), in GB/s."""

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
    """Read an ASTRA-sim 2.0 analytical network YAML; an :class:`InputError` names the file
    and the key for an unknown key, another topology than ``Ring``, ``FullyConnected`` or
    ``Switch``, lists of different lengths or bad numbers."""
    return network_from_mapping(read_yaml(path), str(path))


def settings_from_mapping(data: Any, dim_names: Sequence[str], source: str = "<system>", *,
                          backend: Backend | None, queues_per_dim: int = 1
                          ) -> CollectiveSettings:
    """:class:`CollectiveSettings` of a parsed system JSON for dimensions ``dim_names``.

    ``dim_names`` are innermost first (one entry per dimension of each list). ``backend``
    (``congestion_unaware`` or ``congestion_aware``) is required: the two give different
    times; ``None`` keeps the file's settings alone for a caller that names it later (the
    scenario compiler). ``queues_per_dim`` is ASTRA-sim's ``--num-queues-per-dim``.

    Raises
    ------
    InputError
        Naming the key, for a key that cannot be expressed or a bad value; naming
        ``backend`` for a backend other than the two.

    Examples
    --------
    >>> s = settings_from_mapping({"preferred-dataset-splits": 4, "endpoint-delay": 10,
    ...     "local-mem-bw": 1600, "active-chunks-per-dimension": 2,
    ...     "all-reduce-implementation": ["ring", "direct"],
    ...     "all-to-all-implementation": ["direct", "direct"]}, ["a", "b"],
    ...     backend="congestion_aware")
    >>> s.chunks, s.endpoint_delay_s, s.local_memory_gbps, s.active_chunks_per_dim
    (4, 1e-08, 1600.0, 2)
    >>> s.algorithm, s.collective_algorithm
    ((('a', 'ring'), ('b', 'direct')), ((('all_to_all', 'a'), 'direct'),))
    """
    if not isinstance(data, dict):
        raise InputError("expected a mapping (the system configuration)", source=source)
    if backend is not None and backend not in BACKENDS:
        raise InputError(f"{backend!r} is not one of {', '.join(BACKENDS)} (which ASTRA-sim "
                         "binary ran the configuration)", source=source, field="backend")
    unknown = sorted(str(k) for k in set(data) - _USED - _NO_EFFECT)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; custom collective "
                         "implementations and other keys cannot be expressed",
                         source=source, field=unknown[0])

    def integer(key: str, default: int | None) -> int:
        v = data.get(key, default)
        if v is None:
            raise InputError("missing; expected an integer >= 1 (ASTRA-sim divides each "
                             "collective into this many chunks)", source=source, field=key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"expected an integer >= 1, got {v!r}", source=source, field=key)
        return v

    def number(key: str) -> float | None:
        v = data.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int | float) or v < 0):
            raise InputError(f"expected a number >= 0, got {v!r}", source=source, field=key)
        return None if v is None else float(v)

    def choice(key: str, allowed: tuple[str, ...]) -> str | None:
        v = data.get(key)
        if v is not None and v not in allowed:
            raise InputError(f"{v!r} is not one of {', '.join(allowed)}", source=source,
                             field=key)
        return v

    for key in ("local-reduction-delay", "L", "o", "g", "G", "peak-perf"):
        number(key)
    choice("scheduling-policy", ("LIFO", "FIFO", "EXPLICIT"))
    optimization = choice("collective-optimization", ("localBWAware", "baseline"))
    if data.get("model-shared-bus", 0) not in (0, False):
        raise InputError("the shared-bus (LogGP) memory model cannot be expressed; "
                         "expected 0", source=source, field="model-shared-bus")
    n = len(dim_names)
    given: dict[str, list[CollectiveAlgorithm]] = {}
    for key in _IMPLEMENTATIONS:
        if key not in data:
            continue
        v = data[key]
        if not isinstance(v, list) or len(v) != n:
            raise InputError(f"expected a list of {n} implementations (one per dimension), "
                             f"got {v!r}", source=source, field=key)
        for i, a in enumerate(v):
            if a not in _ALGORITHM:
                raise InputError(
                    f"{a!r} cannot be expressed; expected one of {', '.join(_ALGORITHM)}",
                    source=source, field=f"{key}[{i}]")
        given[key] = [_ALGORITHM[a] for a in v]
    if "halving_doubling" in given.get("all-to-all-implementation", []):
        i = given["all-to-all-implementation"].index("halving_doubling")
        raise InputError("ASTRA-sim's halvingDoubling has no all-to-all (the simulator "
                         "stops); use ring or direct", source=source,
                         field=f"all-to-all-implementation[{i}]")
    order = list(given)  # the first given sets each dimension's algorithm, the rest differ
    algo = dict(zip(dim_names, given[order[0]], strict=True)) if order else {}
    per_kind = {(_IMPLEMENTATIONS[key], name): given[key][i]
                for i, name in enumerate(dim_names) for key in order[1:]
                if given[key][i] != given[order[0]][i]}
    mem = number("local-mem-bw")
    delay_ns = number("endpoint-delay")
    with input_context(source):
        return CollectiveSettings(
            algorithm=tuple(algo.items()),
            collective_algorithm=tuple(per_kind.items()),
            chunks=integer("preferred-dataset-splits", None),
            endpoint_delay_s=(DEFAULT_ENDPOINT_DELAY_NS if delay_ns is None else delay_ns) / 1e9,
            local_memory_gbps=mem if mem else None,
            all_reduce="full" if optimization == "baseline" else "hierarchical",
            backend=backend,
            queues_per_dim=queues_per_dim,
            active_chunks_per_dim=integer("active-chunks-per-dimension", 1),
        )


def read_astra_sim_system(path: str | Path, dim_names: Sequence[str], *,
                          backend: Backend | None, queues_per_dim: int = 1
                          ) -> CollectiveSettings:
    """Read an ASTRA-sim 2.0 system JSON as :class:`CollectiveSettings` for the dimensions
    ``dim_names`` (see :func:`settings_from_mapping`); an :class:`InputError` names the file
    and the key."""
    return settings_from_mapping(read_yaml(path), dim_names, str(path), backend=backend,
                                 queues_per_dim=queues_per_dim)
