"""Accelerator presets and the compute-time model.

Compute time of a piece of work with ``F`` FLOPs on a device with peak ``P`` FLOP/s for the
data type is ``F / (P * eta(F))``. The efficiency ``eta`` is explicit: a
:class:`ComputeEfficiency` that is either a constant or a saturating function of the work
size (small matrix multiplies reach a smaller fraction of peak). Memory-bound work (the
optimizer update, embedding lookups) takes ``bytes / HBM bandwidth``.

Device numbers live in ``libra_opt/data/devices.yaml`` with a source and date for each.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field

from libra_opt.errors import InputError
from libra_opt.schema import StrictModel, validate_as

__all__ = [
    "Device",
    "ComputeEfficiency",
    "device_from_dict",
    "efficiency_from_value",
    "compute_time_s",
    "memory_time_s",
]


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
        Efficiency used when none is given (see ``efficiency_source``).
    source, date, efficiency_source : str
    """

    key: str
    name: str
    peak_flops: Mapping[str, float]
    hbm_bytes: float
    hbm_gbps: float
    default_efficiency: float
    source: str
    date: str
    efficiency_source: str = ""

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
        return float(self.peak_flops[dtype])


class _DeviceEntry(StrictModel):
    name: str
    peak_flops: dict[Literal["fp32", "tf32", "bf16", "fp16", "fp8"], float] = Field(min_length=1)
    hbm_bytes: float = Field(gt=0)
    hbm_gbps: float = Field(gt=0)
    source: str
    date: str
    default_efficiency: float = Field(gt=0, le=1)
    efficiency_source: str = ""


def device_from_dict(key: str, value: Any, source: str) -> Device:
    """Validate one device entry (as in ``libra_opt/data/devices.yaml``) into a :class:`Device`.

    Examples
    --------
    >>> d = device_from_dict("x", {"name": "X", "peak_flops": {"bf16": 1e15}, "hbm_bytes": 8e10,
    ...     "hbm_gbps": 3000, "source": "datasheet", "date": "2025", "default_efficiency": 0.5},
    ...     "<dict>")
    >>> d.peak_flops_for("bf16")
    1000000000000000.0
    """
    e: _DeviceEntry = validate_as(_DeviceEntry, value, source, str(key))
    return Device(
        key=str(key),
        name=e.name,
        peak_flops=MappingProxyType({str(k): float(v) for k, v in e.peak_flops.items()}),
        hbm_bytes=e.hbm_bytes,
        hbm_gbps=e.hbm_gbps,
        default_efficiency=e.default_efficiency,
        source=e.source,
        date=str(e.date),
        efficiency_source=e.efficiency_source,
    )


@dataclass(frozen=True)
class ComputeEfficiency:
    """Fraction of peak FLOP/s achieved, constant or growing with the work size.

    Parameters
    ----------
    kind : {'constant', 'saturating'}
    value : float
        ``constant``: the efficiency. ``saturating``: the asymptotic efficiency ``eta_max``.
    half_flops : float
        ``saturating`` only: work size (FLOPs of one phase of one layer on one NPU) at
        which half of ``eta_max`` is reached.

    Notes
    -----
    ``constant``: ``eta(F) = value``. ``saturating``: ``eta(F) = value * F / (F + half_flops)``,
    i.e. a fixed overhead of ``half_flops / (value * peak)`` seconds per phase on top of
    ``F / (value * peak)`` -- kernel launch and tail effects amortized over larger work.

    Examples
    --------
    >>> ComputeEfficiency("saturating", 0.6, 1e9).at(1e9)
    0.3
    """

    kind: Literal["constant", "saturating"] = "constant"
    value: float = 0.5
    half_flops: float = field(default=0.0)

    def __post_init__(self) -> None:
        if self.kind not in ("constant", "saturating"):
            raise InputError(
                f"efficiency kind {self.kind!r} is not constant or saturating",
                field="efficiency.kind",
            )
        if not 0 < float(self.value) <= 1:
            raise InputError(
                f"efficiency {self.value!r} must be in (0, 1]", field="efficiency.value"
            )
        if self.kind == "saturating" and not float(self.half_flops) > 0:
            raise InputError(
                "a saturating efficiency needs half_flops > 0", field="efficiency.half_flops"
            )

    def at(self, flops: float) -> float:
        """Efficiency for a piece of work of ``flops`` FLOPs."""
        if self.kind == "constant":
            return float(self.value)
        return float(self.value) * flops / (flops + float(self.half_flops))

    def describe(self) -> str:
        """One-line description for reports."""
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


def efficiency_from_value(
    value: Any, source: str | None = None, prefix: str = "efficiency"
) -> ComputeEfficiency:
    """Build a :class:`ComputeEfficiency` from a number or a mapping (as in YAML).

    Examples
    --------
    >>> efficiency_from_value(0.45).describe()
    'constant 0.45 of peak'
    >>> efficiency_from_value({"kind": "saturating", "value": 0.6, "half_flops": 1e9}).kind
    'saturating'
    """
    if isinstance(value, ComputeEfficiency):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = {"kind": "constant", "value": value}
    if not isinstance(value, Mapping):
        raise InputError(
            f"expected a number in (0, 1] or a mapping with kind, got {value!r}",
            source=source,
            field=prefix,
        )
    if value.get("kind") == "saturating":
        s: _SaturatingSpec = validate_as(_SaturatingSpec, dict(value), source, prefix)
        return ComputeEfficiency("saturating", s.value, s.half_flops)
    c: _ConstantSpec = validate_as(_ConstantSpec, dict(value), source, prefix)
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
