"""MFU and the step time use one attention convention (causal), and MFU > 100 % is an error.

At 512K context attention dominates the FLOPs. Counting it over the full ``s x s`` matrix
(the published "model FLOPs" convention) while FlashAttention executes the causal half gave
MFU above 100 % for Llama 3 8B with context parallelism. Model FLOPs now count the causal
half; the published convention is kept only for comparing with published TFLOP/s figures.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import LibraOptError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.generated import model_flops_utilization
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.transformer_counts import layer_counts, model_flops_per_token
from libra_opt.generators.transformer_workload import _check_not_faster_than_peak
from libra_opt.io.presets import load_device, load_model
from libra_opt.traffic.step_time import step_time

SEQ = 524288


def _long_context():
    # fast kernels and a fast network: the step is almost all FlashAttention compute
    dev = dataclasses.replace(load_device("h100_sxm"), default_efficiency=1.0,
                              attention_efficiency=1.0, mem_efficiency=1.0)
    m = load_model("llama3_8b").model_copy(update={"seq_len": SEQ})
    f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 4, "IB")))
    g = generate_workload(m, {"cp": 32, "global_batch_size": 1}, dev, f, check_memory=False)
    return m, g, step_time(g.workload, f, [1e6, 1e6]).step_time_s


def test_causal_model_flops_remove_half_the_attention_products():
    m = load_model("llama3_8b").model_copy(update={"seq_len": SEQ})
    att = sum(layer_counts(m, False).attention_flops_per_token for _ in range(m.n_layers))
    full, causal = model_flops_per_token(m), model_flops_per_token(m, causal=True)
    assert_allclose(full - causal, 3 * 0.5 * att, rtol=1e-12)   # forward + 2x backward
    assert att / (full / 3) > 0.8   # attention is most of the forward at 512K


def test_long_context_mfu_stays_below_one_and_the_old_count_did_not():
    _, g, t = _long_context()
    mfu = model_flops_utilization(g, t)
    old = g.published_model_flops_per_step / (t * g.n_npus * g.device.peak_flops_for("bf16"))
    assert 0.5 < mfu <= 1.0
    assert old > 1.0   # the full-matrix count over the causal time: the reported bug


def test_mfu_above_one_is_raised_not_reported():
    _, g, t = _long_context()
    with pytest.raises(LibraOptError, match=r"model error: MFU .* > 100 %"):
        model_flops_utilization(g, 0.5 * t * model_flops_utilization(g, t))


def test_generation_refuses_a_compute_model_faster_than_the_peak():
    # 1e15 useful FLOPs on 10 NPUs at 1e12 FLOP/s need 100 s; a stage of 99 s is impossible
    dev = load_device("h100_sxm")
    peak = dev.peak_flops_for("bf16")
    _check_not_faster_than_peak(1e15, 1e15 / (10 * peak), 10, dev, "bf16", "m")
    with pytest.raises(LibraOptError, match="model error: m: the compute model gives"):
        _check_not_faster_than_peak(1e15, 0.99e15 / (10 * peak), 10, dev, "bf16", "m")
