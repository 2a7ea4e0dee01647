"""Collectives overlapped with the compute that runs beside them, in *overlap form*.

Two documented overlaps, each exact under the ``overlap`` loop (every phase costs
``max(compute, collectives)``):

* ``tp_comm_overlap``: Megatron-LM runs the backward collectives of every column-parallel
  linear asynchronously [1]_: the input-gradient all-reduce (sequence parallel: reduce-scatter)
  behind the weight-gradient GEMM, and with sequence parallelism the all-gather of the
  linear's input behind the input-gradient GEMM (:func:`split_overlapped`);
* ``dp_comm_overlap``: the data-parallel gradient reduction behind the last micro-batch's
  backward pass (PyTorch DDP [2]_, Megatron-LM ``--overlap-grad-reduce``,
  :func:`dp_overlapped`); optimistic, DDP cannot hide its last bucket.

A layer becomes ``<layer>`` (its compute less the overlapping GEMMs), ``<layer>~comm`` (the
exposed collectives) and ``<layer>~tp_overlap_<block>`` (each GEMM with the collective it
hides), so the step time is ``compute + exposed + sum max(0, t_comm - t_gemm)``, convex in
``1 / B``.

References
----------
.. [1] NVIDIA Megatron-LM, ``megatron/mpu/layers.py``,
   ``LinearWithGradAccumulationAndAsyncCommunication`` (commit cf7efd4, 2021-08-30,
   "allreduce overlap with wgrad gemm"; the sequence-parallel all-gather and
   reduce-scatter overlap, 2022). On by default since then
   (``--no-async-tensor-model-parallel-allreduce`` turns it off).
.. [2] S. Li et al., "PyTorch Distributed: Experiences on Accelerating Data Parallel
   Training", VLDB 2020, arXiv:2006.15704 (gradient buckets all-reduced during the
   backward pass; ``no_sync`` for all but the last micro-batch).
.. [3] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data
   Parallel", VLDB 2023, arXiv:2304.11277, Sec. 3.3 (backward and forward prefetching).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from libra_opt.generators.devices import Device
from libra_opt.generators.operators import LayerOperators
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.roofline import operator_time_s
from libra_opt.traffic.workload import Collective, Layer, Phase

__all__ = ["TpBlock", "ATTENTION_LINEARS", "hidden_collectives", "split_overlapped", "overlap_form",
           "dp_overlapped", "is_window", "DP_WINDOW", "zero3_overlapped"]

#: Name of the layer that carries the data-parallel gradient reduction with its window.
DP_WINDOW = "dp_grad_sync~dp_overlap"

#: Column-parallel linears that read the attention block's input (non-MLA and MLA).
ATTENTION_LINEARS = ("qkv_proj", "q_proj", "q_down_proj", "kv_down_proj")


@dataclass(frozen=True)
class TpBlock:
    """One tensor-parallel block: name, activation bytes (its all-reduce's size) and the
    column-parallel linears whose GEMMs hide its collectives.
    """

    name: str
    activation_bytes: float
    linears: tuple[str, ...]


def hidden_collectives(block: TpBlock, par: Parallelism) -> tuple[Collective | None, Collective]:
    """``(behind the input-gradient GEMM, behind the weight-gradient GEMM)`` of ``block``.

    Examples
    --------
    >>> b = TpBlock("mlp", 8e6, ("mlp_fc1",))
    >>> hidden_collectives(b, Parallelism(tp=4, global_batch_size=1))
    (None, Collective(kind='all_reduce', size_bytes=8000000.0, group='tp'))
    >>> d, w = hidden_collectives(b, Parallelism(tp=4, sequence_parallel=True, global_batch_size=1))
    >>> (d.kind, d.size_bytes), (w.kind, w.size_bytes)
    (('all_gather', 2000000.0), ('reduce_scatter', 8000000.0))
    """
    a = float(block.activation_bytes)
    if par.sequence_parallel:
        return Collective("all_gather", a / par.tp, "tp"), Collective("reduce_scatter", a, "tp")
    return None, Collective("all_reduce", a, "tp")


def _without(collectives: tuple[Collective, ...], c: Collective | None, where: str) -> tuple[Collective, ...]:
    if c is None:
        return collectives
    for i, x in enumerate(collectives):
        if x == c:
            return collectives[:i] + collectives[i + 1:]
    raise ValueError(f"{where}: {c} is not among the layer's collectives")  # a generator bug


def _gemm_s(ops: Sequence, names: set[str], device: Device, dtype: str, eff: float) -> float:
    return sum(operator_time_s(o, device, dtype, eff) for o in ops if o.name in names)


def split_overlapped(layer: Layer, ops: LayerOperators, blocks: Sequence[TpBlock], par: Parallelism,
                     device: Device, dtype: str, gemm_efficiency: float) -> list[Layer]:
    """``layer`` (one micro-batch, count 1, priced from ``ops``) in overlap form: the compute layer,
    the exposed-collectives layer and one overlap layer per block of ``blocks`` (empty ones left
    out); ``par``, ``device``, ``dtype``, ``gemm_efficiency`` as for
    :func:`~libra_opt.generators.roofline.operator_time_s`.
    """
    ig = layer.input_grad.collectives
    wg = layer.weight_grad.collectives
    windows: list[Layer] = []
    dgrad_total = wgrad_total = 0.0
    for b in blocks:
        behind_dgrad, behind_wgrad = hidden_collectives(b, par)
        if behind_dgrad is not None:  # the sequence-parallel re-gather, in the wgrad phase
            wg = _without(wg, behind_dgrad, f"{layer.name}.{b.name}")
        ig = _without(ig, behind_wgrad, f"{layer.name}.{b.name}")
        t_dgrad = _gemm_s(ops.input_grad, {f"{n}_dgrad" for n in b.linears}, device, dtype,
                          gemm_efficiency) if behind_dgrad is not None else 0.0
        t_wgrad = _gemm_s(ops.weight_grad, {f"{n}_wgrad" for n in b.linears}, device, dtype,
                          gemm_efficiency)
        dgrad_total += t_dgrad
        wgrad_total += t_wgrad
        gather: tuple[Collective, ...] = () if behind_dgrad is None else (behind_dgrad,)
        windows.append(Layer(
            f"{layer.name}~tp_overlap_{b.name}",
            input_grad=Phase(t_dgrad, gather),
            weight_grad=Phase(t_wgrad, (behind_wgrad,)),
        ))
    compute = Layer(
        layer.name,
        Phase(layer.forward.compute_s),
        Phase(max(layer.input_grad.compute_s - dgrad_total, 0.0)),
        Phase(max(layer.weight_grad.compute_s - wgrad_total, 0.0)),
    )
    comm = Layer(f"{layer.name}~comm", Phase(0.0, layer.forward.collectives), Phase(0.0, ig),
                 Phase(0.0, wg))
    return [x for x in (compute, comm, *windows) if not x.empty]


def is_window(layer: Layer) -> bool:
    """A layer whose phases pair collectives with the compute they hide behind."""
    return ("~tp_overlap_" in layer.name or layer.name == DP_WINDOW
            or layer.name.endswith(ZERO3_WINDOW))


#: Suffix of a layer whose phases pair the ZeRO-3 collectives with the layer's own compute.
ZERO3_WINDOW = "~zero3_overlap"


def _is_zero3(c: Collective) -> bool:
    return c.group in ("dp", "edp") and c.kind in ("all_gather", "reduce_scatter")


def zero3_overlapped(pieces: Sequence[Layer]) -> list[Layer]:
    """One layer (or the pieces :func:`split_overlapped` made of it) in overlap form with its
    ZeRO-3 gathers and reduce-scatters behind its own compute, phase by phase.

    As FSDP prefetches [1]_: each phase pays ``max(compute, ZeRO-3 collectives)`` and its other
    collectives in full; exact for equal layers, optimistic by one layer's gather per pass.

    References
    ----------
    .. [1] Zhao et al., "PyTorch FSDP", VLDB 2023, arXiv:2304.11277 (the module's References).

    Examples
    --------
    >>> l = Layer("x", Phase(1.0, (Collective("all_gather", 1e6, "dp"),
    ...                            Collective("all_reduce", 1e6, "tp"))))
    >>> [(y.name, y.forward.compute_s, [c.group for c in y.forward.collectives])
    ...  for y in zero3_overlapped([l])]
    [('x~zero3_overlap', 1.0, ['dp']), ('x~comm', 0.0, ['tp'])]
    """
    parts = overlap_form(pieces[0]) if len(pieces) == 1 else list(pieces)
    base = next((x for x in parts if "~" not in x.name), None)
    comm = next((x for x in parts if x.name.endswith("~comm")), None)
    if base is None or comm is None:
        return parts  # no compute to hide behind, or no collective
    phases = []
    rest = []
    for (_, b), (_, c) in zip(base.phases(), comm.phases(), strict=True):
        phases.append(Phase(b.compute_s, tuple(x for x in c.collectives if _is_zero3(x))))
        rest.append(Phase(0.0, tuple(x for x in c.collectives if not _is_zero3(x))))
    window = Layer(f"{base.name}{ZERO3_WINDOW}", phases[0], phases[1], phases[2],
                   count=base.count, update_s=base.update_s)
    exposed = Layer(comm.name, rest[0], rest[1], rest[2], count=comm.count)
    others = [x for x in parts if x is not base and x is not comm]
    return [x for x in (window, exposed, *others) if not x.empty]


def dp_overlapped(layers_mb: Sequence[tuple[Layer, int]], micro_batches: int) -> tuple[list[Layer], float]:
    """The step's layers with the last micro-batch's backward compute set aside as the window of
    the data-parallel gradient reduction.

    Parameters
    ----------
    layers_mb : sequence of (Layer, int)
        The stage's layers for one micro-batch and their repeats.
    micro_batches : int
        ``m``.

    Returns
    -------
    (list of Layer, float)
        The layers in overlap form, repeated ``m x n`` times except the compute layers:
        ``(m - 1) n`` full plus ``n`` forward passes (``<name>~last_forward``); and the window,
        one micro-batch's backward compute not paired with a TP collective (the caller puts it
        with the reduction in :data:`DP_WINDOW`).

    Examples
    --------
    >>> l = Layer("x", Phase(1.0), Phase(1.5, (Collective("all_reduce", 1e6, "tp"),)), Phase(0.5))
    >>> layers, window = dp_overlapped([(l, 1)], 2)
    >>> [(y.name, y.count) for y in layers], window
    ([('x', 1), ('x~last_forward', 1), ('x~comm', 2)], 2.0)
    """
    out: list[Layer] = []
    window = 0.0
    m = int(micro_batches)
    for layer, n in layers_mb:
        for x in overlap_form(layer):
            back = x.input_grad.compute_s + x.weight_grad.compute_s
            if is_window(x) or any(p.collectives for _, p in x.phases()) or back == 0:
                out.append(dataclasses.replace(x, count=m * n))
                continue
            window += n * back
            if m > 1:
                out.append(dataclasses.replace(x, count=(m - 1) * n))
            if x.forward.compute_s:
                out.append(Layer(f"{x.name}~last_forward", forward=x.forward, count=n))
    return out, window


def overlap_form(layer: Layer) -> list[Layer]:
    """A layer as its compute and its collectives in two layers (``<name>``, ``<name>~comm``).

    Examples
    --------
    >>> l = Layer("x", weight_grad=Phase(0.5, (Collective("all_reduce", 1e6, "dp"),)), count=3)
    >>> [(y.name, y.count, y.weight_grad.compute_s, len(y.weight_grad.collectives))
    ...  for y in overlap_form(l)]
    [('x', 3, 0.5, 0), ('x~comm', 3, 0.0, 1)]
    """
    if is_window(layer) or not any(p.compute_s and p.collectives for _, p in layer.phases()):
        return [layer]  # already exact under the overlap loop
    f, i, w = layer.forward, layer.input_grad, layer.weight_grad
    compute = Layer(layer.name, Phase(f.compute_s), Phase(i.compute_s), Phase(w.compute_s),
                    count=layer.count, update_s=layer.update_s)
    comm = Layer(f"{layer.name}~comm", Phase(0.0, f.collectives), Phase(0.0, i.collectives),
                 Phase(0.0, w.collectives), count=layer.count)
    return [x for x in (compute, comm) if not x.empty]
