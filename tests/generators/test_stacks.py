"""Software-stack constants, their fit, the variant-set ranking statistics and FP8 attention.

Independent checks: hand derivations (a stack constant eta divides every roofline term by
eta, so a step's compute time divides by eta exactly when the device has no per-kernel
overhead; communication bytes do not change), recovery of a known constant from model-made
rows, Spearman's rho against scipy and against a hand computation, regret by hand.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose
from scipy.stats import spearmanr

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.devices import device_from_dict
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.operators import Operator
from libra_opt.generators.ranking import spearman, variant_rankings
from libra_opt.generators.roofline import operator_time_s
from libra_opt.generators.stack_fit import calibrate_stacks, with_stacks
from libra_opt.generators.stacks import stack_efficiency, timing_device
from libra_opt.generators.validation import (
    RowResult,
    TableResult,
    ValidationTable,
    predict_row,
)
from libra_opt.io.presets import device_from_value, load_device, load_model
from libra_opt.io.validation import load_validation_table, validation_table_from_dict
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.workload import Layer, Phase, Workload

FABRIC = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 2, "IB")))
PAR = {"tp": 8, "sequence_parallel": True, "dp": 2, "global_batch_size": 8,
       "recompute": "selective"}


def _step(device, par):
    g = generate_workload(load_model("llama3_8b"), par, device, FABRIC)
    return g, step_time(g.workload, FABRIC, [300.0, 40.0])


def test_stack_constant_divides_compute_time_and_leaves_communication():
    a100 = load_device("a100_80gb")
    assert a100.kernel_overhead_s == 0.0   # so every roofline term scales exactly
    eta = a100.software_stacks["megatron_deepspeed"]
    g1, t1 = _step(a100, PAR)
    g2, t2 = _step(a100, {**PAR, "software_stack": "megatron_deepspeed"})
    assert_allclose(t2.compute_s, t1.compute_s / eta, rtol=1e-12)
    assert_allclose(t2.comm_s, t1.comm_s, rtol=1e-12)
    assert_allclose(t2.traffic_by_dim_bytes, t1.traffic_by_dim_bytes, rtol=0)
    # the reported device (peak for MFU, memory) is the preset, not the timing device
    assert g2.device == a100 and g2.model_flops_per_step == g1.model_flops_per_step
    assert any("megatron_deepspeed" in n for n in g2.notes)


def test_calibration_stack_is_the_default_and_costs_nothing():
    a100 = load_device("a100_80gb")
    _, t0 = _step(a100, PAR)
    _, t1 = _step(a100, {**PAR, "software_stack": "megatron_lm_2022"})
    assert t0.step_time_s == t1.step_time_s
    assert stack_efficiency(a100, None) == stack_efficiency(a100, "megatron_lm_2022") == 1.0


def test_timing_device_scales_every_roofline_term():
    d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 1,
                               "hbm_gbps": 1000, "source": "", "date": "",
                               "default_efficiency": 0.5, "mem_efficiency": 0.8,
                               "vector_flops": 1e13}, "<dict>")
    slow = timing_device(d, 0.25)
    gemm = Operator("g", "gemm", flops=1e12, size_bytes=1.0, gemm=(4096, 4096, 4096, 1))
    mem = Operator("n", "elementwise", flops=1.0, size_bytes=8e9)
    vec = Operator("v", "elementwise", flops=1e12, size_bytes=1.0)
    # 1e12 / (1e15 * 0.5) = 2 ms -> 8 ms; 8e9 / (1e12 * 0.8) = 10 ms -> 40 ms; 1e12/1e13 = 0.1 s -> 0.4 s
    assert_allclose([operator_time_s(o, slow, "bf16") for o in (gemm, mem, vec)],
                    [8e-3, 40e-3, 0.4], rtol=1e-12)


def test_unknown_stack_and_bad_entries_are_refused():
    with pytest.raises(InputError, match="parallelism.software_stack: device a100_80gb has "
                       "no constant for software stack 'torchtitan'"):
        _step(load_device("a100_80gb"), {**PAR, "software_stack": "torchtitan"})
    with pytest.raises(InputError, match=r"software_stacks.megatron_lm_2022 must be 1"):
        device_from_value({"preset": "a100_80gb", "software_stacks": {"megatron_lm_2022": 0.9}},
                          "s.yaml")
    with pytest.raises(InputError, match="software_stacks needs calibration_stack"):
        device_from_value({"preset": "a100_80gb", "calibration_stack": "",
                           "software_stacks": {"x": 0.9}}, "s.yaml")
    # a user-supplied constant for a new stack is accepted and used
    dev = device_from_value({"preset": "a100_80gb", "software_stacks": {"torchtitan": 0.5}},
                            "s.yaml")
    assert dev.software_stacks["torchtitan"] == 0.5
    assert dev.software_stacks["megatron_deepspeed"] == load_device(
        "a100_80gb").software_stacks["megatron_deepspeed"]


K22 = load_validation_table("korthikanti22_a100")
SMALL = tuple(r for r in K22.rows if r.name.startswith("K22 22B"))


def test_stack_fit_recovers_a_known_constant_from_model_made_rows():
    truth = 0.77
    dev = with_stacks(SMALL[0].cluster.device, {"my_stack": truth})
    rows = []
    for r, mark in zip(SMALL, (True, False), strict=True):
        r = dataclasses.replace(r, parallelism=r.parallelism.model_copy(
            update={"software_stack": "my_stack"}), calibrate=False)
        made = predict_row(r, dev).predicted
        start = with_stacks(r.cluster.device, {"my_stack": 1.0})
        rows.append(dataclasses.replace(r, published=made, calibrate_stack=mark,
                                        cluster=dataclasses.replace(r.cluster, device=start)))
    (cal,) = calibrate_stacks([ValidationTable("synthetic", "model-made", tuple(rows))])
    assert (cal.stack, cal.device, cal.before) == ("my_stack", "a100_80gb", 1.0)
    assert_allclose(cal.after, truth, rtol=1e-5)
    assert cal.rows == ("synthetic: K22 22B full recompute",)
    # the unmarked row, made with the same truth, validates exactly with the fitted constant
    fitted = with_stacks(rows[1].cluster.device, {"my_stack": cal.after})
    assert abs(predict_row(rows[1], fitted).error) < 1e-5


def _table(rows):
    return {"name": "t", "clusters": {"c": {"device": "a100_80gb", "gpus_per_node": 8,
            "node": {"bw_gbps": 230}, "pod": {"bw_gbps": 25}}},
            "defaults": {"cluster": "c"}, "rows": rows}


ROW = {"name": "r", "source": "me", "metric": "step_time_s", "published": 1.0,
       "model": "llama3_8b", "parallelism": {"tp": 8, "global_batch_size": 8}}


def test_table_marks_are_checked():
    with pytest.raises(InputError, match=r"t.yaml: rows\[0\].calibrate"):
        validation_table_from_dict(_table([{**ROW, "calibrate": "device"}]), "t.yaml")
    with pytest.raises(InputError, match=r"rows\[0\].convention: convention_band needs"):
        validation_table_from_dict(_table([{**ROW, "convention_band": 0.1}]), "t.yaml")
    t = validation_table_from_dict(_table([{**ROW, "calibrate": "stack"}]), "t.yaml")
    assert t.rows[0].calibrate_stack and not t.rows[0].calibrate
    with pytest.raises(InputError, match=r"rows\[0\].calibrate: stack 'megatron_lm_2022' is "
                       "the calibration stack of a100_80gb"):
        calibrate_stacks([t])


def test_spearman_matches_scipy_and_a_hand_value():
    # ranks of a: 1, 2.5, 2.5, 4; of b: 1..4 -> cov 4.5, var 4.5 and 5: 4.5 / sqrt(22.5)
    a, b = [1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]
    assert_allclose(spearman(a, b), 4.5 / 22.5 ** 0.5, rtol=1e-12)
    for x, y in ((a, b), ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8])):
        assert_allclose(spearman(x, y), spearmanr(x, y).statistic, rtol=1e-12)


def test_regret_and_pick_by_hand():
    # measured costs (8 GPUs x t / 8 samples): 1.0, 1.2, 1.5; the model ranks the second first
    def row(name, measured, predicted):
        return RowResult(name, "s", "d", "step_time_s", measured, predicted, predicted, False,
                         variant_set="v", n_npus=8, samples_per_step=8.0)

    rows = (row("a", 1.0, 1.3), row("b", 1.2, 1.1), row("c", 1.5, 1.6))
    (v,) = variant_rankings([TableResult("t", "t", rows)])
    assert (v.pick, v.best) == ("b", "a")
    assert_allclose(v.regret, 1.2 / 1.0 - 1, rtol=1e-12)
    assert_allclose(v.spearman, 0.5, rtol=1e-12)   # ranks (1,2,3) vs (2,1,3): 1 - 6*2/24


def test_fp8_gemms_run_at_the_fp8_peak_and_attention_at_bf16():
    h100 = load_device("h100_sxm")
    gemm = Operator("g", "gemm", flops=1e13, size_bytes=1e6, gemm=(8192, 8192, 8192, 1))
    att = Operator("fa", "attention", flops=1e13, size_bytes=1e6, gemm=(8192, 128, 8192, 8),
                   fused_attention=True)
    ratio = h100.peak_flops["bf16"] / h100.peak_flops["fp8"]   # 989.4 / 1978.9 (datasheet)
    assert_allclose(operator_time_s(gemm, h100, "fp8"), operator_time_s(gemm, h100, "bf16") * ratio,
                    rtol=1e-12)
    assert operator_time_s(att, h100, "fp8") == operator_time_s(att, h100, "bf16")


def test_tokens_per_second_metric_is_tokens_over_time_and_gpus():
    t = load_validation_table("nemo_h100")
    row = t.rows[0]
    r = predict_row(row)
    # 128 sequences x 8192 tokens / (t x 64 GPUs)
    assert_allclose(r.predicted, 128 * 8192 / (r.step_time_s * 64), rtol=1e-12)
    assert r.role == "stack" and r.stack == "nemo_megatron_core"


def test_a_stack_constant_cannot_push_a_fraction_above_the_peak():
    a100 = load_device("a100_80gb")   # default_efficiency 0.941: x 1.1 > 1
    with pytest.raises(InputError, match="parallelism.software_stack: software stack "
                       "efficiency 1.1 on a100_80gb puts default_efficiency above 1"):
        timing_device(a100, 1.1)


def test_zero3_overlap_hides_each_layers_gathers_behind_its_compute_exactly():
    """Per phase, max(compute, ZeRO-3 collectives) + other collectives: checked against the
    plain workload's per-layer phase times computed by hand from the same walk."""
    from libra_opt.traffic.step_time import step_time as st

    f = Fabric((Dim("node", "switch", 8, "NVLink"),))
    dev = load_device("h100_sxm")
    base = {"tp": 1, "dp": 8, "zero": 3, "global_batch_size": 8, "recompute": "full"}
    plain = generate_workload(load_model("llama3_8b"), base, dev, f)
    hidden = generate_workload(load_model("llama3_8b"), {**base, "zero3_overlap": True}, dev, f)
    assert hidden.workload.overlap_form and not plain.workload.overlap_form
    for bw in (50.0, 400.0, 3000.0):
        expect = 0.0
        for layer in plain.workload.layers:
            for _, p in layer.phases():
                one = Workload("w", (Layer("x", Phase(0.0, p.collectives)),),
                               plain.workload.groups)
                comm = st(one, f, [bw]).step_time_s if p.collectives else 0.0
                gathers = all(c.group == "dp" and c.kind in ("all_gather", "reduce_scatter")
                              for c in p.collectives)
                hide = gathers and layer.name not in ("optimizer_step", "dp_grad_sync")
                expect += layer.count * (max(p.compute_s, comm) if hide else p.compute_s + comm)
        got = st(hidden.workload, f, [bw], training_loop="overlap").step_time_s
        assert_allclose(got, expect, rtol=1e-12)
    slow = st(plain.workload, f, [50.0]).step_time_s
    assert st(hidden.workload, f, [50.0], training_loop="overlap").step_time_s < slow


def test_zero3_overlap_needs_zero3():
    with pytest.raises(InputError, match="zero3_overlap needs zero 3"):
        generate_workload(load_model("llama3_8b"), {"dp": 8, "zero": 1, "zero3_overlap": True,
                          "global_batch_size": 8}, load_device("h100_sxm"), FABRIC)


def test_stack_fit_stops_where_a_kernel_would_beat_the_peak():
    # rows "published" 3x faster than the model can go: the fit ends at the cap
    # eta = 1 / max(default_efficiency, attention_efficiency, mem_efficiency), no error
    r = SMALL[0]
    dev = with_stacks(r.cluster.device, {"my_stack": 1.0})
    r = dataclasses.replace(r, parallelism=r.parallelism.model_copy(
        update={"software_stack": "my_stack"}), calibrate=False, calibrate_stack=True,
        cluster=dataclasses.replace(r.cluster, device=dev))
    r = dataclasses.replace(r, published=predict_row(r).predicted / 3.0)   # step_time_s
    (cal,) = calibrate_stacks([ValidationTable("t", "t", (r,))])
    cap = 1.0 / max(dev.default_efficiency, dev.attention_efficiency, dev.mem_efficiency)
    assert_allclose(cal.after, cap, rtol=1e-9)
    assert cal.errors[0] > 0.5   # still far from the row: reported, not forced
