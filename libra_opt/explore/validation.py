"""Predicting published training runs: the step-time model against a validation table.

:func:`validate` predicts each row of a
:class:`~libra_opt.generators.validation.ValidationTable` with the default compute model at
the cluster's per-GPU bandwidths and timing, and reports the error per row and over the rows
not used for calibration (:class:`TableResult`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from libra_opt.errors import input_context
from libra_opt.generators.devices import Device
from libra_opt.generators.generated import GeneratedWorkload, achieved_flops_per_npu
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.validation import ValidationRow, ValidationTable
from libra_opt.options import TrainingLoop
from libra_opt.traffic.step_time import step_time

__all__ = [
    "RowResult",
    "TableResult",
    "predict_row",
    "validate",
    "abs_errors",
]


@dataclass(frozen=True)
class RowResult:
    """Published and predicted value of one row; ``error = predicted / published - 1``.

    ``calibrate`` marks a row left out of the error statistics (a calibration row of the device
    or, ``calibrate_stack``, of the stack, or convention-dependent); ``mfu_measured`` is the MFU
    of the measured step time (NaN when not predicted by :func:`predict_row`).
    """

    name: str
    source: str
    device: str
    metric: str
    published: float
    predicted: float
    step_time_s: float
    calibrate: bool
    stack: str = ""
    calibrate_stack: bool = False
    convention: str = ""
    convention_band: float = 0.0
    variant_set: str = ""
    n_npus: int = 0
    samples_per_step: float = 0.0
    mfu_measured: float = math.nan
    variant_judge: str = "rank"

    @property
    def role(self) -> str:
        """``device`` / ``stack`` (calibration rows), ``convention`` (reported, not judged)
        or ``validation``."""
        if self.convention:
            return "convention"
        if self.calibrate_stack:
            return "stack"
        return "device" if self.calibrate else "validation"

    @property
    def measured_step_time_s(self) -> float:
        """The step time the published figure implies at the row's configuration."""
        return self.step_time_s / self.time_ratio

    @property
    def error(self) -> float:
        """Relative error of the prediction."""
        return self.predicted / self.published - 1.0

    @property
    def time_ratio(self) -> float:
        """Predicted step time over the one the published figure implies (throughput metrics are
        inversely proportional to it).

        Examples
        --------
        >>> RowResult("r", "s", "d", "mfu", 0.5, 0.4, 1.0, False).time_ratio
        1.25
        """
        if self.metric == "step_time_s":
            return self.predicted / self.published
        return self.published / self.predicted


@dataclass(frozen=True)
class TableResult:
    """Per-row results of a table and the error statistics over its validation rows."""

    name: str
    title: str
    rows: tuple[RowResult, ...]

    @property
    def validation_rows(self) -> tuple[RowResult, ...]:
        """Rows not used for calibration."""
        return tuple(r for r in self.rows if not r.calibrate)

    @property
    def mean_abs_error(self) -> float:
        """Average absolute relative error over the validation rows (NaN if none)."""
        return abs_errors(r.error for r in self.validation_rows)[0]

    @property
    def worst_abs_error(self) -> float:
        """Largest absolute relative error over the validation rows (NaN if none)."""
        return abs_errors(r.error for r in self.validation_rows)[1]


def abs_errors(errors: Iterable[float]) -> tuple[float, float]:
    """(average, largest) absolute value of the relative ``errors`` (NaN, NaN for none).

    Examples
    --------
    >>> abs_errors([0.05, -0.06]), abs_errors([])
    ((0.055, 0.06), (nan, nan))
    """
    errs = [abs(e) for e in errors]
    if not errs:
        return math.nan, math.nan
    return sum(errs) / len(errs), max(errs)


def _generate(row: ValidationRow, device: Device) -> tuple[GeneratedWorkload, float]:
    fabric, bw = row.cluster.fabric(row.parallelism.n_npus)
    g = generate_workload(row.model, row.parallelism, device, fabric, check_memory=row.check_memory)
    loop: TrainingLoop = "overlap" if g.workload.overlap_form else "no_overlap"
    return g, step_time(g.workload, fabric, bw, row.cluster.timing(loop)).step_time_s


def _metric(g: GeneratedWorkload, t_s: float, metric: str) -> float:
    if metric == "step_time_s":
        return t_s
    if metric == "tokens_per_s_per_gpu":
        return g.tokens_per_step / (t_s * g.n_npus)
    # published figures count attention over the full s x s matrix (Narayanan et al. eq. (3))
    if metric == "hardware_tflops_per_gpu":
        hw = g.published_hardware_flops_per_step or g.hardware_flops_per_step
        return hw / (t_s * g.n_npus) / 1e12
    model_flops = (g.published_model_flops_per_step or g.model_flops_per_step) / (t_s * g.n_npus)
    if metric == "model_tflops_per_gpu":
        return model_flops / 1e12
    return model_flops / g.device.peak_flops_for(g.compute_dtype)


def predict_row(row: ValidationRow, device: Device | None = None) -> RowResult:
    """Predict one row (with ``device`` instead of the cluster's, e.g. while calibrating)."""
    dev = device if device is not None else row.cluster.device
    g, t = _generate(row, dev)
    res = RowResult(row.name, row.source, dev.key, row.metric, row.published,
                    _metric(g, t, row.metric), t,
                    row.calibrate or row.calibrate_stack or bool(row.convention),
                    stack=row.software_stack, calibrate_stack=row.calibrate_stack,
                    convention=row.convention, convention_band=row.convention_band,
                    variant_set=row.variant_set, n_npus=row.parallelism.n_npus,
                    samples_per_step=float(row.parallelism.global_batch_size),
                    variant_judge=row.variant_judge)
    measured_s = res.measured_step_time_s
    return dataclasses.replace(res, mfu_measured=achieved_flops_per_npu(g, measured_s)
                               / g.device.peak_flops_for(g.compute_dtype))


def validate(table: ValidationTable, devices: Mapping[str, Device] | None = None) -> TableResult:
    """Predict every row of ``table``; ``devices`` (by key) replaces the clusters' devices.

    Examples
    --------
    >>> from libra_opt.io.validation import load_validation_table
    >>> res = validate(load_validation_table("llama3_h100"))
    >>> [r.role for r in res.rows], abs(res.rows[0].error) < 1e-3
    (['device', 'validation', 'convention'], True)
    """
    devs = devices or {}
    rows = tuple(_predict_in(table, i, devs.get(r.cluster.device.key))
                 for i, r in enumerate(table.rows))
    return TableResult(table.name, table.title, rows)


def _predict_in(table: ValidationTable, i: int, device: Device | None) -> RowResult:
    """:func:`predict_row` of row ``i``, its errors naming the table file and the row."""
    row = table.rows[i]
    with input_context(table.source or table.name, f"rows[{i}] ({row.name[:40]})"):
        return predict_row(row, device)


