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
