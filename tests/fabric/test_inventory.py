"""Clos tiers and transceivers in the linear cost/power coefficients, derived by hand."""

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients, network_cost_breakdown
from libra_opt.errors import InputError
from libra_opt.fabric.builders import as_family, multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.io.libra import read_libra_network

PRICES = {"HB": {"link": 1.0, "switch": 3.0, "nic": 0.0},
          "SO": {"link": 2.0, "switch": 10.0, "nic": 40.0, "transceiver": 14.0}}
WATTS = {"HB": {"link": 0.1, "switch": 0.2, "nic": 0.0},
         "SO": {"link": 0.0, "switch": 0.25, "nic": 0.4, "transceiver": 0.16}}


def cm():
    return CostModel.from_tables(PRICES, WATTS)


@pytest.mark.parametrize(
    ("builder", "n", "h", "tiers"),
    [(rail_optimized_fat_tree, 4096, 8, 3), (rail_only, 4096, 8, 2), (rail_only, 4096, 64, 1),
     (rail_optimized_fat_tree, 2048, 8, 2), (rail_optimized_fat_tree, 64, 8, 1)],
)
def test_scale_out_coefficient_per_npu_by_hand(builder, n, h, tiers):
    # Per NPU and GB/s: t links x $2, (2t-1) switch ports x $10, one NIC x $40 and 2t
    # transceivers x $14; W: (2t-1) x 0.25 + 0.4 + 2t x 0.16.
    f = builder(n, h, 64, hb_tier="HB", scale_out_tier="SO")
    k = cost_coefficients(f, cm())
    t = tiers
    assert dimension_inventory(f, 1).tiers == t
    assert k.usd_per_gbps[1] == pytest.approx(n * (2 * t + 10 * (2 * t - 1) + 40 + 28 * t))
    assert k.w_per_gbps[1] == pytest.approx(n * (0.25 * (2 * t - 1) + 0.4 + 0.32 * t))
    # Columns: transceivers go to "link", the rest as LIBRA.
    assert_allclose(k.usd_by_component[1], [n * (2 * t + 28 * t), n * 10 * (2 * t - 1), n * 40])
    # HB switch (ideal): N links x $1, N ports x $3.
    assert k.usd_per_gbps[0] == pytest.approx(n * 4.0)


def test_rail_only_saving_is_the_removed_tier():
    ft = cost_coefficients(rail_optimized_fat_tree(4096, 8, 64, hb_tier="HB", scale_out_tier="SO"), cm())
    ro = cost_coefficients(rail_only(4096, 8, 64, hb_tier="HB", scale_out_tier="SO"), cm())
    # One tier less: 2 switch ports, 1 link, 2 transceivers per NPU.
    assert ft.usd_per_gbps[1] - ro.usd_per_gbps[1] == pytest.approx(4096 * (2 * 10 + 2 + 2 * 14))
    assert ft.usd_per_gbps[0] == ro.usd_per_gbps[0]


def test_no_radix_keeps_libra_pricing(tmp_path):
    # The LIBRA 4-D example fabric read from LIBRA's file: no radix, ideal switches; its
    # coefficients are those of the closed form N x (link + switch + nic) per switch dim.
    p = tmp_path / "net.yml"
    p.write_text("Topology: [ Ring, FullyConnected, Ring, Switch ]\nNpusCount: [ 4, 8, 4, 32 ]\n"
                 "CostDimension: [ InterChiplet, InterPackage, InterNode, InterPod ]\n")
    f = read_libra_network(p)
    assert all(d.switch_radix is None and d.switch_scope == "block" for d in f.dims)
    libra = CostModel.from_tables({"InterChiplet": {"link": 2.0}, "InterPackage": {"link": 4.0},
                                   "InterNode": {"link": 4.0},
                                   "InterPod": {"link": 7.8, "switch": 18.0, "nic": 31.6}})
    assert_allclose(cost_coefficients(f, libra).usd_per_gbps,
                    [4096 * 2.0, 4096 * 4.0, 4096 * 4.0, 4096 * (7.8 + 18.0 + 31.6)])
    inv = dimension_inventory(f, 3)
    assert (inv.tiers, inv.switches, inv.switch_ports) == (1, 1, 4096)


def test_transceivers_on_direct_links():
    # Ring of 4: 8 transceivers of B/2 per ring -> N x B; clique of 4: 12 of B/3 -> N x B.
    prices = {"T": {"link": 1.0, "transceiver": 5.0}}
    for topo in ("ring", "fully_connected"):
        f = multi_dim((4, 2), (topo, "ring"), tiers=("T", "T"))
        k = cost_coefficients(f, CostModel.from_tables(prices))
        assert k.usd_per_gbps[0] == pytest.approx(8 * (1.0 + 5.0))


def test_transceiver_price_needs_power_entry():
    f = rail_only(64, 8, 8, hb_tier="HB", scale_out_tier="SO")
    watts = {"HB": WATTS["HB"], "SO": {"link": 0.0, "switch": 0.2, "nic": 0.3}}
    with pytest.raises(InputError, match="transceiver power"):
        cost_coefficients(f, CostModel.from_tables(PRICES, watts))


def test_dim_validation_of_new_fields():
    with pytest.raises(InputError, match="even integer"):
        Dim("s", "switch", 8, "T", switch_radix=63)
    with pytest.raises(InputError, match="only meaningful for a switch"):
        Dim("r", "ring", 8, "T", switch_radix=64)
    with pytest.raises(InputError, match="needs a switch"):
        Dim("r", "ring", 8, "T", switch_scope="rail")
    with pytest.raises(InputError, match="switch_scope"):
        Dim("s", "switch", 8, "T", switch_scope="pod")
    # Defaults keep old equality and positional construction.
    assert Dim("s", "switch", 8, "T", 0.0) == Dim("s", "switch", 8, "T")


def test_builders_validate_and_fail_early():
    with pytest.raises(InputError, match="multiple of hb_domain"):
        rail_only(1001, 8)
    with pytest.raises(InputError, match="more than 3 tiers"):
        rail_optimized_fat_tree(131072, 8, 64)
    assert rail_only(131072, 8, 64).dims[1].size == 16384  # rails of 16384: 3 tiers
    with pytest.raises(InputError, match="positive integer"):
        rail_only(0, 8)


def test_as_family_keeps_shape_and_prices_differ():
    f = multi_dim((8, 512), ("switch", "switch"), tiers=("HB", "SO"), names=("hb", "scaleout"))
    ft, ro = as_family(f, "fat_tree", 64), as_family(f, "rail_only", 64)
    assert ft == rail_optimized_fat_tree(4096, 8, 64, hb_tier="HB", scale_out_tier="SO")
    assert ro == rail_only(4096, 8, 64, hb_tier="HB", scale_out_tier="SO")
    assert as_family(ro, "multi_dim") == f
    k = [cost_coefficients(x, cm()).usd_per_gbps[1] for x in (f, ft, ro)]
    assert k[0] < k[2] < k[1]  # ideal switch < 2-tier rails < 3-tier fat-tree
    with pytest.raises(InputError, match="family"):
        as_family(f, "dragonfly")
    assert np.isfinite(k).all()


# ---- whole-switch pricing and copper cable levels, derived by hand ------------------------
# Unit prices ($ and W per GB/s of one part): link 2, switch port 10, NIC 40, transceiver 14,
# copper cable 5; W: switch port 0.25, NIC 0.4, transceiver 0.16, copper 0.01.
CU_PRICES = {"T": {"link": 2.0, "switch": 10.0, "nic": 40.0, "transceiver": 14.0, "copper": 5.0}}
CU_WATTS = {"T": {"link": 0.0, "switch": 0.25, "nic": 0.4, "transceiver": 0.16, "copper": 0.01}}


def _so(size, radix, **kw):
    return Fabric((Dim("so", "switch", size, "T", switch_radix=radix, **kw),))


@pytest.mark.parametrize(
    ("fabric", "usd"),
    [
        # 100 NPUs, radix 16, 2 tiers, 20 switches (320 ports bought, 300 used), 200 cables:
        # optics, whole switches: 200 x 2 + 400 x 14 + 320 x 10 + 100 x 40 = 13,200.
        (_so(100, 16), 13_200.0),
        # used ports: switch 300 x 10 instead of 320 x 10.
        (_so(100, 16, switch_pricing="used_ports"), 13_000.0),
        # NIC-to-leaf copper: 100 fibres x 2 + 100 DAC x 5 + 200 transceivers x 14 + 3200 + 4000.
        (_so(100, 16, copper_levels=1), 10_700.0),
        # both levels copper: 200 x 5 + 3200 + 4000, no optics at all.
        (_so(100, 16, copper_levels=2), 8_200.0),
        (_so(100, 16, copper_levels=2, switch_pricing="used_ports"), 8_000.0),
        # 50 NPUs, radix 8, 3 tiers, 33 switches (264 bought, 250 used), 150 cables:
        # 150 x 2 + 300 x 14 + 264 x 10 + 50 x 40 = 9,140.
        (_so(50, 8), 9_140.0),
        (_so(50, 8, switch_pricing="used_ports"), 9_000.0),
        # two copper levels: 50 fibres x 2 + 100 DAC x 5 + 100 transceivers x 14 + 2640 + 2000.
        (_so(50, 8, copper_levels=2), 6_640.0),
        # one switch, 1 tier: 10 NPUs on a radix-64 switch buys all 64 ports:
        # 10 x 2 + 20 x 14 + 64 x 10 + 10 x 40 = 1,340 (used ports: 10 x 10 -> 800).
        (_so(10, 64), 1_340.0),
        (_so(10, 64, switch_pricing="used_ports"), 800.0),
        (_so(10, 64, copper_levels=1), 10 * 5 + 640 + 400.0),
        # Ideal switch (no radix): LIBRA, pricing mode irrelevant: 10 x (2 + 28 + 10 + 40).
        (_so(10, None), 800.0),
        (_so(10, None, switch_pricing="used_ports"), 800.0),
    ],
)
def test_whole_switch_and_copper_prices_by_hand(fabric, usd):
    k = cost_coefficients(fabric, CostModel.from_tables(CU_PRICES, CU_WATTS))
    assert k.usd_per_gbps[0] == pytest.approx(usd)
    # At B = 50 GB/s the network costs 50 x the coefficient (linear: the solver stays exact).
    assert network_cost_breakdown(k, [50.0]).network_cost_usd == pytest.approx(50 * usd)


def test_whole_switch_power_counts_every_port():
    # A powered switch draws its power whatever its port use: 20 switches x 16 ports x 0.25
    # W per GB/s, against 300 used ports under used_ports. Copper level 1: 100 DAC x 0.01
    # and 200 transceivers x 0.16; NICs 100 x 0.4.
    cm = CostModel.from_tables(CU_PRICES, CU_WATTS)
    whole = cost_coefficients(_so(100, 16, copper_levels=1), cm)
    used = cost_coefficients(_so(100, 16, copper_levels=1, switch_pricing="used_ports"), cm)
    assert whole.w_per_gbps[0] == pytest.approx(320 * 0.25 + 100 * 0.4 + 200 * 0.16 + 100 * 0.01)
    assert whole.w_per_gbps[0] - used.w_per_gbps[0] == pytest.approx(20 * 0.25)
    # Columns: link (fibre + copper + optics), switch, nic.
    assert_allclose(whole.usd_by_component[0], [100 * 2 + 100 * 5 + 200 * 14, 3200, 4000])


def test_rail_smaller_than_radix_pays_whole_switches():
    # rail_only(2048, 256, 64): 256 rails of 8 NPUs, one 64-port switch each: 16,384 ports
    # bought for 2,048 used. Per GB/s: 2048 x 2 + 4096 x 14 + 16384 x 10 + 2048 x 40.
    cm = CostModel.from_tables({**PRICES, "SO": {**PRICES["SO"], "copper": 5.0}})
    ro = rail_only(2048, 256, 64, hb_tier="HB", scale_out_tier="SO")
    assert cost_coefficients(ro, cm).usd_per_gbps[1] == pytest.approx(
        2048 * 2 + 4096 * 14 + 16384 * 10 + 2048 * 40)  # 307,200
    used = _replace_dim(ro, 1, switch_pricing="used_ports")
    assert cost_coefficients(used, cm).usd_per_gbps[1] == pytest.approx(163_840.0)
    copper = _replace_dim(ro, 1, copper_levels=1)  # NIC-to-switch DACs, no optics
    assert cost_coefficients(copper, cm).usd_per_gbps[1] == pytest.approx(
        2048 * 5 + 16384 * 10 + 2048 * 40)  # 256,000
    # The fat-tree of the same GPUs fills its 96 switches: whole = used.
    ft = rail_optimized_fat_tree(2048, 256, 64, hb_tier="HB", scale_out_tier="SO")
    ft_used = _replace_dim(ft, 1, switch_pricing="used_ports")
    assert cost_coefficients(ft, cm).usd_per_gbps[1] == pytest.approx(
        cost_coefficients(ft_used, cm).usd_per_gbps[1])


def _replace_dim(fabric, d, **changes):
    dims = list(fabric.dims)
    dims[d] = dataclasses.replace(dims[d], **changes)
    return Fabric(tuple(dims))


def test_copper_levels_need_a_copper_price():
    f = _so(100, 16, copper_levels=1)
    no_copper = {"T": {k: v for k, v in CU_PRICES["T"].items() if k != "copper"}}
    with pytest.raises(InputError, match=r"dimension 'so' .*tier 'T' has no copper price"):
        cost_coefficients(f, CostModel.from_tables(no_copper))
    watts = {"T": {k: v for k, v in CU_WATTS["T"].items() if k != "copper"}}
    with pytest.raises(InputError, match="no copper power entry"):
        cost_coefficients(f, CostModel.from_tables(CU_PRICES, watts))
    # Without copper levels the copper price is not needed (and unused).
    k0 = cost_coefficients(_so(100, 16), CostModel.from_tables(no_copper))
    assert k0.usd_per_gbps[0] == pytest.approx(13_200.0)


def test_dim_validation_of_pricing_and_copper_fields():
    with pytest.raises(InputError, match="switch_pricing"):
        Dim("s", "switch", 8, "T", switch_pricing="per_port")
    with pytest.raises(InputError, match="copper_levels"):
        Dim("s", "switch", 8, "T", copper_levels=-1)
    with pytest.raises(InputError, match="copper_levels"):
        Dim("s", "switch", 8, "T", copper_levels=True)
    with pytest.raises(InputError, match="copper_levels counts the cable levels"):
        Dim("r", "ring", 8, "T", copper_levels=1)
    # Against the network's tiers: 100 NPUs on radix 16 have 2 cable levels; an ideal
    # switch 1; a size-1 dimension no cables (any value accepted).
    assert dimension_inventory(_so(100, 16, copper_levels=2), 0).copper_cables == 200
    with pytest.raises(InputError, match=r"copper_levels 3 is more than the 2 cable level"):
        _so(100, 16, copper_levels=3)
    with pytest.raises(InputError, match="use 0..1"):
        _so(8, None, copper_levels=2)
    assert Fabric((Dim("a", "ring", 4, "T"), Dim("s", "switch", 1, "T", copper_levels=3)))
    # Defaults: whole switches, all optics.
    d = Dim("s", "switch", 8, "T", switch_radix=64)
    assert (d.switch_pricing, d.copper_levels) == ("whole_switch", 0)
