"""Measured nccl-tests bus bandwidth against message size, as size-dependent efficiency presets
(``collectives.efficiency: {dim: <curve name>}``, under every collective model).

Small collectives reach less of the line rate than large ones (NCCL's protocols, channels and
launch latency). A :class:`BusBandwidthCurve` holds a published all-reduce curve; every phase
on a dimension priced with it gets the measured fraction at its collective's size (a constant
per collective, so phase times stay ``coef / B_d + const``). Latency is part of the
measurement: such a dimension has no link latency of its own. The fraction at size ``M`` is
``busbw(M) / busbw_ideal``, ``busbw_ideal`` this model's bus bandwidth of the measured
configuration at full line rate (``2 (k - 1) / k`` times it for NVLink SHARP); it applies to
every collective kind and group size on the dimension. Between published sizes the curve is
log-log interpolated, held at its end value above the last, and below the first a collective
takes the first size's time. ``h100_nvlink_nccl`` was measured with NVLink SHARP.

References
----------
.. [1] Microsoft Azure, "AI benchmarking guide", ND A100 v4 and ND H100 v5 results (NCCL
   2.18.5 all_reduce_perf, 8 GPUs, in-place bus bandwidth, 1 KB to 8 GB),
   https://github.com/Azure/AI-benchmarking-guide (``Azure_Results/ND_A100_v4_results.md``,
   ``Azure Results/ND_H100_v5_results.md``).
.. [2] NVIDIA/nccl-tests issue #232, "NCCL Tree allreduce test cannot reach the theoretical
   bus bandwidth on 2 nodes" (two H100 nodes, one GPU each, 400 Gb/s ConnectX-7,
   all_reduce_perf 2 MB to 32 MB, in-place), https://github.com/NVIDIA/nccl-tests/issues/232;
   NVIDIA's guidance there and in issue #290: 46-48 GB/s per NDR 400 Gb/s NIC.
.. [3] NVIDIA, nccl-tests "Performance" (bus bandwidth),
   https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["BusBandwidthCurve", "NCCL_CURVES"]

_MIB = 2**20


@dataclass(frozen=True)
class BusBandwidthCurve:
    """A published nccl-tests all-reduce bus-bandwidth curve.

    Attributes
    ----------
    sizes_bytes, busbw_gbps : tuple of float
        Message sizes (the all-reduce buffer, increasing) and measured bus bandwidth (GB/s).
    ideal_busbw_gbps : float
        Bus bandwidth of the measured configuration at full line rate.
    configuration, source : str
        How to model the measured system; where the figures come from.
    valid_from_bytes : float
        Smallest size the curve is claimed for.
    group_npus : int
        Devices in the measured all-reduce.
    group_ratios : tuple of (int, float)
        Bus bandwidth over fewer devices of the same domain relative to ``group_npus`` (log-log
        interpolated; larger groups take 1), from ``group_source``.
    """

    sizes_bytes: tuple[float, ...]
    busbw_gbps: tuple[float, ...]
    ideal_busbw_gbps: float
    configuration: str
    valid_from_bytes: float
    source: str
    group_npus: int = 8
    group_ratios: tuple[tuple[int, float], ...] = ()
    group_source: str = ""

    def busbw_at(self, size_bytes: float) -> float:
        """Measured bus bandwidth (GB/s) at ``size_bytes``, log-log interpolated.

        Examples
        --------
        >>> c = NCCL_CURVES["h100_nvlink_nccl"]
        >>> c.busbw_at(2**20), round(c.busbw_at(2**21.5), 1)
        (43.7, 102.7)
        """
        return _log_log(list(zip(self.sizes_bytes, self.busbw_gbps, strict=True)), size_bytes)

    def group_ratio(self, npus: int) -> float:
        """Bus bandwidth of an all-reduce over ``npus`` devices relative to the measured group.

        Examples
        --------
        >>> c = NCCL_CURVES["a100_nvlink_nccl"]
        >>> round(c.group_ratio(2), 4), round(c.group_ratio(4), 4), c.group_ratio(8)
        (0.8603, 0.9275, 1.0)
        """
        if npus >= self.group_npus or not self.group_ratios:
            return 1.0
        return _log_log(sorted((*self.group_ratios, (self.group_npus, 1.0))), npus)

    def efficiency_at(self, size_bytes: float, group_npus: int | None = None) -> float:
        """Fraction of the ideal bus bandwidth reached at ``size_bytes`` over ``group_npus`` devices
        (default: the measured group), in (0, 1].

        Below the first published size the collective takes the time it takes there (a latency
        floor; an upper bound far below it).

        Examples
        --------
        >>> c = NCCL_CURVES["a100_nvlink_nccl"]
        >>> round(c.efficiency_at(2**20), 4), round(c.efficiency_at(2**18), 4)   # 36.22 / 300
        (0.1207, 0.0302)
        """
        ratio = 1.0 if group_npus is None else self.group_ratio(group_npus)
        first = self.sizes_bytes[0]
        if 0 < size_bytes < first:
            return ratio * min(self.busbw_gbps[0] / self.ideal_busbw_gbps, 1.0) * size_bytes / first
        return ratio * min(self.busbw_at(size_bytes) / self.ideal_busbw_gbps, 1.0)


def _log_log(points: list[tuple[float, float]], x: float) -> float:
    """``y`` at ``x`` between increasing ``(x, y)`` points, linear in log-log, held at the ends."""
    if x <= points[0][0]:
        return points[0][1]
    if x >= points[-1][0]:
        return points[-1][1]
    i = next(j for j in range(1, len(points)) if points[j][0] >= x)
    (x0, y0), (x1, y1) = points[i - 1], points[i]
    f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))


def _sizes(first_mib: float, n: int) -> tuple[float, ...]:
    """nccl-tests ``-f 2`` sizes: ``first_mib`` MiB doubling ``n`` times."""
    return tuple(first_mib * _MIB * 2**i for i in range(n))


#: Published curves, by preset name (``collectives.efficiency`` may name one).
NCCL_CURVES: Mapping[str, BusBandwidthCurve] = MappingProxyType({
    "a100_nvlink_nccl": BusBandwidthCurve(
        sizes_bytes=_sizes(1, 14),  # 1 MiB .. 8 GiB
        busbw_gbps=(36.22, 53.54, 71.43, 89.99, 109.22, 132.77, 166.63, 174.18, 213.87,
                    221.58, 228.10, 230.22, 230.48, 231.58),
        ideal_busbw_gbps=300.0,
        configuration="one switch dimension of 8 (NVSwitch), B_d = 300 GB/s (NVLink 3, 12 "
                      "links x 25 GB/s), ring all-reduce, no latency",
        valid_from_bytes=_MIB,
        source="Azure ND A100 v4 (8x A100-SXM4-80GB, NCCL 2.18.5), all_reduce_perf in-place "
               "busbw, Azure/AI-benchmarking-guide Azure_Results/ND_A100_v4_results.md",
        group_ratios=((2, 197.0 / 229.0),),
        group_source="vTrain (Bang et al., MICRO 2024, arXiv:2312.12391) NCCL measurements on "
                     "its A100 NVSwitch nodes: all-reduce of 1 GiB at about 197 GB/s bus "
                     "bandwidth over 2 GPUs against 229 GB/s over 8",
    ),
    "h100_nvlink_nccl": BusBandwidthCurve(
        sizes_bytes=_sizes(1, 14),
        busbw_gbps=(43.70, 81.93, 128.73, 172.13, 234.45, 295.53, 361.78, 400.61, 423.38,
                    438.46, 466.35, 472.36, 475.54, 478.87),
        ideal_busbw_gbps=450.0 * 2 * 7 / 8,
        configuration="one switch dimension of 8 (NVSwitch), B_d = 450 GB/s (NVLink 4), "
                      "in-network all-reduce (NVLink SHARP), no latency",
        valid_from_bytes=_MIB,
        source="Azure ND H100 v5 (8x H100 80GB HBM3, NCCL 2.18.5, NVLS), all_reduce_perf "
               "in-place busbw, Azure/AI-benchmarking-guide Azure Results/ND_H100_v5_results.md",
    ),
    "ndr400_ib_nccl": BusBandwidthCurve(
        sizes_bytes=(*_sizes(2, 5), 1024 * _MIB),  # 2 MiB .. 32 MiB, then 1 GiB
        busbw_gbps=(22.46, 27.37, 36.83, 39.95, 41.52, 47.0),
        ideal_busbw_gbps=50.0,
        configuration="one switch dimension of 2 (two nodes, one GPU each), B_d = 50 GB/s "
                      "(400 Gb/s NDR NIC), ring all-reduce, no latency",
        valid_from_bytes=2 * _MIB,
        source="NVIDIA/nccl-tests issue #232 (2x H100 over ConnectX-7 400 Gb/s, in-place "
               "busbw 2-32 MB); 1 GiB: 47 GB/s, the middle of NVIDIA's 46-48 GB/s per NDR "
               "NIC for large messages (issue #290)",
    ),
})
