"""Per-dimension traffic of hierarchical collectives (LIBRA-compatible traffic model).

A collective over a parallelism group that spans ``k_d`` NPUs of dimension ``d`` runs
dimension by dimension. :func:`hierarchical_traffic_bytes` returns the bytes each NPU sends
on every dimension; :func:`collective_time_s` turns that into time for a bandwidth vector.

Size convention (the same as the ASTRA-sim 1.0 text format and the LIBRA reference):
``size_bytes`` is the per-NPU *input* buffer. For reduce-scatter, all-reduce and
all-to-all it is the whole vector; for all-gather it is the shard each NPU contributes
(the gathered result is ``size_bytes * prod(k)``); for point-to-point it is the message.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from libra_opt.errors import InputError
from libra_opt.options import COLLECTIVE_KINDS

__all__ = [
    "hierarchical_traffic_bytes",
    "flat_ring_traffic_bytes",
    "flat_ring_latency_s",
    "latency_steps",
    "collective_time_s",
]



def _check(kind: str, size_bytes: float, span: Sequence[int]) -> None:
    if kind not in COLLECTIVE_KINDS:
        raise InputError(
            f"collective kind {kind!r} is not one of {', '.join(COLLECTIVE_KINDS)}",
            field="collective.kind",
        )
    if not math.isfinite(size_bytes) or size_bytes < 0:
        raise InputError(
            f"collective size {size_bytes!r} must be a finite number of bytes >= 0",
            field="collective.size_bytes",
        )
    for k in span:
        if int(k) != k or k < 1:
            raise InputError(
                f"group span {tuple(span)} must hold positive integers (1 = not spanned)",
                field="collective.group",
            )


def hierarchical_traffic_bytes(
    kind: str, size_bytes: float, span: Sequence[int]
) -> np.ndarray:
    """Bytes each NPU sends on every dimension for one hierarchical collective.

    Parameters
    ----------
    kind : {'all_reduce', 'reduce_scatter', 'all_gather', 'all_to_all', 'p2p'}
        Collective type.
    size_bytes : float
        Per-NPU input buffer in bytes (the shard for all-gather; see module notes).
    span : sequence of int
        ``k_d`` for every fabric dimension, innermost first; 1 where the group does not
        span the dimension.

    Returns
    -------
    numpy.ndarray
        Shape ``(D,)``, bytes per NPU on each dimension.

    Notes
    -----
    With ``m`` the running message size and only spanned dimensions (``k_d > 1``) taking part:

    * reduce-scatter, dims in order: ``t_d = m (k_d - 1) / k_d``, then ``m <- m / k_d``,
      ``m`` starting at ``size_bytes``;
    * all-gather, dims in reverse order: ``t_d = m (k_d - 1)``, then ``m <- m k_d``,
      ``m`` starting at the shard ``size_bytes``;
    * all-reduce: reduce-scatter then all-gather, ``t_d = 2 m (k_d - 1) / k_d`` with ``m``
      shrinking by ``k_d`` per dimension;
    * all-to-all: ``t_d = m (k_d - 1) / k_d`` on every spanned dimension, ``m`` constant;
    * point-to-point: ``t_d = m`` on every spanned dimension (a stage pair spans one
      dimension with ``k_d = 2``; a pair whose coordinates differ in several dimensions
      crosses each of them).

    References
    ----------
    .. [1] W. Won, S. Rashidi, S. Srinivasan, T. Krishna, "LIBRA: Enabling Workload-Aware
       Multi-Dimensional Network Topology Optimization for Distributed Training of Large AI
       Models", ISPASS 2024, arXiv:2109.11762.

    Examples
    --------
    All-reduce of 1 MB over a 4 x 2 group:

    >>> hierarchical_traffic_bytes("all_reduce", 1e6, (4, 2)).tolist()
    [1500000.0, 250000.0]
    >>> hierarchical_traffic_bytes("all_gather", 1e6, (4, 2)).tolist()
    [6000000.0, 1000000.0]
    """
    _check(kind, size_bytes, span)
    ks = [int(k) for k in span]
    out = [0.0] * len(ks)  # a list, made an array at the end (cheaper per item)
    m = float(size_bytes)
    if kind in ("reduce_scatter", "all_reduce"):
        factor = 2.0 if kind == "all_reduce" else 1.0
        for d, k in enumerate(ks):
            if k > 1:
                out[d] = factor * m * (k - 1) / k
                m /= k
    elif kind == "all_gather":
        for d in range(len(ks) - 1, -1, -1):
            k = ks[d]
            if k > 1:
                out[d] = m * (k - 1)
                m *= k
    elif kind == "all_to_all":
        for d, k in enumerate(ks):
            if k > 1:
                out[d] = m * (k - 1) / k
    else:  # p2p
        for d, k in enumerate(ks):
            if k > 1:
                out[d] = m
    return np.array(out)


def flat_ring_traffic_bytes(
    kind: str, size_bytes: float, span: Sequence[int]
) -> np.ndarray:
    """Bytes each NPU sends on every spanned dimension when one flat ring joins all members.

    NCCL runs a collective over a communicator as rings through all ``k = prod(k_d)`` ranks
    (one per channel), not dimension by dimension: every byte of a ring step goes to the
    next rank, and on a ring that leaves the node the NIC link carries a whole ring step's
    share, so each spanned dimension is loaded with the full per-NPU ring traffic [1]_, [2]_.
    The collective then runs at the slowest spanned dimension's rate: with this traffic on
    every spanned dimension, the ``pipelined`` collective time ``max_d traffic_d / B_d`` is
    exactly that (terms ``c / B_d`` under a max, convex in ``1/B``).

    Parameters
    ----------
    kind, size_bytes, span
        As in :func:`hierarchical_traffic_bytes`.

    Returns
    -------
    numpy.ndarray
        Shape ``(D,)``, bytes per NPU; zero where the group does not span the dimension.

    Notes
    -----
    With ``k = prod_d k_d`` and ``m = size_bytes``, on every dimension with ``k_d > 1``:

    * all-reduce (ring reduce-scatter then ring all-gather): ``2 m (k - 1) / k``;
    * reduce-scatter: ``m (k - 1) / k``;
    * all-gather (``m`` is the shard): ``m (k - 1)``;
    * all-to-all and point-to-point: as in :func:`hierarchical_traffic_bytes` (they are
      sent peer to peer, not around a ring).

    References
    ----------
    .. [1] NVIDIA, "NCCL: Performance (nccl-tests)", PERFORMANCE.md: ring all-reduce moves
       ``2 (n - 1) / n`` times the buffer per rank ("bus bandwidth"),
       https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
    .. [2] P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
       workstations", J. Parallel Distrib. Comput. 69(2), 2009.

    Examples
    --------
    All-reduce of 1 MB by a TP group of 16 over two 8-GPU nodes (span ``(8, 2)``):
    ``2 x 1e6 x 15/16 = 1.875e6`` bytes on NVLink and on the NIC.

    >>> flat_ring_traffic_bytes("all_reduce", 1e6, (8, 2)).tolist()
    [1875000.0, 1875000.0]
    >>> flat_ring_traffic_bytes("all_gather", 1e6, (4, 2)).tolist()   # 1e6 x 7
    [7000000.0, 7000000.0]
    """
    base = hierarchical_traffic_bytes(kind, size_bytes, span)  # validates the arguments
    if kind in ("all_to_all", "p2p"):
        return base
    k = math.prod(int(x) for x in span)
    m = float(size_bytes)
    if kind == "all_reduce":
        per_npu = 2.0 * m * (k - 1) / k
    elif kind == "reduce_scatter":
        per_npu = m * (k - 1) / k
    else:  # all_gather
        per_npu = m * (k - 1)
    return np.array([per_npu if int(x) > 1 else 0.0 for x in span])


def flat_ring_latency_s(
    kind: str, span: Sequence[int], latency_per_step_s: Sequence[float]
) -> np.ndarray:
    """Constant latency of a flat ring, the same on every spanned dimension.

    A ring over ``k`` ranks takes ``k - 1`` steps for a reduce-scatter or all-gather and
    ``2 (k - 1)`` for an all-reduce; every step waits for the slowest link of the ring, so
    each pays the largest per-step latency ``alpha_d`` of the spanned dimensions. Listing
    that constant on every spanned dimension makes the pipelined time
    ``max_d (traffic_d / B_d + L) = max_d traffic_d / B_d + L``.

    Examples
    --------
    >>> (flat_ring_latency_s("all_reduce", (8, 2), (1e-6, 5e-6)) * 1e6).round(6).tolist()
    [150.0, 150.0]
    """
    if kind in ("all_to_all", "p2p"):
        raise InputError(f"a flat ring runs all-reduce, reduce-scatter or all-gather, not {kind!r}",
                         field="collective.kind")
    spanned = [d for d, x in enumerate(span) if int(x) > 1]
    out = np.zeros(len(span))
    if not spanned:
        return out
    k = math.prod(int(x) for x in span)
    steps = (2.0 if kind == "all_reduce" else 1.0) * (k - 1)
    alpha = max(float(latency_per_step_s[d]) for d in spanned)
    out[spanned] = steps * alpha
    return out


def latency_steps(kind: str, span: Sequence[int], topologies: Sequence[str]) -> np.ndarray:
    """Number of latency-paying algorithm steps per dimension.

    Parameters
    ----------
    kind : str
        Collective type (see :func:`hierarchical_traffic_bytes`).
    span : sequence of int
        ``k_d`` per dimension.
    topologies : sequence of str
        Topology of each dimension.

    Returns
    -------
    numpy.ndarray
        Shape ``(D,)``. On a ring a reduce-scatter, all-gather or all-to-all takes
        ``k - 1`` steps; on a fully-connected or switch dimension one (direct) step;
        all-reduce takes twice that; point-to-point one step.

    Examples
    --------
    >>> latency_steps("all_reduce", (4, 8), ("ring", "switch")).tolist()
    [6.0, 2.0]
    """
    out = np.zeros(len(span))
    for d, (k, topo) in enumerate(zip(span, topologies, strict=True)):
        if k <= 1:
            continue
        base = 1.0 if kind == "p2p" else (float(k - 1) if topo == "ring" else 1.0)
        out[d] = 2.0 * base if kind == "all_reduce" else base
    return out


def collective_time_s(
    traffic_bytes: np.ndarray,
    bw_gbps: np.ndarray,
    latency_s: np.ndarray | None = None,
    mode: str = "pipelined",
) -> float:
    """Time of one collective given its per-dimension traffic.

    Parameters
    ----------
    traffic_bytes : numpy.ndarray
        Bytes per NPU on each dimension, shape ``(D,)``.
    bw_gbps : numpy.ndarray
        Bandwidth per NPU of each dimension in GB/s, shape ``(D,)``.
    latency_s : numpy.ndarray, optional
        Constant latency per dimension (``alpha_d * steps_d``) in seconds.
    mode : {'pipelined', 'sequential'}
        ``pipelined``: chunks stream through dimensions, time = ``max_d t_d``;
        ``sequential``: time = ``sum_d t_d``.

    Returns
    -------
    float
        Seconds. A dimension with no traffic contributes nothing; traffic on a dimension
        with zero bandwidth takes infinite time.

    Notes
    -----
    ``t_d = traffic_d / (1e9 * B_d) + latency_d`` for every dimension with traffic.

    Examples
    --------
    >>> collective_time_s(np.array([2e9, 1e9]), np.array([100.0, 20.0]))
    0.05
    >>> collective_time_s(np.array([2e9, 1e9]), np.array([100.0, 20.0]), mode="sequential")
    0.07
    """
    traffic = np.asarray(traffic_bytes, dtype=float)
    bw = np.asarray(bw_gbps, dtype=float)
    lat = np.zeros_like(traffic) if latency_s is None else np.asarray(latency_s, dtype=float)
    used = traffic > 0
    if not used.any():
        return 0.0
    with np.errstate(divide="ignore"):
        t = traffic[used] / (1e9 * bw[used]) + lat[used]
    if mode == "pipelined":
        return float(np.max(t))
    if mode == "sequential":
        return float(np.sum(t))
    raise InputError(
        f"collective_model {mode!r} is not 'pipelined' or 'sequential'",
        field="collective_model",
    )
