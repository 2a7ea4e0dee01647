"""Clos tiers and transceivers in the linear cost/power coefficients, derived by hand."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.builders import as_family, multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.fabric.dims import Dim
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
