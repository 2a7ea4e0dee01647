"""Fitting model constants on published runs: device constants (:func:`calibrate_device`, per
device on rows marked ``calibrate: true`` by :func:`calibrate_tables`) and each software
stack's efficiency constant (:func:`calibrate_stacks`, rows marked ``calibrate: stack``), by
bounded least squares in log error, :math:`\\min_x \\sum_i (\\ln \\hat y_i(x) / y_i)^2`
(:func:`scipy.optimize.least_squares`, trust-region reflective [1]_): exact with as many
rows as constants.

References
----------
.. [1] Branch, Coleman and Li, "A subspace, interior, and conjugate gradient method for
   large-scale bound-constrained minimization problems", SIAM J. Sci. Comput. 21(1), 1999.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from scipy.optimize import least_squares

from libra_opt.errors import InputError
from libra_opt.explore.validation import _predict_in, predict_row
from libra_opt.generators.devices import Device
from libra_opt.generators.stacks import with_stacks
from libra_opt.generators.validation import ValidationRow, ValidationTable, check_device_keys

__all__ = [
    "CALIBRABLE",
    "ETA_BOUNDS",
    "DeviceCalibration",
    "StackCalibration",
    "calibrate_device",
    "calibrate_stacks",
    "calibrate_tables",
]

#: Calibrable device constants: (lower bound, upper bound, scale of the constant).
_BOUNDS = {
    "default_efficiency": (0.05, 1.0, 1.0),
    "mem_efficiency": (0.05, 1.0, 1.0),
    "gemm_k_overhead": (0.0, 1e4, 100.0),
    "kernel_overhead_s": (0.0, 1e-3, 1e-6),
}

#: Names of the device constants :func:`calibrate_device` can fit.
CALIBRABLE: tuple[str, ...] = tuple(_BOUNDS)

#: Range a stack constant is fitted in (further capped so that no scaled fraction of the
#: peak exceeds 1).
ETA_BOUNDS = (0.2, 2.0)

#: Tolerances of the least-squares fits (relative change of the cost, of the scaled
#: constants and of the gradient): far below the printed precision of a constant (5
#: significant digits).
_TOL = 1e-12


def _bounded_least_squares(residual: Callable[[np.ndarray], list[float]], x0: Sequence[float],
                           lower: Sequence[float], upper: Sequence[float]) -> np.ndarray:
    """Minimise ``sum(residual(x) ** 2)`` with ``lower <= x <= upper`` from ``x0`` (clipped); a
    constant left against a bound (``active_mask``) is returned exactly at it."""
    lo, hi = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    start = np.clip(np.asarray(x0, dtype=float), lo, hi)
    res = least_squares(lambda x: np.asarray(residual(x), dtype=float), start, bounds=(lo, hi),
                        method="trf", ftol=_TOL, xtol=_TOL, gtol=_TOL)
    x = np.asarray(res.x, dtype=float)
    return np.where(res.active_mask < 0, lo, np.where(res.active_mask > 0, hi, x))


def _log_errors(rows: Sequence[ValidationRow], device: Device) -> list[float]:
    return [math.log(predict_row(r, device).predicted / r.published) for r in rows]


def calibrate_device(
    rows: Sequence[ValidationRow],
    device: Device,
    constants: Sequence[str] = ("default_efficiency", "mem_efficiency"),
) -> Device:
    """Fit one or two device constants (:data:`CALIBRABLE`) so the calibration ``rows`` (at
    least as many) are reproduced: a copy of ``device`` with them. The constants are fitted
    divided by their scale (1 for the efficiencies, 100 for ``gemm_k_overhead``, 1 us for
    ``kernel_overhead_s``) so that the finite-difference steps suit each.

    Examples
    --------
    One row, one constant: the fit reproduces the row the constant was taken from.

    >>> import dataclasses
    >>> from libra_opt.io.presets import load_device
    >>> from libra_opt.io.validation import load_validation_table
    >>> row = load_validation_table("llama3_h100").rows[0]
    >>> dev = load_device("h100_sxm")
    >>> start = dataclasses.replace(dev, default_efficiency=0.5)
    >>> fitted = calibrate_device([row], start, ["default_efficiency"])
    >>> abs(fitted.default_efficiency - dev.default_efficiency) < 1e-4
    True
    """
    names = tuple(constants)
    unknown = [n for n in names if n not in _BOUNDS]
    if unknown:
        raise ValueError(f"cannot calibrate {unknown}; calibrable: {', '.join(_BOUNDS)}")
    if not 1 <= len(names) <= 2 or len(rows) < len(names):
        raise ValueError("calibrate 1 or 2 constants on at least as many rows")
    scale = [_BOUNDS[n][2] for n in names]

    def at(z: np.ndarray) -> Device:
        changes: dict[str, Any] = {n: min(max(float(v) * s, _BOUNDS[n][0]), _BOUNDS[n][1])
                                   for n, v, s in zip(names, z, scale, strict=True)}
        return replace(device, **changes)

    z = _bounded_least_squares(
        lambda v: _log_errors(rows, at(v)),
        [float(getattr(device, n)) / s for n, s in zip(names, scale, strict=True)],
        [_BOUNDS[n][0] / s for n, s in zip(names, scale, strict=True)],
        [_BOUNDS[n][1] / s for n, s in zip(names, scale, strict=True)],
    )
    return at(z)


@dataclass(frozen=True)
class DeviceCalibration:
    """Constants of one device fitted on validation rows (:func:`calibrate_tables`): the device
    with them, their names, values before and after, the rows used (``table: row``) and each
    row's relative error with the fitted device.
    """

    device: Device
    constants: tuple[str, ...]
    before: tuple[float, ...]
    after: tuple[float, ...]
    rows: tuple[str, ...]
    errors: tuple[float, ...]

    def describe(self) -> str:
        """One line: the fit and how closely it reproduces its rows."""
        parts = []
        for n, b, a in zip(self.constants, self.before, self.after, strict=True):
            lo, hi, _ = _BOUNDS[n]
            edge = " (at its bound: the rows pull it further)" if a in (lo, hi) else ""
            parts.append(f"{n} {b:.5g} -> {a:.5g}{edge}")
        worst = max(abs(e) for e in self.errors)
        return (f"calibrated {self.device.key} on {_rows(len(self.rows))}: {', '.join(parts)}; "
                f"those rows reproduced within {100 * worst:.2f} %")


def _rows(n: int) -> str:
    """``1 row``, ``3 rows``."""
    return f"{n} row" if n == 1 else f"{n} rows"


def calibrate_tables(
    tables: Sequence[ValidationTable],
    constants: Sequence[str],
    rows: Literal["marked", "all"] = "marked",
) -> tuple[DeviceCalibration, ...]:
    """Fit ``constants`` (one or two of :data:`CALIBRABLE`) of each device, in order of first
    appearance, on the rows of ``tables`` that run on it: those marked ``calibrate: true``, or
    with ``rows='all'`` every row (an in-sample fit, not a validation). No row to fit, or a
    device with fewer rows than constants, is an :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    Re-deriving the packaged H100 constant from its calibration row:

    >>> from libra_opt.io.presets import load_device
    >>> from libra_opt.io.validation import load_validation_table
    >>> (cal,) = calibrate_tables([load_validation_table("llama3_h100")], ["default_efficiency"])
    >>> cal.rows, abs(cal.errors[0]) < 1e-6
    (('llama3_h100: Llama 3 405B, 8192 GPUs, seq 8K',), True)
    >>> abs(cal.after[0] - load_device("h100_sxm").default_efficiency) < 1e-4
    True
    """
    names = tuple(constants)
    if not 1 <= len(names) <= 2 or len(set(names)) != len(names):
        raise InputError(f"calibrate one or two distinct constants of {', '.join(CALIBRABLE)}",
                         field="calibrate")
    unknown = [n for n in names if n not in _BOUNDS]
    if unknown:
        raise InputError(f"cannot calibrate {', '.join(unknown)}; calibrable: "
                         f"{', '.join(CALIBRABLE)}", field="calibrate")
    check_device_keys(tables)
    groups: dict[str, list[tuple[ValidationTable, int]]] = {}
    for t in tables:
        for i, r in enumerate(t.rows):
            if rows == "all" or r.calibrate:
                groups.setdefault(r.cluster.device.key, []).append((t, i))
    if not groups:
        raise InputError("no row is marked 'calibrate: true' in "
                         f"{', '.join(t.name for t in tables)}", field="rows")
    out = []
    for key, members in groups.items():
        if len(members) < len(names):
            raise InputError(
                f"device {key} has {_rows(len(members))} to fit and {len(names)} constants "
                f"({', '.join(names)}); mark more rows 'calibrate: true' or fit fewer constants",
                field="calibrate")
        start = members[0][0].rows[members[0][1]].cluster.device
        for t, i in members:  # a row the model cannot predict: name it before fitting
            _predict_in(t, i, None)
        fitted = calibrate_device([t.rows[i] for t, i in members], start, names)
        used = tuple(f"{t.name}: {t.rows[i].name}" for t, i in members)
        note = (f"calibrated ({', '.join(names)}) by libra_opt on "
                f"{'; '.join(used[:6])}{' ...' if len(used) > 6 else ''}")
        fitted = replace(fitted, efficiency_source=note)
        out.append(DeviceCalibration(
            device=fitted,
            constants=names,
            before=tuple(float(getattr(start, n)) for n in names),
            after=tuple(float(getattr(fitted, n)) for n in names),
            rows=used,
            errors=tuple(_predict_in(t, i, fitted).error for t, i in members),
        ))
    return tuple(out)


@dataclass(frozen=True)
class StackCalibration:
    """The constant of one software stack on one device (key), fitted on its calibration rows:
    before (the device's value, 1 if none) and after, the rows used and their errors.
    """

    stack: str
    device: str
    before: float
    after: float
    rows: tuple[str, ...]
    errors: tuple[float, ...]

    def describe(self) -> str:
        """One line: the fit and how closely it reproduces its rows."""
        worst = max(abs(e) for e in self.errors)
        return (f"software stack {self.stack} on {self.device}: efficiency {self.before:.5g} -> "
                f"{self.after:.5g} on {_rows(len(self.rows))} ({'; '.join(self.rows)}); "
                f"reproduced within {100 * worst:.2f} %")


def _fit(rows: Sequence[ValidationRow], device: Device, stack: str, start: float) -> float:
    """Least squares in log error over ``rows`` of the one constant of ``stack``, fitted as
    ``log eta`` in [log 0.2, log min(2, 1 / (largest efficiency of the device))]."""
    top = max(device.default_efficiency, device.attention_efficiency, device.mem_efficiency)
    upper = min(ETA_BOUNDS[1], 1.0 / top)  # no kernel faster than the peak
    lo, hi = math.log(ETA_BOUNDS[0]), math.log(upper)

    (x,) = _bounded_least_squares(
        lambda x: _log_errors(rows, with_stacks(device, {stack: math.exp(float(x[0]))})),
        [math.log(max(start, 1e-9))], [lo], [hi])
    return math.exp(float(x))


def calibrate_stacks(tables: Sequence[ValidationTable]) -> tuple[StackCalibration, ...]:
    """Fit each software stack's constant on its rows marked ``calibrate: stack``, grouped by
    (stack, device) in order of first appearance; a row of its device's calibration stack
    (whose constant is 1) is an :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    Re-deriving the packaged Megatron-DeepSpeed constant from its calibration row:

    >>> from libra_opt.io.presets import load_device
    >>> from libra_opt.io.validation import load_validation_table
    >>> (cal,) = calibrate_stacks([load_validation_table("mtnlg_a100")])
    >>> cal.stack, abs(cal.errors[0]) < 1e-6
    ('megatron_deepspeed', True)
    >>> abs(cal.after - load_device("a100_80gb").software_stacks["megatron_deepspeed"]) < 1e-4
    True
    """
    groups: dict[tuple[str, str], list[tuple[ValidationTable, int]]] = {}
    for t in tables:
        for i, r in enumerate(t.rows):
            if r.calibrate_stack:
                if r.software_stack == r.cluster.device.calibration_stack:
                    raise InputError(
                        f"stack {r.software_stack!r} is the calibration stack of "
                        f"{r.cluster.device.key} (its constant is 1); mark the row "
                        "'calibrate: true' to fit device constants instead",
                        source=t.source or t.name, field=f"rows[{i}].calibrate")
                groups.setdefault((r.software_stack, r.cluster.device.key), []).append((t, i))
    out = []
    for (stack, key), members in groups.items():
        device = members[0][0].rows[members[0][1]].cluster.device
        before = float(device.software_stacks.get(stack, 1.0))
        rows = [t.rows[i] for t, i in members]
        eta = _fit(rows, device, stack, before)
        fitted = with_stacks(device, {stack: eta})
        out.append(StackCalibration(
            stack=stack, device=key, before=before, after=eta,
            rows=tuple(f"{t.name}: {t.rows[i].name}" for t, i in members),
            errors=tuple(predict_row(r, fitted).error for r in rows),
        ))
    return tuple(out)
