"""The in-network reduction premium: catalog entries with sources, and the linear cost and
power coefficients it adds (hand-derived)."""

import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io.presets import load_catalog


def test_catalog_entries_are_sourced_estimates():
    cat = load_catalog("current_2025")
    for tier in ("ScaleOut", "ScaleOutXDR", "ScaleUp"):
        part = cat.parts[cat.tiers[tier]["in_network_reduction"]]
        assert part.kind == "switch"
        assert "estimate" in part.source and part.date
        assert part.usd_per_gbps > 0 and part.w_per_gbps is not None
    assert "in_network_reduction" not in cat.tiers["ScaleOutEthernet"]


def test_premium_is_per_switch_port_gbps():
    """8 NPUs on one switch (no radix): one port of B per NPU -> 8 x premium per GB/s; a
    ring dimension in the same fabric is not charged."""
    f = Fabric((Dim("r", "ring", 2, "A"), Dim("s", "switch", 4, "B")))
    cm = CostModel.from_tables(
        {"A": {"link": 1.0}, "B": {"link": 1.0, "switch": 2.0, "nic": 3.0,
                                   "in_network_reduction": 0.5}},
        {"A": {"link": 0.1}, "B": {"link": 0.1, "switch": 0.2, "nic": 0.3,
                                   "in_network_reduction": 0.05}})
    base = cost_coefficients(f, cm)
    inr = cost_coefficients(f, cm, {1})
    assert_allclose(inr.usd_per_gbps - base.usd_per_gbps, [0.0, 8 * 0.5])
    assert_allclose(inr.w_per_gbps - base.w_per_gbps, [0.0, 8 * 0.05])
    assert_allclose(inr.usd_by_component[1, 1] - base.usd_by_component[1, 1], 8 * 0.5)


def test_missing_premium_names_the_tier():
    f = Fabric((Dim("s", "switch", 4, "B"),))
    cm = CostModel.from_tables({"B": {"link": 1.0, "switch": 2.0, "nic": 3.0}})
    with pytest.raises(InputError, match="in_network_reduction price") as err:
        cost_coefficients(f, cm, {0})
    assert err.value.field == "cost_model.B"
