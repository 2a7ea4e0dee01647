"""Price/power catalogs: the LIBRA preset, unit conversions, sources and overrides."""

import dataclasses
from importlib import resources

import pytest
import yaml

from libra_opt.cost.prices import cost_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.io.presets import available_catalogs, catalog_cost_model, load_catalog

LIBRA_EXAMPLE = {  # $ per GB/s, LIBRA reference example cost model (as given in the issue)
    "InterChiplet": {"link": 2.0},
    "InterPackage": {"link": 4.0, "switch": 13.0},
    "InterNode": {"link": 4.0, "switch": 13.0},
    "InterPod": {"link": 7.8, "switch": 18.0, "nic": 31.6},
}


def test_libra_preset_reproduces_the_paper_prices():
    cm = catalog_cost_model("libra_ispass24")
    assert {t: dict(p.usd_per_gbps) for t, p in cm.tiers.items()} == LIBRA_EXAMPLE
    assert not cm.has_power
    # LIBRA's 4-D example fabric: coefficients N x price (ideal switches, no radix).
    f = multi_dim((4, 8, 4, 32), ("ring", "fully_connected", "ring", "switch"))
    assert cost_coefficients(f, cm).usd_per_gbps.tolist() == pytest.approx(
        [4096 * 2.0, 4096 * 4.0, 4096 * 4.0, 4096 * (7.8 + 18.0 + 31.6)])


@pytest.mark.parametrize("name", ["libra_ispass24", "current_2025"])
def test_every_number_has_a_source_and_a_date(name):
    path = resources.files("libra_opt") / "data" / "catalog" / f"{name}.yaml"
    doc = yaml.safe_load(path.read_text())
    for part, entry in doc["parts"].items():
        assert str(entry.get("source", "")).strip(), part
        assert str(entry.get("date", "")).strip(), part
    assert name in available_catalogs()


def test_current_catalog_unit_conversions_by_hand():
    cat = load_catalog("current_2025")
    sw = cat.parts["ib_ndr_switch_64x400g"]
    assert sw.usd_per_gbps == pytest.approx(35000 / (64 * 50))     # one port's GB/s
    assert sw.w_per_gbps == pytest.approx(750 / (64 * 50))
    opt = cat.parts["osfp_400g_sr4"]
    assert (opt.usd_per_gbps, opt.w_per_gbps) == pytest.approx((700 / 50, 8 / 50))
    assert cat.switch_radix("ScaleOut") == 64
    assert cat.switch_radix("ScaleOutEthernet") == 128
    assert cat.switch_radix("ScaleUp") is None  # per-GB/s estimate, no device radix
    cm = cat.cost_model()
    assert cm.has_power
    # A rail-only 4096-GPU fabric with 2-tier rails: per NPU 2 links, 3 ports, 1 NIC,
    # 4 transceivers of the ScaleOut tier's parts.
    k = cost_coefficients(rail_only(4096, 8, 64), cm)
    per_npu = 2 * 100 / 50 + 3 * 35000 / 3200 + 2200 / 50 + 4 * 700 / 50
    assert k.usd_per_gbps[1] == pytest.approx(4096 * per_npu)
    assert len(cat.table()) == len(cat.parts)


def test_overrides_change_add_and_remove_entries():
    base = catalog_cost_model("current_2025")
    cat = load_catalog("current_2025", {
        "parts.osfp_400g_sr4.price_usd": 350,
        "parts.cheap_sw.kind": "switch",
        "parts.cheap_sw.usd_per_gbps": 1.0,
        "parts.cheap_sw.w_per_gbps": 0.01,
        "parts.cheap_sw.source": "test",
        "parts.cheap_sw.date": "2026-01",
        "tiers.ScaleOut.switch": "cheap_sw",
        "tiers.ScaleOutCopper.link": None,
    })
    cm = cat.cost_model()
    assert cm.tiers["ScaleOut"].usd_per_gbps["transceiver"] == pytest.approx(7.0)
    assert cm.tiers["ScaleOut"].usd_per_gbps["switch"] == 1.0
    assert "link" not in cm.tiers["ScaleOutCopper"].usd_per_gbps
    assert base.tiers["ScaleOut"].usd_per_gbps["transceiver"] == pytest.approx(14.0)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"parts.osfp_400g_sr4.price_usd": -1}, r"parts\.osfp_400g_sr4\.price_usd"),
        ({"tiers.ScaleOut.switch": "osfp_400g_sr4"}, "is a transceiver, not a switch"),
        ({"tiers.ScaleOut.copper": "osfp_400g_sr4"}, "is a transceiver, not a link"),
        ({"tiers.ScaleOut.switch": "nope"}, "not in the catalog"),
        ({"tiers.ScaleOut.optics": "osfp_400g_sr4"}, "unknown component"),
        ({"prices.x.y": 1}, "expected 'parts"),
        ({"parts.dac_400g.source": None}, "source and a date"),
        ({"parts.dac_400g.color": "red"}, "unknown key"),
    ],
)
def test_bad_overrides_name_the_field(overrides, match):
    with pytest.raises(InputError, match=match):
        load_catalog("current_2025", overrides)


def test_unknown_catalog_and_file(tmp_path):
    with pytest.raises(InputError, match="presets"):
        load_catalog("no_such_catalog")
    p = tmp_path / "cat.yaml"
    p.write_text("name: x\nparts: {a: {kind: link, usd_per_gbps: 1, source: s, date: d}}\n"
                 "tiers: {T: {link: a}}\nextra: 1\n")
    with pytest.raises(InputError, match="unknown key"):
        load_catalog(p)
    p.write_text("name: x\nparts: {a: {kind: link, usd_per_gbps: 1, source: s, date: d}}\n"
                 "tiers: {T: {link: a}}\n")
    assert load_catalog(p).cost_model().tiers["T"].usd_per_gbps["link"] == 1.0


def test_scale_out_copper_part_is_the_dac():
    cat = load_catalog("current_2025")
    assert cat.tiers["ScaleOut"]["copper"] == "dac_400g"
    assert cat.parts["dac_400g"].kind == "link"
    cm = cat.cost_model()
    assert cm.tiers["ScaleOut"].usd_per_gbps["copper"] == pytest.approx(250 / 50)
    assert cm.tiers["ScaleOut"].w_per_gbps["copper"] == 0.0
    # rail_only(4096, 8, 64) with NIC-to-leaf copper: per NPU 1 DAC + 1 fibre, 2 transceivers
    # (the leaf-to-spine cable), 3 switch ports, 1 NIC.
    f = rail_only(4096, 8, 64)
    dims = list(f.dims)
    dims[1] = dataclasses.replace(dims[1], copper_levels=1)
    k = cost_coefficients(type(f)(tuple(dims)), cm)
    per_npu = 250 / 50 + 100 / 50 + 2 * 700 / 50 + 3 * 35000 / 3200 + 2200 / 50
    assert k.usd_per_gbps[1] == pytest.approx(4096 * per_npu)
    # No copper part on the XDR tier: asking for copper there names dimension and tier.
    with pytest.raises(InputError, match="'scaleout'.*'ScaleOutXDR' has no copper price"):
        g = rail_only(4096, 8, 64, scale_out_tier="ScaleOutXDR")
        dims = list(g.dims)
        dims[1] = dataclasses.replace(dims[1], copper_levels=1)
        cost_coefficients(type(g)(tuple(dims)), cm)


@pytest.mark.parametrize(
    ("n", "hb", "ratio"),
    [(2048, 256, 1.266), (4096, 256, 1 - 0.490), (2048, 64, 1 - 0.441)],
)
def test_issue_rail_only_vs_fat_tree_switch_and_cable_cost(n, hb, ratio):
    """The issue's figures: rail-only / fat-tree scale-out switch + link + optics cost
    (NICs, the same in both, left out) with whole radix-64 switches of ``current_2025``.

    Per NPU and GB/s (switch port 35000/3200 = 10.9375, fibre 2, transceiver 14): a tier
    adds 2 + 2 x 14 = 30 of cables and optics; ports bought per NPU are
    switches x 64 / N. 2048/HB 256: fat-tree 2 tiers, 96 switches: 60 + 3 x 10.9375 =
    92.8125; rail-only rails of 8, 256 switches: 30 + 8 x 10.9375 = 117.5 (+26.6%).
    4096/HB 256: 3 tiers, 320 switches: 90 + 5 x 10.9375 = 144.6875 vs 30 + 4 x 10.9375 =
    73.75 (-49.0%). 2048/HB 64: 92.8125 vs 30 + 2 x 10.9375 = 51.875 (-44.1%).
    """
    cm = catalog_cost_model("current_2025")

    def cost(f):
        k = cost_coefficients(f, cm).usd_by_component[1]
        return k[0] + k[1]  # link (fibre + optics) + switch

    ro, ft = cost(rail_only(n, hb, 64)), cost(rail_optimized_fat_tree(n, hb, 64))
    assert ro / ft == pytest.approx(ratio, abs=5e-4)
    want = {(2048, 256): (117.5, 92.8125), (4096, 256): (73.75, 144.6875),
            (2048, 64): (51.875, 92.8125)}[(n, hb)]
    assert (ro / n, ft / n) == pytest.approx(want)
