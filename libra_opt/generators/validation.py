"""Validation of generated step times against published training runs.

A :class:`ValidationTable` holds published runs (hardware, model, parallelism, batch and a
published step time or throughput); :func:`validate` predicts each row with the default
compute model (:func:`~libra_opt.generators.generator.generate_workload` and
:func:`~libra_opt.traffic.step_time.step_time`, no overlap, pipelined collectives, at the
cluster's per-GPU bandwidths) and reports the error per row and the average and worst
absolute error over the rows not used for calibration. :func:`calibrate_device` fits at most
two device constants (e.g. ``default_efficiency`` and ``gemm_k_overhead``) on the rows marked
``calibrate``. Tables are read from YAML by :mod:`libra_opt.io.validation`; the packaged
ones live in ``libra_opt/data/validation``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import Device
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.parallelism import Parallelism
from libra_opt.traffic.step_time import step_time

__all__ = [
    "Cluster",
    "ValidationRow",
    "ValidationTable",
    "RowResult",
    "TableResult",
    "METRICS",
    "predict_row",
    "validate",
    "calibrate_device",
    "DeviceCalibration",
    "calibrate_tables",
    "check_device_keys",
    "CALIBRABLE",
    "NCCL_NVLINK_STEP_S",
    "NCCL_NET_STEP_S",
]

Metric = Literal["step_time_s", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "mfu",
                 "tokens_per_s_per_gpu"]
#: Published quantities a row may give (tokens/s per GPU depends on no FLOP convention).
METRICS: tuple[str, ...] = ("step_time_s", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "mfu",
                            "tokens_per_s_per_gpu")


#: Per-step latency of an NCCL ring over NVLink, seconds: NCCL's tuning model, ring
#: algorithm, Simple protocol (the protocol of large messages), ``hwLat`` for NVLink, 3.4 us
#: (NVIDIA NCCL, src/graph/tuning.cc).
NCCL_NVLINK_STEP_S = 3.4e-6
#: Per-step latency of an NCCL ring step that crosses the network, seconds: the same table's
#: ``hwLat`` for NET, ring, Simple protocol, 9.6 us.
NCCL_NET_STEP_S = 9.6e-6


@dataclass(frozen=True)
class Cluster:
    """Hardware of a published run: ``gpus_per_node`` devices on a scale-up switch, nodes on
    a scale-out switch, per-GPU bandwidth of each (GB/s, one direction) and the latency of
    one collective step on each (s; default NCCL's per-step ring latencies
    :data:`NCCL_NVLINK_STEP_S` and :data:`NCCL_NET_STEP_S`). Ring-routed groups of generated
    workloads (:attr:`~libra_opt.traffic.workload.Workload.flat_ring_groups`) pay
    ``2 (k - 1)`` such steps per all-reduce."""

    name: str
    device: Device
    gpus_per_node: int
    node_bw_gbps: float
    pod_bw_gbps: float
    node_tier: str = "NVLink"
    pod_tier: str = "InfiniBand"
    node_latency_s: float = NCCL_NVLINK_STEP_S
    pod_latency_s: float = NCCL_NET_STEP_S

    def fabric(self, n_npus: int) -> tuple[Fabric, list[float]]:
        """Two-level switch fabric for ``n_npus`` devices and its bandwidth vector."""
        per = min(self.gpus_per_node, n_npus)
        if n_npus % per:
            raise InputError(
                f"{n_npus} GPUs is not a multiple of gpus_per_node {per}", field="parallelism"
            )
        dims = [Dim("node", "switch", per, self.node_tier, self.node_latency_s)]
        bw = [self.node_bw_gbps]
        if n_npus // per > 1:
            dims.append(Dim("pod", "switch", n_npus // per, self.pod_tier, self.pod_latency_s))
            bw.append(self.pod_bw_gbps)
        return Fabric(tuple(dims)), bw


@dataclass(frozen=True)
class ValidationRow:
    """One published run.

    Attributes
    ----------
    name : str
    source : str
        Citation key (explained in the table's ``sources``).
    cluster : Cluster
    metric : {'step_time_s', 'hardware_tflops_per_gpu', 'model_tflops_per_gpu', 'mfu', 'tokens_per_s_per_gpu'}
    published : float
        The published value of ``metric``.
    model : TransformerSpec
    parallelism : Parallelism
    calibrate : bool
        Used to calibrate the device constants (excluded from the error statistics).
    check_memory : bool
    notes : str
        Assumptions specific to the row.
    calibrate_stack : bool
        Used to calibrate the constant of the row's software stack (excluded from the error
        statistics).
    convention : str
        What the published metric depends on that its source does not state (empty: nothing);
        such a row is reported, not judged.
    convention_band : float
        The fraction that convention can move the row by.
    variant_set : str
        Name of the set of parallelization variants of one model the row belongs to.
    """

    name: str
    source: str
    cluster: Cluster
    metric: Metric
    published: float
    model: TransformerSpec
    parallelism: Parallelism
    calibrate: bool = False
    check_memory: bool = True
    notes: str = ""
    calibrate_stack: bool = False
    convention: str = ""
    convention_band: float = 0.0
    variant_set: str = ""

    @property
    def software_stack(self) -> str:
        """The stack the row ran (its parallelism's, else the device's calibration stack)."""
        return self.parallelism.software_stack or self.cluster.device.calibration_stack


@dataclass(frozen=True)
class ValidationTable:
    """A named list of published runs with the sources they cite."""

    name: str
    title: str
    rows: tuple[ValidationRow, ...]
    sources: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""
    """The file the table was read from (for error messages)."""


@dataclass(frozen=True)
class RowResult:
    """Published and predicted value of one row; ``error = predicted / published - 1``.

    ``calibrate`` marks a row excluded from the error statistics: used to fit the device
    constants or (``calibrate_stack``) the stack's constant, or convention-dependent
    (``convention_band`` > 0 or ``convention`` set).
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
        """Predicted step time over the step time the published figure implies (throughput
        metrics are inversely proportional to the step time at a fixed configuration).

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
        v = self.validation_rows
        return sum(abs(r.error) for r in v) / len(v) if v else math.nan

    @property
    def worst_abs_error(self) -> float:
        """Largest absolute relative error over the validation rows (NaN if none)."""
        v = self.validation_rows
        return max(abs(r.error) for r in v) if v else math.nan


def _generate(row: ValidationRow, device: Device) -> tuple[GeneratedWorkload, float]:
    fabric, bw = row.cluster.fabric(row.parallelism.n_npus)
    g = generate_workload(row.model, row.parallelism, device, fabric, check_memory=row.check_memory)
    loop = "overlap" if g.workload.overlap_form else "no_overlap"
    return g, step_time(g.workload, fabric, bw, training_loop=loop).step_time_s


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
    """Predict one row (with ``device`` instead of the cluster's, e.g. while calibrating).

    Examples
    --------
    See :func:`validate`.
    """
    dev = device if device is not None else row.cluster.device
    g, t = _generate(row, dev)
    return RowResult(row.name, row.source, dev.key, row.metric, row.published,
                     _metric(g, t, row.metric), t,
                     row.calibrate or row.calibrate_stack or bool(row.convention),
                     stack=row.software_stack, calibrate_stack=row.calibrate_stack,
                     convention=row.convention, convention_band=row.convention_band,
                     variant_set=row.variant_set, n_npus=row.parallelism.n_npus,
                     samples_per_step=float(row.parallelism.global_batch_size))


def validate(table: ValidationTable, devices: Mapping[str, Device] | None = None) -> TableResult:
    """Predict every row of ``table``; ``devices`` (by key) replaces the clusters' devices.

    Returns
    -------
    TableResult
        ``mean_abs_error`` and ``worst_abs_error`` cover the rows not marked ``calibrate``.

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
    try:
        return predict_row(row, device)
    except InputError as exc:
        where = f"rows[{i}] ({row.name[:40]})"
        raise InputError(exc.message, source=table.source or table.name,
                         field=f"{where}.{exc.field}" if exc.field else where) from None


def check_device_keys(tables: Sequence[ValidationTable]) -> None:
    """Raise :class:`InputError` when two clusters give different devices the same key
    (results and fitted devices are looked up by key).

    A preset with fields replaced keeps the preset's key unless the mapping sets ``key:``.
    """
    seen: dict[str, tuple[Device, str]] = {}
    for t in tables:
        for r in t.rows:
            d = r.cluster.device
            where = f"{t.name}: cluster {r.cluster.name}"
            if d.key in seen and seen[d.key][0] != d:
                raise InputError(
                    f"{seen[d.key][1]} and {where} use different devices with the same key "
                    f"{d.key!r}; give one its own name (device: {{preset: {d.key}, key: "
                    f"<name>, ...}})", source=t.source or t.name, field="clusters")
            seen.setdefault(d.key, (d, where))


def _log_errors(rows: Sequence[ValidationRow], device: Device) -> list[float]:
    return [math.log(predict_row(r, device).predicted / r.published) for r in rows]


def calibrate_device(
    rows: Sequence[ValidationRow],
    device: Device,
    constants: Sequence[str] = ("default_efficiency", "mem_efficiency"),
    iterations: int = 30,
) -> Device:
    """Fit up to two device constants so the calibration ``rows`` are reproduced.

    Parameters
    ----------
    rows : sequence of ValidationRow
        As many rows as constants (exact fit) or more (least squares in log error).
    device : Device
        Starting values.
    constants : sequence of str
        Names of ``Device`` fields to fit (at most two): ``default_efficiency`` (GEMM
        fraction), ``mem_efficiency``, ``gemm_k_overhead`` or ``kernel_overhead_s``.
    iterations : int
        Gauss-Newton steps (finite-difference Jacobian, damped, kept inside (0.05, 1]).

    Returns
    -------
    Device
        A copy of ``device`` with the fitted constants.

    Raises
    ------
    ValueError
        More than two constants, or fewer rows than constants.
    """
    names = tuple(constants)
    unknown = [n for n in names if n not in _BOUNDS]
    if unknown:
        raise ValueError(f"cannot calibrate {unknown}; calibrable: {', '.join(_BOUNDS)}")
    if not 1 <= len(names) <= 2 or len(rows) < len(names):
        raise ValueError("calibrate 1 or 2 constants on at least as many rows")
    x = [float(getattr(device, n)) for n in names]

    def at(values: Sequence[float]) -> Device:
        changes: dict[str, Any] = {n: _clip(n, v) for n, v in zip(names, values, strict=True)}
        return replace(device, **changes)

    def residual(values: Sequence[float]) -> list[float]:
        return _log_errors(rows, at(values))

    r = residual(x)
    for _ in range(iterations):
        if max(abs(e) for e in r) < 1e-7:
            break
        jac = []
        for j in range(len(x)):
            step = 1e-4 * max(abs(x[j]), _BOUNDS[names[j]][2])
            xp = list(x)
            xp[j] += step
            rp = residual(xp)
            jac.append([(a - b) / step for a, b in zip(rp, r, strict=True)])
        dx = _gauss_newton_step(jac, r)
        lam = 1.0
        while True:
            xn = [_clip(n, v + lam * d) for n, v, d in zip(names, x, dx, strict=True)]
            rn = residual(xn)
            if sum(e * e for e in rn) < sum(e * e for e in r) or lam < 1e-3:
                break
            lam /= 2
        x, r = xn, rn
    return at(x)


@dataclass(frozen=True)
class DeviceCalibration:
    """Constants of one device fitted on validation rows (:func:`calibrate_tables`).

    Attributes
    ----------
    device : Device
        The device with the fitted constants (its ``efficiency_source`` names the rows).
    constants : tuple of str
        The fitted fields.
    before, after : tuple of float
        Their values before and after the fit.
    rows : tuple of str
        ``table: row`` of every row used.
    errors : tuple of float
        Relative error of each of those rows with the fitted device.
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
            parts.append(f"{n} {_fmt(b)} -> {_fmt(a)}{edge}")
        worst = max(abs(e) for e in self.errors)
        return (f"calibrated {self.device.key} on {len(self.rows)} row(s): {', '.join(parts)}; "
                f"those rows reproduced within {100 * worst:.2f} %")


def _fmt(x: float) -> str:
    return f"{x:.5g}"


def calibrate_tables(
    tables: Sequence[ValidationTable],
    constants: Sequence[str],
    rows: Literal["marked", "all"] = "marked",
) -> tuple[DeviceCalibration, ...]:
    """Fit ``constants`` of each device on the rows of ``tables`` that run on it.

    Parameters
    ----------
    tables : sequence of ValidationTable
    constants : sequence of str
        One or two of :data:`CALIBRABLE`.
    rows : {'marked', 'all'}
        ``marked``: the rows with ``calibrate: true`` (then validate the others with
        ``validate(table, {c.device.key: c.device for c in result})``). ``all``: every row --
        an in-sample least-squares fit, how close these constants can bring the model to all
        the rows at once, not a validation.

    Returns
    -------
    tuple of DeviceCalibration
        One per device key with rows to fit, in order of first appearance. Exactly as many
        rows as constants are reproduced exactly; more are fitted by least squares in log
        error (:func:`calibrate_device`).

    Raises
    ------
    InputError
        No row to fit, or a device with fewer rows than constants (naming it).

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
                f"device {key} has {len(members)} row(s) to fit and {len(names)} constants "
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


#: Calibrable device constants: (lower bound, upper bound, scale of a finite-difference step).
_BOUNDS = {
    "default_efficiency": (0.05, 1.0, 1.0),
    "mem_efficiency": (0.05, 1.0, 1.0),
    "gemm_k_overhead": (0.0, 1e4, 100.0),
    "kernel_overhead_s": (0.0, 1e-3, 1e-6),
}


#: Names of the device constants :func:`calibrate_device` can fit.
CALIBRABLE: tuple[str, ...] = tuple(_BOUNDS)


def _clip(name: str, value: float) -> float:
    lo, hi, _ = _BOUNDS[name]
    return min(max(value, lo), hi)


def _gauss_newton_step(jac: list[list[float]], r: list[float]) -> list[float]:
    """Solve ``(J^T J) dx = -J^T r`` for one or two unknowns (``jac[j][i] = dr_i/dx_j``)."""
    n = len(jac)
    a = [[sum(p * q for p, q in zip(jac[i], jac[j], strict=True)) for j in range(n)] for i in range(n)]
    b = [-sum(p * q for p, q in zip(jac[i], r, strict=True)) for i in range(n)]
    if n == 1:
        return [b[0] / a[0][0] if a[0][0] else 0.0]
    det = a[0][0] * a[1][1] - a[0][1] * a[1][0]
    if abs(det) < 1e-30:
        return [b[0] / a[0][0] if a[0][0] else 0.0, 0.0]
    return [(b[0] * a[1][1] - b[1] * a[0][1]) / det, (a[0][0] * b[1] - a[1][0] * b[0]) / det]


def devices_of(table: ValidationTable) -> dict[str, Device]:
    """The devices a table's clusters use, by key."""
    return {r.cluster.device.key: r.cluster.device for r in table.rows}


