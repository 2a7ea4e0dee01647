"""Memory per NPU: weights, gradients, optimizer state and activations.

Model states follow the ZeRO accounting (Rajbhandari et al. 2020): with ``Psi`` parameters
on an NPU and ``N_d`` data-parallel ranks, mixed-precision Adam keeps ``2 Psi`` bytes of
fp16/bf16 weights, ``2 Psi`` of gradients and ``12 Psi`` of fp32 optimizer state (master
weights, momentum, variance); ZeRO-1 divides the optimizer state by ``N_d``, ZeRO-2 also the
gradients, ZeRO-3 also the weights.

Activations follow Korthikanti et al. (2022), generalized to grouped-query attention, gated
MLPs and mixtures of experts. Per token of a layer (``beta`` bytes per element, ``h`` width,
``a`` heads, ``g`` key/value heads, ``d`` head size, ``f`` FFN size, ``s`` sequence):

* replicated over tensor-parallel ranks unless sequence parallelism shards them: the two
  norm inputs ``2 beta h``, the attention and MLP inputs ``2 beta h``, and with dropout the
  two output dropout masks ``2 h`` (1 byte per element);
* sharded ``1/tp``: ``Q, K, V`` ``beta (a d + g d + g d)``, the softmax output ``beta a s``,
  with dropout its mask ``a s`` and output ``beta a s``, the attention output ``beta a d``,
  and the MLP: ``2 beta f`` (GELU input and output) or ``3 beta f`` (gated: gate, up and
  their product).

For GPT (``f = 4h``, ``g = a``, ``beta = 2``, dropout) this is ``s b h (34 + 5 a s / h)`` per
layer (Korthikanti et al., eq. 1). Selective recomputation (or FlashAttention) drops the
``a s`` terms; full recomputation keeps only the layer input, ``beta h`` per token (sharded
with sequence parallelism). Temporary buffers, communication buffers and allocator
fragmentation are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass

from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.parallelism import Parallelism, Precision

__all__ = [
    "MemoryBreakdown",
    "checkpoint_bytes",
    "model_state_bytes",
    "transformer_layer_activation_bytes",
    "head_activation_bytes",
]


@dataclass(frozen=True)
class MemoryBreakdown:
    """Peak memory of one NPU in bytes.

    Attributes
    ----------
    weights_bytes, grads_bytes, optimizer_bytes, activations_bytes : float
    capacity_bytes : float
        HBM of the device.
    where : str
        Which NPU this is (e.g. ``"pipeline stage 0"``).
    host_bytes : float
        Optimizer state this NPU keeps in its host's memory (the in-network optimizer's
        ``host_paging`` variant); not part of :attr:`total_bytes` (HBM).
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


def model_state_bytes(
    params: float, precision: Precision, zero: int, shard_ranks: int
) -> tuple[float, float, float]:
    """Weights, gradients and optimizer state in bytes for ``params`` parameters on one NPU.

    Parameters
    ----------
    params : float
        Parameters held by the NPU before ZeRO sharding.
    precision : Precision
    zero : {0, 1, 2, 3}
    shard_ranks : int
        Data-parallel ranks the ZeRO stage shards over.

    Notes
    -----
    ``weights = Psi k_p / (N_d if zero >= 3)``, ``grads = Psi k_g / (N_d if zero >= 2)``,
    ``optimizer = Psi k_o / (N_d if zero >= 1)``.

    References
    ----------
    .. [1] S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
       Training Trillion Parameter Models", SC 2020, arXiv:1910.02054, Sec. 5 and Fig. 1.

    Examples
    --------
    ZeRO Figure 1: 7.5B parameters, 64 data-parallel ranks -> 120 GB, 31.4 GB, 16.6 GB,
    1.9 GB for stages 0 to 3.

    >>> [round(sum(model_state_bytes(7.5e9, Precision(), z, 64)) / 1e9, 1) for z in range(4)]
    [120.0, 31.4, 16.6, 1.9]
    """
    n = float(shard_ranks)
    w = params * precision.param_bytes / (n if zero >= 3 else 1.0)
    g = params * precision.grad_bytes / (n if zero >= 2 else 1.0)
    o = params * precision.optimizer_bytes / (n if zero >= 1 else 1.0)
    return w, g, o


def transformer_layer_activation_bytes(
    model: TransformerSpec, par: Parallelism, moe: bool
) -> float:
    """Activation bytes one layer keeps for one micro-batch on one NPU.

    See the module docstring for the terms. For an MoE layer, the routed-expert MLP terms
    are multiplied by ``top_k x capacity factor`` and shared experts count as a dense MLP
    of ``n_shared x expert_ffn_hidden_size``.

    References
    ----------
    .. [1] V. Korthikanti et al., MLSys 2023, arXiv:2205.05198, Sec. 4 and Table 2.

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
    """Activations of the final norm and output layer for one micro-batch.

    The final norm keeps its input (``beta h`` per token, sharded with sequence parallelism)
    and the vocabulary-parallel cross-entropy keeps fp32 logits, ``4 V / tp`` bytes per token
    (Korthikanti et al. 2022, Sec. 4.3).

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
    """Bytes of one training checkpoint: every parameter's weights and its optimizer state,
    once.

    Parameters
    ----------
    params : float
        Parameters of the whole model.
    precision : Precision
    optimizer_params : float, optional
        Parameters with optimizer state (default all; a DLRM's embedding tables are updated
        without one in this model).

    Notes
    -----
    ``Psi k_p + Psi_o k_o`` with the ZeRO accounting's bytes per parameter. The
    parallelization and ZeRO stage decide which NPU holds and writes which part (ZeRO
    shards the optimizer state over the data-parallel ranks instead of replicating it;
    tensor and pipeline parallelism split the weights), not the total: the replicas of a
    part are written once. Gradients and activations are not saved.

    Examples
    --------
    Llama 3 405B in bf16 with fp32 Adam: 2 + 12 bytes per parameter.

    >>> round(checkpoint_bytes(405.85e9, Precision()) / 1e12, 2)
    5.68
    """
    opt = params if optimizer_params is None else optimizer_params
    return float(params) * precision.param_bytes + float(opt) * precision.optimizer_bytes
