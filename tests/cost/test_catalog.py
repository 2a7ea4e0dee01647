"""Price/power catalogs: the LIBRA preset, unit conversions, sources and overrides."""

from importlib import resources

import pytest
import yaml

from libra_opt.cost.prices import cost_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim, rail_only
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
