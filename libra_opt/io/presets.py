"""Packaged presets read from ``libra_opt/data``: model descriptors, devices and catalogs.

Every preset file is read here (through :func:`libra_opt.io.yaml_util.load_yaml`, strict
YAML) and validated by the parser of the layer that owns it:
:func:`libra_opt.generators.descriptors.model_from_dict`,
:func:`libra_opt.generators.devices.device_from_dict` and
:func:`libra_opt.cost.catalog.catalog_from_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from libra_opt.cost.catalog import Catalog, catalog_from_dict
from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError, short_repr
from libra_opt.generators.descriptors import DLRMSpec, ResNetSpec, TransformerSpec, model_from_dict
from libra_opt.generators.devices import Device, device_from_dict
from libra_opt.io.files import ParseCache
from libra_opt.io.yaml_util import load_yaml

__all__ = [
    "model_presets",
    "load_model",
    "device_names",
    "load_device",
    "available_catalogs",
    "load_catalog",
    "catalog_cost_model",
]


def _data(*parts: str):
    return resources.files("libra_opt").joinpath("data", *parts)


def _read_packaged(*parts: str, cache: ParseCache | None = None) -> Any:
    with resources.as_file(_data(*parts)) as p:
        return load_yaml(p, cache=cache)


def model_presets() -> tuple[str, ...]:
    """Names of the model descriptors shipped with the package.

    Examples
    --------
    >>> "gpt3_175b" in model_presets()
    True
    """
    names = [p.name[: -len(".yaml")] for p in _data("models").iterdir() if p.name.endswith(".yaml")]
    return tuple(sorted(names))


def load_model(
    ref: str | Path, base_dir: str | Path | None = None, *, cache: ParseCache | None = None
) -> TransformerSpec | DLRMSpec | ResNetSpec:
    """Load a model descriptor from a YAML path or a preset name.

    Parameters
    ----------
    ref : str or pathlib.Path
        A path (absolute, or relative to ``base_dir``; anything ending in ``.yaml``/``.yml``
        or containing a path separator) or a preset name from :func:`model_presets`.
    base_dir : str or pathlib.Path, optional
        Directory relative paths are resolved against (default: the working directory).
    cache : ParseCache, optional
        The current load's :class:`~libra_opt.io.files.ParseCache` (a descriptor it
        holds is not parsed again).

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
            raise InputError(
                f"unknown model preset {short_repr(text, 80)}; presets: {', '.join(presets)} "
                "(or give a path to a .yaml descriptor)",
                field="model",
            )
        return model_from_dict(
            _read_packaged("models", f"{text}.yaml", cache=cache), source=f"preset {text}"
        )
    path = Path(text)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return model_from_dict(load_yaml(path, cache=cache), source=str(path))


@cache
def _devices() -> Mapping[str, Device]:
    raw = _read_packaged("devices.yaml")
    source = "libra_opt/data/devices.yaml"
    if not isinstance(raw, dict):
        raise InputError("expected a mapping of device presets", source=source)
    return MappingProxyType(
        {str(k): device_from_dict(str(k), v, source) for k, v in raw.items()}
    )


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
        raise InputError(
            f"unknown device {short_repr(name, 80)}; presets: {', '.join(presets)}", field="device"
        )
    return presets[name]


def available_catalogs() -> tuple[str, ...]:
    """Names of the price catalogs shipped in the package.

    Examples
    --------
    >>> available_catalogs()
    ('current_2025', 'libra_ispass24')
    """
    root = _data("catalog")
    return tuple(sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml")))


def load_catalog(
    name_or_path: str | Path = "current_2025",
    overrides: Mapping[str, Any] | None = None,
    *,
    cache: ParseCache | None = None,
) -> Catalog:
    """Load a catalog by preset name or file path, with optional overrides.

    Parameters
    ----------
    name_or_path : str or Path
        A name from :func:`available_catalogs` or a YAML file.
    overrides : mapping, optional
        Dotted path -> value (see :func:`libra_opt.cost.catalog.catalog_from_dict`).
    cache : ParseCache, optional
        The current load's :class:`~libra_opt.io.files.ParseCache`.

    Returns
    -------
    Catalog

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
    p = Path(name_or_path)
    try:
        exists = p.exists()
    except OSError:  # e.g. a name too long for the file system: not a file, so a preset name
        exists = False
    if p.suffix in (".yaml", ".yml") or exists:
        return catalog_from_dict(load_yaml(p, cache=cache), str(p), overrides, name=p.stem)
    names = available_catalogs()
    if str(name_or_path) not in names:
        raise InputError(
            f"no catalog {short_repr(str(name_or_path), 80)}; presets: {', '.join(names)} (or a path)",
            field="catalog",
        )
    doc = _read_packaged("catalog", f"{name_or_path}.yaml", cache=cache)
    return catalog_from_dict(
        doc, f"libra_opt/data/catalog/{name_or_path}.yaml", overrides, name=str(name_or_path)
    )


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
