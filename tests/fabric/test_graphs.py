"""Closed-form component counts (cost model) against counts on explicit networkx graphs."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.graphs import fabric_graph, npu_coords
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.fabric.topology import clos_level_switches, clos_max_endpoints, clos_tiers
from libra_opt.report.plots import plot_fabric
from tests.fabric.graph_checks import coordinate_cut_gbps, graph_counts, graph_cut_gbps

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_counts_match(fabric):
    counts = graph_counts(fabric_graph(fabric), fabric.n_dims)
    for d, c in enumerate(counts):
        inv = dimension_inventory(fabric, d)
        assert c.switches == inv.switches, (d, c, inv)
        assert c.switch_ports == inv.switch_ports, (d, c, inv)
        assert c.libra_links == inv.blocks * inv.links_per_block, (d, c, inv)
        assert c.link_gbps == pytest.approx(inv.link_gbps_per_gbps, rel=1e-12, abs=1e-12)
        assert c.transceivers == inv.transceivers, (d, c, inv)
        assert c.transceiver_gbps == pytest.approx(inv.transceiver_gbps_per_gbps, rel=1e-12,
                                                   abs=1e-12)
        assert c.nic_ports == inv.nics, (d, c, inv)
        assert c.tiers == (inv.tiers if fabric.dims[d].topology == "switch" else 0)
        assert c.switch_ports_bought == inv.switch_ports_bought, (d, c, inv)
        assert c.cables == inv.cables, (d, c, inv)
        assert c.copper_cables == inv.copper_cables, (d, c, inv)
        assert c.copper_gbps == pytest.approx(inv.copper_gbps_per_gbps, rel=1e-12, abs=1e-12)
    return counts


def _two_level(draw, builder):
    radix = draw(st.sampled_from([4, 6, 8, 10, 16]))
    h = draw(st.integers(1, 8))
    rails = draw(st.integers(1, 48))
    n = h * rails
    block = n if builder is rail_optimized_fat_tree else rails
    if block > clos_max_endpoints(radix, 3) or n > 600:
        return None
    return builder(n, h, radix, hb_topology=draw(st.sampled_from(["switch", "ring",
                                                                  "fully_connected"]))
                   if h > 1 else "switch")


@st.composite
def two_level_fabrics(draw):
    builder = draw(st.sampled_from([rail_only, rail_optimized_fat_tree]))
    return _two_level(draw, builder)


@st.composite
def mixed_fabrics(draw):
    n_dims = draw(st.integers(1, 3))
    dims = []
    for i in range(n_dims):
        topo = draw(st.sampled_from(["ring", "fully_connected", "switch", "mesh"]))
        size = draw(st.integers(2 if topo == "fully_connected" else 1, 6))
        radix = draw(st.sampled_from([None, 4, 6])) if topo == "switch" else None
        scope = draw(st.sampled_from(["block", "rail"])) if topo == "switch" else "block"
        pricing = draw(st.sampled_from(["whole_switch", "used_ports"]))
        dims.append(Dim(f"d{i}", topo, size, "T", switch_radix=radix, switch_scope=scope,
                        switch_pricing=pricing))
    sizes = [x.size for x in dims]
    for d, dim in enumerate(dims):
        if dim.switch_radix is not None:
            block = dim.size if dim.switch_scope == "rail" else math.prod(sizes[: d + 1])
            if block > clos_max_endpoints(dim.switch_radix, 3):
                return None
        if dim.topology == "switch" and dim.size > 1:
            block = dim.size if dim.switch_scope == "rail" else math.prod(sizes[: d + 1])
            copper = draw(st.integers(0, clos_tiers(block, dim.switch_radix)))
            dims[d] = dataclasses.replace(dim, copper_levels=copper)
    return Fabric(tuple(dims))


@FAST
@given(two_level_fabrics())
def test_two_level_counts_match_graph(fabric):
    if fabric is not None:
        assert_counts_match(fabric)


@FAST
@given(mixed_fabrics())
def test_multi_dim_counts_match_graph(fabric):
    if fabric is not None:
        assert_counts_match(fabric)


def test_clos_tier_boundaries_radix_64():
    assert [clos_tiers(n, 64) for n in (1, 64, 65, 2048, 2049, 65536)] == [1, 1, 2, 2, 3, 3]
    assert clos_tiers(10**9, None) == 1
    with pytest.raises(InputError, match="more than 3 tiers"):
        clos_tiers(65537, 64)


def test_full_fat_tree_switch_counts_al_fares():
    # k-ary fat-tree (Al-Fares et al. 2008): k^3/4 hosts, 5k^2/4 switches, (k/2)^2 cores.
    for k in (4, 8, 48):
        levels = clos_level_switches(k**3 // 4, k)
        assert levels == (k * k // 2, k * k // 2, (k // 2) ** 2)
        assert sum(levels) == 5 * k * k // 4
    assert sum(clos_level_switches(27648, 48)) == 2880


def test_two_tier_leaf_spine_counts():
    # 2048 = 64^2/2 endpoints: 64 leaves (32 down, 32 up), 32 spines of 64 ports.
    assert clos_level_switches(2048, 64) == (64, 32)
    inv = dimension_inventory(rail_optimized_fat_tree(2048, 8, 64), 1)
    assert (inv.tiers, inv.switches, inv.switch_ports, inv.transceivers) == (2, 96, 3 * 2048,
                                                                            4 * 2048)
    assert inv.switches * 64 == inv.switch_ports  # every port used


def test_ideal_switch_counts_unchanged_by_scope():
    # Without a radix, rail scope changes connectivity but not LIBRA's port/link counts.
    block = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 8, "T")))
    rail = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 8, "T", switch_scope="rail")))
    ib, ir = dimension_inventory(block, 1), dimension_inventory(rail, 1)
    assert ib.link_gbps_per_gbps == ir.link_gbps_per_gbps == 32
    assert ib.switch_ports == ir.switch_ports == ib.nics == 32
    assert (ib.switches, ir.switches) == (1, 4)


@st.composite
def power_of_two_fabrics(draw):
    kind = draw(st.sampled_from(["fat_tree", "rail_only", "torus", "mixed"]))
    if kind in ("fat_tree", "rail_only"):
        radix = draw(st.sampled_from([4, 8]))
        h = 2 ** draw(st.integers(1, 3))
        rails = 2 ** draw(st.integers(1, 5))
        builder = rail_only if kind == "rail_only" else rail_optimized_fat_tree
        block = h * rails if kind == "fat_tree" else rails
        if block > clos_max_endpoints(radix, 3):
            return None
        return builder(h * rails, h, radix)
    if kind == "torus":
        shape = tuple(2 * draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 3))))
        return multi_dim(shape, ("torus",) * len(shape), tiers=("T",) * len(shape))
    inner = draw(st.sampled_from(["ring", "mesh"]))
    return multi_dim((2 * draw(st.integers(1, 2)), 4, 2 ** draw(st.integers(1, 3))),
                     (inner, "fully_connected", "switch"), switch_radix=8)


@settings(max_examples=40, deadline=None)
@given(power_of_two_fabrics(), st.lists(st.floats(1.0, 500.0), min_size=3, max_size=3))
def test_coordinate_cut_matches_graph_min_cut(fabric, bw):
    if fabric is None:
        return
    bw = bw[: fabric.n_dims]
    g = fabric_graph(fabric, bw)
    for d in range(fabric.n_dims):
        if fabric.sizes[d] % 2:
            continue
        side = [i for i in range(fabric.n_npus) if npu_coords(fabric, i)[d] < fabric.sizes[d] // 2]
        assert graph_cut_gbps(g, side) == pytest.approx(coordinate_cut_gbps(fabric, bw, d),
                                                        rel=1e-9)


def test_rail_only_bisection_against_fat_tree_by_hand():
    # 64 GPUs, HB 8 at 400 GB/s, scale-out 50 GB/s. Splitting HB domains (halving local
    # rank): the fat-tree's Clos crosses (32 x 50) besides NVLink (32 x 400); rails do not.
    ft, ro, bw = rail_optimized_fat_tree(64, 8, 8), rail_only(64, 8, 8), [400.0, 50.0]
    side = [i for i in range(64) if i % 8 < 4]
    assert graph_cut_gbps(fabric_graph(ft, bw), side) == pytest.approx(32 * 400 + 32 * 50)
    assert graph_cut_gbps(fabric_graph(ro, bw), side) == pytest.approx(32 * 400)
    # Splitting whole HB domains: both deliver N/2 x 50 GB/s.
    side = range(32)
    assert graph_cut_gbps(fabric_graph(ro, bw), side) == pytest.approx(32 * 50)
    assert graph_cut_gbps(fabric_graph(ft, bw), side) == pytest.approx(32 * 50)


def test_graph_rejects_bad_input():
    with pytest.raises(InputError, match="max_npus"):
        fabric_graph(rail_only(1024, 8), max_npus=100)
    with pytest.raises(InputError, match="bandwidths"):
        fabric_graph(rail_only(16, 4, 4), [1.0])
    with pytest.raises(InputError, match="odd size"):
        coordinate_cut_gbps(multi_dim((3,), ("ring",), tiers=("T",)), [1.0], 0)


def test_plot_fabric_uses_given_axes():
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    out = plot_fabric(rail_optimized_fat_tree(16, 4, 4), ax=ax, bw_gbps=[4.0, 1.0])
    assert out is fig
    assert len(ax.lines) > 16  # one line per link at least
    plt.close(fig)
    with pytest.raises(InputError, match="at most"):
        plot_fabric(rail_only(1024, 8))


def test_graph_bandwidth_attributes():
    g = fabric_graph(multi_dim((4, 3), ("ring", "fully_connected")), [10.0, 6.0])
    bws = sorted({(a["dim"], a["bw_gbps"]) for _, _, a in g.edges(data=True)})
    assert bws == [(0, 5.0), (1, 3.0)]
    assert np.isclose(sum(a["bw_gbps"] for *_, a in g.edges(data=True)), 4 * 3 * 5 + 4 * 3 * 3)


# ---- whole switches, ports bought and copper cables, counted on the graph ---------------


@pytest.mark.parametrize(
    ("fabric", "d", "want"),
    [
        # rail_only(2048, 256, 64): 256 rails of 8 NPUs, one radix-64 switch each (1 tier).
        (rail_only(2048, 256, 64), 1,
         dict(tiers=1, switches=256, bought=256 * 64, used=2048, cables=2048)),
        # Off-grid 2 tiers: 100 NPUs, radix 16: ceil(200/16)=13 leaves + ceil(100/16)=7 spines.
        (Fabric((Dim("so", "switch", 100, "T", switch_radix=16),)), 0,
         dict(tiers=2, switches=20, bought=320, used=300, cables=200)),
        # Off-grid 3 tiers: 50 NPUs, radix 8 (2 tiers reach 32): 13 leaves, 13 aggregation,
        # ceil(50/8)=7 cores; 5 ports and 3 cables per NPU in use.
        (Fabric((Dim("so", "switch", 50, "T", switch_radix=8),)), 0,
         dict(tiers=3, switches=33, bought=264, used=250, cables=150)),
        # Ideal switch (no radix): ports bought are the ports in use (LIBRA).
        (Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 8, "T"))), 1,
         dict(tiers=1, switches=1, bought=32, used=32, cables=32)),
    ],
)
@pytest.mark.parametrize("copper", [0, 1, 3])
def test_whole_switch_and_copper_counts_by_hand(fabric, d, want, copper):
    t = want["tiers"]
    if copper > t:
        with pytest.raises(InputError, match="copper_levels"):
            _with(fabric, d, copper_levels=copper)
        return
    f = _with(fabric, d, copper_levels=copper)
    inv = dimension_inventory(f, d)
    n = f.n_npus
    assert (inv.tiers, inv.switches, inv.switch_ports_bought, inv.switch_ports,
            inv.cables) == (t, want["switches"], want["bought"], want["used"], want["cables"])
    # Copper: the lowest ``copper`` cable levels, N cables each, no transceivers.
    assert inv.copper_cables == copper * n
    assert inv.transceivers == 2 * (t - copper) * n
    assert inv.switch_ports_priced == want["bought"]
    used = dimension_inventory(_with(f, d, switch_pricing="used_ports"), d)
    assert (used.switch_ports_priced, used.switch_ports_bought) == (want["used"], want["bought"])
    c = assert_counts_match(f)[d]
    assert (c.switches, c.switch_ports_bought, c.switch_ports, c.cables, c.copper_cables,
            c.transceivers) == (want["switches"], want["bought"], want["used"], want["cables"],
                                copper * n, 2 * (t - copper) * n)


def _with(fabric, d, **changes):
    dims = list(fabric.dims)
    dims[d] = dataclasses.replace(dims[d], **changes)
    return Fabric(tuple(dims))


def test_copper_cables_are_the_lowest_levels_on_the_graph():
    # 100 NPUs, radix 16, 2 tiers; copper_levels=1: every NIC-to-leaf (host) cable is copper,
    # every leaf-to-spine (fabric) cable optical.
    f = Fabric((Dim("so", "switch", 100, "T", switch_radix=16, copper_levels=1),))
    g = fabric_graph(f)
    media = {(a["kind"], a["media"]) for _, _, a in g.edges(data=True) if a["kind"] != "pcie"}
    assert media == {("host", "copper"), ("fabric", "optical")}
    assert {a["radix"] for _, a in g.nodes(data=True) if a["kind"] == "switch"} == {16}


def test_issue_switch_counts_rail_only_vs_fat_tree():
    """Switch counts behind the issue's figures (radix 64 unless said)."""

    def switches(f):
        return dimension_inventory(f, 1).switches

    # 2,048 GPUs, HB 256: rails of 8 -> one switch per rail (256) vs a 64+32 leaf-spine.
    assert (switches(rail_only(2048, 256, 64)), switches(rail_optimized_fat_tree(2048, 256, 64))) \
        == (256, 96)
    # 4,096 GPUs, HB 256: rails of 16 -> 256 switches vs a 3-tier 128+128+64 fat-tree.
    assert (switches(rail_only(4096, 256, 64)), switches(rail_optimized_fat_tree(4096, 256, 64))) \
        == (256, 320)
    # 2,048 GPUs, HB 64: rails of 32 -> 64 switches (half their ports idle).
    ro = dimension_inventory(rail_only(2048, 64, 64), 1)
    assert (ro.switches, ro.switch_ports_bought, ro.switch_ports) == (64, 4096, 2048)
    # 6,000 GPUs, HB 24, radix 128: 24 rails of 250 = 2 tiers of ceil(500/128)=4 leaves and
    # ceil(250/128)=2 spines (144) vs one leaf-spine of 94 + 47 = 141.
    assert (switches(rail_only(6000, 24, 128)), switches(rail_optimized_fat_tree(6000, 24, 128))) \
        == (144, 141)
