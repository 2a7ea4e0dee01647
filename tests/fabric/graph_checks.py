"""Counts and cuts on the explicit graphs of :func:`libra_opt.fabric.graphs.fabric_graph`,
and the closed-form cuts they are checked against (test helpers)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import networkx as nx

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric

_LINK_KINDS = ("direct", "host", "fabric")


@dataclass(frozen=True)
class GraphCounts:
    """Components of one dimension counted on a graph (compare with ``DimInventory``).

    ``switch_ports``: link ends on switches (in use); ``switch_ports_bought``: ``sum radix``
    over switch nodes, the ports in use on an ideal switch; ``cables``: direct, host and
    fabric edges; ``libra_links``: each direct edge twice (unidirectional), each switched
    link once; ``link_gbps``: ``sum 2 b`` over direct edges plus ``sum b`` over switched
    links; ``transceivers`` and ``transceiver_gbps``: two ends of ``b`` per optical cable;
    ``copper_gbps``: ``sum b`` over copper cables; ``tiers``: switch levels.
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


def graph_counts(graph: nx.MultiGraph, n_dims: int) -> tuple[GraphCounts, ...]:
    """Count switches, ports, links, transceivers and NIC ports per dimension."""
    acc: list[Counter] = [Counter() for _ in range(n_dims)]
    levels: list[set[int]] = [set() for _ in range(n_dims)]
    ideal = set()
    for node, a in graph.nodes(data=True):
        if a["kind"] == "switch":
            acc[a["dim"]]["switches"] += 1
            levels[a["dim"]].add(a["level"])
            if a.get("radix") is None:
                ideal.add(node)
            else:
                acc[a["dim"]]["switch_ports_bought"] += a["radix"]
        elif a["kind"] == "nic":
            acc[a["dim"]]["nic_ports"] += 1
    for u, v, a in graph.edges(data=True):
        if a["kind"] not in _LINK_KINDS:
            continue
        c, b = acc[a["dim"]], a["bw_gbps"]
        c["cables"] += 1
        if a.get("media") == "copper":
            c["copper_cables"] += 1
            c["copper_gbps"] += b
        else:
            c["transceivers"] += 2
            c["transceiver_gbps"] += 2 * b
        c["switch_ports_bought"] += sum(1 for x in (u, v) if x in ideal)
        ends = 2 if a["kind"] == "direct" else 1
        c["libra_links"] += ends
        c["link_gbps"] += ends * b
        if a["kind"] != "direct":
            c["switch_ports"] += sum(graph.nodes[x]["kind"] == "switch" for x in (u, v))
    fields = GraphCounts.__dataclass_fields__
    return tuple(GraphCounts(**{f: c[f] for f in fields if f != "tiers"}, tiers=len(lv))
                 for c, lv in zip(acc, levels, strict=True))


def graph_cut_gbps(graph: nx.MultiGraph, side_a: Iterable[int]) -> float:
    """Maximum flow (GB/s, one direction) from NPU set ``side_a`` to all other NPUs: by
    max-flow/min-cut the smallest cut between the two sets, every other node (NICs,
    switches) free to fall on either side."""
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

    Side A holds the NPUs with ``c_d < n_d / 2`` (``n_d`` even). Dimension ``d`` itself
    contributes: ring ``N B_d / n_d`` (two edges of ``B_d/2`` per ring), mesh
    ``N B_d / (2 n_d)`` (one), clique ``(N / n_d) (n_d/2)^2 B_d / (n_d - 1)``, switch (any
    scope, any tier count; full bisection) ``N B_d / 2``; an outer ``block``-scope switch
    ``e > d`` (its blocks contain dimension ``d``, split in halves) ``N B_e / 2``; other
    outer networks connect NPUs with equal ``c_d``: nothing. Every NPU of a side is joined
    to one super-node, so the networks act in parallel and their cuts add up.
    """
    n = fabric.sizes[d]
    if n % 2:
        raise InputError(f"dimension {d} has odd size {n}; halving needs an even size", field="d")
    big_n, bw = fabric.n_npus, [float(x) for x in bw_gbps]
    own = {"ring": big_n * bw[d] / n, "mesh": big_n * bw[d] / (2 * n),
           "fully_connected": big_n / n * (n / 2) ** 2 * bw[d] / (n - 1),
           "switch": big_n * bw[d] / 2}
    cut = own[fabric.dims[d].topology]
    for e in range(d + 1, fabric.n_dims):
        outer = fabric.dims[e]
        if outer.topology == "switch" and outer.switch_scope == "block" and outer.size > 1:
            cut += big_n * bw[e] / 2
    return cut
