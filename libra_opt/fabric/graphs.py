"""Explicit networkx graphs of fabrics, node by node, so the tests count the components of
:func:`libra_opt.fabric.inventory.dimension_inventory` (and bisections by max-flow) on them.
NPU ``i`` has coordinates ``c_d``, ``i = sum_d c_d prod(size_0..size_{d-1})``; a
``block``-scope switch network orders its endpoints rail-major, so in a rail-optimized
fat-tree each leaf serves one rail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import networkx as nx
import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.topology import clos_tiers

__all__ = ["npu_coords", "fabric_graph"]


def npu_coords(fabric: Fabric, i: int) -> tuple[int, ...]:
    """Coordinates of NPU ``i``, innermost dimension first.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim
    >>> npu_coords(multi_dim((4, 8), ("ring", "switch")), 13)
    (1, 3)
    """
    return tuple(int(c) for c in np.unravel_index(i, fabric.sizes, order="F"))


def _clos(
    g: nx.MultiGraph, d: int, block: int, ends: list, k: int | None, bw: float, copper: int = 0
) -> None:
    """Add a full-bisection folded Clos over ``ends`` (NIC nodes) with ``k``-port switches;
    cable level ``l`` (0 = NIC-to-leaf) is copper when ``l < copper``."""
    n = len(ends)
    t = clos_tiers(n, k)
    media = ["copper" if lv < copper else "optical" for lv in range(3)]

    def sw(level: int, j: int):
        node = ("switch", d, block, level, j)
        if node not in g:
            g.add_node(node, kind="switch", dim=d, block=block, level=level, radix=k)
        return node

    def uplink(level: int, lower: list[tuple[int, int]], n_upper: int, first: int = 0
               ) -> list[int]:
        """Deal the uplinks of the level-``level`` switches ``(j, count)`` round-robin over
        ``n_upper`` switches of the next level from ``first``; return their loads."""
        loads, up = [0] * n_upper, 0
        for j, count in lower:
            for _ in range(count):
                g.add_edge(sw(level, j), sw(level + 1, first + up % n_upper), kind="fabric",
                           dim=d, bw_gbps=bw, media=media[level + 1])
                loads[up % n_upper] += 1
                up += 1
        return loads

    if t == 1:
        for e in ends:
            g.add_edge(e, sw(0, 0), kind="host", dim=d, bw_gbps=bw, media=media[0])
        return
    assert k is not None
    half = k // 2
    leaves = [ends[i : i + half] for i in range(0, n, half)]
    for li, members in enumerate(leaves):
        for e in members:
            g.add_edge(e, sw(0, li), kind="host", dim=d, bw_gbps=bw, media=media[0])
    n_top = -(-n // k)
    if t == 2:
        uplink(0, [(li, len(m)) for li, m in enumerate(leaves)], n_top)
        return
    agg_loads: list[int] = []
    for p0 in range(0, n, half * half):  # pods of k^2/4 endpoints
        n_pod = min(half * half, n - p0)
        pod_leaves = range(p0 // half, -(-(p0 + n_pod) // half))
        agg_loads += uplink(0, [(li, len(leaves[li])) for li in pod_leaves],
                            -(-n_pod // half), len(agg_loads))
    uplink(1, list(enumerate(agg_loads)), n_top)


def fabric_graph(
    fabric: Fabric, bw_gbps: Sequence[float] | None = None, *, max_npus: int = 65536
) -> nx.MultiGraph:
    """``fabric`` as an explicit graph, capacities at ``bw_gbps`` per NPU (default 1 GB/s each);
    fabrics over ``max_npus`` are refused.

    Nodes are ``("npu", i)`` (``coords``), ``("nic", d, i)`` and ``("switch", d, block, level,
    j)`` (``level`` 0 = leaf; ``radix``); edges carry ``kind`` (``direct``, ``pcie``, ``host``,
    ``fabric``), ``dim``, ``bw_gbps`` (per direction) and, for cables, ``media``. A switch
    dimension is a Clos per block (per rail for ``rail`` scope), leaves of ``k/2`` endpoints,
    each tier's uplinks dealt round-robin over the next level (pods of ``k^2/4`` for 3 tiers).

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only
    >>> g = fabric_graph(rail_only(32, 4, 4))   # 8 HB switches; 4 rails of 8 NPUs, 2 tiers
    >>> sorted({(a["dim"], a["level"]) for _, a in g.nodes(data=True) if a["kind"] == "switch"})
    [(0, 0), (1, 0), (1, 1)]
    >>> sum(1 for _, a in g.nodes(data=True) if a["kind"] == "switch" and a["dim"] == 1)
    24
    """
    n_npus = fabric.n_npus
    if n_npus > max_npus:
        raise InputError(
            f"fabric has {n_npus} NPUs, more than max_npus={max_npus} for an explicit graph",
            field="max_npus",
        )
    bw = np.ones(fabric.n_dims) if bw_gbps is None else np.asarray(bw_gbps, dtype=float)
    if bw.shape != (fabric.n_dims,) or not np.all(np.isfinite(bw)) or np.any(bw < 0):
        raise InputError(
            f"expected {fabric.n_dims} finite bandwidths >= 0 (GB/s)", field="bw_gbps"
        )
    sizes = fabric.sizes
    g = nx.MultiGraph(name="fabric")
    coords = [npu_coords(fabric, i) for i in range(n_npus)]
    for i, c in enumerate(coords):
        g.add_node(("npu", i), kind="npu", coords=c)
    for d, dim in enumerate(fabric.dims):
        n = dim.size
        if n == 1:
            continue
        b = float(bw[d])
        topo = dim.topology
        if not topo.switched:
            share = b / topo.links_per_npu(n)
            stride = math.prod(sizes[:d])
            for i, c in enumerate(coords):
                if c[d]:
                    continue  # enumerate each block once, from coordinate 0
                members = [i + j * stride for j in range(n)]
                for u, v in topo.wiring(n):
                    g.add_edge(("npu", members[u]), ("npu", members[v]), kind="direct", dim=d,
                               bw_gbps=share, media="optical")
            continue
        blocks: dict[tuple[int, ...], list[int]] = {}
        for i, c in enumerate(coords):
            g.add_node(("nic", d, i), kind="nic", dim=d)
            g.add_edge(("npu", i), ("nic", d, i), kind="pcie", dim=d, bw_gbps=b)
            key = c[:d] + c[d + 1 :] if dim.switch_scope == "rail" else c[d + 1 :]
            blocks.setdefault(key, []).append(i)
        for bi, key in enumerate(sorted(blocks)):
            members = sorted(blocks[key], key=lambda i: (coords[i][:d], coords[i][d]))
            _clos(g, d, bi, [("nic", d, i) for i in members], dim.switch_radix, b,
                  dim.copper_levels)
    return g
