"""Pipeline partition of transformer layers and the 1F1B schedule's bubble and memory.

Layers are split into ``pp * v`` virtual stages of ``ceil(L / (pp v))`` layers; an overshoot
of ``r`` layers is removed one at a time from the last virtual stage, then the first, the
second-to-last, ... (the Llama 3 recipe [1]_: the first and last stages carry the embedding
and the output layer). Virtual stage ``j`` runs on device ``j mod pp`` (Narayanan et al. 2021
[2]_, interleaved schedule).

References
----------
.. [1] A. Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.2.
.. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU
   Clusters Using Megatron-LM", SC 2021, arXiv:2104.04473, Sec. 2.2 (eqs. 1-2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from libra_opt.errors import InputError
from libra_opt.generators.descriptors import TransformerSpec

__all__ = ["StagePlan", "partition_layers", "stage_plan", "pipeline_bubble_passes",
           "inflight_microbatches"]


@dataclass(frozen=True)
class StagePlan:
    """The layers one pipeline device holds: its rank ``index`` (0 = first), dense and MoE layers,
    and whether the input embedding and the output layer run on it.
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
        raise InputError(f"{n_layers} layers cannot fill pp x interleave = {pp} x {interleave} = "
                         f"{n_virtual} pipeline stages", field="parallelism.pp")
    base = math.ceil(n_layers / n_virtual)
    counts = [base] * n_virtual
    deficit = base * n_virtual - n_layers
    # last, first, second-to-last, second, ...
    order = [j for pair in zip(reversed(range(n_virtual)), range(n_virtual), strict=True)
             for j in pair][:n_virtual]
    i = 0
    while deficit > 0:
        j = order[i % n_virtual]
        if counts[j] > 1:
            counts[j] -= 1
            deficit -= 1
        i += 1
    return _plans(model, [j % pp for j, c in enumerate(counts) for _ in range(c)], pp)


def _plans(model: TransformerSpec, devices: list[int], pp: int) -> tuple[StagePlan, ...]:
    """The plans of ``pp`` devices with layer ``i`` on device ``devices[i]``."""
    dense = [0] * pp
    moe = [0] * pp
    for layer, dev in enumerate(devices):
        if model.is_moe_layer(layer):
            moe[dev] += 1
        else:
            dense[dev] += 1
    return tuple(
        StagePlan(i, dense[i], moe[i], has_embedding=(i == 0), has_head=(i == pp - 1))
        for i in range(pp)
    )


def pipeline_bubble_passes(stage_times_s, slowest: int, interleave: int = 1) -> float:
    """Fill-and-drain time of a 1F1B pipeline with unequal stages, in passes through the slowest
    stage ``r`` (``stage_times_s``: each device's compute per micro-batch, s).

    Notes
    -----
    ``m`` identical micro-batches crossing ``p`` stages finish after ``sum_s t_s + (m - 1)
    max_s t_s`` (a flow shop of identical jobs): beyond the ``m`` passes of stage ``r``,
    ``sum_{s != r} t_s / t_r``, the textbook ``p - 1`` for equal stages [1]_; the interleaved
    schedule divides it by ``v``.

    References
    ----------
    .. [1] Narayanan et al., SC 2021, arXiv:2104.04473, Sec. 2.2, eqs. 1-2 (module References).

    Examples
    --------
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
    Device ``i`` runs ``min(p - i, m)`` warm-up forwards before its first backward; the
    interleaved schedule's factor ``1 + (p - 1) / (p v)`` on the first stage [1]_ is applied to
    every stage (an upper bound for the others).

    References
    ----------
    .. [1] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023, arXiv:2205.05198, Sec. 4.2.3.

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
    """Layers per pipeline device: :func:`partition_layers`, or the Llama 3 recipe [1]_ when the
    virtual stages outnumber the layers by one or two (every virtual stage holds one layer, the
    last only the output layer and loss and, ``r = 2``, the first only the embedding).

    References
    ----------
    .. [1] Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, Sec. 3.3.2.

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
    return _plans(model, [(first + layer) % pp for layer in range(model.n_layers)], pp)
