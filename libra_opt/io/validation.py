"""Validation tables of published (or your own measured) training runs, read from YAML.

A table file::

    name: my_cluster
    title: Our H100 runs, March 2026
    sources: {R1: "internal run log 2026-03-02"}
    assumptions: ["..."]
    clusters:
      pod_a: {device: h100_sxm, gpus_per_node: 8,
              node: {tier: NVLink, bw_gbps: 450}, pod: {tier: RoCE, bw_gbps: 50}}
    defaults:                 # merged into every row (parallelism.precision merged too)
      cluster: pod_a
      parallelism: {tp: 8, sequence_parallel: true, precision: {compute_dtype: bf16}}
    rows:
      - {name: "8B, 64 GPUs", source: R1, metric: step_time_s, published: 5.1,
         model: llama3_8b, parallelism: {dp: 8, global_batch_size: 512}}

A cluster's ``device`` is a preset name or a mapping
(:func:`~libra_opt.io.presets.device_from_value`); ``model`` a preset name (with an optional
row-level ``seq_len``) or a descriptor mapping (merged over ``defaults.model``).
``calibrate: true`` marks the rows the device constants are fitted on, ``calibrate: stack``
those the software stack's constant is fitted on. A row whose published metric depends on
an unpublished convention states it (``convention``) and the fraction it can move the row by
(``convention_band``): it is reported, not judged. Rows with the same ``variant_set`` are
parallelization variants of one model, ranked against each other (``variant_judge:
regret`` at the top level: by the regret alone). A link's ``bw_gbps`` is its line rate per
GPU; ``latency_s`` the latency of one collective step on it (default: NCCL's per-step
value); ``efficiency`` a measured NCCL curve, a line-rate preset, a fraction or ``none``
(default: the device's; :class:`~libra_opt.generators.validation.Cluster`). The packaged
tables are in ``libra_opt/data/validation``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field

from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.generators.descriptors import TransformerSpec, model_from_dict
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.generators.validation import Cluster, ValidationRow, ValidationTable
from libra_opt.io._yaml import read_yaml
from libra_opt.io.files import packaged_names
from libra_opt.io.presets import device_from_value, load_model, read_packaged
from libra_opt.schema import StrictModel, validate_as

__all__ = ["validation_table_names", "load_validation_table", "validation_table_from_dict"]


class _Link(StrictModel):
    tier: str = "link"
    bw_gbps: float = Field(gt=0)
    latency_s: float | None = Field(default=None, ge=0, le=1e-2)  # None: NCCL's per-step value
    efficiency: float | str | None = None  # curve, preset, fraction or 'none' (None: the device's)


class _Cluster(StrictModel):
    device: str | dict[str, Any]
    gpus_per_node: int = Field(gt=0, strict=True)
    node: _Link
    pod: _Link


class _Defaults(StrictModel):
    cluster: str | None = None
    check_memory: bool = True
    model: dict[str, Any] = Field(default_factory=dict)
    parallelism: dict[str, Any] = Field(default_factory=dict)


class _Row(StrictModel):
    name: str
    source: str
    metric: Literal["step_time_s", "hardware_tflops_per_gpu", "model_tflops_per_gpu", "mfu",
                    "tokens_per_s_per_gpu"]
    published: float = Field(gt=0)
    model: str | dict[str, Any]
    parallelism: dict[str, Any]
    cluster: str | None = None
    seq_len: int | None = Field(default=None, gt=0, strict=True)
    calibrate: bool | Literal["stack"] = False
    check_memory: bool | None = None
    notes: str = ""
    convention: str = ""
    convention_band: float = Field(default=0.0, ge=0, le=1)
    variant_set: str = ""


class _Table(StrictModel):
    name: str
    title: str = ""
    sources: dict[str, str] = Field(default_factory=dict)
    assumptions: list[str] = Field(default_factory=list)
    clusters: dict[str, _Cluster] = Field(min_length=1)
    defaults: _Defaults = Field(default_factory=_Defaults)
    variant_judge: Literal["rank", "regret"] = "rank"
    rows: list[dict[str, Any]] = Field(min_length=1)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _model(row: _Row, defaults: _Defaults, source: str, prefix: str) -> TransformerSpec:
    if isinstance(row.model, str):
        try:
            spec = load_model(row.model)
        except InputError as exc:
            raise InputError(exc.message, source=source, field=f"{prefix}.model") from None
    else:
        with input_context(source):
            spec = model_from_dict(_merge(defaults.model, row.model))
    if not isinstance(spec, TransformerSpec):
        raise InputError("validation rows need a transformer model", source=source,
                         field=f"{prefix}.model")
    if row.seq_len is not None:
        spec = spec.model_copy(update={"seq_len": row.seq_len})
    return spec


def validation_table_from_dict(data: Any, source: str) -> ValidationTable:
    """Validate a table mapping (as read from YAML) into a :class:`ValidationTable`; an
    :class:`InputError` names ``source`` and the field (``rows[3].parallelism.tp``...).

    Examples
    --------
    >>> t = validation_table_from_dict({"name": "t", "clusters": {"c": {"device": "h100_sxm",
    ...     "gpus_per_node": 8, "node": {"bw_gbps": 450}, "pod": {"bw_gbps": 50}}},
    ...     "rows": [{"name": "r", "source": "me", "metric": "step_time_s", "published": 1.0,
    ...               "cluster": "c", "model": "llama3_8b",
    ...               "parallelism": {"tp": 8, "global_batch_size": 8}}]}, "t.yaml")
    >>> t.rows[0].cluster.device.key, t.rows[0].parallelism.micro_batches
    ('h100_sxm', 8)
    """
    table: _Table = validate_as(_Table, data, source)
    clusters: dict[str, Cluster] = {}
    for key, c in table.clusters.items():
        dev = device_from_value(c.device, source, f"clusters.{key}.device")
        extra: dict[str, Any] = {}
        for level, link in (("node", c.node), ("pod", c.pod)):
            if link.latency_s is not None:
                extra[f"{level}_latency_s"] = link.latency_s
            if link.efficiency is not None:
                extra[f"{level}_efficiency"] = link.efficiency
        with input_context(source, f"clusters.{key}"):
            clusters[key] = Cluster(key, dev, c.gpus_per_node, c.node.bw_gbps, c.pod.bw_gbps,
                                    c.node.tier, c.pod.tier, **extra)
            for level, link in (("node", c.node), ("pod", c.pod)):
                curve = getattr(clusters[key], f"{level}_efficiency")
                if link.latency_s and isinstance(curve, str):  # 0 is what it uses anyway
                    raise InputError(
                        f"latency_s and the NCCL curve {curve!r} on one link: the curve's "
                        "measurement includes the link's latency (drop latency_s, or give "
                        "efficiency: none or a fraction)", field=f"{level}.latency_s")
    rows = []
    for i, raw in enumerate(table.rows):
        prefix = f"rows[{i}]"
        row: _Row = validate_as(_Row, raw, source, prefix)
        cname = row.cluster or table.defaults.cluster
        if cname not in clusters:
            raise InputError(f"unknown cluster {short_repr(cname, 60)}; clusters: "
                             f"{', '.join(clusters)}", source=source, field=f"{prefix}.cluster")
        par = parallelism_from_dict(_merge(table.defaults.parallelism, row.parallelism), source,
                                    f"{prefix}.parallelism")
        check = table.defaults.check_memory if row.check_memory is None else row.check_memory
        rows.append(ValidationRow(
            name=row.name, source=row.source, cluster=clusters[cname], metric=row.metric,
            published=row.published, model=_model(row, table.defaults, source, prefix),
            parallelism=par, calibrate=row.calibrate is True, check_memory=check,
            notes=row.notes, calibrate_stack=row.calibrate == "stack",
            convention=row.convention, convention_band=row.convention_band,
            variant_set=row.variant_set, variant_judge=table.variant_judge,
        ))
        if row.convention_band and not row.convention:
            raise InputError("convention_band needs convention (what the published metric "
                             "depends on)", source=source, field=f"{prefix}.convention")
    return ValidationTable(table.name, table.title or table.name, tuple(rows),
                           MappingProxyType(dict(table.sources)), source=source)


def validation_table_names() -> tuple[str, ...]:
    """Names of the packaged validation tables.

    Examples
    --------
    >>> validation_table_names()  # doctest: +NORMALIZE_WHITESPACE
    ('bloom_prequel_a100', 'korthikanti22_a100', 'llama3_h100', 'megatron_sc21_a100',
     'mtnlg_a100', 'nemo2407_h100', 'nemo_h100', 'vtrain_dev_a100')
    """
    return packaged_names("validation")


@cache
def _packaged(name: str) -> ValidationTable:
    return validation_table_from_dict(read_packaged("validation", f"{name}.yaml"),
                                      f"libra_opt/data/validation/{name}.yaml")


def load_validation_table(name_or_path: str | Path) -> ValidationTable:
    """A packaged table by name, or a user's table from a YAML path (an :class:`InputError`
    for an unknown name, an unreadable file or an invalid table).

    Examples
    --------
    >>> t = load_validation_table("korthikanti22_a100")
    >>> sum(r.calibrate for r in t.rows) <= 2
    True
    """
    text = str(name_or_path)
    if isinstance(name_or_path, Path) or text.endswith((".yaml", ".yml")) or "/" in text:
        return validation_table_from_dict(read_yaml(Path(text)), text)
    names = validation_table_names()
    if text not in names:
        raise InputError(f"unknown validation table {short_repr(text, 80)}; tables: "
                         f"{', '.join(names)} (or a path to a .yaml table)", field="--table")
    return _packaged(text)
