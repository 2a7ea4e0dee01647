"""Memory per NPU: weights, gradients, optimizer state and activations.

Model states follow ZeRO [1]_: mixed-precision Adam keeps ``2 Psi`` bytes of weights, ``2 Psi``
of gradients and ``12 Psi`` of fp32 optimizer state; ZeRO-1 divides the optimizer state by
the ``N_d`` data-parallel ranks, ZeRO-2 also the gradients, ZeRO-3 also the weights.

Activations follow Korthikanti et al. [2]_, generalized to grouped-query attention, gated
MLPs and MoE. Per token of a layer (``beta`` bytes per element, ``h`` width, ``a`` heads,
``g`` key/value heads, ``d`` head size, ``f`` FFN size, ``s`` sequence):

* replicated over TP ranks unless sequence parallel: norm and block inputs ``4 beta h``,
  with dropout two masks ``2 h``;
* sharded ``1/tp``: ``Q, K, V`` ``beta (a d + 2 g d)``, softmax output ``beta a s`` (with
  dropout its mask ``a s`` and output ``beta a s``), attention output ``beta a d``, MLP
  ``2 beta f`` (``3 beta f`` gated).

For GPT this is ``s b h (34 + 5 a s / h)`` per layer (their eq. 1). Selective recomputation
(or FlashAttention) drops the ``a s`` terms; full recomputation keeps ``beta h`` per token.
Temporary and communication buffers and fragmentation are not counted.

References
----------
.. [1] S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
   Training Trillion Parameter Models", SC 2020, arXiv:1910.02054, Sec. 5 and Fig. 1.
.. [2] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198, Sec. 4 and Table 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.parallelism import Parallelism, Precision

__all__ = ["MemoryBreakdown", "checkpoint_bytes", "model_state_bytes",
           "transformer_layer_activation_bytes", "head_activation_bytes"]


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak memory of one NPU in bytes: the four parts, the device's HBM ``capacity_bytes``, which
    NPU (``where``) and the optimizer state kept in host memory (``host_bytes``, not in
    :attr:`total_bytes`).
    """

    weights_bytes: float
    grads_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    capacity_bytes: float
    where: str = ""
    host_bytes: float = 0.0

    @property
    def total_bytes(self) -> float:
        """Sum of the four parts."""
        return self.weights_bytes + self.grads_bytes + self.optimizer_bytes + self.activations_bytes

    @property
    def fits(self) -> bool:
        """``total_bytes <= capacity_bytes``."""
        return self.total_bytes <= self.capacity_bytes

    def describe(self) -> str:
        """One line in GB (1e9 bytes)."""
        return (
            f"{self.total_bytes / 1e9:.1f} GB of {self.capacity_bytes / 1e9:.0f} GB "
            f"(weights {self.weights_bytes / 1e9:.1f}, grads {self.grads_bytes / 1e9:.1f}, "
            f"optimizer {self.optimizer_bytes / 1e9:.1f}, activations "
            f"{self.activations_bytes / 1e9:.1f}"
            f"{f'; host {self.host_bytes / 1e9:.1f}' if self.host_bytes else ''})"
            f"{' at ' + self.where if self.where else ''}"
        )


def model_state_bytes(params: float, precision: Precision, zero: int,
                      shard_ranks: int) -> tuple[float, float, float]:
    """Weights, gradients and optimizer state in bytes of ``params`` parameters (before ZeRO) on one
    NPU, ZeRO stage ``zero`` sharding over ``shard_ranks``.

    Notes
    -----
    ``weights = Psi k_p / (N_d if zero >= 3)``, ``grads = Psi k_g / (N_d if zero >= 2)``,
    ``optimizer = Psi k_o / (N_d if zero >= 1)`` [1]_.

    References
    ----------
    .. [1] Rajbhandari et al., "ZeRO", SC 2020, arXiv:1910.02054 (the module's References).

    Examples
    --------
    ZeRO Figure 1: 7.5B parameters, 64 ranks -> 120, 31.4, 16.6, 1.9 GB for stages 0 to 3.

    >>> [round(sum(model_state_bytes(7.5e9, Precision(), z, 64)) / 1e9, 1) for z in range(4)]
    [120.0, 31.4, 16.6, 1.9]
    """
    n = float(shard_ranks)
    w = params * precision.param_bytes / (n if zero >= 3 else 1.0)
    g = params * precision.grad_bytes / (n if zero >= 2 else 1.0)
    o = params * precision.optimizer_bytes / (n if zero >= 1 else 1.0)
    return w, g, o


def transformer_layer_activation_bytes(model: TransformerSpec, par: Parallelism,
                                       moe: bool) -> float:
    """Activation bytes one layer keeps for one micro-batch on one NPU (module notes [1]_); for an
    MoE layer the routed-expert terms are multiplied by ``top_k x capacity factor`` and shared
    experts count as a dense MLP.

    References
    ----------
    .. [1] Korthikanti et al., MLSys 2023, arXiv:2205.05198 (the module's References).

    Examples
    --------
    GPT-3 175B, micro-batch 1, no parallelism: ``s b h (34 + 5 a s / h)`` bytes.

    >>> from libra_opt.io.presets import load_model
    >>> m = load_model("gpt3_175b")
    >>> p = Parallelism(global_batch_size=1)
    >>> s, h, a = 2048, 12288, 96
    >>> transformer_layer_activation_bytes(m, p, moe=False) == s * h * (34 + 5 * a * s / h)
    True
    """
    beta = par.precision.activation_bytes
    h, a, s = model.hidden_size, model.n_heads, model.seq_len
    g = model.kv_heads
    tokens = par.micro_batch_size * s / par.cp
    tp = par.tp
    rep_div = tp if par.sequence_parallel else 1
    if par.recompute == "full":
        return tokens * beta * h / rep_div
    dropout = 1.0 if model.dropout else 0.0
    replicated = 4.0 * beta * h + dropout * 2.0 * h
    qkv = beta * (a * model.qk_head_dim + g * model.qk_head_dim + g * model.v_head_dim)
    attn_out = beta * a * model.v_head_dim
    scores = 0.0 if par.recompute == "selective" else (beta + dropout * (1.0 + beta)) * a * s
    mult = 3.0 if model.gated_mlp else 2.0
    if moe and model.moe is not None:
        spec = model.moe
        cf = par.capacity_factor if par.capacity_factor is not None else spec.capacity_factor
        cf = 1.0 if cf is None else cf
        f_routed = spec.expert_ffn_hidden_size * spec.top_k * cf
        f_shared = spec.expert_ffn_hidden_size * spec.n_shared_experts
        # routed tokens are also kept at the expert input (top_k x cf copies of h)
        mlp = mult * beta * (f_routed + f_shared) + beta * h * spec.top_k * cf
    else:
        mlp = mult * beta * model.ffn_hidden_size
    sharded = qkv + scores + attn_out + mlp
    return tokens * (replicated / rep_div + sharded / tp)


def head_activation_bytes(model: TransformerSpec, par: Parallelism) -> float:
    """Activations of the final norm (``beta h`` per token) and the vocabulary-parallel loss (fp32
    logits, ``4 V / tp`` per token [1]_) for one micro-batch.

    References
    ----------
    .. [1] Korthikanti et al., MLSys 2023, arXiv:2205.05198 (the module's References).

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> p = Parallelism(tp=8, sequence_parallel=True, global_batch_size=1)
    >>> head_activation_bytes(load_model("llama3_8b"), p) == 8192 * (2 * 4096 / 8 + 4 * 128256 / 8)
    True
    """
    tokens = par.micro_batch_size * model.seq_len / par.cp
    rep_div = par.tp if par.sequence_parallel else 1
    beta = par.precision.activation_bytes
    return tokens * (beta * model.hidden_size / rep_div + 4.0 * model.vocab_size / par.tp)


def checkpoint_bytes(params: float, precision: Precision,
                     optimizer_params: float | None = None) -> float:
    """Bytes of one training checkpoint: ``Psi k_p + Psi_o k_o``, every parameter's weights and
    the optimizer state of ``optimizer_params`` (default all), once.

    Examples
    --------
    Llama 3 405B in bf16 with fp32 Adam: 2 + 12 bytes per parameter.

    >>> round(checkpoint_bytes(405.85e9, Precision()) / 1e12, 2)
    5.68
    """
    opt = params if optimizer_params is None else optimizer_params
    return float(params) * precision.param_bytes + float(opt) * precision.optimizer_bytes
