"""Parameter and FLOP counts of a transformer layer, from its descriptor alone.

Conventions of the published numbers compared against: a product of ``m x k`` by ``k x n`` is
``2 m k n`` FLOPs (bias, norms, softmax, activations not counted); attention products over
the *full* ``s x s`` matrix (Narayanan et al. 2021, eq. 3; Chowdhery et al. 2022, App. B);
backward twice forward; embedding lookups free, the output projection a matrix multiply.
"""

from __future__ import annotations

from dataclasses import dataclass

from libra_opt.generators.descriptors import TransformerSpec

__all__ = ["LayerCounts", "layer_counts", "embedding_params", "head_params", "total_params",
           "active_params", "head_flops_per_token", "model_flops_per_token"]


@dataclass(frozen=True)
class LayerCounts:
    """Parameters and forward FLOPs per token of one transformer layer.

    Attributes
    ----------
    attention_params, dense_mlp_params, router_params, norm_params : int
        Projections (with biases), dense FFN or shared experts, gating matrix ``h x E``, norms.
    expert_params, n_experts : int
        One routed expert and the routed experts in the layer (0 for a dense layer).
    linear_flops_per_token : float
        Forward matrix-multiply FLOPs per token with weights (the ``top_k`` routed experts
        included).
    expert_flops_per_token : float
        Its routed-expert part (padded by a capacity factor).
    attention_flops_per_token : float
        Forward FLOPs of ``Q K^T`` and ``P V``: ``2 s a (d_qk + d_v)``.
    """

    attention_params: int
    dense_mlp_params: int
    expert_params: int
    n_experts: int
    router_params: int
    norm_params: int
    linear_flops_per_token: float
    expert_flops_per_token: float
    attention_flops_per_token: float

    @property
    def params(self) -> int:
        """All parameters of the layer."""
        return (
            self.attention_params
            + self.dense_mlp_params
            + self.n_experts * self.expert_params
            + self.router_params
            + self.norm_params
        )


def _mlp_params(model: TransformerSpec, ffn: int) -> int:
    h = model.hidden_size
    mats = 3 if model.gated_mlp else 2
    biases = ((2 if model.gated_mlp else 1) * ffn + h) if model.bias else 0
    return mats * h * ffn + biases


def _attention_params(model: TransformerSpec) -> tuple[int, int, int]:
    """(projection parameters, extra norm parameters, weight-matrix parameters)."""
    h, a = model.hidden_size, model.n_heads
    mla = model.mla
    if mla is not None:
        d_qk, d_v = model.qk_head_dim, model.v_head_dim
        if mla.q_lora_rank is None:
            q = h * a * d_qk
            q_norm = 0
        else:
            q = h * mla.q_lora_rank + mla.q_lora_rank * a * d_qk
            q_norm = mla.q_lora_rank
        kv_down = h * (mla.kv_lora_rank + mla.qk_rope_head_dim)
        kv_up = mla.kv_lora_rank * a * (mla.qk_nope_head_dim + d_v)
        out = a * d_v * h
        weights = q + kv_down + kv_up + out
        return weights, q_norm + mla.kv_lora_rank, weights
    g, d_qk, d_v = model.kv_heads, model.qk_head_dim, model.v_head_dim
    weights = h * a * d_qk + h * g * d_qk + h * g * d_v + a * d_v * h
    biases = (a * d_qk + g * d_qk + g * d_v + h) if model.bias else 0
    return weights + biases, 0, weights


def layer_counts(model: TransformerSpec, moe: bool,
                 capacity_factor: float | None = None) -> LayerCounts:
    """Parameters and FLOPs of one layer (dense, or MoE when ``moe`` is true); ``capacity_factor``
    overrides the model's (routed-expert FLOPs are multiplied by it; ``None``: dropless).

    Notes
    -----
    Attention projections ``h a d + 2 h g d + a d h`` parameters; FFN ``2 h f`` (``3 h f``
    gated); forward ``2 x (weights used)`` FLOPs per token plus ``2 s a (d_qk + d_v)``
    (``24 h^2 + 4 s h`` for GPT [1]_).

    References
    ----------
    .. [1] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
       Clusters Using Megatron-LM", SC 2021, arXiv:2104.04473, Sec. 5.1 and Appendix.

    Examples
    --------
    >>> from libra_opt.generators.descriptors import TransformerSpec
    >>> m = TransformerSpec(name="t", n_layers=2, hidden_size=64, ffn_hidden_size=256,
    ...                     n_heads=4, vocab_size=100, seq_len=32)
    >>> c = layer_counts(m, moe=False)
    >>> c.attention_params + c.dense_mlp_params
    49152
    >>> c.linear_flops_per_token + c.attention_flops_per_token == 24 * 64**2 + 4 * 32 * 64
    True
    """
    h, s, a = model.hidden_size, model.seq_len, model.n_heads
    attn_params, extra_norm, proj_w = _attention_params(model)
    norm_per = 2 if model.norm == "layernorm" else 1
    norms = 2 * norm_per * h + extra_norm
    attn_flops = 2.0 * s * a * (model.qk_head_dim + model.v_head_dim)
    if moe:
        spec = model.moe
        if spec is None:
            raise ValueError("layer_counts(moe=True) needs a model with a 'moe' block")
        cf = capacity_factor if capacity_factor is not None else spec.capacity_factor
        cf = 1.0 if cf is None else float(cf)
        f_e = spec.expert_ffn_hidden_size
        e_params = _mlp_params(model, f_e)
        e_w = (3 if model.gated_mlp else 2) * h * f_e
        n_experts, router = spec.n_experts, h * spec.n_experts
        mlp, mlp_w = spec.n_shared_experts * e_params, spec.n_shared_experts * e_w
        expert_flops = 2.0 * spec.top_k * e_w * cf
    else:
        e_params = n_experts = router = 0
        mlp = _mlp_params(model, model.ffn_hidden_size)
        mlp_w = (3 if model.gated_mlp else 2) * h * model.ffn_hidden_size
        expert_flops = 0.0
    return LayerCounts(
        attention_params=attn_params,
        dense_mlp_params=mlp,
        expert_params=e_params,
        n_experts=n_experts,
        router_params=router,
        norm_params=norms,
        linear_flops_per_token=2.0 * (proj_w + mlp_w + router) + expert_flops,
        expert_flops_per_token=expert_flops,
        attention_flops_per_token=attn_flops,
    )


def embedding_params(model: TransformerSpec) -> int:
    """Input embedding parameters: ``V h`` (+ ``s h`` learned positions)."""
    pos = model.seq_len * model.hidden_size if model.learned_position_embeddings else 0
    return model.vocab_size * model.hidden_size + pos


def head_params(model: TransformerSpec) -> int:
    """Final norm plus the output projection (0 extra when tied to the embedding)."""
    norm = (2 if model.norm == "layernorm" else 1) * model.hidden_size
    return norm + (0 if model.tied_embeddings else model.vocab_size * model.hidden_size)


def total_params(model: TransformerSpec) -> int:
    """All parameters of the model.

    Examples
    --------
    GPT-3 175B counts 174.6 billion (Narayanan et al. 2021, Table 2):

    >>> from libra_opt.io.presets import load_model
    >>> round(total_params(load_model("gpt3_175b")) / 1e9, 1)
    174.6
    """
    layers = sum(layer_counts(model, model.is_moe_layer(i)).params for i in range(model.n_layers))
    return layers + embedding_params(model) + head_params(model)


def active_params(model: TransformerSpec) -> int:
    """Parameters used per token: routed experts count ``top_k`` times, not ``n_experts``.

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> round(active_params(load_model("mixtral_8x7b")) / 1e9, 1)
    12.9
    """
    total = embedding_params(model) + head_params(model)
    for i in range(model.n_layers):
        c = layer_counts(model, model.is_moe_layer(i))
        k = model.moe.top_k if (c.n_experts and model.moe is not None) else 0
        total += c.params - c.n_experts * c.expert_params + k * c.expert_params
    return total


def head_flops_per_token(model: TransformerSpec) -> float:
    """Forward FLOPs per token of the output projection: ``2 h V``."""
    return 2.0 * model.hidden_size * model.vocab_size


def model_flops_per_token(model: TransformerSpec, recompute: str = "none",
                          causal: bool = False) -> float:
    """Training FLOPs per token of the whole model (forward + backward, optional recompute).

    Parameters
    ----------
    recompute : {'none', 'selective', 'full'}
        ``none``: model FLOPs (``3 x`` forward); ``full``: every layer's forward twice (Narayanan
        et al.'s "hardware FLOPs" [1]_); ``selective``: the attention products twice [2]_.
    causal : bool
        Count the attention products over the causal half of the score matrix, as FlashAttention
        executes them [3]_; default the full matrix (published "model FLOPs").

    Notes
    -----
    For GPT, ``recompute='full'`` is eq. (3) of [1]_: ``96 s l h^2 (1 + s/(6h) + V/(16 l h))``
    per sequence.

    References
    ----------
    .. [1] D. Narayanan et al., SC 2021, arXiv:2104.04473, eq. (3).
    .. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023, arXiv:2205.05198.
    .. [3] T. Dao, "FlashAttention-2", arXiv:2307.08691, Sec. 4.1 (causal FLOPs: half).

    Examples
    --------
    >>> from libra_opt.generators.descriptors import TransformerSpec
    >>> m = TransformerSpec(name="t", n_layers=2, hidden_size=64, ffn_hidden_size=256,
    ...                     n_heads=4, vocab_size=100, seq_len=32)
    >>> h, s, l, V = 64, 32, 2, 100
    >>> model_flops_per_token(m, "full") * s == 96 * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h))
    True
    >>> model_flops_per_token(m) - model_flops_per_token(m, causal=True) == 3 * l * 2 * s * h
    True
    """
    if recompute not in ("none", "selective", "full"):
        raise ValueError(f"recompute {recompute!r} is not none, selective or full")
    half = 0.5 if causal else 1.0
    total = 3.0 * head_flops_per_token(model)
    n_moe = sum(map(model.is_moe_layer, range(model.n_layers)))
    for moe, n in ((False, model.n_layers - n_moe), (True, n_moe)):
        if not n:
            continue
        c = layer_counts(model, moe, capacity_factor=1.0)
        forward = c.linear_flops_per_token + half * c.attention_flops_per_token
        extra = forward if recompute == "full" else (
            half * c.attention_flops_per_token if recompute == "selective" else 0.0)
        total += n * (3.0 * forward + extra)
    return total
