"""Packaged presets read from ``libra_opt/data``: model descriptors, devices and catalogs,
each validated by the parser of the layer that owns it."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from libra_opt.cost.catalog import Catalog, catalog_from_dict
from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.generators.descriptors import DLRMSpec, ResNetSpec, TransformerSpec, model_from_dict
from libra_opt.generators.devices import Device, device_from_dict
from libra_opt.io._yaml import dump_yaml, read_yaml
from libra_opt.io.files import ParseCache, data_path, packaged_names
from libra_opt.io.results import library_version
from libra_opt.scenario.spec import thaw

__all__ = [
    "model_presets",
    "load_model",
    "device_names",
    "load_device",
    "device_from_value",
    "device_entry",
    "calibrated_devices_yaml",
    "available_catalogs",
    "load_catalog",
    "catalog_document",
    "catalog_cost_model",
]


def read_packaged(*parts: str, cache: ParseCache | None = None) -> Any:
    """The YAML document of the packaged file ``libra_opt/data/<parts>``."""
    return read_yaml(Path(str(data_path(*parts))), cache=cache)


def model_presets() -> tuple[str, ...]:
    """Names of the model descriptors shipped with the package.

    Examples
    --------
    >>> "gpt3_175b" in model_presets()
    True
    """
    return packaged_names("models")


def load_model(
    ref: str | Path, base_dir: str | Path | None = None, *, cache: ParseCache | None = None
) -> TransformerSpec | DLRMSpec | ResNetSpec:
    """Load a model descriptor from a YAML path or a preset name.

    ``ref`` is a preset name (:func:`model_presets`) or a path (ending in ``.yaml``/``.yml``
    or holding a ``/``; relative to ``base_dir``, default the working directory); ``cache``
    is the current load's :class:`~libra_opt.io.files.ParseCache`.

    Raises
    ------
    InputError
        Unknown preset, missing file, malformed YAML or an invalid descriptor.

    Examples
    --------
    >>> load_model("llama3_8b").n_layers
    32
    """
    text = str(ref)
    is_path = isinstance(ref, Path) or text.endswith((".yaml", ".yml")) or "/" in text
    if not is_path:
        presets = model_presets()
        if text not in presets:
            raise InputError(f"unknown model preset {short_repr(text, 80)}; presets: "
                             f"{', '.join(presets)} (or give a path to a .yaml descriptor)",
                             field="model")
        data = read_packaged("models", f"{text}.yaml", cache=cache)
        with input_context(f"preset {text}"):
            return model_from_dict(data)
    path = Path(text)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    data = read_yaml(path, cache=cache)
    with input_context(str(path)):
        return model_from_dict(data)


_DEVICES_SOURCE = "libra_opt/data/devices.yaml"


@cache
def _raw_devices() -> Mapping[str, Any]:
    raw = read_packaged("devices.yaml")
    if not isinstance(raw, dict):
        raise InputError("expected a mapping of device presets", source=_DEVICES_SOURCE)
    return MappingProxyType({str(k): v for k, v in raw.items()})


@cache
def _devices() -> Mapping[str, Device]:
    with input_context(_DEVICES_SOURCE):
        return MappingProxyType({k: device_from_dict(k, v) for k, v in _raw_devices().items()})


def device_names() -> tuple[str, ...]:
    """Preset device names.

    Examples
    --------
    >>> device_names()
    ('a100_80gb', 'h100_sxm', 'h200', 'b200', 'mi300x', 'tpu_v5p')
    """
    return tuple(_devices())


def load_device(name: str) -> Device:
    """The preset device called ``name``.

    Examples
    --------
    >>> load_device("h100_sxm").peak_flops_for("bf16")
    989400000000000.0
    """
    presets = _devices()
    if name not in presets:
        raise InputError(f"unknown device {short_repr(name, 80)}; presets: {', '.join(presets)}",
                         field="device")
    return presets[name]


#: Fields of a device entry that describe where its numbers come from (not overrides).
_PROVENANCE = frozenset({"source", "date", "efficiency_source", "roofline_source", "name"})
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def device_from_value(value: Any, source: str, field: str = "device") -> Device:
    """The device a scenario or validation file names: a preset, a preset with overrides,
    or a whole device entry.

    Parameters
    ----------
    value : str or mapping
        * ``"a100_80gb"``: the preset (:func:`device_names`);
        * ``{preset: a100_80gb, default_efficiency: 0.88, ...}``: the preset with the given
          fields replaced (any field of an entry of ``libra_opt/data/devices.yaml``; the
          result keeps the preset's key unless ``key:`` is given). Unless the mapping sets
          ``efficiency_source``, it records which fields were overridden and where, so a
          report never credits the preset's calibration for numbers it did not produce;
        * ``{key: my_npu, name: ..., peak_flops: {...}, ...}``: a whole entry, validated
          like the packaged presets.
    source, field : str
        The file and the field holding ``value``, for error messages.

    Raises
    ------
    InputError
        Naming ``source`` and the field: an unknown preset, an unknown or out-of-range
        field (the packaged presets' schema), a missing ``preset`` / ``key``.

    Examples
    --------
    >>> d = device_from_value({"preset": "a100_80gb", "default_efficiency": 0.8}, "s.yaml")
    >>> d.key, d.default_efficiency, d.hbm_gbps
    ('a100_80gb', 0.8, 2039.0)
    >>> d.efficiency_source
    'a100_80gb preset with default_efficiency = 0.8 from s.yaml'

    ``software_stacks`` adds to (or replaces single constants of) the preset's stacks:

    >>> d = device_from_value({"preset": "a100_80gb", "software_stacks": {"mine": 0.9}}, "s")
    >>> sorted(d.software_stacks)
    ['megatron_deepspeed', 'megatron_deepspeed_2023', 'megatron_lm_2021', 'megatron_lm_2022', 'mine']
    """
    if isinstance(value, str):
        try:
            return load_device(value)
        except InputError as exc:
            raise InputError(exc.message, source=source, field=field) from None
    if not isinstance(value, Mapping):
        raise InputError(f"expected a device preset name or a mapping, got {short_repr(value, 60)}",
                         source=source, field=field)
    entry = {str(k): v for k, v in value.items()}
    preset = entry.pop("preset", None)
    key = entry.pop("key", None)
    if key is not None and not (isinstance(key, str) and 0 < len(key) <= 64
                                and set(key) <= _KEY_CHARS):
        raise InputError(f"expected a name of 1-64 letters, digits, '_', '-' or '.', got "
                         f"{short_repr(key, 60)}", source=source, field=f"{field}.key")
    if preset is None:
        if key is None:
            raise InputError("a device mapping needs 'preset: <name>' (a preset with fields "
                             "replaced) or 'key: <name>' with every field of a device entry",
                             source=source, field=field)
        with input_context(source):
            return device_from_dict(key, entry, field=field)
    presets = _raw_devices()
    if not isinstance(preset, str) or preset not in presets:
        raise InputError(f"unknown device preset {short_repr(preset, 60)}; presets: "
                         f"{', '.join(presets)}", source=source, field=f"{field}.preset")
    merged = dict(copy.deepcopy(presets[preset]))
    stacks = entry.get("software_stacks")
    if isinstance(stacks, Mapping) and isinstance(merged.get("software_stacks"), Mapping):
        entry["software_stacks"] = {**merged["software_stacks"], **stacks}  # add, keep others
    merged.update(entry)
    changed = sorted(k for k in entry if k not in _PROVENANCE)
    if changed and "efficiency_source" not in entry:
        parts = ", ".join(f"{k} = {short_repr(entry[k], 40)}" for k in changed)
        merged["efficiency_source"] = f"{preset} preset with {parts} from {source}"
    with input_context(source):
        return device_from_dict(key or preset, merged, field=field)


def _entry_fields(device: Device) -> dict[str, Any]:
    return {f.name: thaw(getattr(device, f.name)) for f in dataclasses.fields(device)
            if f.name != "key"}


def device_entry(device: Device) -> dict[str, Any]:
    """The mapping :func:`device_from_value` reads back as ``device``: ``{preset: key}`` and
    the fields that differ from the preset, else the whole entry with ``key``.

    Examples
    --------
    >>> import dataclasses
    >>> d = dataclasses.replace(load_device("a100_80gb"), default_efficiency=0.8,
    ...                         efficiency_source="my runs")
    >>> device_entry(d)
    {'preset': 'a100_80gb', 'default_efficiency': 0.8, 'efficiency_source': 'my runs'}
    >>> device_from_value(device_entry(d), "x") == d
    True
    """
    fields = _entry_fields(device)
    presets = _devices()
    if device.key in presets:
        base = _entry_fields(presets[device.key])
        return {"preset": device.key, **{k: v for k, v in fields.items() if base[k] != v}}
    return {"key": device.key, **fields}


def calibrated_devices_yaml(calibrations: Sequence[Any], tables: Sequence[str]) -> str:
    """YAML text of fitted devices (``libra-opt validate --calibrate --out``), one entry per
    device key, each a value :func:`device_from_value` reads (paste it under ``device:``).
    Each calibration has the fitted ``device`` and, per fitted constant (``constants``), its
    value ``before`` and ``after`` (:class:`libra_opt.explore.calibration.DeviceCalibration`).

    Examples
    --------
    >>> from libra_opt.explore.calibration import calibrate_tables
    >>> from libra_opt.io.validation import load_validation_table
    >>> cals = calibrate_tables([load_validation_table("llama3_h100")], ["default_efficiency"])
    >>> text = calibrated_devices_yaml(cals, ["llama3_h100"])
    >>> import yaml
    >>> entry = yaml.safe_load(text)["h100_sxm"]
    >>> device_from_value(entry, "<doc>") == cals[0].device
    True
    """
    head = [
        f"# Devices calibrated by libra-opt {library_version()} (validate --calibrate) on "
        f"{', '.join(str(t) for t in tables)}.",
        "# Each entry is a device value: paste it under `device:` in a scenario workload or a",
        "# validation table's cluster.",
    ]
    for c in calibrations:
        head.append(f"# {c.device.key}: " + "; ".join(
            f"{n} {b:.6g} -> {a:.6g}" for n, b, a in zip(c.constants, c.before, c.after,
                                                          strict=True)))
    body = {c.device.key: device_entry(c.device) for c in calibrations}
    return "\n".join(head) + "\n" + dump_yaml(body, sort_keys=False, width=100)


def available_catalogs() -> tuple[str, ...]:
    """Names of the price catalogs shipped in the package.

    Examples
    --------
    >>> available_catalogs()
    ('current_2025', 'libra_ispass24')
    """
    return packaged_names("catalog")


def load_catalog(
    name_or_path: str | Path = "current_2025",
    overrides: Mapping[str, Any] | None = None,
    *,
    cache: ParseCache | None = None,
) -> Catalog:
    """Load a catalog by preset name or file path, with optional overrides.

    ``name_or_path`` is a name from :func:`available_catalogs` or a YAML file; ``overrides``
    map a dotted path to its value (:func:`libra_opt.cost.catalog.catalog_from_dict`).

    Raises
    ------
    InputError
        Naming the file, the field and what was expected.

    Examples
    --------
    >>> cat = load_catalog("current_2025", {"parts.ib_ndr_switch_64x400g.price_usd": 32000})
    >>> round(cat.parts["ib_ndr_switch_64x400g"].usd_per_gbps, 3)   # 32000 / (64 * 50)
    10.0
    >>> cat.switch_radix("ScaleOut")
    64
    """
    doc, path = catalog_document(name_or_path, cache=cache)
    where = path or f"libra_opt/data/catalog/{name_or_path}.yaml"
    return catalog_from_dict(doc, where, overrides,
                             name=Path(path).stem if path else str(name_or_path))


def catalog_document(ref: str | Path, base_dir: str | Path | None = None, *,
                     cache: ParseCache | None = None) -> tuple[Any, str | None]:
    """A catalog's document, by preset name or path (relative to ``base_dir``), and the file
    it was read from (``None``: a preset); an :class:`InputError` for an unknown name."""
    p = Path(ref)
    if base_dir is not None and not p.is_absolute():
        p = Path(base_dir) / p
    try:
        is_file = p.is_file()  # a folder named like a preset (an output folder) is not one
    except OSError:  # e.g. a name too long for the file system: not a file, so a preset name
        is_file = False
    if p.suffix in (".yaml", ".yml") or is_file:
        return read_yaml(p, cache=cache), str(p)
    names = available_catalogs()
    if str(ref) not in names:
        raise InputError(f"no catalog {short_repr(str(ref), 80)}; presets: {', '.join(names)} "
                         "(or a path)", field="catalog")
    return read_packaged("catalog", f"{ref}.yaml", cache=cache), None


def catalog_cost_model(
    name_or_path: str | Path = "current_2025", overrides: Mapping[str, Any] | None = None
) -> CostModel:
    """Shorthand for ``load_catalog(name_or_path, overrides).cost_model()``.

    Examples
    --------
    >>> cm = catalog_cost_model("libra_ispass24")
    >>> sorted(cm.tiers), cm.has_power
    (['InterChiplet', 'InterNode', 'InterPackage', 'InterPod'], False)
    """
    return load_catalog(name_or_path, overrides).cost_model()
