"""Fabric builders and the spec loader."""

import pytest

from libra_opt.errors import InputError, input_context
from libra_opt.fabric.builders import (
    fabric_family,
    fabric_from_spec,
    multi_dim,
    rail_only,
    rail_optimized_fat_tree,
)
from libra_opt.fabric.dims import Dim, Fabric


def test_multi_dim_defaults_and_tori():
    f = multi_dim((4, 4, 4, 8), ("torus", "torus", "torus", "switch"), switch_radix=64)
    assert f.names == ("chiplet", "package", "node", "pod")
    assert [d.tier for d in f.dims] == ["InterChiplet", "InterPackage", "InterNode", "InterPod"]
    assert [d.topology for d in f.dims] == ["ring"] * 3 + ["switch"]
    assert [d.switch_radix for d in f.dims] == [None, None, None, 64]
    g = multi_dim((2, 3), ("ring", "fully_connected"), tiers=("A", "B"), latency_s=(1e-6, 2e-6))
    assert g.names == ("dim0", "dim1") and g.dims[1].latency_s == 2e-6


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(shape=(4, 4), topologies=("ring",)), "1 topologies for 2"),
        (dict(shape=(4,), topologies=("hypercube",)), "not one of ring, torus"),
        (dict(shape=(2,) * 5, topologies=("ring",) * 5), "give tiers"),
        (dict(shape=(4,), topologies=("ring",), tiers=("A", "B")), "2 tiers for 1"),
        (dict(shape=(4,), topologies=("ring",), latency_s=(0.0, 1.0)), "2 latencies"),
    ],
)
def test_multi_dim_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        multi_dim(**kwargs)


def test_two_level_builders_share_shape_and_names():
    ft, ro = rail_optimized_fat_tree(8192, 64), rail_only(8192, 64)
    assert ft.names == ro.names == ("hb", "scaleout")
    assert ft.sizes == ro.sizes == (64, 128)
    assert (ft.dims[1].switch_scope, ro.dims[1].switch_scope) == ("block", "rail")
    assert fabric_family(ft) == "fat_tree" and fabric_family(ro) == "rail_only"
    assert fabric_family(Fabric((Dim("a", "switch", 8, "T"),))) == "multi_dim"
    assert rail_only(64, 8, hb_topology="torus").dims[0].topology == "ring"


def test_fabric_from_spec():
    assert fabric_from_spec({"builder": "rail_optimized_fat_tree", "n_npus": 1024,
                             "hb_domain": 8, "switch_radix": 32}) == rail_optimized_fat_tree(
        1024, 8, 32)
    f = fabric_from_spec({"builder": "multi_dim", "shape": [4, 8], "topologies": ["ring", "switch"],
                          "tiers": ["A", "B"]})
    assert f.sizes == (4, 8)
    with pytest.raises(InputError, match="builder 'clos'"):
        fabric_from_spec({"builder": "clos"})
    with pytest.raises(InputError, match=r"s\.yaml: fabric: unknown key\(s\) radix"), \
            input_context("s.yaml"):
        fabric_from_spec({"builder": "rail_only", "n_npus": 64, "hb_domain": 8, "radix": 8})
    with pytest.raises(InputError, match=r"fabric\.hb_domain: required"):
        fabric_from_spec({"builder": "rail_only", "n_npus": 64})
    with pytest.raises(InputError, match=r"s\.yaml: fabric\.n_npus.*multiple"), \
            input_context("s.yaml"):
        fabric_from_spec({"builder": "fat_tree", "n_npus": 65, "hb_domain": 8})


def test_builders_pass_switch_pricing_and_copper_levels():
    """rail_only(4096, 8, 64): 8 rails of 512 NPUs, 2 tiers each. With NIC-to-leaf copper,
    half of the 2 x 4,096 cables are copper and only the 4,096 leaf-spine cables carry optics
    (two transceivers each): 8,192 instead of 16,384."""
    from libra_opt.fabric.builders import fabric_from_spec, rail_only
    from libra_opt.fabric.inventory import dimension_inventory

    optics = dimension_inventory(rail_only(4096, 8, 64), 1)
    copper = dimension_inventory(rail_only(4096, 8, 64, copper_levels=1), 1)
    assert (optics.cables, optics.copper_cables, optics.transceivers) == (8192, 0, 16384)
    assert (copper.cables, copper.copper_cables, copper.transceivers) == (8192, 4096, 8192)
    f = fabric_from_spec({"builder": "fat_tree", "n_npus": 4096, "hb_domain": 8,
                          "switch_pricing": "used_ports", "copper_levels": 1})
    assert (f.dims[1].switch_pricing, f.dims[1].copper_levels) == ("used_ports", 1)
