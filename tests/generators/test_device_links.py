"""One bandwidth convention: a typed bandwidth is a line rate, and what collectives reach of
it is the device's, applied by default to the dimensions its links form
(libra_opt/generators/device_links.py), in scenarios as in the validation tables."""

import math
from pathlib import Path

import pytest
import yaml
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.validation import validate
from libra_opt.fabric.builders import multi_dim, rail_only, rail_optimized_fat_tree
from libra_opt.generators.device_links import device_link_efficiency, scale_up_dims
from libra_opt.io import load_scenario
from libra_opt.io.presets import load_device
from libra_opt.io.validation import load_validation_table
from libra_opt.scenario.evaluate import evaluate

EXAMPLE = Path(__file__).resolve().parents[2] / "libra_opt/data/examples/gpt3_175b_a100_cluster.yaml"


def test_the_dimensions_inside_the_outermost_are_scale_up():
    assert scale_up_dims(rail_optimized_fat_tree(1024, 8), 8) == 1
    assert scale_up_dims(rail_only(1024, 32), 8) == 1   # the builder's HB domain, any size
    assert scale_up_dims(multi_dim((4, 8, 4, 32), ("ring", "fully_connected", "ring",
                                                   "switch")), 8) == 3
    # one dimension: one HGX board of the device, or a network
    assert scale_up_dims(multi_dim((8,), ("switch",)), 8) == 1
    assert scale_up_dims(multi_dim((16,), ("switch",)), 8) == 0


def test_each_device_gives_its_links_their_measured_efficiency():
    a100, h100 = load_device("a100_80gb"), load_device("h100_sxm")
    f = rail_optimized_fat_tree(64, 8)
    assert dict(device_link_efficiency(f, [a100])) == {"hb": "a100_nvlink_nccl"}
    assert dict(device_link_efficiency(f, [h100, h100])) == {"hb": "h100_nvlink"}
    assert dict(device_link_efficiency(f, [load_device("mi300x")])) == {}
    with pytest.raises(InputError) as e:
        device_link_efficiency(f, [a100, h100])
    assert e.value.field == "collectives.efficiency.hb"


def _example(tmp_path, extra: str) -> object:
    path = tmp_path / "s.yaml"
    path.write_text(EXAMPLE.read_text() + extra)
    return load_scenario(path)


def test_a_scenario_applies_the_device_curve_and_the_user_picks_another(tmp_path):
    default = load_scenario(EXAMPLE)
    assert default.timing.efficiency == (("hb", "a100_nvlink_nccl"),)
    line = _example(tmp_path, "\ncollectives: {efficiency: {hb: none}}\n")
    half = _example(tmp_path, "\ncollectives: {efficiency: {hb: 0.5, scaleout: nic_400g}}\n")
    assert line.timing.efficiency == (("hb", 1.0),)
    assert half.timing.efficiency == (("hb", 0.5), ("scaleout", 0.94))
    bw = [600.0, 100.0]
    t_line, t_curve, t_half = (evaluate(s, bw).weighted_step_time_s
                               for s in (line, default, half))
    assert t_line < t_curve and t_line < t_half
    # the topology-aware collective model prices the same dimension with the same curve
    ta = _example(tmp_path, "\ncollective_model: topology_aware\n")
    assert dict(ta.collective_settings.efficiency) == {"hb": "a100_nvlink_nccl"}


def test_a_curve_beside_a_latency_of_its_own_is_refused_naming_the_dimension(tmp_path):
    text = EXAMPLE.read_text().replace("hb_domain: 8", "hb_domain: 8\n  hb_latency_s: 1.0e-6")
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        load_scenario(path)
    assert e.value.field == "collectives.efficiency.hb" and "latency" in e.value.message
    path.write_text(text + "\ncollectives: {efficiency: {hb: none}}\n")
    assert load_scenario(path).fabric.dims[0].latency_s == 1e-6   # the user's own choice


def _scenario_from_row(tmp_path, table: str, name: str):
    """A scenario file written from a validation row's facts: the cluster's line rates and
    per-step latencies, the model, the parallelism, the device and its link efficiency
    where the table states one of its own."""
    rows = load_validation_table(table).rows
    index = next(i for i, r in enumerate(rows) if r.name == name)
    row = rows[index]
    c, n = row.cluster, row.parallelism.n_npus
    per = min(c.gpus_per_node, n)
    curve = {lvl: isinstance(getattr(c, f"{lvl}_efficiency"), str) for lvl in ("node", "pod")}
    dims = [{"name": "node", "topology": "switch", "size": per, "tier": "ScaleUp",
             "latency_s": 0.0 if curve["node"] else c.node_latency_s}]
    bw = [c.node_bw_gbps]
    if n > per:
        dims.append({"name": "pod", "topology": "switch", "size": n // per,
                     "tier": "ScaleOut", "latency_s": 0.0 if curve["pod"] else c.pod_latency_s})
        bw.append(c.pod_bw_gbps)
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(row.model.model_dump(exclude_none=True)))
    par = row.parallelism.model_dump(exclude_none=True)
    overlap = row.parallelism.tp_comm_overlap or row.parallelism.dp_comm_overlap \
        or row.parallelism.zero3_overlap
    spec = {"name": "row", "fabric": {"dims": dims}, "cost_model": {"catalog": "current_2025"},
            "workloads": [{"name": "w", "model": "model.yaml", "parallelism": par,
                           "device": c.device.key, "check_memory": row.check_memory}],
            "training_loop": "overlap" if overlap else "no_overlap"}
    if n > per and c.pod_efficiency != 1.0:   # a table's own measured fraction of the network
        spec["collectives"] = {"efficiency": {"pod": c.pod_efficiency}}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(spec))
    return load_scenario(path), bw, validate(load_validation_table(table)).rows[index]


@pytest.mark.parametrize(("table", "name"), [
    # 175B, TP 8 x PP 8: the A100 curve on NVLink
    ("korthikanti22_a100", "K22 175B full recompute"),
    ("korthikanti22_a100", "K22 22B full recompute"),   # one node: one dimension
    # Omni-Path at the fraction NCCL measured there
    ("bloom_prequel_a100", "BLOOM-prequel 181B (02-25), TP 8, PP 2, MBS 1"),
    # H100: NVLink at the NCCL-effective fraction
    ("llama3_h100", "Llama 3 405B, 16384 GPUs, seq 8K"),
    ("vtrain_dev_a100", "GPT 3.6B, TP 16, PP 1, DP 4, MBS 32"),   # a flat ring over 2 nodes
    ("vtrain_dev_a100", "GPT 18.4B, TP 2, PP 4, DP 32, MBS 4"),   # the 2-GPU plateau
])
def test_a_scenario_written_from_a_rows_facts_gives_validates_step_time(tmp_path, table, name):
    scen, bw, result = _scenario_from_row(tmp_path, table, name)
    assert scen.fabric.sizes[0] <= 8 and bw[0] in (300.0, 450.0)   # datasheet line rates
    t = evaluate(scen, bw).weighted_step_time_s
    assert math.isfinite(t)
    assert_allclose(t, result.step_time_s, rtol=1e-9)
