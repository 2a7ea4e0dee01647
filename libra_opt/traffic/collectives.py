"""Per-dimension traffic of hierarchical collectives (LIBRA-compatible traffic model).

``size_bytes`` is the per-NPU *input* buffer (ASTRA-sim 1.0 and LIBRA convention): the whole
vector for reduce-scatter, all-reduce and all-to-all, the shard each NPU contributes for
all-gather (gathered result ``size_bytes * prod(k)``), the message for point-to-point.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.topology import topology_of
from libra_opt.options import COLLECTIVE_KINDS

__all__ = ["hierarchical_traffic_bytes", "flat_ring_traffic_bytes", "flat_ring_latency_s",
           "latency_steps", "collective_time_s"]


def _check(kind: str, size_bytes: float, span: Sequence[int]) -> None:
    if kind not in COLLECTIVE_KINDS:
        raise InputError(f"collective kind {kind!r} is not one of {', '.join(COLLECTIVE_KINDS)}",
                         field="collective.kind")
    if not math.isfinite(size_bytes) or size_bytes < 0:
        raise InputError(f"collective size {size_bytes!r} must be a finite number of bytes >= 0",
                         field="collective.size_bytes")
    for k in span:
        if int(k) != k or k < 1:
            raise InputError(f"group span {tuple(span)} must hold positive integers (1 = not "
                             "spanned)", field="collective.group")


def hierarchical_traffic_bytes(kind: str, size_bytes: float, span: Sequence[int]) -> np.ndarray:
    """Bytes each NPU sends on every dimension for one hierarchical collective.

    Parameters
    ----------
    kind : {'all_reduce', 'reduce_scatter', 'all_gather', 'all_to_all', 'p2p'}
    size_bytes : float
        Per-NPU input buffer in bytes (the shard for all-gather).
    span : sequence of int
        ``k_d`` for every fabric dimension, innermost first; 1 where not spanned.

    Returns
    -------
    numpy.ndarray
        Shape ``(D,)``, bytes per NPU on each dimension.

    Notes
    -----
    With ``m`` the running message size, over spanned dimensions only:

    * reduce-scatter, dims in order: ``t_d = m (k_d - 1) / k_d``, then ``m <- m / k_d``;
    * all-gather, dims in reverse order: ``t_d = m (k_d - 1)``, then ``m <- m k_d``;
    * all-reduce: ``t_d = 2 m (k_d - 1) / k_d``, ``m`` shrinking by ``k_d`` per dimension;
    * all-to-all: ``t_d = m (k_d - 1) / k_d``; point-to-point: ``t_d = m``.

    References
    ----------
    .. [1] W. Won, S. Rashidi, S. Srinivasan, T. Krishna, "LIBRA: Enabling Workload-Aware
       Multi-Dimensional Network Topology Optimization for Distributed Training of Large AI
       Models", ISPASS 2024, arXiv:2109.11762.

    Examples
    --------
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
    else:  # all_to_all, p2p
        for d, k in enumerate(ks):
            if k > 1:
                out[d] = m * (k - 1) / k if kind == "all_to_all" else m
    return np.array(out)


def flat_ring_traffic_bytes(kind: str, size_bytes: float, span: Sequence[int]) -> np.ndarray:
    """Bytes each NPU sends on every spanned dimension when one flat ring joins all members.

    NCCL runs a communicator's collective as rings through all ``k = prod(k_d)`` ranks [1]_: a
    ring all-reduce moves ``T = 2 m (k - 1) / k`` over every hop (``m (k - 1) / k``
    reduce-scatter, ``m (k - 1)`` all-gather) [2]_. Dimension ``d`` carries the ``H_d`` hops
    that cross it, shared by the ``k`` members: ``T H_d / k`` per NPU. All-to-all and
    point-to-point are as :func:`hierarchical_traffic_bytes`.

    Notes
    -----
    Ranks in ring order innermost first: ``H_d = (k_d - 1) prod_{e > d} k_e``, plus the hop
    closing the ring on the outermost spanned dimension; ``sum_d H_d = k``.

    References
    ----------
    .. [1] NVIDIA NCCL, src/graph/tuning.cc: a ring all-reduce takes ``2 (nRanks - 1)``
       steps over all ranks of the communicator, of which ``2 (nNodes - 1)`` cross the network.
    .. [2] P. Patarasuk, X. Yuan, "Bandwidth optimal all-reduce algorithms for clusters of
       workstations", J. Parallel Distrib. Comput. 69(2), 2009.

    Examples
    --------
    All-reduce of 1 MB over two 8-GPU nodes: ``T = 1.875e6``, 14 hops on NVLink, 2 on the NICs:

    >>> flat_ring_traffic_bytes("all_reduce", 1e6, (8, 2)).tolist()   # T x 14/16, T x 2/16
    [1640625.0, 234375.0]
    >>> flat_ring_traffic_bytes("all_gather", 1e6, (4, 2)).tolist()   # T = 7e6: x 6/8, x 2/8
    [5250000.0, 1750000.0]
    """
    base = hierarchical_traffic_bytes(kind, size_bytes, span)  # validates the arguments
    if kind in ("all_to_all", "p2p"):
        return base
    ks = [int(x) for x in span]
    k = math.prod(ks)
    m = float(size_bytes)
    if kind == "all_reduce":
        hop_bytes = 2.0 * m * (k - 1) / k
    elif kind == "reduce_scatter":
        hop_bytes = m * (k - 1) / k
    else:  # all_gather
        hop_bytes = m * (k - 1)
    spanned = [d for d, x in enumerate(ks) if x > 1]
    out = np.zeros(len(ks))
    outer = 1
    for d in reversed(spanned):
        hops = (ks[d] - 1) * outer + (1 if d == spanned[-1] else 0)
        out[d] = hop_bytes * hops / k
        outer *= ks[d]
    return out


def flat_ring_latency_s(kind: str, span: Sequence[int],
                        latency_per_step_s: Sequence[float]) -> np.ndarray:
    """Constant latency of a flat ring, the same on every spanned dimension: ``k - 1`` steps
    (``2 (k - 1)`` for all-reduce), each at the largest per-step latency of the spanned
    dimensions.

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
    """Latency-paying algorithm steps of a collective over ``span`` on dimensions of ``topologies``
    (each spanned dimension's :meth:`~libra_opt.fabric.topology.Topology.latency_steps`).

    Examples
    --------
    >>> latency_steps("all_reduce", (4, 8), ("ring", "switch")).tolist()
    [6.0, 2.0]
    """
    return np.array([topology_of(t).latency_steps(kind, int(k)) if k > 1 else 0.0
                     for k, t in zip(span, topologies, strict=True)])


def collective_time_s(traffic_bytes: np.ndarray, bw_gbps: np.ndarray,
                      latency_s: np.ndarray | None = None, mode: str = "pipelined") -> float:
    """Time of one collective given its per-dimension traffic.

    Parameters
    ----------
    traffic_bytes, bw_gbps : numpy.ndarray
        Bytes per NPU and bandwidth per NPU (GB/s) of each dimension.
    latency_s : numpy.ndarray, optional
        Constant latency per dimension (s).
    mode : {'pipelined', 'sequential'}
        ``max_d t_d`` or ``sum_d t_d``, ``t_d = traffic_d / (1e9 * B_d) + latency_d`` on every
        dimension with traffic.

    Returns
    -------
    float
        Seconds. A dimension with no traffic contributes nothing; traffic on a dimension
        with zero bandwidth takes infinite time.

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
    raise InputError(f"collective_model {mode!r} is not 'pipelined' or 'sequential'",
                     field="collective_model")
