"""Device values in scenario and validation files: a preset, a preset with fields replaced,
or a whole entry (``libra_opt.io.presets.device_from_value``)."""

import dataclasses
import math
from pathlib import Path

import pytest
import yaml

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io.model_entry import generated_from_entry
from libra_opt.io.presets import device_entry, device_from_value, load_device
from libra_opt.io.validation import validation_table_from_dict

FULL = {"key": "my_npu", "name": "My NPU", "peak_flops": {"bf16": 5e14}, "hbm_bytes": 6.4e10,
        "hbm_gbps": 2000.0, "source": "our datasheet", "date": "2026-01",
        "default_efficiency": 0.7, "sm_count": 100, "gemm_tiles": [[128, 128]],
        "vector_flops": 5e13}


def test_a_name_is_the_preset():
    assert device_from_value("a100_80gb", "s.yaml") == load_device("a100_80gb")


def test_a_preset_with_no_change_is_the_preset():
    assert device_from_value({"preset": "h100_sxm"}, "s.yaml") == load_device("h100_sxm")


def test_overrides_replace_only_the_named_fields_and_record_where_they_came_from():
    base = load_device("a100_80gb")
    d = device_from_value({"preset": "a100_80gb", "default_efficiency": 0.8,
                           "gemm_k_overhead": 100}, "runs.yaml")
    assert (d.default_efficiency, d.gemm_k_overhead) == (0.8, 100.0)
    # every other field is the preset's
    same = {f.name for f in dataclasses.fields(d)} - {"default_efficiency", "gemm_k_overhead",
                                                      "efficiency_source"}
    assert all(getattr(d, n) == getattr(base, n) for n in same)
    # the preset's calibration note is not kept for numbers it did not produce
    assert d.efficiency_source == ("a100_80gb preset with default_efficiency = 0.8, "
                                   "gemm_k_overhead = 100 from runs.yaml")
    kept = device_from_value({"preset": "a100_80gb", "mem_efficiency": 0.9,
                              "efficiency_source": "our STREAM runs"}, "runs.yaml")
    assert kept.efficiency_source == "our STREAM runs" and kept.mem_efficiency == 0.9


def test_a_whole_entry_needs_a_key_and_every_required_field():
    d = device_from_value(FULL, "s.yaml")
    assert d.key == "my_npu" and d.peak_flops_for("bf16") == 5e14 and d.sm_count == 100
    short = {k: v for k, v in FULL.items() if k != "hbm_gbps"}
    with pytest.raises(InputError) as e:
        device_from_value(short, "s.yaml", "workloads[w].device")
    assert e.value.source == "s.yaml" and e.value.field == "workloads[w].device.hbm_gbps"


def test_entry_round_trips_through_yaml():
    for d in (dataclasses.replace(load_device("h100_sxm"), default_efficiency=0.61,
                                  efficiency_source="fit"),
              device_from_value(FULL, "s.yaml")):
        text = yaml.safe_dump(device_entry(d))
        assert device_from_value(yaml.safe_load(text), "f.yaml") == d
    assert device_entry(load_device("b200")) == {"preset": "b200"}


@pytest.mark.parametrize("value, field, words", [
    ({"preset": "a100"}, "dev.preset", "unknown device preset 'a100'; presets: a100_80gb"),
    ({"preset": 3}, "dev.preset", "unknown device preset 3"),
    ({"preset": "a100_80gb", "default_eff": 0.8}, "dev", "unknown key 'default_eff'"),
    ({"preset": "a100_80gb", "default_efficiency": 1.5}, "dev.default_efficiency", "less than or equal to 1"),
    ({"preset": "a100_80gb", "default_efficiency": math.nan}, "dev.default_efficiency", "finite"),
    ({"preset": "a100_80gb", "hbm_gbps": -1}, "dev.hbm_gbps", "greater than 0"),
    ({"preset": "a100_80gb", "key": "a b"}, "dev.key", "1-64 letters"),
    ({"default_efficiency": 0.8}, "dev", "needs 'preset: <name>'"),
    (["a100_80gb"], "dev", "expected a device preset name or a mapping"),
    ("a100", "dev", "unknown device 'a100'"),
])
def test_bad_values_name_the_file_and_field(value, field, words):
    with pytest.raises(InputError) as e:
        device_from_value(value, "s.yaml", "dev")
    assert e.value.source == "s.yaml" and e.value.field == field
    assert words.lower() in e.value.message.lower()


FABRIC = Fabric((Dim("node", "switch", 8, "NVLink"),))


def _entry(device):
    return {"name": "w", "model": "gpt3_175b", "device": device,
            "parallelism": {"tp": 8, "global_batch_size": 1, "micro_batch_size": 1},
            "check_memory": False}


def test_scenario_workload_uses_the_overridden_device():
    base = generated_from_entry(_entry("a100_80gb"), FABRIC, Path("."), "s.yaml")
    same = generated_from_entry(_entry({"preset": "a100_80gb"}), FABRIC, Path("."), "s.yaml")
    assert same.compute_breakdown_s == base.compute_breakdown_s
    half = generated_from_entry(
        _entry({"preset": "a100_80gb", "default_efficiency": base.device.default_efficiency / 2}),
        FABRIC, Path("."), "s.yaml")
    # GEMMs of GPT-3 175B at TP 8 are compute-bound: halving the GEMM efficiency doubles them
    assert half.compute_breakdown_s["gemm"] == pytest.approx(2 * base.compute_breakdown_s["gemm"],
                                                             rel=1e-9)
    assert half.compute_breakdown_s["elementwise"] == base.compute_breakdown_s["elementwise"]
    with pytest.raises(InputError) as e:
        generated_from_entry(_entry({"preset": "a100_80gb", "sm_count": -1}), FABRIC,
                             Path("."), "s.yaml")
    assert e.value.field == "workloads[w].device.sm_count"


def test_validation_cluster_takes_a_device_mapping():
    t = validation_table_from_dict({
        "name": "t",
        "clusters": {"c": {"device": {"preset": "h100_sxm", "default_efficiency": 0.5},
                           "gpus_per_node": 8, "node": {"bw_gbps": 450}, "pod": {"bw_gbps": 50}}},
        "defaults": {"cluster": "c"},
        "rows": [{"name": "r", "source": "s", "metric": "step_time_s", "published": 1.0,
                  "model": "llama3_8b", "parallelism": {"tp": 8, "global_batch_size": 8}}],
    }, "t.yaml")
    assert t.rows[0].cluster.device.default_efficiency == 0.5
    with pytest.raises(InputError) as e:
        validation_table_from_dict({
            "name": "t",
            "clusters": {"c": {"device": {"preset": "h100_sxm", "nope": 1},
                               "gpus_per_node": 8, "node": {"bw_gbps": 450}, "pod": {"bw_gbps": 50}}},
            "rows": [{"name": "r", "source": "s", "metric": "step_time_s", "published": 1.0,
                      "model": "llama3_8b", "cluster": "c", "parallelism": {"global_batch_size": 8}}],
        }, "t.yaml")
    assert e.value.source == "t.yaml" and e.value.field == "clusters.c.device"
    assert e.value.message == "unknown key 'nope'"
