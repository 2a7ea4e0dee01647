"""Per-operator FLOPs and bytes against hand counts; the roofline picks the right bound."""

import pytest
from numpy.testing import assert_allclose

from libra_opt.generators.descriptors import model_from_dict
from libra_opt.generators.devices import device_from_dict
from libra_opt.generators.operators import (
    Operator,
    gemm_op,
    head_operators,
    total_bytes,
    total_flops,
    transformer_layer_operators,
)
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.roofline import (
    gemm_efficiency,
    operator_bound,
    operator_time_s,
    wave_efficiency,
)

GPT3 = model_from_dict(dict(
    kind="transformer", name="gpt3", n_layers=96, hidden_size=12288, ffn_hidden_size=49152,
    n_heads=96, vocab_size=51200, seq_len=2048, bias=True, norm="layernorm",
    learned_position_embeddings=True, dropout=True,
))


def _by_name(ops):
    return {o.name: o for o in ops}


def test_gpt3_175b_layer_forward_flops_and_bytes_by_hand():
    """One GPT-3 175B layer, TP 8, one sequence of 2048 tokens, fp16, unfused attention."""
    par = Parallelism(tp=8, global_batch_size=1, flash_attention=False)
    ops = transformer_layer_operators(GPT3, par, moe=False)
    f = _by_name(ops.forward)
    # hand counts: t = 2048 tokens, h = 12288, 12 heads of 128 per rank, 6144 FFN columns
    assert f["qkv_proj"].flops == 2 * 2048 * 4608 * 12288 == 231_928_233_984
    assert f["out_proj"].flops == 2 * 2048 * 12288 * 1536 == 77_309_411_328
    assert f["mlp_fc1"].flops == f["mlp_fc2"].flops == 309_237_645_312
    assert f["qkv_proj"].size_bytes == 2 * (25_165_824 + 56_623_104 + 9_437_184) == 182_452_224
    assert f["attention_scores"].flops == f["attention_values"].flops == 12_884_901_888
    assert f["attention_scores"].gemm == (2048, 2048, 128, 12)
    # element-wise kernels (bytes): 25,165,824 = t h; 50,331,648 = 12 s^2; 12,582,912 = t f/8
    assert f["norm1"].size_bytes == f["norm2"].size_bytes == 100_663_296
    assert f["softmax"].size_bytes == 201_326_592
    assert f["attention_dropout"].size_bytes == 251_658_240          # + 1-byte mask
    assert f["dropout_add1"].size_bytes == f["dropout_add2"].size_bytes == 176_160_768
    assert f["mlp_bias_gelu"].size_bytes == 50_331_648
    ew = [o for o in ops.forward if o.op_class == "elementwise"]
    assert total_bytes(ew) == 1_056_964_608
    assert_allclose(total_flops([o for o in ops.forward if o.op_class == "gemm"]),
                    927_712_935_936, rtol=0)


def test_gpt3_backward_gemm_shapes_and_recomputation():
    par = Parallelism(tp=8, global_batch_size=1, flash_attention=False, recompute="full")
    ops = transformer_layer_operators(GPT3, par, moe=False)
    ig, wg = _by_name(ops.input_grad), _by_name(ops.weight_grad)
    assert ig["qkv_proj_dgrad"].gemm == (2048, 12288, 4608, 1)
    assert wg["qkv_proj_wgrad"].gemm == (12288, 4608, 2048, 1)
    fwd = total_flops(ops.forward)
    # backward GEMMs = 2x forward GEMMs; full recomputation replays the whole forward
    assert_allclose(total_flops([o for o in ops.input_grad + ops.weight_grad
                                 if o.op_class in ("gemm", "attention")]),
                    2 * total_flops([o for o in ops.forward if o.op_class in ("gemm", "attention")]),
                    rtol=1e-12)
    assert total_flops(ops.recompute) == fwd
    sel = transformer_layer_operators(GPT3, par.model_copy(update={"recompute": "selective"}), False)
    assert [o.name for o in sel.recompute] == [
        "attention_scores", "softmax", "attention_dropout", "attention_values"]
    flash = transformer_layer_operators(
        GPT3, par.model_copy(update={"recompute": "selective", "flash_attention": True}), False)
    assert flash.recompute == ()   # FlashAttention's backward already recomputes the scores


def test_sequence_parallelism_shards_the_elementwise_kernels():
    par = Parallelism(tp=8, sequence_parallel=True, global_batch_size=1, flash_attention=False)
    f = _by_name(transformer_layer_operators(GPT3, par, moe=False).forward)
    assert f["norm1"].size_bytes == 100_663_296 / 8


def test_moe_layer_flops_and_shapes_by_hand():
    """Mixtral-like layer: 8 experts, top-2, SwiGLU, TP 2, EP 2, 4096 tokens."""
    m = model_from_dict(dict(
        kind="transformer", name="moe", n_layers=2, hidden_size=4096, ffn_hidden_size=14336,
        n_heads=32, n_kv_heads=8, vocab_size=32000, seq_len=4096, gated_mlp=True, norm="rmsnorm",
        moe={"n_experts": 8, "top_k": 2, "expert_ffn_hidden_size": 14336},
    ))
    par = Parallelism(tp=2, sequence_parallel=True, dp=2, ep=2, global_batch_size=2)
    f = _by_name(transformer_layer_operators(m, par, moe=True).forward)
    # 4 local experts, each 4096 x 2 x 2 / 8 = 2048 tokens; gate+up 2 x 14336 / 2 columns
    assert f["experts_fc1"].gemm == (2048, 14336, 4096, 4)
    assert f["experts_fc2"].gemm == (2048, 4096, 7168, 4)
    expert_flops = 2 * 4096 * 2 * (3 * 4096 * 14336) / 2       # 2 t k (3 h f) / tp
    assert_allclose(f["experts_fc1"].flops + f["experts_fc2"].flops, expert_flops, rtol=0)
    # router on the 2048 sequence-parallel tokens of the rank: 2 x 2048 x 8 x 4096
    assert f["router"].flops == 2 * 2048 * 8 * 4096
    # GQA: 16 query heads and 4 key/value heads of 128 per rank
    assert f["qkv_proj"].gemm == (4096, 16 * 128 + 2 * 4 * 128, 4096, 1)
    # permutation: read 2048 x 4096 tokens, write top-2 copies (bf16)
    assert f["permute"].size_bytes == 2 * (2048 * 4096 + 2 * 2048 * 4096)
    assert f["flash_attention"].flops == 2 * 16 * 4096 * 4096 * 256 * 0.5


def test_head_operators_by_hand():
    par = Parallelism(tp=8, global_batch_size=1)
    h = _by_name(head_operators(GPT3, par).forward)
    assert h["logits"].gemm == (2048, 6400, 12288, 1)
    assert h["cross_entropy"].size_bytes == 2048 * 6400 * (2 + 16)


DEV = device_from_dict("hand", {
    "name": "hand", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 1e10, "hbm_gbps": 1000.0,
    "source": "test", "date": "2026", "default_efficiency": 1.0, "mem_efficiency": 1.0,
    "vector_flops": 1e13, "sm_count": 100, "gemm_tiles": [[128, 128]],
})


def test_roofline_picks_the_compute_bound_for_a_large_gemm():
    op = gemm_op("big", 12800, 12800, 12800, 2.0)       # 100 x 100 tiles = 100 full waves
    assert operator_bound(op, DEV, "bf16") == "compute"
    assert_allclose(operator_time_s(op, DEV, "bf16"), 2 * 12800**3 / 1e15, rtol=1e-12)


def test_roofline_picks_the_memory_bound_for_a_skinny_gemm_and_elementwise():
    op = gemm_op("gemv", 1, 8192, 8192, 2.0)            # 2 FLOPs per weight byte pair
    assert operator_bound(op, DEV, "bf16") == "memory"
    assert_allclose(operator_time_s(op, DEV, "bf16"), 2 * (8192 + 8192**2 + 8192) / 1e12, rtol=1e-12)
    ew = Operator("norm", "elementwise", flops=8e9, size_bytes=4e9)
    assert operator_bound(ew, DEV, "bf16") == "memory"   # 8e9/1e13 = 0.8 ms < 4 ms
    assert_allclose(operator_time_s(ew, DEV, "bf16"), 4e-3, rtol=1e-12)
    hot = Operator("gelu", "elementwise", flops=1e11, size_bytes=1e9)
    assert operator_bound(hot, DEV, "bf16") == "compute"  # 10 ms of vector work > 1 ms
    assert_allclose(operator_time_s(hot, DEV, "bf16"), 1e-2, rtol=1e-12)


def test_wave_quantization_by_hand():
    # 101 tiles on 100 SMs: two waves, 101 / 200 useful
    assert_allclose(wave_efficiency(128 * 101, 128, 1, 100, (128, 128)), 101 / 200, rtol=1e-12)
    assert_allclose(gemm_efficiency(128 * 101, 128, 4096, DEV), 101 / 200, rtol=1e-12)
    # A100 example: 2048 x 4608 output in 256 x 128 tiles = 288 tiles, 3 waves on 108 SMs
    assert_allclose(wave_efficiency(2048, 4608, 1, 108, (256, 128)), 288 / 324, rtol=1e-12)


@pytest.mark.parametrize("k", [1024, 4096])
def test_k_overhead(k):
    import dataclasses

    d = dataclasses.replace(DEV, gemm_k_overhead=1024.0)
    assert_allclose(gemm_efficiency(12800, 12800, k, d), k / (k + 1024), rtol=1e-12)
