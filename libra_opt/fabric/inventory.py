"""Component counts of a fabric per GB/s of a dimension's per-NPU bandwidth ``B_d`` (so that
pricing them, :mod:`libra_opt.cost.prices`, is linear): each topology counts its own
(:meth:`~libra_opt.fabric.topology.Topology.inventory`, LIBRA's building blocks [1]_ or a
folded Clos of whole switches), checked on the graphs of :mod:`libra_opt.fabric.graphs`.

References
----------
.. [1] W. Won et al., "LIBRA: Enabling Workload-Aware Multi-Dimensional Network Topology
   Optimization for Distributed Training of Large AI Models", ISPASS 2024, arXiv:2109.11762.
"""

from __future__ import annotations

import math

from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.topology import DimInventory

__all__ = ["switch_block_npus", "dimension_inventory"]


def switch_block_npus(fabric: Fabric, d: int) -> int:
    """NPUs attached to one switch network of dimension ``d``: ``prod(size_0..size_d)`` for
    ``block`` scope, ``size_d`` for ``rail`` scope.

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
    """Closed-form component counts of dimension ``d`` (its topology's; none for size 1).

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
    if dim.size == 1:
        return DimInventory(blocks=fabric.n_npus, links_per_block=0, link_share=0.0,
                            switch_ports=0, nics=0)
    return dim.topology.inventory(dim, fabric.n_npus, switch_block_npus(fabric, d))
