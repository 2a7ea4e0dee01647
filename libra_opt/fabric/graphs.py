"""Explicit networkx graphs of fabrics: NPUs, NICs, switches and links with bandwidth.

The cost and power model counts components in closed form
(:func:`libra_opt.fabric.inventory.dimension_inventory`); this module builds the same fabric node by
node so the counts (and bisection bandwidths) can be checked on the graph.

Graph conventions (:func:`fabric_graph`, a :class:`networkx.MultiGraph`):

* nodes ``("npu", i)`` (``kind="npu"``, ``coords``), ``("nic", d, i)`` (one NIC port per
  NPU per switch dimension) and ``("switch", d, block, level, j)`` (``level`` 0 = leaf;
  ``radix``: ports of the physical switch, ``None`` for an ideal switch);
* edges carry ``kind`` (``direct`` NPU-NPU, ``pcie`` NPU-NIC inside the host, ``host``
  NIC-switch, ``fabric`` switch-switch), ``dim``, ``bw_gbps`` (capacity per direction) and,
  for cables (direct, host, fabric), ``media``: ``copper`` on the lowest
  ``copper_levels`` cable levels of a switch network (``host`` is level 0, leaf-to-next
  level 1, and so on), ``optical`` otherwise.

NPU ``i`` has coordinates ``c_d`` with ``i = sum_d c_d prod(size_0..size_{d-1})``
(innermost fastest). Inside a ``block``-scope switch network the endpoints are ordered
rail-major (local rank first), so in a rail-optimized fat-tree each leaf serves one rail.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

import networkx as nx
import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.inventory import clos_tiers

__all__ = [
    "npu_coords",
    "fabric_graph",
    "GraphCounts",
    "graph_counts",
    "graph_cut_gbps",
    "coordinate_cut_gbps",
]

_LINK_KINDS = ("direct", "host", "fabric")


def npu_coords(fabric: Fabric, i: int) -> tuple[int, ...]:
    """Coordinates of NPU ``i``, innermost dimension first.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim
    >>> npu_coords(multi_dim((4, 8), ("ring", "switch")), 13)
    (1, 3)
    """
    out = []
    for n in fabric.sizes:
        out.append(i % n)
        i //= n
    return tuple(out)


def _index(sizes: Sequence[int], coords: Sequence[int]) -> int:
    i, stride = 0, 1
    for c, n in zip(coords, sizes, strict=True):
        i += c * stride
        stride *= n
    return i


def _clos(
    g: nx.MultiGraph, d: int, block: int, ends: list, k: int | None, bw: float, copper: int = 0
) -> None:
    """Add a full-bisection folded Clos over ``ends`` (NIC nodes) with ``k``-port switches.

    Cable level ``l`` (0 = NIC-to-leaf) is copper when ``l < copper``.
    """
    n = len(ends)
    t = clos_tiers(n, k)
    media = ["copper" if lv < copper else "optical" for lv in range(3)]

    def sw(level: int, j: int):
        node = ("switch", d, block, level, j)
        if node not in g:
            g.add_node(node, kind="switch", dim=d, block=block, level=level, radix=k)
        return node

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
        g_up = 0
        for li, members in enumerate(leaves):
            for _ in members:
                g.add_edge(sw(0, li), sw(1, g_up % n_top), kind="fabric", dim=d, bw_gbps=bw,
                           media=media[1])
                g_up += 1
        return
    pod = half * half
    agg_offset = 0
    agg_loads: list[int] = []
    for p0 in range(0, n, pod):
        pod_leaves = range(p0 // half, -(-min(p0 + pod, n) // half))
        n_pod = min(p0 + pod, n) - p0
        n_agg = -(-n_pod // half)
        agg_loads.extend([0] * n_agg)
        g_up = 0
        for li in pod_leaves:
            for _ in leaves[li]:
                a = agg_offset + g_up % n_agg
                g.add_edge(sw(0, li), sw(1, a), kind="fabric", dim=d, bw_gbps=bw,
                           media=media[1])
                agg_loads[a] += 1
                g_up += 1
        agg_offset += n_agg
    h_up = 0
    for a, load in enumerate(agg_loads):
        for _ in range(load):
            g.add_edge(sw(1, a), sw(2, h_up % n_top), kind="fabric", dim=d, bw_gbps=bw,
                       media=media[2])
            h_up += 1


def fabric_graph(
    fabric: Fabric, bw_gbps: Sequence[float] | None = None, *, max_npus: int = 65536
) -> nx.MultiGraph:
    """Build ``fabric`` as an explicit graph.

    Parameters
    ----------
    fabric : Fabric
    bw_gbps : sequence of float, optional
        Per-NPU bandwidth of every dimension (default 1 GB/s each, so capacities are "per
        GB/s of B").
    max_npus : int
        Refuse larger fabrics (graphs grow with ``N``).

    Returns
    -------
    networkx.MultiGraph
        See the module notes for node and edge attributes. Parallel links (a ring of 2, a
        leaf with more uplinks than spines) are separate edges.

    Notes
    -----
    * ring of ``n >= 2``: ``n`` edges of ``B/2`` per ring (LIBRA's ``2n`` unidirectional
      links); fully connected: ``n(n-1)/2`` edges of ``B/(n-1)``;
    * switch without radix: one switch per block, a ``host`` edge of ``B`` per NPU;
    * switch with radix ``k``: a Clos of ``clos_tiers`` tiers per block (per rail for
      ``rail`` scope): leaves of ``k/2`` endpoints; each tier's uplinks equal its
      downlinks, dealt round-robin over the next level (pods of ``k^2/4`` for 3 tiers);
    * the cables of the lowest ``copper_levels`` levels of a switch network are copper.

    Counts always equal :func:`libra_opt.fabric.inventory.dimension_inventory`. Bisection equals the
    full-bisection closed form (:func:`coordinate_cut_gbps`) when the sizes divide evenly
    (powers of two); with irregular sizes, integral links cannot be spread perfectly and a
    cut may fall a few links short.

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
        if dim.topology in ("ring", "fully_connected"):
            for c in coords:
                if c[d]:
                    continue  # enumerate each ring/clique once, from coordinate 0
                members = [_index(sizes, (*c[:d], j, *c[d + 1 :])) for j in range(n)]
                if dim.topology == "ring":
                    for j in range(n):
                        u, v = members[j], members[(j + 1) % n]
                        g.add_edge(("npu", u), ("npu", v), kind="direct", dim=d, bw_gbps=b / 2,
                                   media="optical")
                else:
                    for a in range(n):
                        for z in range(a + 1, n):
                            g.add_edge(("npu", members[a]), ("npu", members[z]),
                                       kind="direct", dim=d, bw_gbps=b / (n - 1),
                                       media="optical")
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


@dataclass(frozen=True)
class GraphCounts:
    """Components of one dimension counted on a graph (compare with ``DimInventory``).

    Attributes
    ----------
    switches : int
    switch_ports : int
        Link ends attached to switches (ports in use).
    switch_ports_bought : int
        Ports of the switches: ``sum radix`` over switch nodes, the ports in use on an
        ideal switch (no radix).
    cables : int
        Physical links (graph edges of kind direct, host or fabric).
    copper_cables : int
        Cables with ``media="copper"``.
    libra_links : int
        Links as LIBRA counts them: each direct edge twice (unidirectional), each switched
        link once.
    link_gbps : float
        ``sum 2 b`` over direct edges plus ``sum b`` over switched links (LIBRA's link GB/s).
    transceivers : int
        Optical link ends, two per optical cable.
    transceiver_gbps : float
        ``sum 2 b`` over optical cables.
    copper_gbps : float
        ``sum b`` over copper cables (switched links: LIBRA's link GB/s of copper).
    nic_ports : int
    tiers : int
        Switch levels (0 when the dimension has no switch).
    """

    switches: int
    switch_ports: int
    cables: int
    libra_links: int
    link_gbps: float
    transceivers: int
    transceiver_gbps: float
    nic_ports: int
    tiers: int
    switch_ports_bought: int = 0
    copper_cables: int = 0
    copper_gbps: float = 0.0


class _Tally(TypedDict):
    """Running counts of one dimension in :func:`graph_counts` (``lv``: switch levels seen)."""

    sw: int
    ports: int
    cables: int
    libra: int
    lg: float
    tr: int
    tg: float
    nic: int
    lv: set[int]
    bought: int
    cu: int
    cg: float


def graph_counts(graph: nx.MultiGraph, n_dims: int) -> tuple[GraphCounts, ...]:
    """Count switches, ports, links, transceivers and NIC ports per dimension.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim
    >>> f = multi_dim((4, 8), ("ring", "switch"))
    >>> c = graph_counts(fabric_graph(f), 2)
    >>> c[0].libra_links, c[0].link_gbps, c[1].switch_ports, c[1].nic_ports
    (64, 32.0, 32, 32)
    """
    acc = [_Tally(sw=0, ports=0, cables=0, libra=0, lg=0.0, tr=0, tg=0.0, nic=0, lv=set(),
                  bought=0, cu=0, cg=0.0)
           for _ in range(n_dims)]
    ideal: set = set()
    for node, a in graph.nodes(data=True):
        if a["kind"] == "switch":
            acc[a["dim"]]["sw"] += 1
            acc[a["dim"]]["lv"].add(a["level"])
            if a.get("radix") is None:
                ideal.add(node)
            else:
                acc[a["dim"]]["bought"] += a["radix"]
        elif a["kind"] == "nic":
            acc[a["dim"]]["nic"] += 1
    for u, v, a in graph.edges(data=True):
        if a["kind"] not in _LINK_KINDS:
            continue
        c, b = acc[a["dim"]], a["bw_gbps"]
        c["cables"] += 1
        if a.get("media") == "copper":
            c["cu"] += 1
            c["cg"] += b
        else:
            c["tr"] += 2
            c["tg"] += 2 * b
        c["bought"] += sum(1 for x in (u, v) if x in ideal)
        if a["kind"] == "direct":
            c["libra"] += 2
            c["lg"] += 2 * b
        else:
            c["libra"] += 1
            c["lg"] += b
            c["ports"] += sum(1 for x in (u, v) if x[0] == "switch")
    return tuple(
        GraphCounts(switches=c["sw"], switch_ports=c["ports"], cables=c["cables"],
                    libra_links=c["libra"], link_gbps=c["lg"], transceivers=c["tr"],
                    transceiver_gbps=c["tg"], nic_ports=c["nic"], tiers=len(c["lv"]),
                    switch_ports_bought=c["bought"], copper_cables=c["cu"], copper_gbps=c["cg"])
        for c in acc
    )


def graph_cut_gbps(graph: nx.MultiGraph, side_a: Iterable[int]) -> float:
    """Maximum flow (GB/s, one direction) from NPU set ``side_a`` to all other NPUs.

    By max-flow/min-cut this is the capacity of the smallest cut separating the two sets,
    every other node (NICs, switches) free to fall on either side.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim
    >>> g = fabric_graph(multi_dim((8,), ("ring",)), [10.0])
    >>> graph_cut_gbps(g, range(4))      # two ring edges of 5 GB/s
    10.0
    """
    a = {("npu", int(i)) for i in side_a}
    h = nx.DiGraph()
    for u, v, attrs in graph.edges(data=True):
        for x, y in ((u, v), (v, u)):
            if h.has_edge(x, y):
                h[x][y]["capacity"] += attrs["bw_gbps"]
            else:
                h.add_edge(x, y, capacity=attrs["bw_gbps"])
    for node, attrs in graph.nodes(data=True):
        if attrs["kind"] == "npu":
            if node in a:
                h.add_edge("_src", node)  # no capacity attribute: infinite
            else:
                h.add_edge(node, "_dst")
    if "_src" not in h or "_dst" not in h:
        return 0.0
    return float(nx.maximum_flow_value(h, "_src", "_dst"))


def coordinate_cut_gbps(fabric: Fabric, bw_gbps: Sequence[float], d: int) -> float:
    """Closed-form bandwidth across the cut that halves coordinate ``d`` (GB/s, one way).

    Notes
    -----
    Side A holds the NPUs with ``c_d < n_d / 2`` (``n_d`` even). Networks that do not vary
    coordinate ``d`` carry nothing across; the others contribute

    * dimension ``d`` itself: ring ``N B_d / n_d`` (two edges of ``B_d/2`` per ring),
      clique ``(N / n_d) (n_d/2)^2 B_d / (n_d - 1)``, switch (any scope, any tier count;
      full bisection) ``N B_d / 2``;
    * an outer ``block``-scope switch ``e > d``: its blocks contain dimension ``d``, split
      in halves: ``N B_e / 2``. Outer rings, cliques and ``rail``-scope switches connect
      NPUs with equal ``c_d``: nothing.

    Since every NPU of a side is joined to one super-node, the dimensions' networks act in
    parallel and their cuts add up.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
    >>> coordinate_cut_gbps(rail_optimized_fat_tree(64, 8, 8), [400, 50], 0)   # split rails
    14400.0
    >>> coordinate_cut_gbps(rail_only(64, 8, 8), [400, 50], 0)   # rails do not cross
    12800.0
    """
    n = fabric.sizes[d]
    if n % 2:
        raise InputError(f"dimension {d} has odd size {n}; halving needs an even size", field="d")
    big_n = fabric.n_npus
    bw = [float(x) for x in bw_gbps]
    dim = fabric.dims[d]
    if dim.topology == "ring":
        cut = big_n * bw[d] / n
    elif dim.topology == "fully_connected":
        cut = big_n / n * (n / 2) ** 2 * bw[d] / (n - 1)
    else:
        cut = big_n * bw[d] / 2
    for e in range(d + 1, fabric.n_dims):
        outer = fabric.dims[e]
        if outer.topology == "switch" and outer.switch_scope == "block" and outer.size > 1:
            cut += big_n * bw[e] / 2
    return cut
