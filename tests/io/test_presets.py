"""Device presets: the roofline fields are read, cited and validated."""

import pytest

from libra_opt.errors import InputError, input_context
from libra_opt.generators.devices import device_from_dict
from libra_opt.io.presets import device_names, load_device


@pytest.mark.parametrize("name", device_names())
def test_every_device_has_roofline_numbers_and_sources(name):
    d = load_device(name)
    assert d.sm_count > 0 and d.gemm_tiles and d.hbm_gbps > 0
    assert 0 < d.default_efficiency <= 1 and 0 < d.mem_efficiency <= 1
    assert d.roofline_source and d.efficiency_source and d.source


def test_a100_numbers_from_the_whitepaper():
    d = load_device("a100_80gb")
    assert (d.sm_count, d.vector_flops, d.hbm_gbps) == (108, 78e12, 2039.0)
    assert (256, 128) in d.gemm_tiles


BASE = {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 8e10, "hbm_gbps": 3000,
        "source": "s", "date": "2025", "default_efficiency": 0.5}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"sm_count": -1}, "x.sm_count"),
        ({"mem_efficiency": 1.5}, "x.mem_efficiency"),
        ({"gemm_tiles": [[0, 128]]}, "x.gemm_tiles"),
        ({"vector_flops": float("nan")}, "x.vector_flops"),
        ({"tile": 3}, "x"),
    ],
)
def test_bad_roofline_fields_name_file_and_field(change, field):
    with pytest.raises(InputError) as exc, input_context("devices.yaml"):
        device_from_dict("x", {**BASE, **change})
    assert exc.value.source == "devices.yaml"
    assert exc.value.field is not None and exc.value.field.startswith(field)
