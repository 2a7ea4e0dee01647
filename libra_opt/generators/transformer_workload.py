"""Transformer training step -> :class:`~libra_opt.traffic.workload.Workload` for one NPU.

The workload describes the NPU on the slowest pipeline stage. One step of the 1F1B schedule
with ``m`` micro-batches, ``p`` stages and ``v`` virtual stages per device is:

* ``m`` passes through the stage's layers (``dense_layer``, ``moe_layer``, ``embedding``,
  ``output_layer``) with their TP/CP/EP/ZeRO-3 collectives;
* the pipeline bubble as ``sum_{s != r} t_s / (v t_r)`` *extra* passes through the same
  layers, compute and collectives (``bubble_*``;
  :func:`~libra_opt.generators.pipeline.pipeline_bubble_passes`), the fractional rest one
  scaled copy;
* ``pp_send_recv``: ``v m + p - 1`` point-to-point transfers of the stage-boundary activation
  and its gradient on ``pp``;
* ``dp_grad_sync``: gradient all-reduce (ZeRO-0) or reduce-scatter (ZeRO-1/2) on ``dp`` and
  ``edp`` once per step, not overlapped unless ``dp_comm_overlap``
  (:mod:`~libra_opt.generators.comm_overlap`);
* ``optimizer_step``: the memory-bound update, and with ZeRO-1/2 the parameter all-gather;
* ``tied_embedding_grad_sync``: with tied embeddings and ``p > 1``, one point-to-point
  transfer of the word embedding's gradient copy (``V h / tp``) on ``pp``.

With ``dp_mode: in_network_optimizer`` (:mod:`~libra_opt.generators.in_network_optimizer`)
``dp_grad_sync`` is the push and ``optimizer_step`` the pull (with ``host_paging``: the update
overlapped with paging, ``max(t_update, Psi k_o / B_host)``). Compute is priced operator by
operator on a roofline (default) or as ``FLOPs / (peak x eta)`` per phase; either way a
constant, so the step time stays a constant plus convex communication terms. Not modelled:
expert load imbalance, the gradient-norm and overflow reductions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from libra_opt.errors import InputError, LibraOptError
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.comm_overlap import (
    ATTENTION_LINEARS,
    DP_WINDOW,
    TpBlock,
    dp_overlapped,
    overlap_form,
    split_overlapped,
    zero3_overlapped,
)
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, Device, compute_time_s, memory_time_s
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.in_network_optimizer import (
    HOST_PAGING,
    IN_NETWORK_OPTIMIZER,
    host_paging_time_s,
    in_network_optimizer_collectives,
)
from libra_opt.generators.mapping import Placement
from libra_opt.generators.memory import (
    MemoryBreakdown,
    head_activation_bytes,
    model_state_bytes,
    transformer_layer_activation_bytes,
)
from libra_opt.generators.operators import (
    OP_CLASSES,
    LayerOperators,
    embedding_operators,
    head_operators,
    optimizer_operator,
    transformer_layer_operators,
)
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.pipeline import (
    StagePlan,
    inflight_microbatches,
    pipeline_bubble_passes,
    stage_plan,
)
from libra_opt.generators.roofline import operator_time_s
from libra_opt.generators.transformer_comm import (
    PhaseCollectives,
    layer_collectives,
    tp_block,
    zero3_collectives,
)
from libra_opt.generators.transformer_counts import (
    LayerCounts,
    embedding_params,
    head_flops_per_token,
    layer_counts,
    model_flops_per_token,
)
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

__all__ = ["transformer_workload", "layer_params_local", "check_transformer_parallelism",
           "stage_memory"]

log = logging.getLogger(__name__)

#: Groups each run as one NCCL communicator: a flat ring over all members when the group
#: spans dimensions (:attr:`libra_opt.traffic.workload.Workload.flat_ring_groups`). The
#: data-parallel groups stay hierarchical (LIBRA's model).
FLAT_RING_GROUPS: tuple[str, ...] = ("tp", "cp", "ep")


def check_transformer_parallelism(model: TransformerSpec, par: Parallelism) -> None:
    """Raise :class:`InputError` when ``par`` cannot split ``model``.

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> check_transformer_parallelism(load_model("llama3_8b"), Parallelism(tp=3, global_batch_size=1))
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: parallelism.tp: tp 3 must divide n_heads 32
    """
    if model.n_heads % par.tp:
        raise InputError(f"tp {par.tp} must divide n_heads {model.n_heads}", field="parallelism.tp")
    g = model.kv_heads
    if g % par.tp and par.tp % g:
        raise InputError(f"tp {par.tp} and n_kv_heads {g}: one must divide the other",
                         field="parallelism.tp")
    if (model.seq_len * par.micro_batch_size) % par.cp:
        raise InputError(f"cp {par.cp} must divide the tokens of a micro-batch "
                         f"({par.micro_batch_size} x {model.seq_len})", field="parallelism.cp")
    if par.ep > 1:
        if model.moe is None:
            raise InputError("ep > 1 needs a mixture-of-experts model", field="parallelism.ep")
        if model.moe.n_experts % par.ep:
            raise InputError(f"ep {par.ep} must divide n_experts {model.moe.n_experts}",
                             field="parallelism.ep")
        if par.tp > 1 and not par.sequence_parallel:
            raise InputError("expert parallelism with tp > 1 needs sequence_parallel: true (as "
                             "Megatron-Core)", field="parallelism.sequence_parallel")


def layer_params_local(model: TransformerSpec, par: Parallelism, c: LayerCounts) -> tuple[float, float]:
    """(dense, expert) parameters of one layer held by one NPU.

    Projections and FFNs are split ``1/tp``; with ``tp > g`` each rank keeps one key/value head;
    norms and the router are replicated; routed experts are split ``n_experts / ep``.

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> from libra_opt.generators.transformer_counts import layer_counts
    >>> m = load_model("gpt3_175b")
    >>> d, e = layer_params_local(m, Parallelism(tp=8, global_batch_size=1), layer_counts(m, False))
    >>> d == (12 * 12288**2 + 9 * 12288) / 8 + 4 * 12288, e
    (True, 0.0)
    """
    h = model.hidden_size
    tp = par.tp
    if model.mla is None:
        g = model.kv_heads
        kv = (h + (1 if model.bias else 0)) * g * (model.qk_head_dim + model.v_head_dim)
        kv_local = kv / tp if g >= tp else kv / g
        attn = (c.attention_params - kv) / tp + kv_local
    else:
        attn = c.attention_params / tp
    dense = attn + c.dense_mlp_params / tp + c.router_params + c.norm_params
    expert = 0.0
    if c.n_experts:
        expert = (c.n_experts / par.ep) * c.expert_params / tp
    return dense, expert


def _phases(times: list[float], colls: PhaseCollectives) -> tuple[Phase, Phase, Phase]:
    f, i, w = times
    return Phase(f, colls.forward), Phase(i, colls.input_grad), Phase(w, colls.weight_grad)


Breakdown = dict[str, float]


def _op_times(ops: LayerOperators, device: Device, dtype: str, eff: ComputeEfficiency,
              breakdown: Breakdown) -> list[float]:
    """Compute time of each pass priced operator by operator; adds each operator's time to
    ``breakdown`` (by operator class)."""
    times = []
    for pass_ops in ops.passes():
        total = 0.0
        for op in pass_ops:
            t = operator_time_s(op, device, dtype, eff.value)
            total += t
            breakdown[op.op_class] = breakdown.get(op.op_class, 0.0) + t
        times.append(total)
    return times


def _scaled(phase: Phase, factor: float) -> Phase:
    return Phase(
        phase.compute_s * factor,
        tuple(replace(c, size_bytes=c.size_bytes * factor) for c in phase.collectives),
    )


def _bubble(layer: Layer, per_microbatch: int, passes: float) -> list[Layer]:
    """``passes x n`` extra passes through ``layer``: whole passes as a repeated layer,
    the fractional rest as one scaled copy (exact in bytes and compute; a latency term is
    paid once for the fraction)."""
    total = passes * per_microbatch
    whole = int(math.floor(total + 1e-9))
    rest = total - whole
    name = f"bubble_{layer.name}"
    out = []
    if whole:
        out.append(Layer(name, layer.forward, layer.input_grad, layer.weight_grad, whole))
    if rest > 1e-9:
        f, i, w = (_scaled(p, rest) for _, p in layer.phases())
        out.append(Layer(f"{name}_part", f, i, w))
    return out


def _tp_blocks(model: TransformerSpec, par: Parallelism, moe: bool, act: float) -> tuple[TpBlock, ...]:
    """The tensor-parallel blocks of a layer, as :func:`layer_collectives` builds them."""
    blocks = [TpBlock("attention", act, ATTENTION_LINEARS)]
    if moe and model.moe is not None:
        spec = model.moe
        cf = par.capacity_factor if par.capacity_factor is not None else spec.capacity_factor
        blocks.append(TpBlock("experts", act * spec.top_k * (1.0 if cf is None else cf),
                              ("experts_fc1",)))
        if spec.n_shared_experts:
            blocks.append(TpBlock("shared_experts", act, ("shared_experts_fc1",)))
    else:
        blocks.append(TpBlock("mlp", act, ("mlp_fc1",)))
    return tuple(blocks)


def _priced(name: str, ops: Callable[[], LayerOperators], flops: tuple[float, float, float],
            colls: PhaseCollectives, blocks: tuple[TpBlock, ...], par: Parallelism,
            device: Device, eff: ComputeEfficiency, bd: Breakdown) -> tuple[Layer, ...]:
    """A block's Layer(s): priced operator by operator (roofline: its compute by operator
    class added to ``bd``) or as whole phases of ``flops``; with ``tp_comm_overlap``, split
    behind the GEMMs of its TP ``blocks``."""
    dtype = par.precision.compute_dtype
    if eff.kind != "roofline":
        return (Layer(name, *_phases([compute_time_s(x, device, dtype, eff) for x in flops],
                                     colls)),)
    block_ops = ops()
    layer = Layer(name, *_phases(_op_times(block_ops, device, dtype, eff, bd), colls))
    if par.tp_comm_overlap and blocks:
        return tuple(split_overlapped(layer, block_ops, blocks, par, device, dtype, eff.value))
    return (layer,)


#: A layer kind priced once: local (dense, expert) parameters, Layer(s), compute by class.
_Priced = tuple[float, float, tuple[Layer, ...], Breakdown]


def _priced_layer(model: TransformerSpec, par: Parallelism, is_moe: bool, device: Device,
                  eff: ComputeEfficiency, act: float, tokens: float) -> _Priced:
    """A transformer layer of a kind (:func:`_priced`), its local (dense, expert) parameters."""
    c = layer_counts(model, is_moe, capacity_factor=par.capacity_factor)
    d_local, e_local = layer_params_local(model, par, c)
    lin = c.linear_flops_per_token * tokens / par.tp
    att = c.attention_flops_per_token * tokens / par.tp
    ig = lin + 2.0 * att
    if par.recompute == "full":
        ig += lin + att
    elif par.recompute == "selective":
        ig += att
    colls = layer_collectives(model, par, is_moe, d_local, e_local)
    blocks = _tp_blocks(model, par, is_moe, act) if par.tp_comm_overlap else ()
    bd: Breakdown = {}
    layers = _priced("moe_layer" if is_moe else "dense_layer",
                     lambda: transformer_layer_operators(model, par, is_moe), (lin + att, ig, lin),
                     colls, blocks, par, device, eff, bd)
    return d_local, e_local, layers, bd


def _stage_layers(
    model: TransformerSpec, par: Parallelism, stage: StagePlan, device: Device,
    eff: ComputeEfficiency, kinds: dict[bool, _Priced],
) -> tuple[list[tuple[Layer, int]], float, float, Breakdown]:
    """Per-micro-batch layers of a stage as (Layer with count 1, repeats per micro-batch),
    the stage's local (dense, expert) parameters and its compute time per micro-batch by
    operator class (roofline model; empty otherwise); ``kinds`` keeps each layer kind's
    :func:`_priced_layer` for the other stages."""
    bd: Breakdown = {}
    tokens = par.micro_batch_size * model.seq_len / par.cp
    out: list[tuple[Layer, int]] = []
    dense_p = expert_p = 0.0
    act = tokens * model.hidden_size * par.precision.activation_bytes
    if stage.has_embedding:
        p_emb = model.vocab_size * model.hidden_size / par.tp + (
            embedding_params(model) - model.vocab_size * model.hidden_size
        )
        dense_p += p_emb
        # its output reduced (SP: reduce-scatter) forward, gathered (SP) backward
        block = tp_block(act, par, recompute_forward=False)
        colls = PhaseCollectives(block.forward[-1:],
                                 block.input_grad[:1] if par.sequence_parallel else ())
        if par.zero == 3:
            colls = colls + zero3_collectives(par, p_emb, 0.0)
        out.extend((x, 1) for x in _priced("embedding", lambda: embedding_operators(model, par),
                                           (0.0, 0.0, 0.0), colls, (), par, device, eff, bd))
    for is_moe, n in ((False, stage.n_dense), (True, stage.n_moe)):
        if n == 0:
            continue
        if is_moe not in kinds:  # every stage's layers of a kind are the same layer
            kinds[is_moe] = _priced_layer(model, par, is_moe, device, eff, act, tokens)
        d_local, e_local, layers, per_layer = kinds[is_moe]
        dense_p += n * d_local
        expert_p += n * e_local
        out.extend((x, n) for x in layers)
        for k, t in per_layer.items():
            bd[k] = bd.get(k, 0.0) + n * t
    if stage.has_head:
        norm = (2 if model.norm == "layernorm" else 1) * model.hidden_size
        shares_embedding = model.tied_embeddings and stage.has_embedding
        p_head = norm + (0.0 if shares_embedding else model.vocab_size * model.hidden_size / par.tp)
        dense_p += p_head
        f = head_flops_per_token(model) * tokens / par.tp
        colls = PhaseCollectives()
        if par.tp > 1:
            # the output layer's input: gather (SP) forward / reduce backward
            block = tp_block(act, par, recompute_forward=False)
            if par.sequence_parallel:
                colls = PhaseCollectives(block.forward[:1], block.input_grad[1:], block.weight_grad)
            else:
                colls = PhaseCollectives((), block.input_grad, ())
            # vocabulary-parallel cross-entropy: max, target logit and sum-exp all-reduces (fp32)
            colls = colls + PhaseCollectives((Collective("all_reduce", 3 * 4.0 * tokens, "tp"),))
        if par.zero == 3:
            colls = colls + zero3_collectives(par, p_head, 0.0)
        out.extend((x, 1) for x in _priced(
            "output_layer", lambda: head_operators(model, par), (f, f, f), colls,
            (TpBlock("output", act, ("logits",)),), par, device, eff, bd))
    if par.zero3_overlap:
        out = _with_zero3_overlap(out)
    return out, dense_p, expert_p, bd


def _with_zero3_overlap(out: list[tuple[Layer, int]]) -> list[tuple[Layer, int]]:
    """Each layer's pieces (same base name, consecutive) with their ZeRO-3 collectives
    behind their compute (:func:`zero3_overlapped`)."""
    grouped: list[tuple[str, list[Layer], int]] = []
    for layer, n in out:
        base = layer.name.split("~", 1)[0]
        if grouped and grouped[-1][0] == base and grouped[-1][2] == n:
            grouped[-1][1].append(layer)
        else:
            grouped.append((base, [layer], n))
    return [(x, n) for _, pieces, n in grouped for x in zero3_overlapped(pieces)]


def _check_not_faster_than_peak(useful_flops: float, stage_s: float, n_npus: int,
                                device: Device, dtype: str, name: str) -> None:
    """Raise when the slowest stage computes faster than the useful FLOPs per NPU allow at the peak
    (MFU > 1: a model error, as no operator is priced above the peak).
    """
    ideal_s = useful_flops / (n_npus * device.peak_flops_for(dtype))
    if stage_s < ideal_s * (1.0 - 1e-9):
        raise LibraOptError(
            f"model error: {name}: the compute model gives {stage_s:.6g} s per step for the "
            f"slowest stage, less than the {ideal_s:.6g} s the useful FLOPs take at the "
            f"{dtype} peak (MFU would exceed 100 %)")


def _stage_compute_s(layers: list[tuple[Layer, int]]) -> float:
    return sum(n * sum(p.compute_s for _, p in layer.phases()) for layer, n in layers)


def stage_memory(model: TransformerSpec, par: Parallelism, stage: StagePlan, dense_p: float,
                 expert_p: float, capacity_bytes: float, layer_act: tuple[float, float]
                 ) -> MemoryBreakdown:
    """The memory of an NPU of pipeline stage ``stage`` holding ``dense_p`` dense and
    ``expert_p`` expert parameters (before ZeRO sharding); ``layer_act``: a (dense, MoE)
    layer's activation bytes per micro-batch."""
    w1, g1, o1 = model_state_bytes(dense_p, par.precision, par.zero, par.dp * par.cp)
    w2, g2, o2 = model_state_bytes(expert_p, par.precision, par.zero, par.expert_dp * par.cp)
    host = 0.0
    if par.dp_mode == IN_NETWORK_OPTIMIZER:
        # optimizer state held by the in-network aggregators, or paged from host memory
        host = o1 + o2 if par.optimizer_state == HOST_PAGING else 0.0
        o1 = o2 = 0.0
    inflight = inflight_microbatches(stage.index, par.pp, par.micro_batches, par.interleave)
    act = inflight * (stage.n_dense * layer_act[0] + stage.n_moe * layer_act[1])
    if stage.has_head:
        act += head_activation_bytes(model, par)
    return MemoryBreakdown(
        weights_bytes=w1 + w2, grads_bytes=g1 + g2, optimizer_bytes=o1 + o2,
        activations_bytes=act, capacity_bytes=capacity_bytes,
        where=f"pipeline stage {stage.index}", host_bytes=host,
    )


def transformer_workload(model: TransformerSpec, par: Parallelism, device: Device, fabric: Fabric,
                         placement: Placement, efficiency: ComputeEfficiency,
                         name: str | None = None, check_memory: bool = True) -> GeneratedWorkload:
    """Build the workload of one training step of ``model`` (module notes).

    Parameters
    ----------
    placement : Placement
        Spans of the parallelism axes (:func:`libra_opt.generators.mapping.place_groups`).
    name : str, optional
        Workload name (default: the model's).
    check_memory : bool
        Raise :class:`InputError` when the most loaded NPU needs more than its HBM.
    """
    check_transformer_parallelism(model, par)
    if par.zero3_overlap and efficiency.kind != "roofline":
        raise InputError(
            f"zero3_overlap needs the roofline compute model; a {efficiency.kind} efficiency "
            "prices whole phases", field="parallelism.zero3_overlap")
    if par.tp_comm_overlap and efficiency.kind != "roofline":
        raise InputError(
            f"tp_comm_overlap needs the roofline compute model (it overlaps collectives with "
            f"individual GEMMs); a {efficiency.kind} efficiency prices whole phases",
            field="parallelism.tp_comm_overlap")
    if par.n_npus != fabric.n_npus:
        raise InputError(f"tp x cp x dp x pp = {par.n_npus} NPUs, the fabric has {fabric.n_npus}",
                         field="parallelism")
    stages = stage_plan(model, par.pp, par.interleave)
    built: dict[tuple, tuple] = {}  # stages holding the same layers have the same ones
    kinds: dict[bool, _Priced] = {}  # and every stage's layers of a kind are one layer
    per_stage = []
    for s in stages:
        key = (s.n_dense, s.n_moe, s.has_embedding, s.has_head)
        if key not in built:
            built[key] = _stage_layers(model, par, s, device, efficiency, kinds)
        per_stage.append(built[key])
    times = [_stage_compute_s(layers) for layers, _, _, _ in per_stage]
    rep = max(range(len(stages)), key=lambda i: (times[i], -i))
    layers_mb, dense_p, expert_p, bd_mb = per_stage[rep]
    m, pp, v = par.micro_batches, par.pp, par.interleave
    tokens = par.micro_batch_size * model.seq_len / par.cp
    act = tokens * model.hidden_size * par.precision.activation_bytes

    layers: list[Layer] = []
    dp_window_s = 0.0
    bubble_passes = pipeline_bubble_passes(times, rep, v)
    if par.dp_comm_overlap:
        layers, dp_window_s = dp_overlapped([(x, n) for x, n in layers_mb if not x.empty], m)
    else:
        for layer, n in layers_mb:
            if not layer.empty:
                layers.append(replace(layer, count=m * n))
    if pp > 1:
        for layer, n in layers_mb:
            layers.extend(b for b in _bubble(layer, n, bubble_passes) if not b.empty)
        sharded = par.sequence_parallel or (par.pp_scatter_gather and par.tp > 1)
        msg = act / par.tp if sharded else act
        fwd: tuple[Collective, ...] = (Collective("p2p", msg, "pp"),)
        if par.pp_scatter_gather and par.tp > 1 and not par.sequence_parallel:
            fwd = fwd + (Collective("all_gather", act / par.tp, "tp"),)
        layers.append(Layer("pp_send_recv", Phase(0.0, fwd), Phase(0.0, fwd), count=v * m + pp - 1))

    prec = par.precision
    pb, gb, ob = prec.param_bytes, prec.grad_bytes, prec.optimizer_bytes
    dp_ranks, edp_ranks = par.dp * par.cp, par.expert_dp * par.cp
    sync: list[Collective] = []
    gather: list[Collective] = []
    inopt = par.dp_mode == IN_NETWORK_OPTIMIZER
    if inopt:
        push, pull = in_network_optimizer_collectives(
            par, ((dense_p, "dp", dp_ranks), (expert_p, "edp", edp_ranks)))
        sync, gather = list(push), list(pull)
    elif par.zero < 3:
        for params, group, ranks in ((dense_p, "dp", dp_ranks), (expert_p, "edp", edp_ranks)):
            if params <= 0 or ranks <= 1:
                continue
            if par.zero == 0:
                sync.append(Collective("all_reduce", params * gb, group))
            else:
                sync.append(Collective("reduce_scatter", params * gb, group))
                gather.append(Collective("all_gather", params * pb / ranks, group))
    if sync and par.dp_comm_overlap:
        layers.append(Layer(DP_WINDOW, weight_grad=Phase(dp_window_s, tuple(sync))))
    elif sync:
        layers.append(Layer("dp_grad_sync", weight_grad=Phase(0.0, tuple(sync))))
    if pp > 1 and model.tied_embeddings and not inopt:
        # the first and last stages' word-embedding copies: a two-rank all-reduce sends each
        # copy once (with ZeRO-3 its 1 / (dp cp) shard)
        tied = model.vocab_size * model.hidden_size / par.tp * gb
        if par.zero == 3:
            tied /= dp_ranks
        layers.append(Layer("tied_embedding_grad_sync",
                            weight_grad=Phase(0.0, (Collective("p2p", tied, "pp"),))))
    shard = (dense_p / dp_ranks + expert_p / edp_ranks) if par.zero >= 1 else dense_p + expert_p
    if inopt and par.optimizer_state != HOST_PAGING:
        opt_s = 0.0  # the update runs on the in-network aggregators
    elif efficiency.kind == "roofline":
        opt_s = operator_time_s(optimizer_operator(shard, par), device, par.precision.compute_dtype)
    else:
        opt_s = memory_time_s(shard * (gb + 2 * ob + pb), device)
    if inopt and par.optimizer_state == HOST_PAGING:  # the state streams over the host link
        opt_s = max(opt_s, host_paging_time_s(shard, par.precision, par.host_link_gbps))
    layers.append(Layer("optimizer_step", Phase(opt_s, tuple(gather))))

    formed = par.tp_comm_overlap or par.dp_comm_overlap or par.zero3_overlap
    if formed:
        layers = [x for layer in layers for x in overlap_form(layer)]
    groups = placement.groups()
    # The TP / CP / EP communicators run NCCL's flat ring when they span dimensions.
    workload = Workload(name or model.name, tuple(layers), groups, overlap_form=formed,
                        flat_ring_groups=frozenset(FLAT_RING_GROUPS) & set(groups))
    layer_act = (transformer_layer_activation_bytes(model, par, moe=False),
                 transformer_layer_activation_bytes(model, par, moe=True))
    mems = [stage_memory(model, par, s, d, e, device.hbm_bytes, layer_act)
            for s, (_, d, e, _) in zip(stages, per_stage, strict=True)]
    memory = max(mems, key=lambda mb: mb.total_bytes)
    if check_memory and not memory.fits:
        raise InputError(f"{model.name} does not fit: {memory.describe()}; use more tp/pp, a "
                         "higher zero stage, activation recomputation or a smaller micro-batch",
                         field="parallelism")
    tokens_step = par.global_batch_size * model.seq_len
    useful_flops = model_flops_per_token(model, "none", causal=True) * tokens_step
    _check_not_faster_than_peak(useful_flops, m * times[rep], fabric.n_npus, device,
                                par.precision.compute_dtype, model.name)
    notes = [
        f"workload of pipeline stage {rep} ({stages[rep].n_layers} layers"
        f"{', embedding' if stages[rep].has_embedding else ''}"
        f"{', output layer' if stages[rep].has_head else ''})",
        f"bubble = {bubble_passes:.4g} extra passes through the stage (compute and collectives; "
        f"(p-1)/v = {(pp - 1) / v:.4g} for equal stages)" if pp > 1 else "",
        "data-parallel gradient sync behind the last micro-batch's backward compute "
        "(dp_comm_overlap); the optimizer step is not overlapped" if par.dp_comm_overlap else
        "data-parallel gradient sync and optimizer step are not overlapped",
        "tensor-parallel backward collectives behind their column-parallel GEMMs "
        "(tp_comm_overlap)" if par.tp_comm_overlap else "",
        "ZeRO-3 parameter gathers and gradient reduce-scatters behind each layer's compute "
        "(zero3_overlap)" if par.zero3_overlap else "",
        "in-network optimizer: gradients pushed / parameters pulled once per step, optimizer "
        "state off-GPU" if inopt else "",
    ]
    breakdown = {k: m * bd_mb[k] for k in OP_CLASSES if k in bd_mb}
    if efficiency.kind == "roofline":
        breakdown["optimizer"] = breakdown.get("optimizer", 0.0) + opt_s
    else:
        breakdown = {"compute": m * times[rep], "optimizer": opt_s}
    log.debug("generated %s: %d layer entries", workload.name, len(layers))
    return GeneratedWorkload(
        workload=workload,
        model_name=model.name,
        n_npus=fabric.n_npus,
        device=device,
        efficiency=efficiency,
        compute_dtype=par.precision.compute_dtype,
        model_flops_per_step=useful_flops,
        hardware_flops_per_step=model_flops_per_token(model, par.recompute, causal=True)
        * tokens_step,
        published_model_flops_per_step=model_flops_per_token(model, "none") * tokens_step,
        published_hardware_flops_per_step=model_flops_per_token(model, par.recompute)
        * tokens_step,
        tokens_per_step=float(tokens_step),
        samples_per_step=float(par.global_batch_size),
        memory=memory,
        placement=placement,
        micro_batches=m,
        bubble_fraction=bubble_passes / m,  # 0 for one stage
        notes=tuple(n for n in notes if n),
        stage_compute_s=tuple(m * x for x in times),
        compute_breakdown_s=MappingProxyType(breakdown),
        bubble_compute_s=bubble_passes * times[rep],
    )

