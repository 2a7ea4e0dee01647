"""Scenario hook, text report, ASTRA-sim export, DLRM and ResNet workloads."""

from pathlib import Path

import pytest

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import generate_workload, model_from_dict
from libra_opt.generators.resnet import resnet_stage_counts
from libra_opt.io.astra_sim import export_astra_sim, read_astra_sim
from libra_opt.io.libra import read_libra_communicator
from libra_opt.io.model_entry import generated_from_entry, workload_from_entry
from libra_opt.io.presets import load_device, load_model
from libra_opt.report.workload import workload_report
from libra_opt.traffic.step_time import step_time

FABRIC = Fabric((Dim("node", "switch", 4, "A"), Dim("pod", "switch", 2, "B")))
TINY = dict(kind="transformer", name="tiny", n_layers=2, hidden_size=16, ffn_hidden_size=64,
            n_heads=4, vocab_size=32, seq_len=8, norm="rmsnorm")


def entry(**kw):
    e = {"name": "w", "model": "llama3_8b", "device": "h100_sxm",
         "parallelism": {"tp": 4, "sequence_parallel": True, "dp": 2, "global_batch_size": 8}}
    e.update(kw)
    return e


def test_entry_with_preset_and_weight_ignored():
    w = workload_from_entry(entry(weight=3.0), FABRIC, Path("."), "s.yaml")
    assert w.name == "w"
    assert w.groups["tp"] == (4, 1) and w.groups["dp"] == (1, 2)


def test_entry_with_relative_model_path(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.yaml").write_text(
        "\n".join(f"{k}: {v}" for k, v in TINY.items()) + "\n"
    )
    g = generated_from_entry(entry(model="models/tiny.yaml", efficiency=0.5), FABRIC, tmp_path,
                             "s.yaml")
    assert g.model_name == "tiny" and g.efficiency.value == 0.5


def test_default_efficiency_comes_from_the_device_file():
    g = generated_from_entry(entry(), FABRIC, Path("."), "s.yaml")
    assert g.efficiency.value == load_device("h100_sxm").default_efficiency


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"device": None}, "workloads[w].device", "valid string"),
        ({"models": "x"}, "workloads[w]", "unknown key(s) models"),
        ({"device": "h900"}, "workloads[w].device", "unknown device 'h900'"),
        ({"efficiency": 1.5}, "workloads[w].efficiency.value", "less than or equal to 1"),
        ({"parallelism": {"tp": 0, "global_batch_size": 8}}, "workloads[w].parallelism.tp", "greater than 0"),
        ({"parallelism": {"tp": 3, "dp": 2, "global_batch_size": 8}}, "workloads[w].mapping", "= 6 NPUs"),
        ({"mapping": {"tp": ["rack"]}}, "workloads[w].mapping.tp", "no dimension named 'rack'"),
        ({"parallelism": {"dp": 8, "ep": 2, "global_batch_size": 8}}, "workloads[w].parallelism.ep",
         "needs a mixture-of-experts model"),
        ({"model": "gpt3_175b", "parallelism": {"tp": 8, "global_batch_size": 1}}, "workloads[w].parallelism",
         "does not fit"),
    ],
)
def test_entry_errors_name_scenario_and_field(change, field, message):
    e = entry(**change)
    if change.get("device", "") is None:
        del e["device"]
        message = "required field is missing"
    fabric = Fabric((Dim("node", "switch", 8, "A"),)) if "gpt3" in str(change) else FABRIC
    with pytest.raises(InputError) as err:
        workload_from_entry(e, fabric, Path("."), "s.yaml")
    assert err.value.source == "s.yaml"
    assert err.value.field == field
    assert message in err.value.message


def test_errors_inside_a_model_file_name_that_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: transformer\nname: x\n")
    with pytest.raises(InputError) as err:
        workload_from_entry(entry(model="bad.yaml"), FABRIC, tmp_path, "s.yaml")
    assert err.value.source == str(bad)


def _tp_dp_tiny():
    return generate_workload(
        model_from_dict(TINY), {"tp": 4, "dp": 2, "global_batch_size": 4}, load_device("a100_80gb"), FABRIC,
        efficiency=0.5,
    )


def test_export_astra_sim_round_trip(tmp_path):
    g = _tp_dp_tiny()
    spans = export_astra_sim(g, tmp_path / "w.txt", tmp_path / "comm.yml")
    assert spans == {"forward": (4, 1), "input_grad": (4, 1), "weight_grad": (1, 2)}
    back = read_astra_sim(tmp_path / "w.txt", read_libra_communicator(tmp_path / "comm.yml"))
    bw = [100.0, 10.0]
    assert step_time(back, FABRIC, bw).step_time_s == pytest.approx(
        step_time(g.workload, FABRIC, bw).step_time_s, rel=1e-9
    )


def test_export_astra_sim_refuses_what_the_format_cannot_hold(tmp_path):
    sp = generate_workload(model_from_dict(TINY), {"tp": 4, "sequence_parallel": True, "dp": 2,
                           "global_batch_size": 4}, load_device("a100_80gb"), FABRIC, efficiency=0.5)
    with pytest.raises(InputError, match="one collective per phase"):
        export_astra_sim(sp, tmp_path / "a.txt")
    pp = generate_workload(model_from_dict(TINY), {"pp": 2, "dp": 4, "global_batch_size": 8},
                           load_device("a100_80gb"), FABRIC, efficiency=0.5)
    with pytest.raises(InputError, match="point-to-point"):
        export_astra_sim(pp, tmp_path / "b.txt")
    z1 = generate_workload(model_from_dict(TINY), {"tp": 4, "dp": 2, "zero": 1,
                           "global_batch_size": 4}, load_device("a100_80gb"), FABRIC, efficiency=0.5)
    with pytest.raises(InputError, match="one communicator group per phase"):
        export_astra_sim(z1, tmp_path / "c.txt")


def test_dlrm_embedding_all_to_all_and_mlp_all_reduce():
    g = generate_workload(load_model("dlrm_criteo_1tb"),
                          {"dp": 8, "micro_batch_size": 64, "global_batch_size": 512},
                          load_device("a100_80gb"), FABRIC, efficiency=0.5)
    layers = {x.name: x for x in g.workload.layers}
    # 64 local samples x 26 tables x 128 x 2 bytes
    a2a = [(c.kind, c.size_bytes, c.group) for c in layers["embedding"].forward.collectives]
    assert a2a == [("all_to_all", 64 * 26 * 128 * 2.0, "emb")]
    assert g.workload.groups["emb"] == (4, 2)
    bottom = layers["bottom_mlp"].weight_grad.collectives[0]
    assert (bottom.kind, bottom.size_bytes, bottom.group) == ("all_reduce", 171_392 * 2.0, "dp")
    top = layers["top_mlp"].weight_grad.collectives[0]
    assert top.size_bytes == 2_197_505 * 2.0
    # exportable: forward and input-gradient on 'emb', weight-gradient on 'dp'
    assert workload_report(g, FABRIC).count("emb") >= 1


def test_resnet50_data_parallel_all_reduce_per_stage():
    g = generate_workload(load_model("resnet50"),
                          {"dp": 8, "micro_batch_size": 32, "global_batch_size": 256},
                          load_device("a100_80gb"), FABRIC, efficiency=0.5)
    sizes = [c.size_bytes for x in g.workload.layers for c in x.weight_grad.collectives]
    assert sum(sizes) == 25_557_032 * 2.0
    stages = resnet_stage_counts(load_model("resnet50"))
    stem = g.workload.layers[0]
    assert stem.forward.compute_s == pytest.approx(2 * stages[0].macs * 32 / (312e12 * 0.5))
    assert g.model_flops_per_step == pytest.approx(6 * sum(s.macs for s in stages) * 256)
