"""What one link carries: the links an NPU's bandwidth is split over, published achievable
fractions of line rate, and the time of one message between two NPUs.

``B_d`` is the aggregate bandwidth one NPU drives into dimension ``d`` (GB/s, 1e9 bytes/s),
split over :func:`links_per_npu` links (the cost model's counts,
:mod:`libra_opt.fabric.inventory`).

References
----------
.. [1] NVIDIA, nccl-tests "Performance" (algorithm and bus bandwidth),
   https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md.
.. [2] ASTRA-sim analytical network backend, https://github.com/astra-sim/astra-network-analytical
   (``congestion_unaware/basic-topology``: hops and ``latency x hops + size / bandwidth``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from libra_opt.fabric.dims import Dim

__all__ = [
    "HOPS",
    "LINE_RATE_PRESETS",
    "LineRatePreset",
    "links_per_npu",
    "bw_from_link_gbps",
    "message_time_s",
]

#: Hops of one algorithm step on each topology: a ring neighbour 1, a clique peer 1,
#: NPU -> switch -> NPU 2.
HOPS: Mapping[str, int] = MappingProxyType({"ring": 1, "fully_connected": 1, "switch": 2})


@dataclass(frozen=True)
class LineRatePreset:
    """Achievable fraction of line rate measured by a published collective benchmark.

    Attributes
    ----------
    fraction : float
        Measured bus bandwidth over line rate.
    source : str
        Where the figure comes from.
    """

    fraction: float
    source: str


#: Efficiency presets (``collectives.efficiency`` may name one instead of a number).
LINE_RATE_PRESETS: Mapping[str, LineRatePreset] = MappingProxyType({
    "a100_nvlink": LineRatePreset(
        204.0 / 300.0,
        "nccl-tests all_reduce_perf on DGX A100: about 200-208 GB/s bus bandwidth of 300 GB/s "
        "NVLink3 (NVIDIA nccl-tests PERFORMANCE.md; DGX A100 reference results)",
    ),
    "h100_nvlink": LineRatePreset(
        370.0 / 450.0,
        "nccl-tests all_reduce_perf on DGX H100: about 370 GB/s bus bandwidth of 450 GB/s "
        "NVLink4 (NVIDIA DGX H100 reference results)",
    ),
    "nic_400g": LineRatePreset(
        47.0 / 50.0,
        "nccl-tests across nodes on 400 Gb/s InfiniBand NDR: 46-48 GB/s bus bandwidth of "
        "50 GB/s per NIC (NVIDIA nccl-tests reference results)",
    ),
})


def links_per_npu(dim: Dim) -> int:
    """Links one NPU's ``B_d`` is split over: 2 on a ring, ``size - 1`` in a clique, 1 on a
    switch (see the module notes).

    Examples
    --------
    >>> [links_per_npu(Dim("d", t, 8, "T")) for t in ("ring", "fully_connected", "switch")]
    [2, 7, 1]
    """
    if dim.topology == "ring":
        return 2
    if dim.topology == "fully_connected":
        return max(dim.size - 1, 1)
    return 1


def bw_from_link_gbps(dim: Dim, link_gbps: float) -> float:
    """``B_d`` (GB/s per NPU) of a dimension whose every link carries ``link_gbps``.

    Examples
    --------
    >>> bw_from_link_gbps(Dim("d", "fully_connected", 8, "T"), 50.0)
    350.0
    """
    return links_per_npu(dim) * float(link_gbps)


def message_time_s(
    size_bytes: float,
    dim: Dim,
    bw_gbps: float,
    hops: int | None = None,
    link_latency_s: float | None = None,
    endpoint_delay_s: float = 0.0,
) -> float:
    """Time of one message between two NPUs of ``dim``: serialization on one link plus
    ``hops`` link latencies plus the endpoint delay.

    Parameters
    ----------
    size_bytes : float
    dim : Dim
    bw_gbps : float
        ``B_d`` (GB/s per NPU; a link carries ``B_d / links_per_npu``).
    hops : int, optional
        Links crossed (default :data:`HOPS` of the topology).
    link_latency_s : float, optional
        Latency per hop (default ``dim.latency_s``).
    endpoint_delay_s : float

    Notes
    -----
    ``t = size x links_per_npu / (1e9 B_d) + hops x alpha + e``.

    Examples
    --------
    ASTRA-sim's analytical-backend reference: 1 MiB between NPUs 0 and 3 of a 16-NPU ring
    at 50 GB/s per link (GB = 2^30 B) with 500 ns links takes 19,531 ns + 3 x 500 ns:

    >>> ring = Dim("r", "ring", 16, "T", latency_s=500e-9)
    >>> bw = bw_from_link_gbps(ring, 50 * 2**30 / 1e9)
    >>> round(message_time_s(2**20, ring, bw, hops=3) * 1e9, 2)
    21031.25
    """
    h = HOPS[dim.topology] if hops is None else hops
    alpha = dim.latency_s if link_latency_s is None else link_latency_s
    return size_bytes * links_per_npu(dim) / (1e9 * bw_gbps) + h * alpha + endpoint_delay_s

