"""In-network optimizer (model-in-network data parallelism, LuWu class [1]_): DP traffic and memory.

With ``parallelism: {dp_mode: in_network_optimizer}`` every NPU *pushes* its gradient once per
step to aggregation nodes in the network, which sum the replicas' gradients and run the
optimizer update on the state they hold; every NPU then *pulls* the updated working parameters.
With ``Psi`` the parameters one NPU holds and ``k_g``, ``k_p``, ``k_o`` the bytes per gradient,
working parameter and optimizer state, ``G = Psi k_g`` and ``P = Psi k_p``:

* traffic per NPU and step on every dimension the data-parallel group spans: ``G`` (push,
  ``dp_grad_sync`` layer) plus ``P`` (pull, ``optimizer_step`` layer), each one ``p2p``
  transfer; a ring all-reduce sends ``2 G (k - 1) / k`` on ``k`` replicas;
* memory per NPU: weights ``P``, gradients ``G``, no optimizer state.

**Out-of-core variant** (``optimizer_state: host_paging``): the state ``S = Psi k_o`` lives in
host memory and is paged over the host link every step (``S`` each way of the full-duplex link,
``t_page = S / B_host``), the GPU running the update, double-buffered so the optimizer step
takes ``max(t_update, t_page)``; the aggregators only sum gradients, so the pull is ``G``.

Not modelled: the aggregators' own bandwidth and memory limits (they are priced per GB/s of
ingress port and per GB of state by :mod:`libra_opt.cost.aggregators`, not counted as NPUs);
the aggregator's update adds no time (pipelined with the push); a group spanning several
dimensions carries ``G + P`` on each (no pre-aggregation); push and pull are not overlapped
with the backward pass; only ZeRO stage 0 combines with it. The host link is a fixed
parameter of the workload (it joins no NPUs): the optimizer accounts for the paging time but
does not size the link.

Limit of validity: LuWu itself also offloads the working parameters and streams them to the
GPUs layer by layer [1]_; this model is the simpler bound where weights and gradients stay
resident, so it holds only while ``Psi (k_p + k_g)`` plus the activations fit in HBM.

:func:`zero3_prefetched` models ZeRO-3 as DeepSpeed and FSDP run it [3]_ [4]_: each layer's
parameter gathers and gradient reduce-scatter run behind that layer's compute
(``max(compute, gathers)`` per phase), other collectives stay exposed; a lower bound by at most
one layer's gather per pass and stage.

References
----------
.. [1] "LuWu: An End-to-End In-Network Out-of-Core Optimizer for 100B-Scale
   Model-in-Network Data-Parallel Training on Distributed GPUs", arXiv:2409.00918 (2024).
.. [2] S. Rajbhandari, J. Rasley, O. Ruwase, Y. He, "ZeRO: Memory Optimizations Toward
   Training Trillion Parameter Models", SC 2020, arXiv:1910.02054 (the 16 bytes per
   parameter of mixed-precision Adam).
.. [3] Y. Zhao et al., "PyTorch FSDP: Experiences on Scaling Fully Sharded Data Parallel",
   VLDB 2023, arXiv:2304.11277 (forward and backward prefetching; gradient reduce-scatter
   overlapped with backward).
.. [4] S. Rajbhandari et al., "ZeRO-Infinity: Breaking the GPU Memory Wall for Extreme Scale
   Deep Learning", SC 2021, arXiv:2104.07857 (parameters of upcoming layers prefetched);
   DeepSpeed ``stage3_prefetch_bucket_size`` and ``overlap_comm``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from libra_opt.errors import InputError
from libra_opt.generators.comm_overlap import overlap_form
from libra_opt.generators.parallelism import Parallelism, Precision
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

__all__ = ["IN_NETWORK_OPTIMIZER", "HOST_PAGING", "in_network_optimizer_collectives",
           "dp_sync_bytes_per_npu", "host_paging_bytes", "host_paging_time_s",
           "aggregator_state_bytes", "zero3_prefetched", "ZERO3_GROUPS"]

#: Groups whose per-layer collectives are ZeRO-3's (dense and expert data parallelism).
ZERO3_GROUPS: tuple[str, ...] = ("dp", "edp")

IN_NETWORK_OPTIMIZER = "in_network_optimizer"
HOST_PAGING = "host_paging"


def in_network_optimizer_collectives(
    par: Parallelism, groups: Sequence[tuple[float, str, int]]
) -> tuple[tuple[Collective, ...], tuple[Collective, ...]]:
    """Push (gradient) and pull (parameter) transfers of one step.

    Parameters
    ----------
    par : Parallelism
        Its precision gives ``k_g`` and ``k_p``.
    groups : sequence of (params, group, ranks)
        Parameters one NPU holds that are replicated over ``group`` (``ranks`` replicas);
        entries with no parameters or a single rank are skipped.

    Returns
    -------
    push, pull : tuple of Collective
        ``p2p`` of ``Psi k_g`` bytes and of ``Psi k_p`` bytes per group (with ``host_paging``
        the pull is the summed gradient, ``Psi k_g``).

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


def dp_sync_bytes_per_npu(params: float, precision: Precision, ranks: int, dp_mode: str,
                          zero: int = 0, optimizer_state: str = "aggregator") -> float:
    """Bytes one NPU sends per step for the data-parallel sync on one dimension of ``ranks``.

    Notes
    -----
    ``collective``: ring all-reduce ``2 G (k - 1) / k`` (ZeRO-1/2: ``(G + P) (k - 1) / k``);
    ``in_network_optimizer``: ``G + P`` (``2 G`` with ``host_paging``).

    Examples
    --------
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
    ``read = write = Psi k_o`` (master weights, momentum and variance; 12 bytes per parameter for
    mixed-precision Adam [1]_).

    References
    ----------
    .. [1] Rajbhandari et al., "ZeRO", SC 2020, arXiv:1910.02054 (the module's References).

    Examples
    --------
    >>> host_paging_bytes(1e9, Precision())
    (12000000000.0, 12000000000.0)
    """
    s = params * precision.optimizer_bytes
    return s, s


def host_paging_time_s(params: float, precision: Precision, host_link_gbps: float) -> float:
    """Seconds the host link needs per step to page the optimizer state in and out.

    Notes
    -----
    ``t_page = Psi k_o / B_host``: reads and writes use the two directions of the link at once.

    Examples
    --------
    1e9 parameters over PCIe Gen5 x16 (64 GB/s per direction):

    >>> host_paging_time_s(1e9, Precision(), 64.0)
    0.1875
    """
    read, write = host_paging_bytes(params, precision)
    return max(read, write) / (host_link_gbps * 1e9)


def aggregator_state_bytes(total_params: float, precision: Precision,
                           optimizer_state: str = "aggregator") -> float:
    """Optimizer state the aggregators hold for the whole model (bytes): ``Psi_total k_o``, 0 with
    ``host_paging``.

    Examples
    --------
    >>> round(aggregator_state_bytes(174.6e9, Precision()) / 1e12, 2)
    2.1
    >>> aggregator_state_bytes(174.6e9, Precision(), "host_paging")
    0.0
    """
    if optimizer_state == HOST_PAGING:
        return 0.0
    return float(total_params) * precision.optimizer_bytes


def _is_zero3(c: Collective, phase: str) -> bool:
    """A ZeRO-3 parameter all-gather or gradient reduce-scatter on dp / edp."""
    if c.group not in ZERO3_GROUPS:
        return False
    return c.kind == ("reduce_scatter" if phase == "weight_grad" else "all_gather")


def zero3_prefetched(workload: Workload) -> Workload:
    """A ZeRO-3 workload as DeepSpeed ZeRO-3 and FSDP run it (module notes): each layer's ZeRO-3
    collectives behind its compute (``<name>~zero3_prefetch``), its others exposed
    (``<name>~comm``).

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
