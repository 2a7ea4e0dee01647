"""Scenario hook: one model-based item of a scenario's ``workloads:`` list -> Workload.

A model-based entry looks like::

    workloads:
      - name: llama3_70b
        model: llama3_70b                # preset name, or a path relative to the scenario
        device: h100_sxm                 # preset from libra_opt/data/devices.yaml, or
                                         # {preset: h100_sxm, default_efficiency: 0.6} (fields
                                         # replaced, e.g. from `libra-opt validate --calibrate`)
        parallelism:
          tp: 8
          sequence_parallel: true
          pp: 4
          dp: 32
          micro_batch_size: 1
          global_batch_size: 1024
          recompute: selective
          zero: 1
          dp_mode: collective            # or in_network_optimizer (LuWu; needs zero: 0)
          precision: {compute_dtype: bf16, grad_bytes: 4}
        mapping: {tp: [node], dp: {pod: 32}}   # optional; default automatic
        efficiency: 0.6                  # optional; number or {kind: saturating, ...}
        check_memory: true               # optional; false reports but does not raise
        weight: 1.0                      # handled by the scenario loader, ignored here
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.devices import efficiency_from_value
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.io.presets import device_from_value, load_model
from libra_opt.schema import StrictModel, validate_as
from libra_opt.traffic.workload import Workload

__all__ = ["MODEL_ENTRY_KEYS", "ModelWorkloadEntry", "generated_from_entry", "workload_from_entry"]

#: Keys a model-based workload entry may have.
MODEL_ENTRY_KEYS: tuple[str, ...] = (
    "name",
    "model",
    "parallelism",
    "device",
    "mapping",
    "efficiency",
    "check_memory",
    "weight",
)


class ModelWorkloadEntry(StrictModel):
    """Schema of a model-based workload entry (see module docstring)."""

    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    parallelism: dict[str, Any]
    device: str | dict[str, Any]
    mapping: dict[str, Any] | None = None
    efficiency: float | dict[str, Any] | None = None
    check_memory: bool = True
    weight: float | None = None


def _rewrap(exc: InputError, source: str, prefix: str) -> InputError:
    if exc.source:
        return exc
    field = f"{prefix}.{exc.field}" if exc.field else prefix
    return InputError(exc.message, source=source, field=field)


def generated_from_entry(
    entry: Mapping[str, Any], fabric: Fabric, base_dir: Path, source: str
) -> GeneratedWorkload:
    """Validate ``entry`` and generate its workload with all derived quantities.

    Parameters
    ----------
    entry : mapping
        One item of the scenario's ``workloads:`` list (keys :data:`MODEL_ENTRY_KEYS`).
    fabric : Fabric
        The scenario's fabric.
    base_dir : pathlib.Path
        Directory a relative ``model`` path is resolved against (the scenario's directory).
    source : str
        The scenario file, for error messages.

    Raises
    ------
    InputError
        With ``source`` and a field such as ``workloads[llama].parallelism.tp``; errors
        inside a model descriptor name that descriptor file instead.
    """
    if not isinstance(entry, Mapping):
        raise InputError("expected a mapping (a workload entry)", source=source, field="workloads")
    name = entry.get("name")
    label = name[:60] if isinstance(name, str) and name else "?"  # never format a whole value
    prefix = f"workloads[{label}]"
    spec: ModelWorkloadEntry = validate_as(ModelWorkloadEntry, dict(entry), source, prefix)
    try:
        model = load_model(spec.model, base_dir=base_dir)
    except InputError as exc:
        raise _rewrap(exc, source, prefix) from None
    par = parallelism_from_dict(spec.parallelism, source, f"{prefix}.parallelism")
    device = device_from_value(spec.device, source, f"{prefix}.device")
    eff = None
    if spec.efficiency is not None:
        eff = efficiency_from_value(spec.efficiency, source, f"{prefix}.efficiency")
    # validate the mapping here so its errors carry the scenario file and field
    place_groups(fabric, par.degrees(), spec.mapping, source, f"{prefix}.mapping")
    try:
        return generate_workload(
            model,
            par,
            device,
            fabric,
            mapping=spec.mapping,
            efficiency=eff,
            name=spec.name,
            check_memory=spec.check_memory,
        )
    except InputError as exc:
        raise _rewrap(exc, source, prefix) from None


def workload_from_entry(
    entry: Mapping[str, Any], fabric: Fabric, base_dir: Path, source: str
) -> Workload:
    """The :class:`~libra_opt.traffic.workload.Workload` of a model-based scenario entry.

    See :func:`generated_from_entry` for parameters and errors.

    Examples
    --------
    >>> from pathlib import Path
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 2, "IB")))
    >>> entry = {"name": "l8", "model": "llama3_8b", "device": "h100_sxm",
    ...          "parallelism": {"tp": 8, "dp": 2, "global_batch_size": 16}}
    >>> workload_from_entry(entry, f, Path("."), "s.yaml").groups["dp"]
    (1, 2)
    >>> entry["parallelism"]["tp"] = 4
    >>> workload_from_entry(entry, f, Path("."), "s.yaml")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: s.yaml: workloads[l8].mapping: tp x cp x dp x pp = 4 x 1 x 2 x 1 = 8 NPUs, the fabric has 16 (node 8 x pod 2)
    """
    return generated_from_entry(entry, fabric, base_dir, source).workload
