"""Topologies of a fabric dimension: one class each, owning what the package asks of it.

A dimension's topology is an instance of one of :data:`TOPOLOGY_CLASSES`, a ``str`` equal
to its name, answering for parsing (:func:`topology_of`), component counts
(:meth:`Topology.inventory`), the steps and link loads of the collective models, the cost
columns it buys and what a failed cable does. ``B_d``, the bandwidth one NPU drives into
the dimension, is split over ``links_per_npu`` links: two on a ``ring`` (``torus`` where a
builder or the search takes names) or a ``mesh``, ``s - 1`` on a clique of ``s``, one port
into a ``switch`` network.

References
----------
.. [1] W. Won et al., "LIBRA: Enabling Workload-Aware Multi-Dimensional Network Topology
   Optimization for Distributed Training of Large AI Models", ISPASS 2024, arXiv:2109.11762.
.. [2] C. E. Leiserson, "Fat-trees: universal networks for hardware-efficient
   supercomputing", IEEE Trans. Computers 34(10), 1985; M. Al-Fares, A. Loukissas,
   A. Vahdat, "A scalable, commodity data center network architecture", SIGCOMM 2008.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, Self, get_args

from libra_opt.errors import InputError

__all__ = [
    "SwitchScope", "SWITCH_SCOPES", "SwitchPricing", "SWITCH_PRICINGS", "DimInventory",
    "clos_max_endpoints", "clos_tiers", "clos_level_switches", "Topology", "Ring",
    "FullyConnected", "Switch", "Mesh", "TOPOLOGY_CLASSES", "topology_names", "topology_of",
]

#: What one switch network of a dimension spans: its whole block (fat-tree) or one rail.
SwitchScope = Literal["block", "rail"]
SWITCH_SCOPES: tuple[SwitchScope, ...] = get_args(SwitchScope)

#: How a switch network with a radix is priced: whole switches (``switches x radix`` ports
#: bought, what a buyer pays) or only the ports in use (a shared chassis).
SwitchPricing = Literal["whole_switch", "used_ports"]
SWITCH_PRICINGS: tuple[SwitchPricing, ...] = get_args(SwitchPricing)


@dataclass(frozen=True)
class DimInventory:
    """Component counts of one dimension, for bandwidth ``B`` GB/s per NPU (counts of the
    whole fabric unless said)."""

    blocks: int  #: building blocks (rings, cliques, lines, switch networks)
    links_per_block: int  #: unidirectional links per block (LIBRA's count)
    link_share: float  #: each link carries ``link_share * B`` GB/s
    switch_ports: int  #: switch ports of ``B`` in use (link ends on switches)
    nics: int  #: NIC ports of ``B``
    #: switch tiers of a block's network: 0 without switches, 1 for an ideal switch, 1-3 Clos
    tiers: int = 0
    switches: int = 0  #: physical switches (an ideal switch counts as one)
    transceivers: int = 0  #: optical link ends (one at each end of every optical cable)
    #: ports bought: ``switches x radix`` with a radix, the ports in use for an ideal switch
    switch_ports_bought: int = 0
    #: ports charged: ``switch_ports_bought`` (``whole_switch``) or ``switch_ports``
    switch_ports_priced: int = 0
    cables: int = 0  #: one per switched link, one per pair of opposite links between NPUs
    #: copper cables (the lowest ``copper_levels`` cable levels of a switch network)
    copper_cables: int = 0

    @property
    def link_gbps_per_gbps(self) -> float:
        """Total link bandwidth bought per GB/s of ``B`` (copper and optical)."""
        return self.blocks * self.links_per_block * self.link_share

    @property
    def copper_gbps_per_gbps(self) -> float:
        """Link bandwidth on copper cables per GB/s of ``B`` (priced with the ``copper`` part)."""
        if not self.copper_cables:
            return 0.0
        return self.link_gbps_per_gbps * self.copper_cables / self.cables

    @property
    def optical_gbps_per_gbps(self) -> float:
        """Link bandwidth on optical cables per GB/s of ``B`` (priced with the ``link`` part)."""
        return self.link_gbps_per_gbps - self.copper_gbps_per_gbps

    @property
    def transceiver_gbps_per_gbps(self) -> float:
        """Total transceiver bandwidth (all optical link ends) per GB/s of ``B``."""
        return self.transceivers * self.link_share


def clos_max_endpoints(radix: int, tiers: int) -> int:
    """Largest folded Clos (full bisection) of ``tiers`` tiers built from ``radix``-port switches.

    Notes
    -----
    ``k`` endpoints for one switch, ``k^2 / 2`` for two tiers (leaf-spine) and ``k^3 / 4``
    for three (the fat-tree of Al-Fares et al. [2]_); in general ``2 (k/2)^t``.

    Examples
    --------
    >>> [clos_max_endpoints(64, t) for t in (1, 2, 3)]
    [64, 2048, 65536]
    """
    return 2 * (radix // 2) ** tiers


def clos_tiers(n_endpoints: int, radix: int | None) -> int:
    """Tiers (1, 2 or 3) of the smallest full-bisection folded Clos over ``n_endpoints`` NIC
    ports (``radix`` ``None``: one ideal switch); more than three is an
    :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    >>> [clos_tiers(n, 64) for n in (64, 65, 2048, 2049, 65536)]
    [1, 2, 2, 3, 3]
    """
    if radix is None:
        return 1
    for t in (1, 2, 3):
        if n_endpoints <= clos_max_endpoints(radix, t):
            return t
    raise InputError(
        f"a Clos of {n_endpoints} endpoints with radix-{radix} switches needs more than 3 tiers "
        f"(3 tiers reach {clos_max_endpoints(radix, 3)}); use a larger switch_radix",
        field="fabric.dims.switch_radix",
    )


def clos_level_switches(n_endpoints: int, radix: int | None) -> tuple[int, ...]:
    """Switches per level (leaf first) of the Clos built by :mod:`libra_opt.fabric.graphs`.

    Notes
    -----
    With radix ``k`` and ``n`` endpoints: one switch when ``n <= k``; else ``ceil(2n/k)`` leaves
    of ``k/2`` endpoints and ``ceil(n/k)`` spines (two tiers), or as many aggregation switches
    as leaves (in pods of ``k^2/4`` endpoints) and ``ceil(n/k)`` cores (three). Every tier
    carries as many links as endpoints, so ``(2t - 1) n`` ports are used whatever the fill.

    Examples
    --------
    >>> clos_level_switches(32768, 64)
    (1024, 1024, 512)
    >>> clos_level_switches(100, None)
    (1,)
    """
    t = clos_tiers(n_endpoints, radix)
    if t == 1:
        return (1,)
    assert radix is not None
    leaves = -(-2 * n_endpoints // radix)
    top = -(-n_endpoints // radix)
    return (leaves, top) if t == 2 else (leaves, leaves, top)


class Dim(Protocol):
    """What a topology reads of a :class:`~libra_opt.fabric.dims.Dim` (``dims`` imports
    this module)."""

    @property
    def size(self) -> int: ...
    @property
    def switch_radix(self) -> int | None: ...
    @property
    def switch_pricing(self) -> str: ...
    @property
    def copper_levels(self) -> int: ...


class Topology(str):
    """A dimension's topology: a ``str`` equal to its name, with the topology's answers.

    The base describes NPUs cabled to each other; :class:`Switch` overrides the counts. In
    the methods ``n`` is the dimension's size and ``k`` the NPUs of a group along it.
    """

    name: ClassVar[str]  # the name (YAML spelling)
    abbr: ClassVar[str]  # short label (search shapes)
    block: ClassVar[str]  # what one building block is called (failure reports)
    aliases: ClassVar[tuple[str, ...]] = ()  # other names a builder or the search takes
    astra_sim_name: ClassVar[str | None] = None  # ASTRA-sim's and LIBRA's name, if any
    hops: ClassVar[int] = 1  # links one algorithm step's message crosses
    switched: ClassVar[bool] = False  # NPUs reach it through NICs and a switch network
    # NPUs cabled to their neighbours only: a message to another peer is forwarded, the
    # ring algorithm is the natural one (k - 1 steps), halving-doubling does not apply
    forwards: ClassVar[bool] = False
    min_size: ClassVar[int] = 1
    components: ClassVar[tuple[str, ...]] = ("link",)  # cost columns it buys
    scales_traffic: ClassVar[bool] = False  # traffic_factor is not always 1

    def __new__(cls) -> Self:
        return str.__new__(cls, cls.name)

    def __reduce__(self) -> tuple[type[Topology], tuple[()]]:
        return (type(self), ())

    def links_per_npu(self, n: int) -> int:
        """Links one NPU's ``B_d`` is split over (each carries ``B_d / links_per_npu``)."""
        return 2

    def cables(self, n: int) -> int:
        """Cables of one block of ``n >= 2`` NPUs (closed form of ``len(wiring(n))``)."""
        raise NotImplementedError

    def wiring(self, n: int) -> tuple[tuple[int, int], ...]:
        """The cables of one block as pairs of positions ``0..n-1`` along the dimension."""
        return ()

    def inventory(self, dim: Dim, n_npus: int, block: int) -> DimInventory:
        """Counts of a dimension of size ``n >= 2`` among ``n_npus`` NPUs: ``N/n`` blocks of
        ``cables(n)`` cables, each two links of ``B / links_per_npu`` (LIBRA counts both)
        with a transceiver at each end (``block``: NPUs of one switch network)."""
        c, blocks = self.cables(dim.size), n_npus // dim.size
        return DimInventory(
            blocks=blocks, links_per_block=2 * c, link_share=1.0 / self.links_per_npu(dim.size),
            switch_ports=0, nics=0, transceivers=2 * c * blocks, cables=c * blocks)

    def latency_steps(self, kind: str, k: int) -> float:
        """Latency-paying steps (LIBRA's model): ``k - 1`` for a reduce-scatter, all-gather
        or all-to-all where messages are forwarded, else one; all-reduce twice; p2p one."""
        base = float(k - 1) if self.forwards and kind != "p2p" else 1.0
        return 2.0 * base if kind == "all_reduce" else base

    def traffic_factor(self, kind: str, k: int) -> float:
        """The hierarchical model's time on the dimension is ``factor x traffic / B_d`` (1:
        LIBRA's model, where the topology changes cost, not the ``1/B`` term)."""
        return 1.0

    def ring_serialization(self, n: int) -> float:
        """A ring-algorithm step's message of ``m`` bytes takes ``this x m / B_d``."""
        return 1.0

    def direct_serialization(self, k: int, n: int) -> float:
        """The direct algorithm's ``k - 1`` messages of ``m`` bytes, sent at once by every
        NPU, take ``this x m / B_d`` (the busiest link's messages x ``links_per_npu``)."""
        raise NotImplementedError

    def farthest_hops(self, k: int) -> int:
        """Links crossed by the farthest of ``k - 1`` peers' messages."""
        return self.hops

    def cable_failure_factor(self, n: int) -> float:
        """What is left of ``B_d`` on a block whose one cable failed (0: the job stops)."""
        raise NotImplementedError


class Ring(Topology):
    """A ring; the ring algorithm runs two counter-rotating rings carrying half of every
    message, so a step takes ``m / B_d`` (a message to one peer ``m / (B_d/2)``).

    Examples
    --------
    >>> r = Ring()
    >>> r == "ring", r.cables(4), r.wiring(2), r.latency_steps("all_reduce", 4)
    (True, 4, ((0, 1), (1, 0)), 6.0)
    """

    name, abbr, block, aliases, astra_sim_name = "ring", "R", "ring", ("torus",), "Ring"
    forwards = True

    def cables(self, n: int) -> int:
        return n

    def wiring(self, n: int) -> tuple[tuple[int, int], ...]:
        return tuple((j, (j + 1) % n) for j in range(n))

    def direct_serialization(self, k: int, n: int) -> float:
        # every peer the shorter way: sum_j min(j, k-j) link-hops over two links of B/2
        return float(sum(min(j, k - j) for j in range(1, k)))

    def farthest_hops(self, k: int) -> int:
        return k // 2

    def cable_failure_factor(self, n: int) -> float:
        return 0.5  # a folded ring over the remaining line: each direction of each cable once


class FullyConnected(Topology):
    """A clique; the direct algorithm sends its ``k - 1`` messages at once, each on its own
    link, the ring algorithm uses ``min(2, n - 1)`` of the links.

    Examples
    --------
    >>> fc = FullyConnected()
    >>> fc.links_per_npu(8), fc.cables(8), fc.ring_serialization(8), fc.latency_steps("all_gather", 8)
    (7, 28, 3.5, 1.0)
    """

    name, abbr, block, astra_sim_name, min_size = (
        "fully_connected", "FC", "clique", "FullyConnected", 2)

    def links_per_npu(self, n: int) -> int:
        return max(n - 1, 1)

    def cables(self, n: int) -> int:
        return n * (n - 1) // 2

    def wiring(self, n: int) -> tuple[tuple[int, int], ...]:
        return tuple(itertools.combinations(range(n), 2))

    def ring_serialization(self, n: int) -> float:
        links = self.links_per_npu(n)
        return links / min(2, links)

    def direct_serialization(self, k: int, n: int) -> float:
        return float(self.links_per_npu(n))

    def cable_failure_factor(self, n: int) -> float:
        # the pair's traffic detours over the n - 2 two-hop paths (a clique of 2 is cut)
        return (n - 2) / (n - 1)


class Switch(Topology):
    """A switch network per block (:attr:`~libra_opt.fabric.dims.Dim.switch_scope`): one
    port of ``B_d`` per NPU; every message goes through it, concurrent ones share it.

    Examples
    --------
    >>> sw = Switch()
    >>> sw.hops, sw.components, sw.direct_serialization(8, 8), sw.latency_steps("all_to_all", 8)
    (2, ('link', 'switch', 'nic'), 7.0, 1.0)
    """

    name, abbr, block, astra_sim_name = "switch", "SW", "switch network", "Switch"
    hops, switched, components = 2, True, ("link", "switch", "nic")

    def links_per_npu(self, n: int) -> int:
        return 1

    def inventory(self, dim: Dim, n_npus: int, block: int) -> DimInventory:
        """Counts of the switch networks of ``block`` NPUs each (LIBRA [1]_, Clos [2]_).

        Notes
        -----
        Without a radix: one ideal switch per block, one link, switch port and NIC of ``B`` per
        NPU. With a radix ``k``: a folded Clos of ``t`` tiers (:func:`clos_tiers`) and ``S``
        switches (:func:`clos_level_switches`) per block: per NPU one NIC port, ``t`` cables and
        ``2t - 1`` switch ports of ``B`` in use; ``S k`` ports bought. The lowest ``copper_levels``
        cable levels are copper, the others optical with ``2(t - c)N`` transceivers.
        """
        blocks, t = n_npus // block, clos_tiers(block, dim.switch_radix)
        switches = blocks * sum(clos_level_switches(block, dim.switch_radix))
        used = (2 * t - 1) * n_npus
        bought = used if dim.switch_radix is None else switches * dim.switch_radix
        copper = dim.copper_levels * n_npus
        return DimInventory(
            blocks=blocks, links_per_block=t * block, link_share=1.0,
            switch_ports=used, nics=n_npus, tiers=t, switches=switches,
            transceivers=2 * (t * n_npus - copper), switch_ports_bought=bought,
            switch_ports_priced=bought if dim.switch_pricing == "whole_switch" else used,
            cables=t * n_npus, copper_cables=copper)

    def direct_serialization(self, k: int, n: int) -> float:
        return float(k - 1)


class Mesh(Topology):
    """A line of NPUs: a ring without its wrap-around cable (on-package chiplet fabrics); the
    two end NPUs have one link of ``B_d / 2``, so a line of ``n`` buys ``(n - 1) B_d``.

    Notes
    -----
    Collectives run the ring algorithm laid on the line: ``k - 1`` one-hop steps, each directed
    link carrying at most one message of ``x / k`` per step, twice a ring's step. The
    hierarchical model charges the busiest link (:meth:`traffic_factor`): reduce-scatter and
    all-gather, whose end NPU sends ``x (k-1)/k`` over one link, factor 2 (so all-reduce);
    all-to-all, whose middle cable carries ``floor(k/2) ceil(k/2)`` messages of ``x/k`` each way,
    ``2 floor(k/2) ceil(k/2) / (k - 1)``; point-to-point 2. A failed cable splits the line: the
    job stops. ASTRA-sim and LIBRA have no mesh.

    Examples
    --------
    >>> m = Mesh()
    >>> m.cables(4), m.wiring(4), m.traffic_factor("all_reduce", 4), m.traffic_factor("all_to_all", 4)
    (3, ((0, 1), (1, 2), (2, 3)), 2.0, 2.6666666666666665)
    """

    name, abbr, block = "mesh", "M", "mesh"
    forwards = scales_traffic = True

    def cables(self, n: int) -> int:
        return n - 1

    def wiring(self, n: int) -> tuple[tuple[int, int], ...]:
        return tuple((j, j + 1) for j in range(n - 1))

    def traffic_factor(self, kind: str, k: int) -> float:
        if kind == "all_to_all" and k > 1:
            return 2 * (k // 2) * ((k + 1) // 2) / (k - 1)
        return 2.0

    def ring_serialization(self, n: int) -> float:
        return 2.0

    def direct_serialization(self, k: int, n: int) -> float:
        return float(2 * (k // 2) * ((k + 1) // 2))  # the middle cable, each way, at B/2

    def farthest_hops(self, k: int) -> int:
        return k - 1

    def cable_failure_factor(self, n: int) -> float:
        return 0.0


#: The topologies, in the order their names are listed (the vocabulary of
#: :data:`libra_opt.options.TOPOLOGIES`).
TOPOLOGY_CLASSES: tuple[type[Topology], ...] = (Ring, FullyConnected, Switch, Mesh)


def topology_names(aliases: bool = False) -> tuple[str, ...]:
    """The names, each followed by its aliases when ``aliases``.

    Examples
    --------
    >>> topology_names(aliases=True)
    ('ring', 'torus', 'fully_connected', 'switch', 'mesh')
    """
    return tuple(n for c in TOPOLOGY_CLASSES for n in (c.name, *(c.aliases if aliases else ())))


def topology_of(name: object, field: str = "topology", *, aliases: bool = False) -> Topology:
    """The topology called ``name`` (a :class:`Topology` is returned as it is); another name is an
    :class:`~libra_opt.errors.InputError` naming ``field`` and the names accepted.

    Examples
    --------
    >>> type(topology_of("torus", aliases=True)).__name__
    'Ring'
    >>> topology_of("torus")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: topology: topology 'torus' is not one of ring, fully_connected, switch, mesh
    """
    if isinstance(name, Topology):
        return name
    for cls in TOPOLOGY_CLASSES:
        if name == cls.name or (aliases and name in cls.aliases):
            return cls()
    raise InputError(f"topology {name!r} is not one of {', '.join(topology_names(aliases))}",
                     field=field)
