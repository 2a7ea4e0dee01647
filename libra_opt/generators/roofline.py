"""Roofline time of one operator: shape-aware GEMM efficiency and memory-bound kernels.

    t = max(F / (P_dtype x eta_gemm(m, n, k)), B / (BW x eta_mem)) + t_kernel

for matrix work, ``max(F / P_vector, B / (BW x eta_mem)) + t_kernel`` for element-wise work.
``eta_gemm`` is wave quantization times ``k / (k + k0)`` (``Device.gemm_k_overhead``) times
``Device.default_efficiency``; a fused attention kernel takes ``Device.attention_efficiency``
(a published benchmark of that kernel) instead when the device has one.

With ``fp8`` compute, attention runs at the ``bf16`` peak: FP8 recipes quantize the linear
layers' GEMMs and keep dot-product attention in BF16 (DeepSeek-V3 Technical Report,
arXiv:2412.19437, Sec. 3.3.1; Transformer Engine's ``fp8_dot_product_attention`` is off by
default).
"""

from __future__ import annotations

import math

from libra_opt.generators.devices import Device
from libra_opt.generators.operators import Operator

__all__ = ["wave_efficiency", "gemm_efficiency", "operator_time_s", "operator_bound"]


def wave_efficiency(m: int, n: int, batch: int, sm_count: int, tile: tuple[int, int]) -> float:
    """Useful fraction of the tile slots of the waves ``batch`` GEMMs of output ``m x n`` occupy
    in ``tile`` tiles over ``sm_count`` processors (0: no wave quantization).

    Notes
    -----
    With ``T = ceil(m/t_m) ceil(n/t_n) batch`` tiles and ``W = ceil(T / S)`` waves, the useful
    work is ``m n batch`` of ``W S t_m t_n`` slots (tile and wave quantization) [1]_.

    References
    ----------
    .. [1] NVIDIA, "Matrix Multiplication Background User's Guide", Deep Learning
       Performance documentation (tile and wave quantization), 2023.

    Examples
    --------
    A 2048 x 4608 output in 256 x 128 tiles is 8 x 36 = 288 tiles, 3 waves on 108 SMs:

    >>> round(wave_efficiency(2048, 4608, 1, 108, (256, 128)), 6)   # 288 / 324
    0.888889
    """
    if m <= 0 or n <= 0 or batch <= 0:
        return 1.0
    tm, tn = tile
    tiles = math.ceil(m / tm) * math.ceil(n / tn) * batch
    if sm_count <= 0:
        return (m * n * batch) / (tiles * tm * tn)
    waves = math.ceil(tiles / sm_count)
    return (m * n * batch) / (waves * sm_count * tm * tn)


def gemm_efficiency(m: int, n: int, k: int, device: Device, batch: int = 1,
                    fraction: float | None = None) -> float:
    """Fraction of the matrix peak a GEMM of output ``m x n`` (inner ``k``) reaches: ``fraction``
    (default ``device.default_efficiency``) times the best wave efficiency over the device's
    tiles times ``k / (k + k0)``.

    Examples
    --------
    >>> from libra_opt.generators.devices import device_from_dict
    >>> d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 1,
    ...     "hbm_gbps": 1000, "source": "", "date": "", "default_efficiency": 0.8,
    ...     "sm_count": 4, "gemm_tiles": [[128, 128]]})
    >>> gemm_efficiency(256, 256, 64, d), gemm_efficiency(256, 384, 64, d)   # 4 tiles; 6 of 8
    (0.8, 0.6000000000000001)
    """
    frac = device.default_efficiency if fraction is None else fraction
    best = max(wave_efficiency(m, n, batch, device.sm_count, t) for t in device.gemm_tiles)
    k_eff = k / (k + device.gemm_k_overhead) if k > 0 else 1.0
    return frac * best * k_eff


def _times(op: Operator, device: Device, dtype: str, fraction: float | None) -> tuple[float, float]:
    mem_s = op.size_bytes / (device.hbm_gbps * 1e9 * device.mem_efficiency)
    if op.flops <= 0:
        return 0.0, mem_s
    if dtype == "fp8" and op.op_class == "attention" and "bf16" in device.peak_flops:
        dtype = "bf16"  # FP8 training recipes keep dot-product attention in BF16
    if op.fused_attention and device.attention_efficiency > 0:
        return op.flops / (device.peak_flops_for(dtype) * device.attention_efficiency), mem_s
    if op.gemm is not None:
        m, n, k, batch = op.gemm
        eff = gemm_efficiency(m, n, k, device, batch, fraction)
        return op.flops / (device.peak_flops_for(dtype) * eff), mem_s
    vector = device.vector_flops or device.peak_flops_for(dtype)
    return op.flops / vector, mem_s


def operator_time_s(op: Operator, device: Device, dtype: str, fraction: float | None = None) -> float:
    """Roofline time of ``op`` (module notes) in ``dtype``, times its ``repeat``.

    Notes
    -----
    ``t = repeat x (max(F / (P eta_gemm), B / (BW eta_mem)) + t_kernel)`` [1]_, ``fraction``
    the achievable GEMM fraction (default ``device.default_efficiency``).

    References
    ----------
    .. [1] S. Williams, A. Waterman, D. Patterson, "Roofline: an insightful visual
       performance model for multicore architectures", CACM 52(4), 2009.

    Examples
    --------
    >>> from libra_opt.generators.devices import device_from_dict
    >>> d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 1,
    ...     "hbm_gbps": 1000, "source": "", "date": "", "default_efficiency": 0.5,
    ...     "mem_efficiency": 0.5, "sm_count": 0, "gemm_tiles": [[1, 1]]})
    >>> op = Operator("g", "gemm", flops=1e12, size_bytes=1e9, gemm=(1000, 1000, 500000, 1))
    >>> operator_time_s(op, d, "bf16")   # memory-bound: max(1e12 / 5e14, 1e9 / 5e11)
    0.002

    A fused attention kernel on a device with a published attention efficiency of 0.25:

    >>> import dataclasses
    >>> fa = Operator("flash_attention", "attention", flops=1e12, size_bytes=1e6,
    ...               gemm=(1000, 128, 1000, 8), fused_attention=True)
    >>> operator_time_s(fa, dataclasses.replace(d, attention_efficiency=0.25), "bf16")  # 1e12 / 2.5e14
    0.004
    """
    compute_s, mem_s = _times(op, device, dtype, fraction)
    return op.repeat * (max(compute_s, mem_s) + device.kernel_overhead_s)


def operator_bound(op: Operator, device: Device, dtype: str, fraction: float | None = None) -> str:
    """``'compute'`` or ``'memory'``: which roofline term sets the operator's time.

    Examples
    --------
    >>> from libra_opt.generators.devices import device_from_dict
    >>> d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 1,
    ...     "hbm_gbps": 1000, "source": "", "date": "", "default_efficiency": 1.0,
    ...     "mem_efficiency": 1.0, "vector_flops": 1e13})
    >>> operator_bound(Operator("n", "elementwise", flops=1e9, size_bytes=1e9), d, "bf16")
    'memory'
    """
    compute_s, mem_s = _times(op, device, dtype, fraction)
    return "compute" if compute_s >= mem_s else "memory"
