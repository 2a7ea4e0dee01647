"""Fitting the one efficiency constant of each software stack on its calibration rows.

Rows marked ``calibrate: stack`` in a validation table
(:class:`~libra_opt.generators.validation.ValidationRow.calibrate_stack`) fix the constant
``eta_s`` of the row's software stack on the row's device
(:mod:`libra_opt.generators.stacks`); the stack's other rows are out-of-sample predictions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from libra_opt.errors import InputError
from libra_opt.fabric.frozen import FrozenMap
from libra_opt.generators.devices import Device
from libra_opt.generators.validation import ValidationRow, ValidationTable, predict_row

__all__ = ["StackCalibration", "calibrate_stacks", "with_stacks"]

#: Range a stack constant is fitted in (further capped so that no scaled fraction of the
#: peak exceeds 1).
ETA_BOUNDS = (0.2, 2.0)


@dataclass(frozen=True)
class StackCalibration:
    """The constant of one software stack on one device, fitted on its calibration rows.

    Attributes
    ----------
    stack : str
    device : str
        Key of the device it was fitted on.
    before, after : float
        The constant before (the device's value, 1 if it had none) and after the fit.
    rows : tuple of str
        ``table: row`` of the rows used.
    errors : tuple of float
        Relative error of each of those rows with the fitted constant.
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
                f"{self.after:.5g} on {len(self.rows)} row(s) ({'; '.join(self.rows)}); "
                f"reproduced within {100 * worst:.2f} %")


def with_stacks(device: Device, constants: dict[str, float]) -> Device:
    """``device`` with the stack ``constants`` set (others kept).

    Examples
    --------
    >>> from libra_opt.io.presets import load_device
    >>> d = with_stacks(load_device("a100_80gb"), {"x": 0.9})
    >>> d.software_stacks["x"], d.software_stacks["megatron_lm_2022"]
    (0.9, 1.0)
    """
    merged = {**device.software_stacks, **constants}
    return replace(device, software_stacks=FrozenMap(merged))


def _fit(rows: Sequence[ValidationRow], device: Device, stack: str, start: float,
         iterations: int = 40) -> float:
    """Least squares in log error over ``rows`` of the one constant (damped Newton on
    log eta, finite-difference derivative)."""
    def cost(x: float) -> tuple[float, list[float]]:
        dev = with_stacks(device, {stack: math.exp(x)})
        r = [math.log(predict_row(row, dev).predicted / row.published) for row in rows]
        return sum(e * e for e in r), r

    top = max(device.default_efficiency, device.attention_efficiency, device.mem_efficiency)
    upper = min(ETA_BOUNDS[1], 1.0 / top)  # no kernel faster than the peak
    lo, hi = math.log(ETA_BOUNDS[0]), math.log(upper)
    x = min(max(math.log(max(start, 1e-9)), lo), hi)
    c, r = cost(x)
    for _ in range(iterations):
        if max(abs(e) for e in r) < 1e-9:
            break
        h = 1e-4 if x + 1e-4 <= hi else -1e-4
        _, rp = cost(x + h)
        jac = [(a - b) / h for a, b in zip(rp, r, strict=True)]
        jj = sum(j * j for j in jac)
        if jj == 0:
            break
        dx = -sum(j * e for j, e in zip(jac, r, strict=True)) / jj
        lam = 1.0
        while True:
            xn = min(max(x + lam * dx, lo), hi)
            cn, rn = cost(xn)
            if cn < c or lam < 1e-3:
                break
            lam /= 2
        if abs(xn - x) < 1e-10:
            x, c, r = xn, cn, rn
            break
        x, c, r = xn, cn, rn
    return math.exp(x)


def calibrate_stacks(tables: Sequence[ValidationTable]) -> tuple[StackCalibration, ...]:
    """Fit each software stack's constant on its rows marked ``calibrate: stack``.

    Rows are grouped by (stack, device key); each group fits one constant by least squares
    in log error (one row: reproduced exactly). The calibration stack of a device cannot be
    fitted (its constant is 1 by definition).

    Returns
    -------
    tuple of StackCalibration
        In order of first appearance.

    Raises
    ------
    InputError
        A calibration row that runs its device's calibration stack.

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
