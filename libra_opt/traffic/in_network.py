"""In-network reduction (SHARP / NVLink SHARP class switches): per-dimension traffic and steps.

A switch that reduces in the network (InfiniBand SHARP aggregation trees [1]_, NVLink SHARP
on NVSwitch [2]_) lets every NPU send its buffer once into the switch and receive the
reduced result once, instead of running a ring or direct algorithm between the NPUs. The
option is per dimension (only on ``switch`` dimensions); every other dimension keeps the
hierarchical model of :func:`libra_opt.traffic.collectives.hierarchical_traffic_bytes`.

Traffic is counted as the bytes that occupy one NPU's full-duplex port on the dimension:
``max(sent, received)`` per NPU (for the symmetric ring and direct algorithms both are
equal, so this is the same quantity as the hierarchical model's bytes sent).

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

__all__ = [
    "in_network_dims",
    "in_network_traffic_bytes",
    "in_network_latency_steps",
]


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


def in_network_traffic_bytes(
    kind: str, size_bytes: float, span: Sequence[int], in_network: Collection[int] = (),
) -> np.ndarray:
    """Bytes per NPU on every dimension when the dimensions ``in_network`` reduce in the switch.

    Parameters
    ----------
    kind, size_bytes, span
        As in :func:`~libra_opt.traffic.collectives.hierarchical_traffic_bytes`.
    in_network : collection of int
        Indices of the dimensions whose switches reduce (and multicast) in the network.

    Returns
    -------
    numpy.ndarray
        Shape ``(D,)``; equal to the hierarchical traffic when ``in_network`` is empty.

    Notes
    -----
    With ``m_d`` the running buffer when the collective reaches dimension ``d`` (as in the
    hierarchical model) and ``k = k_d``, on an in-network dimension:

    * all-reduce on the outermost spanned dimension (where the hierarchical all-reduce
      runs a full all-reduce): every NPU sends ``m_d`` to the switch and receives the
      reduced ``m_d``: ``t_d = m_d`` instead of ``2 m_d (k-1)/k``;
    * all-reduce on an inner spanned dimension (its reduce-scatter, then later its
      all-gather): ``t_d = m_d + m_d (k-1)/k`` (the two items below);
    * reduce-scatter: every NPU sends its whole ``m_d`` into the switch and receives its
      reduced shard ``m_d / k``: ``t_d = max(m_d, m_d / k) = m_d`` instead of
      ``m_d (k-1)/k`` (no fewer bytes; the gain is one step and no reduction on the NPU);
    * all-gather (multicast): every NPU sends its shard ``s`` once and receives the other
      ``k - 1`` shards: ``t_d = max(s, s (k-1)) = s (k-1)``, as the ring (one step);
    * all-to-all and point-to-point: unchanged (nothing to reduce).

    The all-reduce gain on one dimension is ``2 (k-1) / k`` (1.75x on 8 NPUs). The
    measured NVLink SHARP gain on 8 H100s is smaller (about 480 vs 370 GB/s bus
    bandwidth, 1.30x [2]_): set the dimension's efficiency to model it.

    Examples
    --------
    All-reduce of 8 MB over 8 NPUs of a switch, then over 4 x 8 with the outer one reducing:

    >>> in_network_traffic_bytes("all_reduce", 8e6, (8,), {0}).tolist()
    [8000000.0]
    >>> in_network_traffic_bytes("all_reduce", 8e6, (4, 8), {1}).tolist()
    [12000000.0, 2000000.0]
    >>> in_network_traffic_bytes("reduce_scatter", 8e6, (8,), {0}).tolist()
    [8000000.0]
    """
    base = hierarchical_traffic_bytes(kind, size_bytes, span)
    inr = set(in_network)
    if not inr or kind not in ("all_reduce", "reduce_scatter", "all_gather"):
        return base
    ks = [int(k) for k in span]
    out = base.copy()
    spanned = [d for d, k in enumerate(ks) if k > 1]
    m = float(size_bytes)
    if kind == "all_gather":
        return base  # multicast: s (k-1) on every dimension, as the hierarchical model
    last = spanned[-1] if spanned else -1
    for d in spanned:
        k = ks[d]
        if d in inr:
            if kind == "reduce_scatter":
                out[d] = m
            elif d == last:
                out[d] = m
            else:
                out[d] = m + m * (k - 1) / k
        m /= k
    return out


def in_network_latency_steps(
    kind: str, span: Sequence[int], topologies: Sequence[str], in_network: Collection[int] = (),
) -> np.ndarray:
    """Latency-paying steps per dimension (:func:`~libra_opt.traffic.collectives.latency_steps`)
    with one step per reduction or multicast on an in-network dimension.

    Notes
    -----
    On an in-network dimension a reduce-scatter, an all-gather and the outermost
    all-reduce take one step (NPU -> switch -> NPU); an inner all-reduce two (its
    reduce-scatter and its all-gather). Other kinds are unchanged.

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
