"""Pipeline partition of transformer layers and the 1F1B schedule's bubble and memory.

Layers are split into ``pp * v`` virtual stages (``v`` = interleave) of ``ceil(L / (pp v))``
layers; when that overshoots ``L`` by ``r`` layers, one layer is removed from the last
virtual stage, then the first, then the second-to-last, the second, ... -- the Llama 3
recipe (Dubey et al. 2024, Sec. 3.3.2: one layer fewer on the first and last stages,
which carry the embedding and the output layer). Virtual stage ``j`` runs on device
``j mod pp`` (Narayanan et al. 2021, interleaved schedule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from libra_opt.errors import InputError
from libra_opt.generators.descriptors import TransformerSpec

__all__ = [
    "StagePlan",
    "partition_layers",
    "stage_plan",
    "bubble_fraction",
    "pipeline_bubble_passes",
    "inflight_microbatches",
]


@dataclass(frozen=True)
class StagePlan:
    """The layers one pipeline device holds.

    Attributes
    ----------
    index : int
        Pipeline rank, 0 = first.
    n_dense, n_moe : int
        Dense and mixture-of-experts transformer layers on the device.
    has_embedding, has_head : bool
        Whether the input embedding / the output layer and loss run on it.
    """

    index: int
    n_dense: int
    n_moe: int
    has_embedding: bool
    has_head: bool

    @property
    def n_layers(self) -> int:
        """Transformer layers on the device."""
        return self.n_dense + self.n_moe


def partition_layers(model: TransformerSpec, pp: int, interleave: int = 1) -> tuple[StagePlan, ...]:
    """Split ``model``'s layers over ``pp`` devices with ``interleave`` chunks each.

    Raises
    ------
    InputError
        If there are fewer layers than virtual stages.

    Examples
    --------
    Llama 3 405B: 126 layers on 16 stages -> 8 layers per stage, 7 on the first and last.

    >>> from libra_opt.io.presets import load_model
    >>> plan = partition_layers(load_model("llama3_405b"), 16)
    >>> [s.n_layers for s in plan][:3], plan[-1].n_layers, plan[-1].has_head
    ([7, 8, 8], 7, True)
    """
    n_virtual = pp * interleave
    n_layers = model.n_layers
    if n_layers < n_virtual:
        raise InputError(
            f"{n_layers} layers cannot fill pp x interleave = {pp} x {interleave} = "
            f"{n_virtual} pipeline stages",
            field="parallelism.pp",
        )
    base = math.ceil(n_layers / n_virtual)
    counts = [base] * n_virtual
    deficit = base * n_virtual - n_layers
    order = []
    lo, hi = 0, n_virtual - 1
    while lo <= hi:
        order.append(hi)
        if lo != hi:
            order.append(lo)
        lo, hi = lo + 1, hi - 1
    i = 0
    while deficit > 0:
        j = order[i % n_virtual]
        if counts[j] > 1:
            counts[j] -= 1
            deficit -= 1
        i += 1
    dense = [0] * pp
    moe = [0] * pp
    layer = 0
    for j, c in enumerate(counts):
        dev = j % pp
        for _ in range(c):
            if model.is_moe_layer(layer):
                moe[dev] += 1
            else:
                dense[dev] += 1
            layer += 1
    return tuple(
        StagePlan(i, dense[i], moe[i], has_embedding=(i == 0), has_head=(i == pp - 1))
        for i in range(pp)
    )


def bubble_fraction(pp: int, micro_batches: int, interleave: int = 1) -> float:
    """Idle time of the 1F1B schedule relative to the ideal for equal stages:
    ``(p - 1) / (v m)`` (the generated workloads use :func:`pipeline_bubble_passes`, which
    reduces to it for equal stages).

    References
    ----------
    .. [1] D. Narayanan et al., SC 2021, arXiv:2104.04473, Sec. 2.2 (eqs. 1-2).

    Examples
    --------
    >>> bubble_fraction(8, 96), bubble_fraction(8, 96, interleave=2)
    (0.07291666666666667, 0.036458333333333336)
    """
    return (pp - 1) / (interleave * micro_batches)


def pipeline_bubble_passes(stage_times_s, slowest: int, interleave: int = 1) -> float:
    """Fill-and-drain time of a 1F1B pipeline with unequal stages, in passes through the
    slowest stage: ``sum_{s != r} t_s / (v t_r)``.

    Parameters
    ----------
    stage_times_s : sequence of float
        Each pipeline device's compute time for one micro-batch (forward and backward), s.
    slowest : int
        Index ``r`` of the slowest device (``t_r = max_s t_s``).
    interleave : int
        Virtual stages per device ``v``.

    Notes
    -----
    ``m`` identical micro-batches crossing ``p`` stages in order, each stage working on one
    at a time, finish after ``T = sum_s t_s + (m - 1) max_s t_s``: the first micro-batch
    crosses every stage, and each later one leaves the bottleneck stage ``max_s t_s`` after
    the one before it (a flow shop of identical jobs). Counted in
    passes through the slowest stage ``r`` beyond the ``m`` it does itself, that is
    ``sum_{s != r} t_s / t_r``, which equals the textbook ``p - 1`` when the stages are
    equal [1]_ and is smaller when the stage that carries the embedding or the output layer
    is the slowest. The interleaved schedule divides the fill and drain by ``v`` [1]_.

    References
    ----------
    .. [1] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
       Clusters Using Megatron-LM", SC 2021, arXiv:2104.04473, Sec. 2.2 (eqs. 1-2).

    Examples
    --------
    Equal stages give ``(p - 1) / v``; a last stage 1.5 times as slow gives fewer passes:

    >>> pipeline_bubble_passes([2.0, 2.0, 2.0, 2.0], 0), pipeline_bubble_passes([2.0] * 4, 0, 2)
    (3.0, 1.5)
    >>> pipeline_bubble_passes([2.0, 2.0, 2.0, 3.0], 3)
    2.0
    """
    times = list(stage_times_s)
    top = times[slowest]
    if top <= 0:
        return (len(times) - 1) / interleave
    return (sum(times) - top) / (interleave * top)


def inflight_microbatches(stage: int, pp: int, micro_batches: int, interleave: int = 1) -> float:
    """Micro-batches whose activations a pipeline device holds at the peak of 1F1B.

    Notes
    -----
    Device ``i`` runs ``min(p - i, m)`` warm-up forwards before its first backward
    (non-interleaved 1F1B). The interleaved schedule multiplies the first stage's activation
    memory by ``1 + (p - 1) / (p v)`` (Korthikanti et al. 2022, Sec. 4.2.3); the same factor
    is applied to every stage here (an upper bound for the others).

    References
    ----------
    .. [1] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023, arXiv:2205.05198.

    Examples
    --------
    >>> inflight_microbatches(0, 8, 96), inflight_microbatches(7, 8, 96)
    (8.0, 1.0)
    """
    n = float(min(pp - stage, micro_batches))
    if interleave > 1:
        n *= 1.0 + (pp - 1) / (pp * interleave)
    return n


def stage_plan(model: TransformerSpec, pp: int, interleave: int = 1) -> tuple[StagePlan, ...]:
    """Layers per pipeline device: :func:`partition_layers`,
    and the Llama 3 recipe when the virtual stages outnumber the layers by one or two.

    With ``pp x interleave = layers + r`` (``r`` = 1 or 2) every virtual stage holds one
    layer, except that the last one holds only the output layer and the loss and (``r = 2``)
    the first one only the embedding -- "the first model chunk on the first stage has only
    the embedding, and the last model chunk on the last stage has only output projection and
    loss calculation" (Dubey et al. 2024, Sec. 3.3.2).

    References
    ----------
    .. [1] A. Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.2.

    Examples
    --------
    Llama 3 405B (126 layers) on 16 devices with 8 virtual stages each:

    >>> from libra_opt.io.presets import load_model
    >>> plan = stage_plan(load_model("llama3_405b"), 16, 8)
    >>> [s.n_layers for s in plan][:3], plan[-1].n_layers, sum(s.n_layers for s in plan)
    ([7, 8, 8], 7, 126)
    """
    n_virtual = pp * interleave
    spare = n_virtual - model.n_layers
    if pp == 1 or not 0 < spare <= 2:
        return partition_layers(model, pp, interleave)
    first = 1 if spare == 2 else 0  # virtual stage of the first layer
    dense = [0] * pp
    moe = [0] * pp
    for layer in range(model.n_layers):
        dev = (first + layer) % pp
        if model.is_moe_layer(layer):
            moe[dev] += 1
        else:
            dense[dev] += 1
    return tuple(
        StagePlan(i, dense[i], moe[i], has_embedding=(i == 0), has_head=(i == pp - 1))
        for i in range(pp)
    )
