"""Accelerators (``libra_opt/data/devices.yaml``, a source and date for each number) and the
compute-time models: the default per-operator ``roofline``
(:mod:`libra_opt.generators.roofline`, at most two calibrated constants per device) or, when a
scenario gives an ``efficiency``, ``F / (P eta(F))`` (:class:`ComputeEfficiency`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from libra_opt.errors import InputError
from libra_opt.fabric.frozen import FrozenMap
from libra_opt.schema import StrictModel, validate_as
from libra_opt.traffic.collective_settings import link_efficiency_value

__all__ = [
    "Device",
    "ComputeEfficiency",
    "device_from_dict",
    "efficiency_from_value",
    "compute_time_s",
    "memory_time_s",
]

ComputeDtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
_Positive = Annotated[int, Field(gt=0, strict=True)]


@dataclass(frozen=True)
class Device:
    """One accelerator.

    Attributes
    ----------
    key : str
        Preset name (``a100_80gb``...).
    name : str
        Marketing name.
    peak_flops : mapping of str to float
        Dense matrix peak FLOP/s per data type.
    hbm_bytes : float
        HBM capacity in bytes.
    hbm_gbps : float
        HBM bandwidth in GB/s.
    default_efficiency : float
        Achievable fraction of the matrix peak on a GEMM that fills whole waves (roofline
        model), and the constant efficiency of the legacy model (see ``efficiency_source``).
    source, date, efficiency_source : str
    sm_count : int
        Streaming multiprocessors (compute units, matrix units) that GEMM tiles are spread
        over; 0 disables wave quantization.
    gemm_tiles : tuple of (int, int)
        Output tile shapes (rows, columns) a GEMM library chooses from.
    vector_flops : float
        Non-matrix (vector) FLOP/s for 16-bit element-wise work; 0 = the fp32 matrix peak.
    mem_efficiency : float
        Achievable fraction of ``hbm_gbps`` for streaming kernels.
    kernel_overhead_s : float
        Fixed time added to every kernel (launch and tail), seconds.
    gemm_k_overhead : float
        Per-tile prologue/epilogue cost of a GEMM in units of inner-loop length: a GEMM of
        inner size ``k`` reaches ``k / (k + gemm_k_overhead)`` of its wave efficiency.
    attention_efficiency : float
        Fraction of the matrix peak a fused (FlashAttention-style) attention kernel reaches on
        the FLOPs it executes: a published benchmark, not calibrated; 0 = priced as a GEMM.
    roofline_source : str
        Where the roofline numbers come from.
    flops_efficiency : float
        Fraction of peak of the ``FLOPs / (peak x eta)`` model for models without operators
        (DLRM, ResNet) when no efficiency is given; 0 = ``default_efficiency``.
    calibration_stack : str
        The software stack (training framework and its version) of the runs the device
        constants were calibrated on; a workload that names no ``software_stack`` runs it.
    software_stacks : mapping of str to float
        One efficiency constant per software stack (:mod:`libra_opt.generators.stacks`):
        the stack's compute speed relative to ``calibration_stack`` (which is 1).
    scale_up_efficiency, scale_out_efficiency : float or str
        What collectives reach of the line rate on the device's scale-up and scale-out links
        (:mod:`libra_opt.generators.device_links`): an nccl-tests curve
        (:data:`~libra_opt.traffic.nccl_curves.NCCL_CURVES`), a line-rate preset
        (:data:`~libra_opt.traffic.links.LINE_RATE_PRESETS`) or a fraction in (0, 1]; '' = none.
    scale_up_npus : int
        Devices one scale-up domain joins (8 on an HGX board; 0 = not stated).
    """

    #: How :func:`device_from_dict` validates an entry against the fields' annotations.
    __pydantic_config__ = ConfigDict(extra="forbid", allow_inf_nan=False)

    key: str
    name: str
    peak_flops: Annotated[Mapping[ComputeDtype, float], Field(min_length=1)]
    hbm_bytes: Annotated[float, Field(gt=0)]
    hbm_gbps: Annotated[float, Field(gt=0)]
    default_efficiency: Annotated[float, Field(gt=0, le=1)]
    source: str
    date: str
    efficiency_source: str = ""
    sm_count: Annotated[int, Field(ge=0, strict=True)] = 0
    gemm_tiles: Annotated[tuple[tuple[_Positive, _Positive], ...], Field(min_length=1)] = (
        (128, 128),)
    vector_flops: Annotated[float, Field(ge=0)] = 0.0
    mem_efficiency: Annotated[float, Field(gt=0, le=1)] = 0.8
    kernel_overhead_s: Annotated[float, Field(ge=0, le=1.0)] = 0.0
    gemm_k_overhead: Annotated[float, Field(ge=0, le=1e5)] = 0.0
    attention_efficiency: Annotated[float, Field(ge=0, le=1)] = 0.0
    roofline_source: str = ""
    flops_efficiency: Annotated[float, Field(ge=0, le=1)] = 0.0
    calibration_stack: str = ""
    software_stacks: Mapping[str, Annotated[float, Field(gt=0, le=2)]] = field(
        default_factory=lambda: FrozenMap({}))
    scale_up_efficiency: float | str = ""
    scale_out_efficiency: float | str = ""
    scale_up_npus: Annotated[int, Field(ge=0, strict=True)] = 0

    def __post_init__(self) -> None:
        for link in ("scale_up_efficiency", "scale_out_efficiency"):
            if getattr(self, link) != "":  # the collective settings' rules
                link_efficiency_value(getattr(self, link), link)
        stacks = {str(k): float(v) for k, v in self.software_stacks.items()}
        if self.calibration_stack:
            if stacks.get(self.calibration_stack, 1.0) != 1.0:
                raise InputError(
                    f"software_stacks.{self.calibration_stack} must be 1 (it is the "
                    f"calibration stack), got {stacks[self.calibration_stack]}",
                    field="software_stacks")
            stacks[self.calibration_stack] = 1.0
        elif stacks:
            raise InputError("software_stacks needs calibration_stack (the stack the device "
                             "constants were calibrated on)", field="calibration_stack")
        object.__setattr__(self, "peak_flops", FrozenMap(
            {str(k): float(v) for k, v in self.peak_flops.items()}))
        object.__setattr__(self, "software_stacks", FrozenMap(stacks))

    def peak_flops_for(self, dtype: str) -> float:
        """Peak FLOP/s for ``dtype``.

        Raises
        ------
        InputError
            If the device has no peak for that data type.
        """
        if dtype not in self.peak_flops:
            raise InputError(
                f"device {self.key!r} has no peak for {dtype!r}; it lists "
                f"{', '.join(self.peak_flops)}",
                field="parallelism.precision.compute_dtype",
            )
        return float(self.peak_flops[dtype])  # type: ignore[index]  # checked above


def device_from_dict(key: str, value: Any, field: str | None = None) -> Device:
    """Validate one device entry (as in ``libra_opt/data/devices.yaml``) into a :class:`Device`.

    Errors name ``field`` (default: ``key``, the entry's name in the presets file); the
    reader's :func:`~libra_opt.errors.input_context` names the file.

    Examples
    --------
    >>> d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 8e10,
    ...     "hbm_gbps": 3000, "source": "datasheet", "date": "2025", "default_efficiency": 0.5})
    >>> d.peak_flops_for("bf16")
    1000000000000000.0
    """
    where = field or str(key)
    if isinstance(value, Mapping) and "key" in value:
        raise InputError("unknown key 'key'", field=where)
    entry = {**value, "key": str(key)} if isinstance(value, Mapping) else value
    return validate_as(Device, entry, None, where)


@dataclass(frozen=True)
class ComputeEfficiency:
    """Fraction of peak FLOP/s achieved: the roofline model, a constant, or saturating.

    Parameters
    ----------
    kind : {'roofline', 'constant', 'saturating'}
        Per-operator roofline (:mod:`libra_opt.generators.roofline`), or a FLOPs-over-peak model.
    value : float
        ``roofline``: achievable fraction of peak on a GEMM in whole waves; ``constant``: the
        efficiency; ``saturating``: the asymptotic efficiency ``eta_max``.
    half_flops : float
        ``saturating`` only: work size (FLOPs of one phase of one layer on one NPU) at
        which half of ``eta_max`` is reached.
    from_device : bool
        ``roofline`` only: ``value`` is a placeholder, the generator uses the device's
        ``default_efficiency``.

    Notes
    -----
    ``constant`` (and ``roofline`` for models without operators: DLRM, ResNet):
    ``eta(F) = value``. ``saturating``: ``eta(F) = value * F / (F + half_flops)``,
    i.e. a fixed overhead of ``half_flops / (value * peak)`` seconds per phase on top of
    ``F / (value * peak)`` -- kernel launch and tail effects amortized over larger work.

    Examples
    --------
    >>> ComputeEfficiency("saturating", 0.6, 1e9).at(1e9)
    0.3
    """

    kind: Literal["roofline", "constant", "saturating"] = "constant"
    value: float = 0.5
    half_flops: float = field(default=0.0)
    from_device: bool = False

    def __post_init__(self) -> None:
        if self.kind not in ("roofline", "constant", "saturating"):
            raise InputError(
                f"efficiency kind {self.kind!r} is not roofline, constant or saturating",
                field="efficiency.kind",
            )
        if not 0 < float(self.value) <= 1:
            raise InputError(f"efficiency {self.value!r} must be in (0, 1]",
                             field="efficiency.value")
        if self.kind == "saturating" and not float(self.half_flops) > 0:
            raise InputError("a saturating efficiency needs half_flops > 0",
                             field="efficiency.half_flops")

    def at(self, flops: float) -> float:
        """Efficiency for a piece of work of ``flops`` FLOPs."""
        if self.kind != "saturating":
            return float(self.value)
        return float(self.value) * flops / (flops + float(self.half_flops))

    def describe(self) -> str:
        """One-line description for reports."""
        if self.kind == "roofline":
            return f"per-operator roofline, GEMM fraction {self.value:.3g}"
        if self.kind == "constant":
            return f"constant {self.value:.3g} of peak"
        return f"saturating {self.value:.3g} x F/(F + {self.half_flops:.3g} FLOPs)"


class _SaturatingSpec(StrictModel):
    kind: Literal["saturating"]
    value: float = Field(gt=0, le=1)
    half_flops: float = Field(gt=0)


class _ConstantSpec(StrictModel):
    kind: Literal["constant"]
    value: float = Field(gt=0, le=1)


class _RooflineSpec(StrictModel):
    kind: Literal["roofline"]
    value: float | None = Field(default=None, gt=0, le=1)


def efficiency_from_value(
    value: Any,
    prefix: str = "efficiency",
    device: Device | None = None,
) -> ComputeEfficiency:
    """Build a :class:`ComputeEfficiency` from a number or a mapping (as in YAML).

    A number is the legacy constant model; ``{kind: roofline}`` (optionally with ``value``,
    default ``device.default_efficiency``, resolved by the generator when ``device`` is not
    given) selects the roofline model.

    Examples
    --------
    >>> efficiency_from_value(0.45).describe()
    'constant 0.45 of peak'
    >>> efficiency_from_value({"kind": "saturating", "value": 0.6, "half_flops": 1e9}).kind
    'saturating'
    >>> efficiency_from_value({"kind": "roofline", "value": 0.8}).describe()
    'per-operator roofline, GEMM fraction 0.8'
    """
    if isinstance(value, ComputeEfficiency):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = {"kind": "constant", "value": value}
    if not isinstance(value, Mapping):
        raise InputError(f"expected a number in (0, 1] or a mapping with kind, got {value!r}",
                         field=prefix)
    if value.get("kind") == "roofline":
        r: _RooflineSpec = validate_as(_RooflineSpec, dict(value), None, prefix)
        if r.value is not None:
            return ComputeEfficiency("roofline", r.value)
        if device is not None:
            return ComputeEfficiency("roofline", device.default_efficiency)
        return ComputeEfficiency("roofline", 1.0, from_device=True)
    if value.get("kind") == "saturating":
        s: _SaturatingSpec = validate_as(_SaturatingSpec, dict(value), None, prefix)
        return ComputeEfficiency("saturating", s.value, s.half_flops)
    c: _ConstantSpec = validate_as(_ConstantSpec, dict(value), None, prefix)
    return ComputeEfficiency("constant", c.value)


def compute_time_s(
    flops: float, device: Device, dtype: str, efficiency: ComputeEfficiency
) -> float:
    """Seconds to execute ``flops`` matrix FLOPs: ``F / (peak_dtype * eta(F))``.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device
    >>> compute_time_s(312e12, load_device("a100_80gb"), "bf16", ComputeEfficiency(value=0.5))
    2.0
    """
    if flops <= 0:
        return 0.0
    return flops / (device.peak_flops_for(dtype) * efficiency.at(flops))


def memory_time_s(n_bytes: float, device: Device) -> float:
    """Seconds to stream ``n_bytes`` through HBM at the datasheet bandwidth.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device
    >>> memory_time_s(2039e9, load_device("a100_80gb"))
    1.0
    """
    return max(0.0, n_bytes) / (device.hbm_gbps * 1e9)
