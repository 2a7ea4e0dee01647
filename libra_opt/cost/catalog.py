"""Price and power catalogs: parts with sources and dates, turned into a :class:`CostModel`.

A catalog (:func:`libra_opt.io.presets.load_catalog`) has ``parts`` (switch, nic,
transceiver or link, with a ``source`` and ``date``) and ``tiers`` (tier -> component ->
part; ``copper`` names a link used on copper cable levels, ``in_network_reduction`` a
switch part). A device's ``usd_per_gbps`` is ``price_usd / (ports * port_gbps)`` for a
switch or NIC, ``price_usd / gbps`` for a transceiver or cable (the same with ``power_w``),
bandwidths in GB/s per direction (400 Gb/s = 50 GB/s).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError, short_repr
from libra_opt.options import PRICED_COMPONENTS

__all__ = ["PART_KINDS", "Part", "Catalog", "catalog_from_dict"]

PART_KINDS: tuple[str, ...] = ("switch", "nic", "transceiver", "link")
# Part kind a tier component must name when it differs from the component's name.
_PART_KIND_OF = {"copper": "link", "in_network_reduction": "switch"}
_PART_KEYS = {"kind", "model", "ports", "port_gbps", "gbps", "price_usd", "power_w",
              "usd_per_gbps", "w_per_gbps", "source", "date"}


@dataclass(frozen=True)
class Part:
    """One catalog entry, converted to $ and W per GB/s (``w_per_gbps`` ``None`` without a power;
    ``ports``: a switch's radix).
    """

    name: str
    kind: str
    model: str
    usd_per_gbps: float
    w_per_gbps: float | None
    ports: int | None
    port_gbps: float | None
    source: str
    date: str


@dataclass(frozen=True)
class Catalog:
    """A loaded catalog: parts and the part used for each component of each tier.

    Examples
    --------
    >>> from libra_opt.io.presets import load_catalog
    >>> cat = load_catalog("libra_ispass24")
    >>> cat.cost_model().tiers["InterPod"].usd_per_gbps["nic"]
    31.6
    """

    name: str
    description: str
    parts: Mapping[str, Part]
    tiers: Mapping[str, Mapping[str, str]]

    def cost_model(self) -> CostModel:
        """The :class:`~libra_opt.cost.prices.CostModel` of every tier (power when every part has it)."""
        usd = {t: {c: self.parts[p].usd_per_gbps for c, p in comps.items()}
               for t, comps in self.tiers.items()}
        watts = {t: {c: self.parts[p].w_per_gbps for c, p in comps.items()}
                 for t, comps in self.tiers.items()}
        has_power = all(w is not None for comps in watts.values() for w in comps.values())
        return CostModel.from_tables(usd, watts if has_power else None)  # type: ignore[arg-type]

    def switch_radix(self, tier: str) -> int | None:
        """Ports per switch of ``tier``'s switch part (``None`` when it gives none)."""
        if tier not in self.tiers:
            raise InputError(
                f"catalog {self.name!r} has no tier {tier!r} (tiers: {', '.join(self.tiers)})",
                field="tier",
            )
        part = self.tiers[tier].get("switch")
        return None if part is None else self.parts[part].ports

    def table(self):
        """All parts as a :class:`pandas.DataFrame` (for reports: numbers with sources)."""
        import pandas as pd

        used = {p: f"{t}.{c}" for t, comps in self.tiers.items() for c, p in comps.items()}
        return pd.DataFrame(
            [
                {"part": p.name, "kind": p.kind, "model": p.model,
                 "usd_per_gbps": p.usd_per_gbps, "w_per_gbps": p.w_per_gbps,
                 "radix": p.ports if p.kind == "switch" else None, "used_by": used.get(p.name),
                 "source": p.source, "date": p.date}
                for p in self.parts.values()
            ]
        )


def _apply_overrides(doc: dict, overrides: Mapping[str, Any], source: str) -> dict:
    doc = copy.deepcopy(doc)
    for path, value in overrides.items():
        keys = str(path).split(".")
        if keys[0] not in ("parts", "tiers") or len(keys) != 3:
            raise InputError(
                f"override {short_repr(path, 80)}: expected 'parts.<part>.<field>' or "
                "'tiers.<tier>.<component>'",
                source=source,
                field="overrides",
            )
        section = doc.setdefault(keys[0], {})
        if not isinstance(section, dict):
            raise InputError(f"{keys[0]} must be a mapping", source=source, field=keys[0])
        if keys[1] not in section and (keys[0] == "tiers" or value is not None):
            section[keys[1]] = {}
        if keys[1] not in section:
            raise InputError(f"override {short_repr(path, 80)}: no part {short_repr(keys[1], 80)}",
                             source=source, field="overrides")
        entry = section[keys[1]]
        if not isinstance(entry, dict):
            raise InputError("expected a mapping", source=source, field=f"{keys[0]}.{keys[1]}")
        if value is None:
            entry.pop(keys[2], None)
        else:
            entry[keys[2]] = value
    return doc


def finite_number(value: Any, field: str, source: str | None = None,
                  positive: bool = False) -> float:
    """``value`` as a finite number ``>= 0`` (``> 0`` when ``positive``), else an
    :class:`~libra_opt.errors.InputError` naming ``field``."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{short_repr(value)} is not a number", source=source,
                         field=field) from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise InputError(f"{short_repr(value)} must be finite and "
                         f"{'> 0' if positive else '>= 0'}", source=source, field=field)
    return x


def _part(name: str, entry: Any, source: str) -> Part:
    fld = f"parts.{name}"
    if not isinstance(entry, Mapping):
        raise InputError("expected a mapping", source=source, field=fld)
    unknown = sorted(map(str, set(entry) - _PART_KEYS))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected "
                         f"{', '.join(sorted(_PART_KEYS))}", source=source, field=fld)
    kind = entry.get("kind")
    if kind not in PART_KINDS:
        raise InputError(f"kind {short_repr(kind, 80)} is not one of {', '.join(PART_KINDS)}",
                         source=source, field=f"{fld}.kind")
    for key in ("source", "date"):
        if not str(entry.get(key) or "").strip():
            raise InputError("every part needs a source and a date for its numbers",
                             source=source, field=f"{fld}.{key}")

    def number(key: str, positive: bool = False) -> float:
        return finite_number(entry[key], f"{fld}.{key}", source, positive)

    ports = port_gbps = None
    if "usd_per_gbps" in entry:
        usd = number("usd_per_gbps")
        w = number("w_per_gbps") if "w_per_gbps" in entry else None
        if "ports" in entry:
            ports = int(number("ports", positive=True))
    else:
        needs = ("ports", "port_gbps") if kind in ("switch", "nic") else ("gbps",)
        for key in needs:
            if key not in entry:
                raise InputError(f"a {kind} needs {' and '.join(needs)} (or usd_per_gbps)",
                                 source=source, field=f"{fld}.{key}")
        if kind in ("switch", "nic"):
            ports = int(number("ports", positive=True))
            port_gbps = number("port_gbps", positive=True)
            gbps = ports * port_gbps
        else:
            gbps = number("gbps", positive=True)
        if "price_usd" not in entry:
            raise InputError("needs price_usd (or usd_per_gbps)", source=source,
                             field=f"{fld}.price_usd")
        usd = number("price_usd") / gbps
        w = number("power_w") / gbps if "power_w" in entry else None
    return Part(name=name, kind=kind, model=str(entry.get("model", name)), usd_per_gbps=usd,
                w_per_gbps=w, ports=ports, port_gbps=port_gbps, source=str(entry["source"]),
                date=str(entry["date"]))


def catalog_from_dict(
    doc: Any, source: str, overrides: Mapping[str, Any] | None = None, name: str = "catalog"
) -> Catalog:
    """Validate a catalog mapping (``name``, ``description``, ``currency`` USD, ``parts`` and
    ``tiers``, read from ``source``) after applying ``overrides``: dotted path -> value,
    ``"parts.<part>.<field>"`` (a new part name adds a part) or ``"tiers.<tier>.<component>"``
    -> part name, ``None`` removing it. Errors name ``source``, the field and what was expected.

    Examples
    --------
    >>> doc = {"parts": {"sw": {"kind": "switch", "ports": 64, "port_gbps": 50,
    ...                         "price_usd": 32000, "source": "quote", "date": "2025-01"}},
    ...        "tiers": {"T": {"switch": "sw"}}}
    >>> catalog_from_dict(doc, "<dict>").cost_model().tiers["T"].usd_per_gbps["switch"]
    10.0
    """
    if not isinstance(doc, dict):
        raise InputError("expected a mapping at the top of the catalog", source=source)
    unknown = sorted(map(str, set(doc) - {"name", "description", "currency", "parts", "tiers"}))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}", source=source)
    if doc.get("currency", "USD") != "USD":
        raise InputError(f"currency {short_repr(doc['currency'], 80)}: only USD is supported", source=source,
                         field="currency")
    doc = _apply_overrides(doc, dict(overrides or {}), source)
    raw_parts = doc.get("parts") or {}
    raw_tiers = doc.get("tiers") or {}
    if not isinstance(raw_parts, Mapping) or not isinstance(raw_tiers, Mapping):
        raise InputError("parts and tiers must be mappings", source=source)
    parts = {str(n): _part(str(n), e, source) for n, e in raw_parts.items()}
    tiers: dict[str, Mapping[str, str]] = {}
    for tier, comps in raw_tiers.items():
        fld = f"tiers.{tier}"
        if not isinstance(comps, Mapping) or not comps:
            raise InputError("expected a mapping component -> part", source=source, field=fld)
        for comp, part in comps.items():
            if comp not in PRICED_COMPONENTS:
                raise InputError(f"unknown component {short_repr(comp, 80)}; expected one of "
                                 f"{', '.join(PRICED_COMPONENTS)}", source=source,
                                 field=f"{fld}.{comp}")
            if not isinstance(part, str) or part not in parts:
                raise InputError(f"part {short_repr(part, 80)} is not in the catalog's parts", source=source,
                                 field=f"{fld}.{comp}")
            want = _PART_KIND_OF.get(comp, comp)
            if parts[part].kind != want:
                raise InputError(f"part {part!r} is a {parts[part].kind}, not a {want}",
                                 source=source, field=f"{fld}.{comp}")
        tiers[str(tier)] = MappingProxyType(dict(comps))
    return Catalog(str(doc.get("name", name)), str(doc.get("description", "")),
                   MappingProxyType(parts), MappingProxyType(tiers))


