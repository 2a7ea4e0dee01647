"""Software-stack constants as a model value and FP8 attention.

Independent checks: hand derivations (a stack constant eta divides every roofline term by
eta, so a step's compute time divides by eta exactly when the device has no per-kernel
overhead; communication bytes do not change). Fitting the constants and the variant-set
ranking statistics are tested in ``tests/explore/test_stack_calibration.py``.
"""

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.devices import device_from_dict
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.operators import Operator
from libra_opt.generators.roofline import operator_time_s
from libra_opt.generators.stacks import stack_efficiency, timing_device
from libra_opt.io.presets import device_from_value, load_device, load_model
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
                               "vector_flops": 1e13})
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


def test_fp8_gemms_run_at_the_fp8_peak_and_attention_at_bf16():
    h100 = load_device("h100_sxm")
    gemm = Operator("g", "gemm", flops=1e13, size_bytes=1e6, gemm=(8192, 8192, 8192, 1))
    att = Operator("fa", "attention", flops=1e13, size_bytes=1e6, gemm=(8192, 128, 8192, 8),
                   fused_attention=True)
    ratio = h100.peak_flops["bf16"] / h100.peak_flops["fp8"]   # 989.4 / 1978.9 (datasheet)
    assert_allclose(operator_time_s(gemm, h100, "fp8"), operator_time_s(gemm, h100, "bf16") * ratio,
                    rtol=1e-12)
    assert operator_time_s(att, h100, "fp8") == operator_time_s(att, h100, "bf16")


def test_a_stack_constant_cannot_push_a_fraction_above_the_peak():
    a100 = load_device("a100_80gb")   # default_efficiency 0.900: x 1.2 > 1
    with pytest.raises(InputError, match="parallelism.software_stack: software stack "
                       "efficiency 1.2 on a100_80gb puts default_efficiency, mem_efficiency above 1"):
        timing_device(a100, 1.2)


def test_zero3_overlap_hides_each_layers_gathers_behind_its_compute_exactly():
    """Per phase, max(compute, ZeRO-3 collectives) + other collectives: checked against the
    plain workload's per-layer phase times computed by hand from the same walk."""
    from libra_opt.traffic.step_time import step_time as st
    from libra_opt.traffic.timing import TimingModel

    overlap = TimingModel(training_loop="overlap")

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
        got = st(hidden.workload, f, [bw], overlap).step_time_s
        assert_allclose(got, expect, rtol=1e-12)
    slow = st(plain.workload, f, [50.0]).step_time_s
    assert st(hidden.workload, f, [50.0], overlap).step_time_s < slow


def test_zero3_overlap_needs_zero3():
    with pytest.raises(InputError, match="zero3_overlap needs zero 3"):
        generate_workload(load_model("llama3_8b"), {"dp": 8, "zero": 1, "zero3_overlap": True,
                          "global_batch_size": 8}, load_device("h100_sxm"), FABRIC)
