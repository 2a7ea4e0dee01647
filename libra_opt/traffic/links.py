"""What one link carries: published achievable fractions of line rate [1]_, and ``B_d`` (GB/s
per NPU, over the topology's ``links_per_npu`` links) from the bandwidth of one link [2]_.

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

__all__ = ["LINE_RATE_PRESETS", "LineRatePreset", "bw_from_link_gbps"]


@dataclass(frozen=True)
class LineRatePreset:
    """Achievable fraction of line rate measured by a published collective benchmark, and its
    source.
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


def bw_from_link_gbps(dim: Dim, link_gbps: float) -> float:
    """``B_d`` (GB/s per NPU) of a dimension whose every link carries ``link_gbps``.

    Examples
    --------
    >>> bw_from_link_gbps(Dim("d", "fully_connected", 8, "T"), 50.0)
    350.0
    """
    return dim.topology.links_per_npu(dim.size) * float(link_gbps)

