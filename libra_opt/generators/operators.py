"""Operators of a transformer training step, per micro-batch and per shard.

Every transformer block is a list of :class:`Operator` (GEMMs with their ``(m, n, k)``,
fused or unfused attention, element-wise kernels) on one tensor-parallel rank for one
micro-batch, with FLOPs and bytes read + written, per pass (forward, input gradient, weight
gradient); recomputation replays the forward operators it needs.

With ``t = b s / cp`` tokens, ``t_r = t / tp`` under sequence parallelism, ``a_l = a / tp``
query heads, ``g_l = max(g / tp, 1)`` key/value heads and ``beta`` bytes per activation:

* linear ``Y[t, n] = X[t, k] W[k, n]``: GEMMs ``(t, n, k)``, ``dX`` ``(t, k, n)``, ``dW``
  ``(k, n, t)``; each ``2 m n k`` FLOPs and ``beta (m k + k n + m n)`` bytes;
* element-wise kernels stream inputs and outputs once; fused kernels as in Megatron-LM.

FLOPs follow :mod:`~libra_opt.generators.transformer_counts`; FlashAttention *executes* half
the counted attention products (causal) and recomputes ``Q K^T`` in its backward (2.5x its
forward instead of 2x).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.parallelism import Parallelism

__all__ = ["Operator", "LayerOperators", "OP_CLASSES", "gemm_op", "linear_ops", "fused_softmax",
           "transformer_layer_operators", "embedding_operators", "head_operators",
           "optimizer_operator", "total_flops", "total_bytes"]

OpClass = Literal["gemm", "attention", "elementwise", "embedding", "loss", "optimizer"]
#: Operator classes, in report order.
OP_CLASSES: tuple[str, ...] = ("gemm", "attention", "elementwise", "embedding", "loss", "optimizer")

#: FLOPs per element of element-wise kernels (vector work; they are memory-bound anyway).
_NORM_FLOPS, _ACT_FLOPS, _ADD_FLOPS, _SOFTMAX_FLOPS = 8.0, 16.0, 2.0, 5.0
#: FlashAttention executes half the counted attention products with a causal mask and
#: recomputes the scores in its backward: 5 matrix products instead of 4 (Dao 2023, Sec. 3).
_FLASH_CAUSAL, _FLASH_BWD = 0.5, 2.5


@dataclass(frozen=True)
class Operator:
    """One kernel on one NPU.

    Attributes
    ----------
    op_class : {'gemm', 'attention', 'elementwise', 'embedding', 'loss', 'optimizer'}
    flops, size_bytes : float
        FLOPs executed and bytes read plus written from HBM, per copy.
    gemm : (int, int, int, int) or None
        ``(m, n, k, batch)`` of a matrix multiply; ``None`` for streaming work.
    repeat : int
        Copies of the kernel.
    fused_attention : bool
        A FlashAttention-style kernel, priced at the device's ``attention_efficiency``.
    """

    name: str
    op_class: OpClass
    flops: float
    size_bytes: float
    gemm: tuple[int, int, int, int] | None = None
    repeat: int = 1
    fused_attention: bool = False


@dataclass(frozen=True)
class LayerOperators:
    """Operators of one layer for one micro-batch, by pass (``recompute`` replayed in the
    input-gradient pass).
    """

    forward: tuple[Operator, ...]
    input_grad: tuple[Operator, ...]
    weight_grad: tuple[Operator, ...]
    recompute: tuple[Operator, ...] = ()

    def passes(self) -> tuple[tuple[Operator, ...], tuple[Operator, ...], tuple[Operator, ...]]:
        """(forward, input gradient + recomputation, weight gradient)."""
        return self.forward, self.recompute + self.input_grad, self.weight_grad


def total_flops(ops: tuple[Operator, ...] | list[Operator]) -> float:
    """FLOPs of a list of operators (with repeats)."""
    return float(sum(o.flops * o.repeat for o in ops))


def total_bytes(ops: tuple[Operator, ...] | list[Operator]) -> float:
    """Bytes of a list of operators (with repeats)."""
    return float(sum(o.size_bytes * o.repeat for o in ops))


def gemm_op(name: str, m: int, n: int, k: int, elem_bytes: float, batch: int = 1,
            op_class: OpClass = "gemm", flops_scale: float = 1.0) -> Operator:
    """A (batched) GEMM ``C[m, n] = A[m, k] B[k, n]``: ``2 m n k`` FLOPs per GEMM.

    Examples
    --------
    >>> op = gemm_op("qkv", 2048, 4608, 12288, 2.0)
    >>> op.flops == 2 * 2048 * 4608 * 12288, op.size_bytes == 2 * (2048*12288 + 12288*4608 + 2048*4608)
    (True, True)
    """
    m, n, k = int(m), int(n), int(k)
    return Operator(
        name, op_class, 2.0 * m * n * k * batch * flops_scale,
        elem_bytes * (m * k + k * n + m * n) * batch, (m, n, k, int(batch)),
    )


def linear_ops(name: str, t: int, n: int, k: int, elem_bytes: float, batch: int = 1
               ) -> tuple[Operator, Operator, Operator]:
    """(forward, input-gradient, weight-gradient) GEMMs of ``Y[t, n] = X[t, k] W[k, n]``.

    Examples
    --------
    >>> f, i, w = linear_ops("fc1", 2048, 6144, 12288, 2.0)
    >>> f.gemm, i.gemm, w.gemm
    ((2048, 6144, 12288, 1), (2048, 12288, 6144, 1), (12288, 6144, 2048, 1))
    """
    return (
        gemm_op(name, t, n, k, elem_bytes, batch),
        gemm_op(f"{name}_dgrad", t, k, n, elem_bytes, batch),
        gemm_op(f"{name}_wgrad", k, n, t, elem_bytes, batch),
    )


def _ew(name: str, read: float, write: float, elem_bytes: float, flops_per: float,
        extra_bytes: float = 0.0, op_class: OpClass = "elementwise") -> Operator:
    return Operator(name, op_class, flops_per * max(read, write),
                    elem_bytes * (read + write) + extra_bytes)


class _Builder:
    """Collects the operators of one layer by pass; ``grad_accum_bytes`` per weight element of a
    separate gradient-accumulation kernel (0: fused in place).
    """

    def __init__(self, grad_accum_bytes: float = 0.0) -> None:
        self.grad_accum_bytes = grad_accum_bytes
        self.fwd: list[Operator] = []
        self.ig: list[Operator] = []
        self.wg: list[Operator] = []
        self.attn_fwd: list[Operator] = []  # replayed by selective recomputation

    def linear(self, name: str, t: int, n: int, k: int, beta: float, batch: int = 1) -> None:
        f, i, w = linear_ops(name, t, n, k, beta, batch)
        self.fwd.append(f)
        self.ig.append(i)
        self.wg.append(w)
        if self.grad_accum_bytes:
            weights = float(n) * k * batch
            self.wg.append(Operator(f"{name}_grad_accumulate", "elementwise", weights,
                                    weights * self.grad_accum_bytes))

    def norm(self, name: str, n: float, beta: float) -> None:
        self.fwd.append(_ew(name, n, n, beta, _NORM_FLOPS))
        self.ig.append(_ew(f"{name}_bwd", 2 * n, n, beta, _NORM_FLOPS))

    def residual(self, name: str, n: float, beta: float, dropout: bool) -> None:
        mask = n if dropout else 0.0  # 1-byte dropout mask written / read
        self.fwd.append(_ew(name, 2 * n, n, beta, _ADD_FLOPS, mask))
        self.ig.append(_ew(f"{name}_bwd", 2 * n, n, beta, _ADD_FLOPS, mask))


def fused_softmax(attn_batches: int, s_q: int, s_kv: int) -> bool:
    """Whether Megatron's fused scale-mask-softmax kernel runs for ``attn_batches`` score matrices
    of ``s_q x s_kv`` (else its fp32 PyTorch ops).

    Notes
    -----
    The CUDA kernel runs only when ``16 < s_kv <= 4096`` and ``s_q``, ``s_kv`` and the matrix
    count are multiples of 4 [1]_; otherwise the fp32 path costs ``2 beta + 32`` bytes per score
    forward and ``2 beta + 36`` backward instead of ``2 beta`` and ``3 beta``.

    References
    ----------
    .. [1] NVIDIA Megatron-LM and Microsoft Megatron-DeepSpeed,
       ``megatron/model/fused_softmax.py``, ``FusedScaleMaskSoftmax.is_kernel_available`` /
       ``custom_kernel_constraint`` and ``forward_torch_softmax`` (2021-2023).

    Examples
    --------
    >>> fused_softmax(2 * 6, 2048, 2048), fused_softmax(2 * 3, 2048, 2048)   # 48 heads / TP 8, 16
    (True, False)
    """
    return attn_batches % 4 == 0 and s_q % 4 == 0 and s_kv % 4 == 0 and 16 < s_kv <= 4096


def _attention(bld: _Builder, model: TransformerSpec, par: Parallelism, b: int, beta: float) -> None:
    tp, cp = par.tp, par.cp
    s_q, s_kv = model.seq_len // cp, model.seq_len
    a_l = model.n_heads // tp
    g_l = max(model.kv_heads // tp, 1) if model.mla is None else a_l
    d_qk, d_v = model.qk_head_dim, model.v_head_dim
    t = b * s_q
    q_el, kv_el, o_el = t * a_l * d_qk, b * s_kv * g_l * (d_qk + d_v), t * a_l * d_v
    if par.flash_attention:
        shape = gemm_op("flash_attention", s_q, d_v, s_kv, beta, b * a_l, "attention").gemm
        flops = 2.0 * b * a_l * s_q * s_kv * (d_qk + d_v) * _FLASH_CAUSAL
        bld.fwd.append(Operator("flash_attention", "attention", flops,
                                beta * (q_el + kv_el + o_el), shape, fused_attention=True))
        bld.ig.append(Operator("flash_attention_bwd", "attention", _FLASH_BWD * flops,
                               beta * (2 * q_el + 2 * kv_el + 2 * o_el), shape,
                               fused_attention=True))
        return
    batch = b * a_l
    scores = float(batch) * s_q * s_kv
    qk = gemm_op("attention_scores", s_q, s_kv, d_qk, beta, batch, "attention")
    pv = gemm_op("attention_values", s_q, d_v, s_kv, beta, batch, "attention")
    if fused_softmax(batch, s_q, s_kv):
        soft = _ew("softmax", scores, scores, beta, _SOFTMAX_FLOPS)
        soft_bwd = _ew("softmax_bwd", 2 * scores, scores, beta, _SOFTMAX_FLOPS)
    else:  # fp32 PyTorch ops: cast, scale, mask, softmax, cast back (and their gradients)
        soft = Operator("softmax_unfused", "elementwise", _SOFTMAX_FLOPS * scores,
                        scores * (2 * beta + 32.0))
        soft_bwd = Operator("softmax_unfused_bwd", "elementwise", _SOFTMAX_FLOPS * scores,
                            scores * (2 * beta + 36.0))
    fwd = [qk, soft]
    bwd = [
        gemm_op("attention_values_dgrad_p", s_q, s_kv, d_v, beta, batch, "attention"),
        gemm_op("attention_values_dgrad_v", s_kv, d_v, s_q, beta, batch, "attention"),
        soft_bwd,
        gemm_op("attention_scores_dgrad_q", s_q, d_qk, s_kv, beta, batch, "attention"),
        gemm_op("attention_scores_dgrad_k", s_kv, d_qk, s_q, beta, batch, "attention"),
    ]
    if model.dropout:
        fwd.append(_ew("attention_dropout", scores, scores, beta, _ADD_FLOPS, scores))
        bwd.insert(2, _ew("attention_dropout_bwd", scores, scores, beta, _ADD_FLOPS, scores))
    fwd.append(pv)
    bld.fwd.extend(fwd)
    bld.attn_fwd.extend(fwd)
    bld.ig.extend(bwd)


def _mlp(bld: _Builder, name: str, model: TransformerSpec, t: int, ffn_local: int, beta: float,
         batch: int = 1) -> None:
    h = model.hidden_size
    gated = model.gated_mlp
    bld.linear(f"{name}_fc1", t, (2 if gated else 1) * ffn_local, h, beta, batch)
    n = float(t) * ffn_local * batch
    if gated:
        bld.fwd.append(_ew(f"{name}_swiglu", 2 * n, n, beta, _ACT_FLOPS))
        bld.ig.append(_ew(f"{name}_swiglu_bwd", 3 * n, 2 * n, beta, _ACT_FLOPS))
    else:
        bld.fwd.append(_ew(f"{name}_bias_gelu", n, n, beta, _ACT_FLOPS))
        bld.ig.append(_ew(f"{name}_bias_gelu_bwd", 2 * n, n, beta, _ACT_FLOPS))
    bld.linear(f"{name}_fc2", t, h, ffn_local, beta, batch)


def _projections(bld: _Builder, model: TransformerSpec, par: Parallelism, t: int, beta: float) -> None:
    h, tp = model.hidden_size, par.tp
    a_l = model.n_heads // tp
    d_qk, d_v = model.qk_head_dim, model.v_head_dim
    mla = model.mla
    if mla is None:
        g_l = max(model.kv_heads // tp, 1)
        bld.linear("qkv_proj", t, a_l * d_qk + g_l * (d_qk + d_v), h, beta)
        if not model.learned_position_embeddings:
            n = float(t) * (a_l + g_l) * d_qk
            bld.fwd.append(_ew("rotary", n, n, beta, _NORM_FLOPS))
            bld.ig.append(_ew("rotary_bwd", n, n, beta, _NORM_FLOPS))
        return
    # multi-head latent attention: every projection split 1/tp (as the parameter count)
    if mla.q_lora_rank is None:
        bld.linear("q_proj", t, a_l * d_qk, h, beta)
    else:
        bld.linear("q_down_proj", t, max(mla.q_lora_rank // tp, 1), h, beta)
        bld.norm("q_norm", float(t) * mla.q_lora_rank, beta)
        bld.linear("q_up_proj", t, a_l * d_qk, mla.q_lora_rank, beta)
    bld.linear("kv_down_proj", t, max((mla.kv_lora_rank + mla.qk_rope_head_dim) // tp, 1), h, beta)
    bld.norm("kv_norm", float(t) * mla.kv_lora_rank, beta)
    bld.linear("kv_up_proj", t, a_l * (mla.qk_nope_head_dim + d_v), mla.kv_lora_rank, beta)
    n = float(t) * 2 * a_l * mla.qk_rope_head_dim
    bld.fwd.append(_ew("rotary", n, n, beta, _NORM_FLOPS))
    bld.ig.append(_ew("rotary_bwd", n, n, beta, _NORM_FLOPS))


def _grad_accum_bytes(par: Parallelism) -> float:
    if par.gradient_accumulation_fusion:
        return 0.0
    return par.precision.activation_bytes + 2.0 * par.precision.grad_bytes


def transformer_layer_operators(model: TransformerSpec, par: Parallelism, moe: bool) -> LayerOperators:
    """Operators of one transformer layer (``moe``: router, permutation, grouped local experts and
    shared experts instead of a dense FFN) on one rank for one micro-batch.

    Notes
    -----
    Recomputation: ``full`` replays the whole forward pass; ``selective`` replays the unfused
    attention core [1]_ (nothing with FlashAttention, whose backward recomputes the scores [2]_).

    References
    ----------
    .. [1] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023, arXiv:2205.05198, Sec. 4 and 5.
    .. [2] T. Dao, "FlashAttention-2", arXiv:2307.08691, 2023.

    Examples
    --------
    GPT-3 175B on 8-way tensor parallelism: the forward GEMM FLOPs are ``24 t h^2 / tp``.

    >>> from libra_opt.generators.parallelism import Parallelism
    >>> from libra_opt.io.presets import load_model
    >>> m = load_model("gpt3_175b")
    >>> ops = transformer_layer_operators(m, Parallelism(tp=8, global_batch_size=1), moe=False)
    >>> total_flops([o for o in ops.forward if o.op_class == "gemm"]) == 24 * 2048 * 12288**2 / 8
    True
    """
    beta = par.precision.activation_bytes
    tp, b = par.tp, par.micro_batch_size
    h = model.hidden_size
    t = b * model.seq_len // par.cp
    t_r = t // tp if par.sequence_parallel else t
    n_r = float(t_r) * h
    bld = _Builder(_grad_accum_bytes(par))
    bld.norm("norm1", n_r, beta)
    _projections(bld, model, par, t, beta)
    _attention(bld, model, par, b, beta)
    bld.linear("out_proj", t, h, (model.n_heads // tp) * model.v_head_dim, beta)
    bld.residual("dropout_add1" if model.dropout else "residual_add1", n_r, beta, model.dropout)
    bld.norm("norm2", n_r, beta)
    if not moe:
        _mlp(bld, "mlp", model, t, model.ffn_hidden_size // tp, beta)
    else:
        spec = model.moe
        if spec is None:
            raise ValueError("transformer_layer_operators(moe=True) needs a model with 'moe'")
        cf = par.capacity_factor if par.capacity_factor is not None else spec.capacity_factor
        cf = 1.0 if cf is None else float(cf)
        e_local = spec.n_experts // par.ep
        bld.linear("router", t_r, spec.n_experts, h, beta)
        routed = n_r * spec.top_k * cf
        bld.fwd.append(_ew("router_softmax_topk", float(t_r) * spec.n_experts, float(t_r) * spec.top_k,
                           4.0, _SOFTMAX_FLOPS))
        bld.fwd.append(_ew("permute", n_r, routed, beta, 0.0))
        bld.ig.append(_ew("permute_bwd", routed, n_r, beta, 0.0))
        tokens_per_expert = max(int(round(t * spec.top_k * cf * par.ep / spec.n_experts)), 1)
        _mlp(bld, "experts", model, tokens_per_expert, spec.expert_ffn_hidden_size // tp, beta,
             batch=e_local)
        bld.fwd.append(_ew("unpermute", routed, n_r, beta, _ADD_FLOPS))
        bld.ig.append(_ew("unpermute_bwd", n_r, routed, beta, _ADD_FLOPS))
        if spec.n_shared_experts:
            _mlp(bld, "shared_experts", model, t,
                 spec.n_shared_experts * spec.expert_ffn_hidden_size // tp, beta)
    bld.residual("dropout_add2" if model.dropout else "residual_add2", n_r, beta, model.dropout)
    recompute: tuple[Operator, ...] = ()
    if par.recompute == "full":
        recompute = tuple(bld.fwd)
    elif par.recompute == "selective":
        recompute = tuple(bld.attn_fwd)
    return LayerOperators(tuple(bld.fwd), tuple(bld.ig), tuple(bld.wg), recompute)


def embedding_operators(model: TransformerSpec, par: Parallelism) -> LayerOperators:
    """Input embedding on the first pipeline stage: lookup (+ learned positions), and its
    backward into a dense ``V / tp x h`` gradient accumulated in fp32.

    Examples
    --------
    >>> from libra_opt.generators.parallelism import Parallelism
    >>> from libra_opt.io.presets import load_model
    >>> ops = embedding_operators(load_model("llama3_8b"), Parallelism(global_batch_size=1))
    >>> ops.forward[0].size_bytes == 2 * 8192 * 4096 * 2.0
    True
    """
    beta = par.precision.activation_bytes
    h = model.hidden_size
    t = par.micro_batch_size * model.seq_len // par.cp
    n = float(t) * h
    fwd = [_ew("embedding_lookup", n, n, beta, 0.0, op_class="embedding")]
    if model.learned_position_embeddings:
        fwd.append(_ew("position_add", 2 * n, n, beta, _ADD_FLOPS, op_class="embedding"))
    table = float(model.vocab_size // par.tp) * h
    wg = [_ew("embedding_wgrad", n, table, beta, _ADD_FLOPS,
              table * 2 * par.precision.grad_bytes, op_class="embedding")]
    return LayerOperators(tuple(fwd), (), tuple(wg))


def head_operators(model: TransformerSpec, par: Parallelism) -> LayerOperators:
    """Final norm, output projection (logits) and vocabulary-parallel cross-entropy on the last
    pipeline stage.

    Notes
    -----
    The loss streams the ``t x V / tp`` logits: ``t V_l (beta + 16)`` bytes forward (fp32
    exponentials and probabilities), ``t V_l (4 + beta)`` backward.

    Examples
    --------
    >>> from libra_opt.generators.parallelism import Parallelism
    >>> from libra_opt.io.presets import load_model
    >>> ops = head_operators(load_model("gpt3_175b"), Parallelism(tp=8, global_batch_size=1))
    >>> [o.name for o in ops.forward]
    ['final_norm', 'logits', 'cross_entropy']
    """
    beta = par.precision.activation_bytes
    h, tp = model.hidden_size, par.tp
    t = par.micro_batch_size * model.seq_len // par.cp
    t_r = t // tp if par.sequence_parallel else t
    v_l = model.vocab_size // tp
    bld = _Builder(_grad_accum_bytes(par))
    bld.norm("final_norm", float(t_r) * h, beta)
    bld.linear("logits", t, v_l, h, beta)
    logits = float(t) * v_l
    bld.fwd.append(Operator("cross_entropy", "loss", _SOFTMAX_FLOPS * logits, logits * (beta + 16.0)))
    bld.ig.insert(0, Operator("cross_entropy_bwd", "loss", 2.0 * logits, logits * (4.0 + beta)))
    # activation recomputation covers the transformer layers only (Megatron-LM)
    return LayerOperators(tuple(bld.fwd), tuple(bld.ig), tuple(bld.wg))


def optimizer_operator(params: float, par: Parallelism) -> Operator:
    """Mixed-precision Adam update of ``params`` local parameters: reads the gradient and the
    optimizer state, writes the state and the working weights (memory-bound).

    Examples
    --------
    >>> from libra_opt.generators.parallelism import Parallelism
    >>> optimizer_operator(1e9, Parallelism(global_batch_size=1)).size_bytes   # 2 + 2*12 + 2
    28000000000.0
    """
    p = par.precision
    return Operator("optimizer_step", "optimizer", 12.0 * params,
                    params * (p.grad_bytes + 2 * p.optimizer_bytes + p.param_bytes))
