"""Component counts of a fabric: links, switch ports, NICs, transceivers and Clos tiers.

Every count is per GB/s of a dimension's per-NPU bandwidth ``B_d`` (linear in ``B_d``), so
pricing them (:mod:`libra_opt.cost.prices`) gives linear cost and power. A switch dimension
without a radix is one ideal switch per block (LIBRA [1]_); with a radix
(:attr:`libra_opt.fabric.dims.Dim.switch_radix`) it is a full-bisection folded Clos whose
tier count follows from its size (:func:`clos_tiers`) [2]_, made of whole switches: its
ports bought (``switches x radix``) may exceed the ports in use, and its lowest
``copper_levels`` cable levels are copper (no transceivers). The counts are checked against
explicit graphs (:mod:`libra_opt.fabric.graphs`).

References
----------
.. [1] W. Won et al., "LIBRA: Enabling Workload-Aware Multi-Dimensional Network Topology
   Optimization for Distributed Training of Large AI Models", ISPASS 2024, arXiv:2109.11762.
.. [2] C. E. Leiserson, "Fat-trees: universal networks for hardware-efficient
   supercomputing", IEEE Trans. Computers 34(10), 1985; M. Al-Fares, A. Loukissas,
   A. Vahdat, "A scalable, commodity data center network architecture", SIGCOMM 2008.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# clos_max_endpoints and clos_tiers live in dims (Fabric checks copper_levels against the
# tier count) and are re-exported here with the other Clos counts.
from libra_opt.fabric.dims import Fabric, clos_max_endpoints, clos_tiers

__all__ = [
    "DimInventory",
    "clos_max_endpoints",
    "clos_tiers",
    "clos_level_switches",
    "switch_block_npus",
    "dimension_inventory",
]


@dataclass(frozen=True)
class DimInventory:
    """Component counts of one dimension, for bandwidth ``B`` GB/s per NPU.

    Attributes
    ----------
    blocks : int
        Building blocks (rings, cliques, switch networks) in the whole fabric.
    links_per_block : int
        Unidirectional links per block (LIBRA's count).
    link_share : float
        Each link carries ``link_share * B`` GB/s.
    switch_ports : int
        Switch ports of ``B`` GB/s in use (link ends on switches) in the whole fabric.
    nics : int
        NIC ports of ``B`` GB/s in the whole fabric.
    tiers : int
        Switch tiers of each block's network: 0 for rings, cliques and size-1 dimensions,
        1 for an ideal switch, 1-3 for a Clos.
    switches : int
        Physical switches in the whole fabric (an ideal switch counts as one).
    transceivers : int
        Optical link ends (one transceiver at each end of every optical cable).
    switch_ports_bought : int
        Switch ports of ``B`` GB/s bought: ``switches x radix`` for a network with a radix
        (whole switches), the ports in use for an ideal switch, 0 without switches.
    switch_ports_priced : int
        The switch ports cost and power are charged for: ``switch_ports_bought`` under
        ``whole_switch`` pricing, ``switch_ports`` under ``used_ports``.
    cables : int
        Physical cables: one per switched link, one per pair of opposite links of a ring or
        a clique.
    copper_cables : int
        Cables of copper (the lowest ``copper_levels`` cable levels of a switch network);
        the other ``cables - copper_cables`` are optical with a transceiver at each end.
    """

    blocks: int
    links_per_block: int
    link_share: float
    switch_ports: int
    nics: int
    tiers: int = 0
    switches: int = 0
    transceivers: int = 0
    switch_ports_bought: int = 0
    switch_ports_priced: int = 0
    cables: int = 0
    copper_cables: int = 0

    @property
    def switch_ports_used(self) -> int:
        """Switch ports in use (the same as :attr:`switch_ports`)."""
        return self.switch_ports

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


def clos_level_switches(n_endpoints: int, radix: int | None) -> tuple[int, ...]:
    """Switches per level (leaf first) of the Clos built by :mod:`libra_opt.fabric.graphs`.

    Notes
    -----
    With ``k`` the radix and ``n`` the endpoints: one switch when ``n <= k``; otherwise
    ``ceil(2n/k)`` leaves (``k/2`` endpoints each) and, for two tiers, ``ceil(n/k)`` spines;
    for three tiers, pods of ``k^2/4`` endpoints with ``ceil(2n/k)`` leaves and as many
    aggregation switches in total, and ``ceil(n/k)`` cores. Every switch-to-switch tier
    carries as many links as endpoints (full bisection), so the ports used are
    ``(2t - 1) n`` whatever the fill.

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


def switch_block_npus(fabric: Fabric, d: int) -> int:
    """NPUs attached to one switch network of dimension ``d``.

    ``prod(size_0..size_d)`` for ``block`` scope (LIBRA), ``size_d`` for ``rail`` scope.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> hb = Dim("hb", "switch", 8, "A")
    >>> switch_block_npus(Fabric((hb, Dim("so", "switch", 16, "B"))), 1)
    128
    >>> switch_block_npus(Fabric((hb, Dim("so", "switch", 16, "B", switch_scope="rail"))), 1)
    16
    """
    dim = fabric.dims[d]
    if dim.switch_scope == "rail":
        return dim.size
    return math.prod(fabric.sizes[: d + 1])


def dimension_inventory(fabric: Fabric, d: int) -> DimInventory:
    """Closed-form component counts of dimension ``d`` (LIBRA's building blocks).

    Notes
    -----
    With ``n`` the dimension size and ``N`` the NPU count:

    * ring: ``N/n`` rings of ``2n`` links carrying ``B/2`` (bidirectional), ``N`` cables;
    * fully connected: ``N/n`` cliques of ``n(n-1)`` links carrying ``B/(n-1)``,
      ``N(n-1)/2`` cables;
    * switch: one ideal switch per block of ``prod(n_0..n_d)`` NPUs, one link (cable),
      switch port and NIC of ``B`` per NPU.
    * switch with a radix ``k``: each block (or each rail, for ``rail`` scope) is a folded
      Clos of ``t`` tiers (:func:`clos_tiers`) and ``S`` switches
      (:func:`clos_level_switches`): per NPU one NIC port, ``t`` links (cables) and
      ``2t - 1`` switch ports of ``B`` in use; ``S k`` ports bought (whole switches).

    Without a radix each case buys ``N * B`` GB/s of links. A dimension of size 1 has no
    links. Of a switch network's ``t`` cable levels, the lowest ``copper_levels`` (``N``
    cables each) are copper; every other cable is optical, with a transceiver at each end:
    ``2N`` of ``B/2`` on a ring, ``N(n-1)`` of ``B/(n-1)`` in a clique (one per
    unidirectional link, as LIBRA counts links) and ``2(t - c)N`` of ``B`` for a switch
    network with ``c`` copper levels.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 8, "T")))
    >>> inv = dimension_inventory(f, 1)
    >>> inv.blocks, inv.links_per_block, inv.link_gbps_per_gbps, inv.nics
    (1, 32, 32.0, 32)
    >>> f = Fabric((Dim("hb", "switch", 8, "T"), Dim("so", "switch", 512, "T", switch_radix=64)))
    >>> inv = dimension_inventory(f, 1)   # 4096 NPUs need a 3-tier Clos
    >>> inv.tiers, inv.switch_ports // 4096, inv.links_per_block // 4096, inv.switches
    (3, 5, 3, 320)
    >>> inv.switch_ports_bought, inv.switch_ports_priced   # 320 whole switches of 64 ports
    (20480, 20480)
    """
    dim = fabric.dims[d]
    n, big_n = dim.size, fabric.n_npus
    if n == 1:
        return DimInventory(blocks=big_n, links_per_block=0, link_share=0.0, switch_ports=0, nics=0)
    if dim.topology == "ring":
        return DimInventory(  # n cables per ring (a ring of 2: two parallel cables)
            blocks=big_n // n, links_per_block=2 * n, link_share=0.5, switch_ports=0, nics=0,
            transceivers=2 * big_n, cables=big_n,
        )
    if dim.topology == "fully_connected":
        return DimInventory(
            blocks=big_n // n, links_per_block=n * (n - 1), link_share=1.0 / (n - 1),
            switch_ports=0, nics=0, transceivers=big_n * (n - 1), cables=big_n * (n - 1) // 2,
        )
    block = switch_block_npus(fabric, d)
    blocks = big_n // block
    t = clos_tiers(block, dim.switch_radix)
    switches = blocks * sum(clos_level_switches(block, dim.switch_radix))
    used = (2 * t - 1) * big_n
    bought = used if dim.switch_radix is None else switches * dim.switch_radix
    copper = dim.copper_levels * big_n
    return DimInventory(
        blocks=blocks, links_per_block=t * block, link_share=1.0,
        switch_ports=used, nics=big_n, tiers=t, switches=switches,
        transceivers=2 * (t * big_n - copper),
        switch_ports_bought=bought,
        switch_ports_priced=bought if dim.switch_pricing == "whole_switch" else used,
        cables=t * big_n, copper_cables=copper,
    )
