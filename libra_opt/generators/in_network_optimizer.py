"""In-network optimizer (model-in-network data parallelism, LuWu class): DP traffic and memory.

With ``parallelism: {dp_mode: in_network_optimizer}`` the data-parallel gradient
synchronization of a model-based workload is replaced by LuWu's push / pull scheme [1]_:
every NPU *pushes* its gradient once per step to aggregation nodes in the network, which
sum the gradients of the data-parallel replicas, run the optimizer update on the state
they hold (master weights, momentum, variance) and every NPU *pulls* the updated working
parameters once per step. The GPUs keep their working weights, their gradients and their
activations, but no optimizer state.

With ``Psi`` the parameters one NPU holds (after tensor / pipeline / expert sharding),
``k_g`` and ``k_p`` the bytes per gradient and per working parameter, ``G = Psi k_g`` and
``P = Psi k_p``:

* traffic per NPU and step, on every dimension the data-parallel group spans: ``G`` (push,
  in the ``dp_grad_sync`` layer) plus ``P`` (pull, in the ``optimizer_step`` layer), each
  a single point-to-point transfer (one latency step each way). A ring all-reduce sends
  ``2 G (k - 1) / k`` on a dimension of ``k`` replicas (ZeRO-1/2: ``G (k-1)/k +
  P (k-1)/k``);
* memory per NPU: weights ``P``, gradients ``G``, optimizer state ``0`` (instead of
  ``Psi k_o``, 12 bytes per parameter for mixed-precision Adam).

Both transfers are ordinary ``p2p`` collectives of the workload, so the optimizer, the
evaluator and both backends see ordinary constant and ``c / B_d`` terms.

**Out-of-core variant** (``optimizer_state: host_paging``): the optimizer state lives in
each GPU's *host* memory and is paged over the GPU's host link (PCIe) every step, the GPU
running the update itself; the aggregators only sum the pushed gradients and return the
sum. Per NPU and step:

* network: push ``G``, pull the summed gradient ``G`` (instead of ``P``);
* host link: the update reads the state, ``S = Psi k_o`` bytes (host -> GPU), and writes it
  back, ``S`` bytes (GPU -> host): ``2 S`` bytes per step, ``S`` in each direction of the
  full-duplex link, so paging takes ``t_page = S / B_host`` (``host_link_gbps`` per
  direction). Streamed in chunks with double buffering, the update of one chunk overlaps
  the transfer of the next: the optimizer step takes ``max(t_update, t_page)``;
* memory: HBM holds weights ``P`` and gradients ``G`` (the staging buffers of the stream
  are not counted); host memory holds ``S`` per GPU (every data-parallel replica keeps its
  own copy, as its GPU updates it).

The host link is a fixed-bandwidth parameter of the workload (not a fabric dimension:
it joins no NPUs), so the paging time is a constant term of the step: the optimizer
accounts for it but does not size it.

**Aggregators' price**: their ingress ports and state memory are priced by
:mod:`libra_opt.cost.aggregators` (the scenario attaches them to the outermost dimension
the data-parallel group spans); with ``host_paging`` they hold no state.

Assumptions (what is *not* modelled):

* the aggregation nodes have enough bandwidth and memory to absorb every replica's push
  and hold ``Psi k_o`` per model shard; they are priced per GB/s of ingress port and per GB
  of state (:mod:`libra_opt.cost.aggregators`), not counted as NPUs of the fabric;
* the optimizer update on the aggregators is pipelined with the push (LuWu streams it
  layer by layer [1]_) and adds no time to the step; the GPU's own optimizer step is gone;
* when the data-parallel group spans several dimensions, every byte crosses each of them
  (the traffic model's point-to-point rule: no hierarchical pre-aggregation), so each
  spanned dimension carries ``G + P`` -- pessimistic for a multi-level aggregation tree;
* push and pull are not overlapped with the backward pass (as the default DP sync);
* only ZeRO stage 0 combines with it (the sharded optimizer state is what moves off the
  GPU); the option applies to transformer models.

LuWu itself offloads the working parameters too and streams them to the GPUs layer by
layer (a communication pattern like ZeRO-3's, served by the in-network node, over
SmartNIC / SmartSwitch hardware) [1]_. This model is the simpler bound where the working
weights and gradients stay resident (it applies when ``Psi (k_p + k_g)`` plus the
activations fit in HBM): each byte of the model crosses the network once per step each
way, not once per micro-batch.

**The ZeRO-3 baseline as published systems run it** (:func:`zero3_prefetched`): a generated
ZeRO-3 workload gathers each layer's parameters before its forward and its backward pass and
reduce-scatters its gradients after the backward pass, every micro-batch, with no overlap
(LIBRA's ``no_overlap`` loop). DeepSpeed ZeRO-3 and PyTorch FSDP do not run it that way:
they prefetch the next layer's all-gather while the current layer computes (FSDP's forward
and backward prefetch, DeepSpeed's parameter prefetch bucket) and reduce-scatter a layer's
gradients while the previous layer's backward runs (FSDP; DeepSpeed's ``overlap_comm``) [3]_
[4]_. :func:`zero3_prefetched` turns the workload into overlap form with each layer's ZeRO-3
collectives paired with that layer's compute, so a phase costs ``max(compute, gathers)``
and every other collective (tensor, pipeline, context parallel) stays exposed. For layers
of equal size this is the time of the prefetched schedule, less the one gather per pass
that nothing precedes (a lower bound by at most one layer's gather per pass and stage).

References
----------
.. [1] "LuWu: An End-to-End In-Network Out-of-Core Optimizer for 100B-Scale
   Model-in-Network Data-Parallel Training on Distributed GPUs", arXiv:2409.00918 (2024).
.. [2] S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
   Training Trillion Parameter Models", SC 2020, arXiv:1910.02054 (the 16 bytes per
   parameter of mixed-precision Adam).
.. [3] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
   VLDB 2023, arXiv:2304.11277 (backward and forward prefetching of the next unit's
   all-gather; gradient reduce-scatter on a separate stream, overlapped with backward).
.. [4] S. Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale
   Deep Learning", SC 2021, arXiv:2104.07857 (overlap-centric design: parameters of upcoming
   layers prefetched during the current layer's compute); DeepSpeed configuration
   ``stage3_prefetch_bucket_size`` and ``overlap_comm``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from libra_opt.errors import InputError
from libra_opt.generators.comm_overlap import overlap_form
from libra_opt.generators.parallelism import Parallelism, Precision
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

__all__ = [
    "DP_MODES",
    "IN_NETWORK_OPTIMIZER",
    "HOST_PAGING",
    "OPTIMIZER_STATES",
    "in_network_optimizer_collectives",
    "in_network_optimizer_state_bytes",
    "dp_sync_bytes_per_npu",
    "host_paging_bytes",
    "host_paging_time_s",
    "aggregator_state_bytes",
    "zero3_prefetched",
    "ZERO3_GROUPS",
]

#: Groups whose per-layer collectives are ZeRO-3's (dense and expert data parallelism).
ZERO3_GROUPS: tuple[str, ...] = ("dp", "edp")

#: Values of ``Parallelism.dp_mode``.
IN_NETWORK_OPTIMIZER = "in_network_optimizer"
DP_MODES: tuple[str, ...] = ("collective", IN_NETWORK_OPTIMIZER)
#: Values of ``Parallelism.optimizer_state``: held by the aggregators, or paged from host memory.
HOST_PAGING = "host_paging"
OPTIMIZER_STATES: tuple[str, ...] = ("aggregator", HOST_PAGING)


def in_network_optimizer_collectives(
    par: Parallelism, groups: Sequence[tuple[float, str, int]]
) -> tuple[tuple[Collective, ...], tuple[Collective, ...]]:
    """Push (gradient) and pull (parameter) transfers of one step.

    Parameters
    ----------
    par : Parallelism
        Its precision gives ``k_g`` and ``k_p``.
    groups : sequence of (params, group, ranks)
        Parameters one NPU holds that are replicated over ``group`` (``ranks`` replicas),
        e.g. ``[(dense_params, "dp", dp x cp), (expert_params, "edp", dp / ep x cp)]``;
        entries with no parameters or a single rank are skipped.

    Returns
    -------
    push, pull : tuple of Collective
        ``p2p`` of ``Psi k_g`` bytes and ``p2p`` of ``Psi k_p`` bytes per group (with
        ``optimizer_state: host_paging`` the pull is the summed gradient, ``Psi k_g``).

    Notes
    -----
    ``G = Psi k_g`` (push), ``P = Psi k_p`` (pull; ``G`` with host paging); under the
    hierarchical traffic model a ``p2p`` of ``m`` bytes puts ``m`` on every spanned
    dimension, so each dimension of the group carries ``G + P`` (``2 G``) per NPU and step.

    References
    ----------
    .. [1] LuWu, arXiv:2409.00918 (see module docstring).

    Examples
    --------
    1e9 dense parameters on 8 replicas, bf16 gradients and parameters:

    >>> p = Parallelism(dp=8, dp_mode="in_network_optimizer", global_batch_size=8)
    >>> push, pull = in_network_optimizer_collectives(p, [(1e9, "dp", 8), (0.0, "edp", 8)])
    >>> [(c.kind, c.size_bytes, c.group) for c in push + pull]
    [('p2p', 2000000000.0, 'dp'), ('p2p', 2000000000.0, 'dp')]
    """
    gb = par.precision.grad_bytes
    pb = gb if par.optimizer_state == HOST_PAGING else par.precision.param_bytes
    push: list[Collective] = []
    pull: list[Collective] = []
    for params, group, ranks in groups:
        if params <= 0 or ranks <= 1:
            continue
        push.append(Collective("p2p", params * gb, group))
        pull.append(Collective("p2p", params * pb, group))
    return tuple(push), tuple(pull)


def in_network_optimizer_state_bytes(params: float, precision: Precision) -> tuple[float, float, float]:
    """Weights, gradients and optimizer state (bytes) on one NPU with the in-network optimizer.

    Notes
    -----
    ``weights = Psi k_p``, ``grads = Psi k_g``, ``optimizer = 0`` (held by the aggregators,
    or with ``host_paging`` in host memory: ``Psi k_o`` there, see :func:`host_paging_bytes`).
    Compared with ZeRO-0 the NPU frees ``Psi k_o`` (12 bytes per parameter for Adam [1]_);
    compared with ZeRO-3 on ``N_d`` ranks it holds ``Psi (k_p + k_g)`` instead of
    ``Psi (k_p + k_g + k_o) / N_d`` -- more, but without ZeRO-3's per-micro-batch gathers.

    References
    ----------
    .. [1] Rajbhandari et al., arXiv:1910.02054, Sec. 3.1.

    Examples
    --------
    >>> in_network_optimizer_state_bytes(1e9, Precision())
    (2000000000.0, 2000000000.0, 0.0)
    """
    return params * precision.param_bytes, params * precision.grad_bytes, 0.0


def dp_sync_bytes_per_npu(params: float, precision: Precision, ranks: int, dp_mode: str,
                          zero: int = 0, optimizer_state: str = "aggregator") -> float:
    """Bytes one NPU sends per step for the data-parallel sync on one dimension of ``ranks``.

    Notes
    -----
    * ``collective``, ZeRO-0: ring all-reduce ``2 G (k - 1) / k``;
    * ``collective``, ZeRO-1/2: reduce-scatter + all-gather ``(G + P) (k - 1) / k``;
    * ``in_network_optimizer``: push + pull ``G + P`` (``2 G`` with ``host_paging``).

    (ZeRO-3's per-micro-batch gathers are not a once-per-step sync; see
    :func:`libra_opt.generators.transformer_comm.zero3_collectives`.)

    Examples
    --------
    1e9 bf16 parameters, 8 replicas: the in-network optimizer sends ``8/7`` of the ring's
    bytes (``2 + 2`` GB vs ``2 x 2 x 7/8``) but in one step each way.

    >>> dp_sync_bytes_per_npu(1e9, Precision(), 8, "collective") / 1e9
    3.5
    >>> dp_sync_bytes_per_npu(1e9, Precision(), 8, "in_network_optimizer") / 1e9
    4.0
    """
    g, p = params * precision.grad_bytes, params * precision.param_bytes
    if ranks <= 1:
        return 0.0
    if dp_mode == IN_NETWORK_OPTIMIZER:
        return 2.0 * g if optimizer_state == HOST_PAGING else g + p
    frac = (ranks - 1) / ranks
    return 2.0 * g * frac if zero == 0 else (g + p) * frac


def host_paging_bytes(params: float, precision: Precision) -> tuple[float, float]:
    """Bytes one GPU reads from and writes to its host memory per step (``host_paging``).

    Notes
    -----
    ``read = write = S = Psi k_o``: the update streams in the fp32 master weights, momentum
    and variance of the ``Psi`` parameters the GPU holds and streams them back (the bf16
    working weights it produces stay on the GPU); ``2 Psi k_o`` in all, 24 bytes per
    parameter for mixed-precision Adam [1]_.

    References
    ----------
    .. [1] Rajbhandari et al., arXiv:1910.02054, Sec. 3.1 (12 bytes of Adam state per
       parameter).

    Examples
    --------
    1e9 parameters, Adam: 12 GB each way.

    >>> host_paging_bytes(1e9, Precision())
    (12000000000.0, 12000000000.0)
    """
    s = params * precision.optimizer_bytes
    return s, s


def host_paging_time_s(params: float, precision: Precision, host_link_gbps: float) -> float:
    """Seconds the host link needs per step to page the optimizer state in and out.

    Notes
    -----
    ``t_page = Psi k_o / B_host``: reads and writes use the two directions of the
    full-duplex link at once (``host_link_gbps`` each).

    Examples
    --------
    1e9 parameters over PCIe Gen5 x16 (64 GB/s per direction): 12 GB / 64 GB/s.

    >>> host_paging_time_s(1e9, Precision(), 64.0)
    0.1875
    """
    read, write = host_paging_bytes(params, precision)
    return max(read, write) / (host_link_gbps * 1e9)


def aggregator_state_bytes(total_params: float, precision: Precision,
                           optimizer_state: str = "aggregator") -> float:
    """Optimizer state the aggregators hold for the whole model (bytes).

    Notes
    -----
    ``Psi_total k_o`` once per model (the data-parallel replicas push into the same state;
    tensor / pipeline shards each have their own part of it); 0 with ``host_paging`` (the
    state is in the GPU hosts' memory).

    Examples
    --------
    GPT-3 175B (174.6e9 parameters), Adam: 2.1 TB.

    >>> round(aggregator_state_bytes(174.6e9, Precision()) / 1e12, 2)
    2.1
    >>> aggregator_state_bytes(174.6e9, Precision(), "host_paging")
    0.0
    """
    if optimizer_state == HOST_PAGING:
        return 0.0
    return float(total_params) * precision.optimizer_bytes


def _is_zero3(c: Collective, phase: str) -> bool:
    """A ZeRO-3 collective of a layer: a parameter all-gather of its forward or input-gradient
    phase, or the gradient reduce-scatter of its weight-gradient phase, on a data-parallel
    group."""
    if c.group not in ZERO3_GROUPS:
        return False
    return c.kind == ("reduce_scatter" if phase == "weight_grad" else "all_gather")


def zero3_prefetched(workload: Workload) -> Workload:
    """A ZeRO-3 workload as DeepSpeed ZeRO-3 and FSDP run it: each layer's parameter gathers
    and gradient reduce-scatter behind its compute (overlap form, ``overlap`` loop).

    Every layer with ZeRO-3 collectives becomes ``<name>~zero3_prefetch`` (its compute with
    those collectives: ``max(compute, collectives)`` per phase) and ``<name>~comm`` (its other
    collectives, exposed); every other layer is split into compute and collectives
    (:func:`libra_opt.generators.comm_overlap.overlap_form`). The bytes are unchanged: the
    parameters are still gathered every micro-batch; only when they move changes.

    Parameters
    ----------
    workload : Workload
        A generated workload with ``zero: 3`` (not yet in overlap form).

    Returns
    -------
    Workload
        In overlap form: time it with ``training_loop: overlap``.

    Raises
    ------
    InputError
        When the workload is already in overlap form or has no ZeRO-3 collective.

    Examples
    --------
    A layer of 3 s forward compute, a 1 GB parameter gather on ``dp`` and a tensor-parallel
    all-reduce:

    >>> ag, ar = Collective("all_gather", 1e9, "dp"), Collective("all_reduce", 1e8, "tp")
    >>> w = Workload("w", (Layer("l", Phase(3.0, (ag, ar))),), {"dp": (1, 8), "tp": (8, 1)})
    >>> [(x.name, x.forward.compute_s, [c.group for c in x.forward.collectives])
    ...  for x in zero3_prefetched(w).layers]
    [('l~zero3_prefetch', 3.0, ['dp']), ('l~comm', 0.0, ['tp'])]
    """
    if workload.overlap_form:
        raise InputError(f"workload {workload.name!r} is already in overlap form",
                         field="workload.overlap_form")
    layers: list[Layer] = []
    found = False
    for layer in workload.layers:
        hidden = {n: tuple(c for c in p.collectives if _is_zero3(c, n)) for n, p in layer.phases()}
        if not any(hidden.values()):
            layers += overlap_form(layer)
            continue
        found = True
        rest = {n: tuple(c for c in p.collectives if not _is_zero3(c, n))
                for n, p in layer.phases()}
        f, i, w = layer.forward, layer.input_grad, layer.weight_grad
        paired = Layer(f"{layer.name}~zero3_prefetch", Phase(f.compute_s, hidden["forward"]),
                       Phase(i.compute_s, hidden["input_grad"]),
                       Phase(w.compute_s, hidden["weight_grad"]),
                       count=layer.count, update_s=layer.update_s)
        comm = Layer(f"{layer.name}~comm", Phase(0.0, rest["forward"]),
                     Phase(0.0, rest["input_grad"]), Phase(0.0, rest["weight_grad"]),
                     count=layer.count)
        layers += [x for x in (paired, comm) if not x.empty]
    if not found:
        raise InputError(f"workload {workload.name!r} has no ZeRO-3 collective (parameter "
                         "all-gathers and gradient reduce-scatters on dp or edp)",
                         field="parallelism.zero")
    return dataclasses.replace(workload, layers=tuple(layers), overlap_form=True)
