"""Collectives of one transformer layer for one micro-batch, per parallelism group.

Sizes follow :mod:`libra_opt.traffic.collectives` (per-NPU input; all-gather: the shard).
``T = b s / cp`` tokens per context-parallel rank and ``A = T h beta`` one activation tensor:

* tensor parallelism [1]_, per block (an MoE block carries ``top_k x cf`` routed copies):
  forward and input-gradient all-reduce ``A``; with sequence parallelism all-gather
  ``A / tp`` and reduce-scatter ``A`` in both, and a weight-gradient all-gather ``A / tp``
  (Megatron re-gathers a linear's sharded input);
* context parallelism: forward all-gather of the rank's keys and values (``T g_l (d_qk +
  d_v) beta``), input-gradient reduce-scatter of their gradients;
* expert parallelism (Megatron-Core all-to-all dispatcher): two all-to-alls of
  ``T_r top_k cf h beta`` forward and two backward (``T_r = T / tp`` with sequence
  parallelism);
* ZeRO-3: parameters all-gathered forward and again for the input gradient, gradients
  reduce-scattered, every micro-batch.

Full recomputation repeats the forward TP, CP and EP collectives in the input-gradient phase.

References
----------
.. [1] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
   Models", MLSys 2023, arXiv:2205.05198.
"""

from __future__ import annotations

from dataclasses import dataclass

from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.parallelism import Parallelism
from libra_opt.traffic.workload import Collective

__all__ = ["PhaseCollectives", "tp_block", "layer_collectives", "kv_bytes_per_token",
           "zero3_collectives"]


@dataclass(frozen=True)
class PhaseCollectives:
    """Collectives of the three phases of one layer for one micro-batch."""

    forward: tuple[Collective, ...] = ()
    input_grad: tuple[Collective, ...] = ()
    weight_grad: tuple[Collective, ...] = ()

    def __add__(self, other: PhaseCollectives) -> PhaseCollectives:
        return PhaseCollectives(
            self.forward + other.forward,
            self.input_grad + other.input_grad,
            self.weight_grad + other.weight_grad,
        )


def tp_block(activation_bytes: float, par: Parallelism, recompute_forward: bool) -> PhaseCollectives:
    """Tensor-parallel collectives of one block whose activation is ``activation_bytes``.

    Examples
    --------
    >>> p = Parallelism(tp=4, sequence_parallel=True, global_batch_size=1)
    >>> c = tp_block(8e6, p, recompute_forward=False)
    >>> [(x.kind, x.size_bytes) for x in c.forward]
    [('all_gather', 2000000.0), ('reduce_scatter', 8000000.0)]
    >>> len(c.input_grad), len(c.weight_grad)
    (2, 1)
    """
    if par.tp == 1:
        return PhaseCollectives()
    a = float(activation_bytes)
    fwd: tuple[Collective, ...]
    wg: tuple[Collective, ...] = ()
    if par.sequence_parallel:
        wg = (Collective("all_gather", a / par.tp, "tp"),)
        fwd = (*wg, Collective("reduce_scatter", a, "tp"))
    else:
        fwd = (Collective("all_reduce", a, "tp"),)
    return PhaseCollectives(fwd, fwd + (fwd if recompute_forward else ()), wg)


def kv_bytes_per_token(model: TransformerSpec, par: Parallelism) -> float:
    """Key and value bytes per token on one tensor-parallel rank (one replicated head when
    ``tp > g``; MLA counted decompressed).

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> kv_bytes_per_token(load_model("llama3_405b"), Parallelism(tp=8, global_batch_size=1))
    512.0
    """
    g = model.kv_heads
    g_local = g / par.tp if g >= par.tp else 1.0
    return g_local * (model.qk_head_dim + model.v_head_dim) * par.precision.activation_bytes


def layer_collectives(model: TransformerSpec, par: Parallelism, moe: bool,
                      dense_params_local: float, expert_params_local: float) -> PhaseCollectives:
    """All collectives of one layer for one micro-batch on one NPU; the local parameters (after
    tensor and expert sharding) size ZeRO-3's gathers and reductions.

    Examples
    --------
    Top-2 of 8 experts, 4 EP ranks, no TP: two all-to-alls of ``T k h beta`` each way.

    >>> from libra_opt.generators.descriptors import TransformerSpec
    >>> m = TransformerSpec(name="m", n_layers=1, hidden_size=16, ffn_hidden_size=32,
    ...     n_heads=2, vocab_size=10, seq_len=8,
    ...     moe={"n_experts": 8, "top_k": 2, "expert_ffn_hidden_size": 32})
    >>> p = Parallelism(dp=4, ep=4, global_batch_size=4)
    >>> c = layer_collectives(m, p, True, 0.0, 0.0)
    >>> [(x.kind, x.size_bytes, x.group) for x in c.forward]
    [('all_to_all', 512.0, 'ep'), ('all_to_all', 512.0, 'ep')]
    >>> len(c.input_grad)
    2
    """
    beta = par.precision.activation_bytes
    tokens = par.micro_batch_size * model.seq_len / par.cp
    act = tokens * model.hidden_size * beta
    full = par.recompute == "full"
    out = tp_block(act, par, full)  # attention block
    if moe and model.moe is not None:
        spec = model.moe
        cf = par.capacity_factor if par.capacity_factor is not None else spec.capacity_factor
        routed = spec.top_k * (1.0 if cf is None else cf)
        out = out + tp_block(act * routed, par, full)
        if spec.n_shared_experts:
            out = out + tp_block(act, par, full)
        if par.ep > 1:
            t_rank = tokens / par.tp if par.sequence_parallel else tokens
            size = t_rank * routed * model.hidden_size * beta
            a2a = (Collective("all_to_all", size, "ep"), Collective("all_to_all", size, "ep"))
            out = out + PhaseCollectives(a2a, a2a + (a2a if full else ()), ())
    else:
        out = out + tp_block(act, par, full)
    if par.cp > 1:
        shard = tokens * kv_bytes_per_token(model, par)
        ag = (Collective("all_gather", shard, "cp"),)
        rs = (Collective("reduce_scatter", shard * par.cp, "cp"),)
        out = out + PhaseCollectives(ag, rs + (ag if full else ()), ())
    if par.zero == 3:
        out = out + zero3_collectives(par, dense_params_local, expert_params_local)
    return out


def zero3_collectives(par: Parallelism, dense_params_local: float,
                      expert_params_local: float) -> PhaseCollectives:
    """ZeRO-3 gathers (forward, input gradient) and gradient reduce-scatter, dense parameters over
    ``dp x cp`` ranks, expert parameters over ``dp / ep x cp``.

    Examples
    --------
    >>> p = Parallelism(dp=4, zero=3, global_batch_size=4)
    >>> c = zero3_collectives(p, 1e6, 0.0)
    >>> [(x.kind, x.size_bytes) for x in c.forward + c.weight_grad]
    [('all_gather', 500000.0), ('reduce_scatter', 2000000.0)]
    """
    pb, gb = par.precision.param_bytes, par.precision.grad_bytes
    fwd: list[Collective] = []
    wg: list[Collective] = []
    for params, group, ranks in (
        (dense_params_local, "dp", par.dp * par.cp),
        (expert_params_local, "edp", par.expert_dp * par.cp),
    ):
        if params > 0 and ranks > 1:
            fwd.append(Collective("all_gather", params * pb / ranks, group))
            wg.append(Collective("reduce_scatter", params * gb, group))
    return PhaseCollectives(tuple(fwd), tuple(fwd), tuple(wg))
