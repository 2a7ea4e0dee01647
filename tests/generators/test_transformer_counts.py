"""FLOPs against closed forms, and the generator's compute time against the FLOP count."""

import pytest

from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import generate_workload, model_from_dict
from libra_opt.generators.transformer_counts import (
    embedding_params,
    layer_counts,
    model_flops_per_token,
    total_params,
)
from libra_opt.io.presets import load_device, load_model


def _matmul_params(m):
    """Parameters that take part in matrix multiplies: everything but embeddings and norms."""
    norms = m.n_layers * 2 * (2 if m.norm == "layernorm" else 1) * m.hidden_size
    final_norm = (2 if m.norm == "layernorm" else 1) * m.hidden_size
    tied_head = m.vocab_size * m.hidden_size if m.tied_embeddings else 0
    return total_params(m) - embedding_params(m) - norms - final_norm + tied_head


@pytest.mark.parametrize("preset", ["llama3_8b", "llama3_70b", "llama3_405b"])
def test_dense_model_flops_is_6_params_plus_attention(preset):
    """6 N per token (Kaplan et al. 2020) plus 12 L s (a d) for the attention products."""
    m = load_model(preset)
    n = _matmul_params(m)
    attn = 12 * m.n_layers * m.seq_len * m.n_heads * m.qk_head_dim
    assert model_flops_per_token(m) == pytest.approx(6 * n + attn, rel=1e-12)


def test_full_recompute_is_8_params_for_layers_and_6_for_the_head():
    m = load_model("llama3_8b")
    head = m.vocab_size * m.hidden_size
    layers = _matmul_params(m) - head
    attn = m.n_layers * m.seq_len * m.n_heads * m.qk_head_dim
    expected = 8 * layers + 6 * head + 16 * attn
    assert model_flops_per_token(m, "full") == pytest.approx(expected, rel=1e-12)
    assert model_flops_per_token(m, "selective") == pytest.approx(
        model_flops_per_token(m) + 4 * attn, rel=1e-12
    )


def test_gpt_full_recompute_matches_megatron_eq3():
    """Narayanan et al. SC'21 eq. (3), per sequence: 96 s l h^2 (1 + s/6h + V/16lh)."""
    m = load_model("gpt3_175b")
    s, n_l, h, V = 2048, 96, 12288, 50257
    eq3 = 96 * s * n_l * h**2 * (1 + s / (6 * h) + V / (16 * n_l * h))
    assert model_flops_per_token(m, "full") * s == pytest.approx(eq3, rel=1e-12)


def test_moe_flops_use_active_experts_and_router():
    m = load_model("mixtral_8x7b")
    h, f, k, E = 4096, 14336, 2, 8
    c = layer_counts(m, moe=True)
    attn_w = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h
    assert c.linear_flops_per_token == 2 * (attn_w + h * E + k * 3 * h * f)
    # capacity factor 1.25 pads routed-expert work
    c2 = layer_counts(m, moe=True, capacity_factor=1.25)
    assert c2.expert_flops_per_token == pytest.approx(1.25 * c.expert_flops_per_token)


def test_generated_compute_time_equals_hardware_flops_over_peak():
    """Without pipeline bubble, compute per NPU = hardware FLOPs / (N peak eta)."""
    m = model_from_dict(
        dict(kind="transformer", name="t", n_layers=4, hidden_size=256, ffn_hidden_size=1024,
             n_heads=8, vocab_size=1000, seq_len=128)
    )
    f = Fabric((Dim("node", "switch", 4, "A"), Dim("pod", "switch", 2, "B")))
    for recompute in ("none", "selective", "full"):
        g = generate_workload(
            m, {"tp": 4, "dp": 2, "global_batch_size": 8, "recompute": recompute}, load_device("a100_80gb"),
            f, efficiency=0.5,
        )
        peak = load_device("a100_80gb").peak_flops_for("bf16")
        compute = sum(
            layer.count * sum(p.compute_s for _, p in layer.phases())
            for layer in g.workload.layers
            if layer.name != "optimizer_step"
        )
        # the legacy model executes the attention products over the full s x s matrix
        assert compute * 8 * peak * 0.5 == pytest.approx(g.published_hardware_flops_per_step,
                                                         rel=1e-12)
        assert g.published_model_flops_per_step == pytest.approx(model_flops_per_token(m) * 8 * 128)
        # MFU's numerator counts the causal half (what FlashAttention executes)
        assert g.model_flops_per_step == pytest.approx(
            model_flops_per_token(m, causal=True) * 8 * 128)
        assert g.tokens_per_step == 8 * 128


def test_saturating_efficiency_adds_a_fixed_overhead_per_phase():
    """eta(F) = eta_max F / (F + F_half)  =>  t = (F + F_half) / (peak eta_max)."""
    m = model_from_dict(
        dict(kind="transformer", name="t", n_layers=1, hidden_size=256, ffn_hidden_size=1024,
             n_heads=8, vocab_size=1000, seq_len=128)
    )
    f = Fabric((Dim("node", "switch", 4, "A"),))
    par = {"tp": 4, "global_batch_size": 1}
    const = generate_workload(m, par, load_device("h100_sxm"), f, efficiency=0.6)
    sat = generate_workload(
        m, par, load_device("h100_sxm"), f, efficiency={"kind": "saturating", "value": 0.6, "half_flops": 1e9}
    )
    peak = load_device("h100_sxm").peak_flops_for("bf16")
    c = next(x for x in const.workload.layers if x.name == "dense_layer").forward.compute_s
    s = next(x for x in sat.workload.layers if x.name == "dense_layer").forward.compute_s
    assert s == pytest.approx(c + 1e9 / (peak * 0.6))
