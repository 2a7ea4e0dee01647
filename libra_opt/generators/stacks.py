"""Software stacks: one named efficiency constant per training framework.

The same model and hardware run at different speeds under different frameworks
(Megatron-Turing NLG 530B: 126 TFLOP/s per GPU under Megatron-DeepSpeed, Smith et al. 2022,
against 163 under Megatron-LM, Narayanan et al. 2021). Device constants are calibrated on
one stack (``Device.calibration_stack``); every other stack has ONE constant ``eta_s``
(``Device.software_stacks``) fitted on rows marked ``calibrate: stack`` in the validation
tables. ``eta_s`` scales every kernel speed, so each roofline time becomes ``t / eta_s``
(per-kernel overhead excepted); communication is not scaled.
"""

from __future__ import annotations

from dataclasses import replace

from libra_opt.errors import InputError
from libra_opt.fabric.frozen import FrozenMap
from libra_opt.generators.devices import Device

__all__ = ["stack_efficiency", "timing_device", "with_stacks"]


def stack_efficiency(device: Device, stack: str | None) -> float:
    """The efficiency constant of ``stack`` on ``device`` (1 for its calibration stack or ``None``).

    Raises
    ------
    InputError
        A stack the device has no constant for.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device
    >>> a100 = load_device("a100_80gb")
    >>> stack_efficiency(a100, None), stack_efficiency(a100, "megatron_lm_2022")
    (1.0, 1.0)
    >>> stack_efficiency(a100, "my_framework")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: parallelism.software_stack: device a100_80gb has no constant for software stack 'my_framework'; it lists megatron_lm_2021, megatron_deepspeed, megatron_deepspeed_2023, megatron_lm_2022 (give one with device: {preset: a100_80gb, software_stacks: {my_framework: <eta>}})
    """
    if stack is None or stack == device.calibration_stack:
        return 1.0
    if stack not in device.software_stacks:
        listed = ", ".join(device.software_stacks) or "none"
        raise InputError(
            f"device {device.key} has no constant for software stack {stack!r}; it lists "
            f"{listed} (give one with device: {{preset: {device.key}, software_stacks: "
            f"{{{stack}: <eta>}}}})", field="parallelism.software_stack")
    return float(device.software_stacks[stack])


def timing_device(device: Device, eta: float) -> Device:
    """``device`` with every kernel speed (``default_efficiency``, ``attention_efficiency``,
    ``mem_efficiency``, ``vector_flops``) scaled by ``eta``, for compute times only.

    Raises
    ------
    InputError
        When a scaled fraction of the peak would exceed 1.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device
    >>> d = timing_device(load_device("a100_80gb"), 0.5)
    >>> round(d.default_efficiency, 4), d.mem_efficiency, d.vector_flops
    (0.4504, 0.425, 39000000000000.0)
    """
    if eta == 1.0:
        return device
    over = [n for n in ("default_efficiency", "attention_efficiency", "mem_efficiency")
            if getattr(device, n) * eta > 1.0]
    if over:
        raise InputError(
            f"software stack efficiency {eta:g} on {device.key} puts {', '.join(over)} above 1 "
            "(faster than the peak)", field="parallelism.software_stack")
    return replace(
        device,
        default_efficiency=device.default_efficiency * eta,
        attention_efficiency=device.attention_efficiency * eta,
        mem_efficiency=device.mem_efficiency * eta,
        vector_flops=device.vector_flops * eta,
    )


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
