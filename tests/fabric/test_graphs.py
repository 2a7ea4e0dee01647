"""Closed-form component counts (cost model) against counts on explicit networkx graphs."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.graphs import (
    coordinate_cut_gbps,
    fabric_graph,
    graph_counts,
    graph_cut_gbps,
    npu_coords,
)
from libra_opt.fabric.inventory import (
    clos_level_switches,
    clos_max_endpoints,
    clos_tiers,
    dimension_inventory,
)
from libra_opt.report.plots import plot_fabric

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
        topo = draw(st.sampled_from(["ring", "fully_connected", "switch"]))
        size = draw(st.integers(2 if topo == "fully_connected" else 1, 6))
        radix = draw(st.sampled_from([None, 4, 6])) if topo == "switch" else None
        scope = draw(st.sampled_from(["block", "rail"])) if topo == "switch" else "block"
        dims.append(Dim(f"d{i}", topo, size, "T", switch_radix=radix, switch_scope=scope))
    f = Fabric(tuple(dims))
    for d, dim in enumerate(f.dims):
        if dim.switch_radix is not None:
            block = dim.size if dim.switch_scope == "rail" else math.prod(f.sizes[: d + 1])
            if block > clos_max_endpoints(dim.switch_radix, 3):
                return None
    return f


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
    return multi_dim((2 * draw(st.integers(1, 2)), 4, 2 ** draw(st.integers(1, 3))),
                     ("ring", "fully_connected", "switch"), switch_radix=8)


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
