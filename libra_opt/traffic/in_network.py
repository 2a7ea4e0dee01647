"""In-network reduction (SHARP [1]_ / NVLink SHARP [2]_ class switches): per-dimension traffic and
steps.

Every NPU sends its buffer once into the switch and receives the reduced result once, instead
of running a ring or direct algorithm; per ``switch`` dimension. Traffic is the bytes
occupying one NPU's full-duplex port: ``max(sent, received)``.

References
----------
.. [1] R. L. Graham et al., "Scalable Hierarchical Aggregation Protocol (SHArP): A Hardware
   Architecture for Efficient Data Reduction", COMHPC 2016 (SC16 workshops).
.. [2] NVIDIA, "NVIDIA NVLink and NVSwitch: NVLink SHARP", H100 / DGX H100 documentation
   (2022); nccl-tests all_reduce_perf on 8 H100s: about 480 GB/s bus bandwidth with NVLS
   vs about 370 GB/s without.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.traffic.collectives import hierarchical_traffic_bytes, latency_steps

__all__ = ["in_network_dims", "in_network_traffic_bytes", "in_network_latency_steps"]


def in_network_dims(names: Sequence[str], fabric: Fabric, field: str = "in_network_reduction"
                    ) -> frozenset[int]:
    """Indices of the dimensions named in ``names``; each must be a ``switch`` dimension.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("node", "ring", 4, "T"), Dim("pod", "switch", 8, "T")))
    >>> sorted(in_network_dims(["pod"], f))
    [1]
    """
    out = set()
    for name in names:
        if name not in fabric.names:
            raise InputError(f"no dimension named {name!r}; names: {', '.join(fabric.names)}",
                             field=field)
        d = fabric.index(name)
        if not fabric.dims[d].topology.switched:
            raise InputError(
                f"dimension {name!r} is a {fabric.dims[d].topology}: in-network reduction needs "
                "a switch dimension", field=field)
        out.add(d)
    return frozenset(out)


def in_network_traffic_bytes(kind: str, size_bytes: float, span: Sequence[int],
                             in_network: Collection[int] = ()) -> np.ndarray:
    """Bytes per NPU on every dimension when the dimensions ``in_network`` reduce in the switch.

    Parameters
    ----------
    kind, size_bytes, span
        As in :func:`~libra_opt.traffic.collectives.hierarchical_traffic_bytes`.
    in_network : collection of int
        Indices of the dimensions whose switches reduce (and multicast) in the network.

    Notes
    -----
    With ``m_d`` the running buffer at dimension ``d`` and ``k = k_d``, on an in-network
    dimension:

    * all-reduce on the outermost spanned dimension: ``t_d = m_d`` (instead of
      ``2 m_d (k-1)/k``); on an inner one: ``t_d = m_d + m_d (k-1)/k``;
    * reduce-scatter: send ``m_d``, receive ``m_d / k``: ``t_d = m_d``;
    * all-gather (multicast): ``t_d = s (k-1)``, as the ring; all-to-all and p2p unchanged.

    The all-reduce gain ``2 (k-1) / k`` (1.75x on 8) exceeds NVLink SHARP's measured 1.30x [1]_:
    set the dimension's efficiency to model it.

    References
    ----------
    .. [1] NVIDIA, "NVLink SHARP", DGX H100 documentation (2022) (the module's References).

    Examples
    --------
    >>> in_network_traffic_bytes("all_reduce", 8e6, (8,), {0}).tolist()
    [8000000.0]
    >>> in_network_traffic_bytes("all_reduce", 8e6, (4, 8), {1}).tolist()
    [12000000.0, 2000000.0]
    >>> in_network_traffic_bytes("reduce_scatter", 8e6, (8,), {0}).tolist()
    [8000000.0]
    """
    base = hierarchical_traffic_bytes(kind, size_bytes, span)
    inr = set(in_network)
    if not inr or kind not in ("all_reduce", "reduce_scatter"):
        return base  # an all-gather's multicast sends as the hierarchical model
    ks = [int(k) for k in span]
    out = base.copy()
    spanned = [d for d, k in enumerate(ks) if k > 1]
    m = float(size_bytes)
    for d in spanned:
        k = ks[d]
        if d in inr:
            if kind == "reduce_scatter" or d == spanned[-1]:
                out[d] = m
            else:
                out[d] = m + m * (k - 1) / k
        m /= k
    return out


def in_network_latency_steps(kind: str, span: Sequence[int], topologies: Sequence[str],
                             in_network: Collection[int] = ()) -> np.ndarray:
    """Latency-paying steps per dimension, one per reduction or multicast on an in-network
    dimension (two for an inner all-reduce).

    Examples
    --------
    >>> in_network_latency_steps("all_reduce", (4, 8), ("ring", "switch"), {1}).tolist()
    [6.0, 1.0]
    """
    out = latency_steps(kind, span, topologies)
    if kind not in ("all_reduce", "reduce_scatter", "all_gather"):
        return out
    spanned = [d for d, k in enumerate(span) if int(k) > 1]
    for d in spanned:
        if d in set(in_network):
            out[d] = 1.0 if kind != "all_reduce" or d == spanned[-1] else 2.0
    return out
