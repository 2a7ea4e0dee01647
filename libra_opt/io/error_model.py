"""The validated runs behind the model's error band, read and written as YAML.

An error model (:class:`~libra_opt.generators.error_model.ErrorModel`) lists validated runs:
each run's measured against predicted time, with its device, stack, parallelization and
scale. ``libra-opt validate --error-model`` writes one (the packaged one from the packaged
tables).

File format::

    # comment lines
    runs:
      - {name: K22 175B full recompute, table: korthikanti22_a100, device: a100_80gb,
         stack: megatron_lm_2022, role: validation, error: 0.0057, variant_set: k22_175b,
         tp: 8, cp: 1, pp: 8, ep: 1, micro_batch_size: 1, interleave: 3, seq_len: 2048,
         n_npus: 64, recompute: full, mfu_measured: 0.4}
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.generators.error_model import ErrorModel, ValidatedRun
from libra_opt.io._yaml import read_yaml
from libra_opt.io.presets import read_packaged
from libra_opt.scenario.spec import from_mapping

__all__ = ["PACKAGED_ERROR_MODEL", "load_error_model", "error_model_yaml"]

#: The packaged error model's file name, in ``libra_opt/data``.
PACKAGED_ERROR_MODEL = "error_model.yaml"
_ROLES = ("validation", "device", "stack", "convention")


def _run(entry: Any, i: int, source: str) -> ValidatedRun:
    where = f"runs[{i}]"
    if not isinstance(entry, Mapping):
        raise InputError(f"expected a mapping, got {short_repr(entry, 60)}", source=source,
                         field=where)
    with input_context(source):
        run: ValidatedRun = from_mapping(ValidatedRun, entry, where, strict=True)
    for f in fields(ValidatedRun):
        if f.type == "int" and getattr(run, f.name) < 1:
            raise InputError(f"expected a positive integer, got {getattr(run, f.name)!r}",
                             source=source, field=f"{where}.{f.name}")
    if run.role not in _ROLES:
        raise InputError(f"{run.role!r} is not one of {', '.join(_ROLES)}",
                         source=source, field=f"{where}.role")
    if run.error <= -1.0:
        raise InputError(f"expected a relative error above -1, got {run.error!r}",
                         source=source, field=f"{where}.error")
    return run


def load_error_model(path: str | os.PathLike[str] | None = None) -> ErrorModel:
    """The error model of a YAML file (default: the packaged one); an :class:`InputError`
    names the file and ``runs[i].<field>`` of a bad entry.

    Examples
    --------
    >>> m = load_error_model()
    >>> "a100_80gb" in m.devices() and m.worst_band > 0
    True
    """
    if path is None:
        return _from_document(read_packaged(PACKAGED_ERROR_MODEL),
                              f"libra_opt/data/{PACKAGED_ERROR_MODEL}")
    return _from_document(read_yaml(Path(path)), str(path))


def _from_document(doc: Any, source: str) -> ErrorModel:
    if not isinstance(doc, Mapping) or set(doc) != {"runs"} or not isinstance(doc["runs"], list):
        raise InputError("expected a mapping with one key, runs: a list of validated runs",
                         source=source)
    if not doc["runs"]:
        raise InputError("no runs: an error model needs validated runs", source=source,
                         field="runs")
    return ErrorModel(tuple(_run(e, i, source) for i, e in enumerate(doc["runs"])))


def error_model_yaml(model: ErrorModel, tables: Sequence[str], version: str) -> str:
    """YAML text of ``model``'s runs (read back by :func:`load_error_model`), with a header
    naming the ``tables`` and the library ``version`` they were validated with.

    Examples
    --------
    >>> from libra_opt.generators.error_model import ValidatedRun
    >>> m = ErrorModel((ValidatedRun("a", "t", "gpu", "s", "validation", 0.02),))
    >>> text = error_model_yaml(m, ["t"], "0.1")
    >>> _from_document(yaml.safe_load(text), "x") == m
    True
    """
    head = [f"# Validated runs of libra_opt {version}: each run's relative error",
            "# t_predicted / t_measured - 1 and what it ran (libra-opt validate --error-model).",
            "# The error band of every model-based step time is drawn from them",
            "# (libra_opt/generators/error_model.py). Tables:",
            *(f"#   {t}" for t in tables)]
    digits = {"error": ".9g", "mfu_measured": ".6g"}  # the rounding written of each number
    runs = [{f.name: float(format(v, digits[f.name])) if f.name in digits else v
             for f in fields(ValidatedRun)
             if (v := getattr(r, f.name)) is not None or f.name != "mfu_measured"}
            for r in model.runs]
    body = yaml.safe_dump({"runs": runs}, sort_keys=False, width=1000,
                          default_flow_style=None)
    return "\n".join(head) + "\n" + body
