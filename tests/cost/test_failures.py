"""Failure modes: counts and blast radius against the networkx graph of the same fabric,
and the failure rates derived from Llama 3's Table 5."""

from __future__ import annotations

from collections import Counter, defaultdict

import networkx as nx
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.failures import DEFAULT_RATES_PER_H, LLAMA3_TABLE5, check_rates, failure_modes
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.fabric.graphs import fabric_graph
from tests.fabric.graph_checks import graph_cut_gbps

FABRICS = [
    rail_optimized_fat_tree(512, 8, 64),      # 2-tier Clos
    rail_optimized_fat_tree(256, 4, 16),      # 3-tier Clos, full pods
    rail_optimized_fat_tree(40, 2, 8),        # 3-tier, a half pod
    rail_optimized_fat_tree(17, 1, 8),        # 2-tier, a leaf with one endpoint
    rail_only(256, 8, 16),                    # rails of 32: 2-tier
    rail_only(64, 8, 64),                     # rails of 8: one switch each
    multi_dim((4, 6, 8), ("ring", "fully_connected", "switch")),
    multi_dim((2, 2, 4), ("fully_connected", "ring", "switch"), switch_radix=4),
    multi_dim((5, 2, 4), ("mesh", "mesh", "switch")),
]


def _dim_graph(g: nx.MultiGraph, d: int) -> nx.MultiGraph:
    """The links of dimension ``d`` alone (with their end nodes)."""
    return g.edge_subgraph([(u, v, k) for u, v, k, a in g.edges(keys=True, data=True)
                            if a["dim"] == d])


def _switch_levels(g: nx.MultiGraph, d: int) -> dict[int, list]:
    levels = defaultdict(list)
    for node, a in g.nodes(data=True):
        if a["kind"] == "switch" and a["dim"] == d:
            levels[a["level"]].append(node)
    return levels


def _uplink_losses(g: nx.MultiGraph, d: int, level: int) -> tuple[float, float]:
    """On the graph: the worst share of a lower switch's uplinks lost with one switch of
    ``level`` (and with one of its cables)."""
    up = defaultdict(Counter)   # lower switch -> upper switch -> links
    for u, v, a in g.edges(data=True):
        if a["kind"] != "fabric" or a["dim"] != d:
            continue
        lo, hi = sorted((u, v), key=lambda n: n[3])
        if hi[3] == level:
            up[lo][hi] += 1
    switch = max(c / sum(cs.values()) for cs in up.values() for c in cs.values())
    cable = max(1 / sum(cs.values()) for cs in up.values())
    return switch, cable


@pytest.mark.parametrize("fabric", FABRICS, ids=lambda f: "x".join(map(str, f.sizes)))
def test_counts_and_blast_radius_match_the_graph(fabric) -> None:
    # every dimension leaves the host (one NPU per host): all its parts fail
    modes = failure_modes(fabric, gpus_per_host=1)
    g = fabric_graph(fabric)
    n = fabric.n_npus
    by_kind = {m.kind: m.count for m in modes if m.where in ("NPU", "NPU memory", "host")}
    assert by_kind == {"gpu": n, "hbm": n, "host": n}
    for d, dim in enumerate(fabric.dims):
        if dim.size == 1:
            continue
        mine = [m for m in modes if m.where.startswith(f"{dim.name} ")]
        edges = [(u, v, a) for u, v, a in g.edges(data=True)
                 if a["dim"] == d and a["kind"] in ("direct", "host", "fabric")]
        # cables: the same number as the graph's links of the dimension
        assert sum(m.count for m in mine if m.kind == "link") == len(edges)
        nics = sum(1 for _, a in g.nodes(data=True) if a["kind"] == "nic" and a["dim"] == d)
        assert sum(m.count for m in mine if m.kind == "nic") == nics
        if dim.topology != "switch":
            (m,) = mine
            u, v, a = edges[0]
            h = g.copy()
            h.remove_edge(u, v)
            before, after = (_dim_graph(x, d) for x in (g, h))
            if dim.topology == "mesh" or (dim.topology == "fully_connected" and dim.size == 2):
                # the block falls apart: the two ends of the cable are no longer connected
                assert m.stops and not (u in after and v in after and nx.has_path(after, u, v))
                continue
            # NPU u keeps this share of its bandwidth into the dimension (max flow)
            ratio = graph_cut_gbps(after, [u[1]]) / graph_cut_gbps(before, [u[1]])
            assert not m.stops and m.dim == d
            assert_allclose(ratio, m.bw_factor, rtol=1e-12)
            continue
        levels = _switch_levels(g, d)
        switches = sorted((m for m in mine if m.kind == "switch"), key=lambda m: m.where)
        assert sorted(m.count for m in switches) == sorted(len(v) for v in levels.values())
        assert sum(1 for _, _, a in edges if a["kind"] == "host") == n
        leaf, host = mine[1], mine[2]
        assert (leaf.count, leaf.stops, host.count, host.stops) == (len(levels[0]), True, n,
                                                                    True)
        for lv in range(1, len(levels)):
            sw, cable = mine[1 + 2 * lv], mine[2 + 2 * lv]
            assert sw.count == len(levels[lv]) and cable.count == n
            lost_switch, lost_cable = _uplink_losses(g, d, lv)
            for m, lost in ((sw, lost_switch), (cable, lost_cable)):
                if lost == 1:  # a lower switch hangs on this one part: cut off
                    assert m.stops
                else:
                    assert not m.stops and m.dim == d
                    assert_allclose(m.bw_factor, 1 - lost, rtol=1e-12)


def test_a_lone_uplink_makes_a_spine_failure_stop_the_job() -> None:
    # 17 endpoints on radix 8: the fifth leaf serves one NPU, its one uplink on one spine
    modes = {m.where: m for m in failure_modes(rail_optimized_fat_tree(17, 1, 8), gpus_per_host=1)}
    assert modes["scaleout spine"].stops and modes["scaleout leaf-spine cable"].stops


def test_host_dimensions_have_no_failures_of_their_own() -> None:
    # an 8-GPU NVLink domain inside its host: its failures are the GPU's (Table 5)
    f = rail_optimized_fat_tree(1024, 8, 64)
    assert not any(m.where.startswith("hb ") for m in failure_modes(f, gpus_per_host=8))
    # a 16-GPU domain spans two hosts: its switch and cables fail, and stop the job
    f16 = rail_optimized_fat_tree(1024, 16, 64)
    hb = [m for m in failure_modes(f16, gpus_per_host=8) if m.where.startswith("hb ")]
    assert [(m.kind, m.count, m.stops) for m in hb] == [
        ("nic", 1024, True), ("switch", 64, True), ("link", 1024, True)]


def test_rail_only_loses_the_same_npus_as_the_fat_tree() -> None:
    # a leaf or a NIC-to-leaf cable stops both; rail-only has no spine-level parts here
    fat, rail = (failure_modes(b(4096, 8, 64)) for b in (rail_optimized_fat_tree, rail_only))
    stop = [{(m.kind, m.count) for m in ms if m.stops} for ms in (fat, rail)]
    assert stop[0] == stop[1]
    assert [m.where for m in rail if not m.stops] == ["scaleout spine",
                                                      "scaleout leaf-spine cable"]
    assert len([m for m in fat if not m.stops]) == 4   # aggregation and core levels


def test_defaults_are_table_5_per_component_hour() -> None:
    # Dubey et al. 2024, Table 5: 419 unexpected interruptions, 54 days, 16,384 GPUs;
    # the example's fabric: 512 + 512 + 256 switches and 3 x 16,384 cables
    hours = 54 * 24
    assert sum(LLAMA3_TABLE5.values()) == 419
    assert_allclose(DEFAULT_RATES_PER_H["gpu"] * 16384 * hours, 148 + 19 + 17 + 6 + 6)
    assert_allclose(DEFAULT_RATES_PER_H["host"] * 2048 * hours, 32 + 3 + 3 + 2 + 2 + 2 + 2)
    assert_allclose(DEFAULT_RATES_PER_H["link"] * (1280 + 3 * 16384) * hours, 35)
    modes = failure_modes(rail_optimized_fat_tree(16384, 8, 64))
    assert_allclose(sum(m.failures_per_h for m in modes) * hours, 419, rtol=1e-12)


def test_rates_by_tier_replace_the_kinds() -> None:
    f = rail_optimized_fat_tree(1024, 16, 64)
    rates = check_rates({"link.ScaleUp": 1e-4})
    by = {m.where: m.rate_per_h for m in failure_modes(f, rates)}
    assert by["hb host cable"] == 1e-4
    assert by["scaleout host cable"] == DEFAULT_RATES_PER_H["link"]


@pytest.mark.parametrize(("given", "field"), [
    ({"rates_per_h": {"gpu": -1e-6}}, "reliability.rates_per_h.gpu"),
    ({"rates_per_h": {"gpu": 0}}, "reliability.rates_per_h.gpu"),
    ({"mtbf_h": {"hbm": 0}}, "reliability.mtbf_h.hbm"),
    ({"rates_per_h": {"fan": 1e-6}}, "reliability.rates_per_h.fan"),
    ({"rates_per_h": {"gpu.ScaleUp": 1e-6}}, "reliability.rates_per_h.gpu.ScaleUp"),
    ({"rates_per_h": {"gpu": 1e-6}, "mtbf_h": {"gpu": 1e5}}, "reliability.mtbf_h.gpu"),
])
def test_bad_rates_name_the_field(given, field) -> None:
    with pytest.raises(InputError) as exc:
        check_rates(given.get("rates_per_h"), given.get("mtbf_h"))
    assert exc.value.field == field


def test_gpus_per_host_must_divide_the_npus() -> None:
    with pytest.raises(InputError, match="dividing the 64 NPUs") as exc:
        failure_modes(rail_only(64, 8, 64), gpus_per_host=5)
    assert exc.value.field == "reliability.gpus_per_host"
