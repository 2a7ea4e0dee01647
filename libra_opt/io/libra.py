"""Readers and writers for the LIBRA reference's YAML inputs.

* network: ``Topology`` (``Ring``/``FullyConnected``/``Switch``), ``NpusCount``,
  ``CostDimension`` lists, one entry per dimension, innermost first;
* cost model: ``<Tier>: {Link, Switch, Nic}`` in $ per GB/s;
* communicator: ``Forward``, ``InputGrad``, ``WeightGrad``: group size per dimension,
  ``-1`` where the group does not span it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.topology import TOPOLOGY_CLASSES, Topology
from libra_opt.io._yaml import dump_yaml, read_yaml
from libra_opt.io.files import ParseCache
from libra_opt.io.output import write_text_atomic
from libra_opt.options import COMPONENTS

__all__ = [
    "LIBRA_PHASE_GROUPS",
    "read_libra_network",
    "write_libra_network",
    "parse_libra_prices",
    "read_libra_cost_model",
    "write_libra_cost_model",
    "read_libra_communicator",
    "write_libra_communicator",
]

#: LIBRA's topologies (ASTRA-sim's names, read case-insensitively).
_TOPO_IN: dict[str, Topology] = {
    t.astra_sim_name.lower(): t() for t in TOPOLOGY_CLASSES if t.astra_sim_name is not None}
_COMP_OUT = {"link": "Link", "switch": "Switch", "nic": "Nic"}
#: Communicator key -> (phase name, group name used by the ASTRA-sim reader).
LIBRA_PHASE_GROUPS = {"Forward": "forward", "InputGrad": "input_grad", "WeightGrad": "weight_grad"}


def _mapping(data: Any, source: str, what: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise InputError(f"expected a mapping at the top of the {what} file", source=source)
    return data


def _dim_name(tier: str, taken: set[str], i: int) -> str:
    base = tier[5:] if tier.lower().startswith("inter") and len(tier) > 5 else tier
    base = "".join(ch for ch in base.lower() if ch.isalnum() or ch == "_") or f"dim{i}"
    if not base[0].isalpha():
        base = f"d_{base}"
    name = base if base not in taken else f"{base}{i}"
    taken.add(name)
    return name


def read_libra_network(path: str | Path, *, cache: ParseCache | None = None) -> Fabric:
    """Read a LIBRA network YAML into a :class:`Fabric`; dimension names come from the cost
    tiers (``InterPod`` -> ``pod``; a repeated tier gets its index appended)."""
    src = str(path)
    data = _mapping(read_yaml(path, cache=cache), src, "network")
    expected = {"Topology", "NpusCount", "CostDimension"}
    unknown = sorted(map(str, set(data) - expected))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected Topology, NpusCount, "
                         "CostDimension", source=src)
    for key in sorted(expected):
        v = data.get(key)
        if not isinstance(v, list) or not v:
            raise InputError("expected a non-empty list", source=src, field=key)
    n = len(data["Topology"])
    for key in ("NpusCount", "CostDimension"):
        if len(data[key]) != n:
            raise InputError(f"has {len(data[key])} entries, Topology has {n}", source=src,
                             field=key)
    dims = []
    taken: set[str] = set()
    for i, (topo, size, tier) in enumerate(
            zip(data["Topology"], data["NpusCount"], data["CostDimension"], strict=True)):
        t = _TOPO_IN.get(str(topo).lower())
        if t is None:
            raise InputError(f"{short_repr(topo, 80)} is not Ring, FullyConnected or Switch",
                             source=src, field=f"Topology[{i}]")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InputError(f"{short_repr(size, 80)} must be a positive integer", source=src,
                             field=f"NpusCount[{i}]")
        if not isinstance(tier, str) or not tier:
            raise InputError("expected a tier name", source=src, field=f"CostDimension[{i}]")
        try:
            dims.append(Dim(_dim_name(tier, taken, i), t, size, tier))
        except InputError as exc:
            raise InputError(exc.message, source=src, field=f"dimension {i}") from None
    return Fabric(tuple(dims))


def write_libra_network(fabric: Fabric, path: str | Path) -> None:
    """Write ``fabric`` as a LIBRA network YAML (dimension names and latencies are not kept;
    a topology LIBRA does not have, a mesh, is refused)."""
    for d in fabric.dims:
        if d.topology.astra_sim_name is None:
            raise InputError(f"LIBRA's network format has no {d.topology} topology "
                             f"(dimension {d.name!r})", field=f"fabric.dims.{d.name}.topology")
    write_text_atomic(path, (
        f"Topology: [ {', '.join(str(d.topology.astra_sim_name) for d in fabric.dims)} ]\n"
        f"NpusCount: [ {', '.join(str(d.size) for d in fabric.dims)} ]  # {fabric.n_npus} NPUs\n"
        f"CostDimension: [ {', '.join(d.tier for d in fabric.dims)} ]\n"))


def parse_libra_prices(data: Any, source: str, field: str) -> dict[str, dict[str, float]]:
    """Validate ``{Tier: {Link|Switch|Nic: value}}`` (keys case-insensitive)."""
    if not isinstance(data, Mapping) or not data:
        raise InputError("expected a mapping {Tier: {Link, Switch, Nic}} of numbers",
                         source=source, field=field)
    out: dict[str, dict[str, float]] = {}
    for tier, comps in data.items():
        where = f"{field}.{tier}"
        if not isinstance(comps, Mapping) or not comps:
            raise InputError("expected a mapping of Link / Switch / Nic to numbers",
                             source=source, field=where)
        table: dict[str, float] = {}
        for comp, value in comps.items():
            key = str(comp).lower()
            if key not in COMPONENTS:
                raise InputError(f"unknown component {short_repr(comp, 80)}; expected Link, "
                                 "Switch or Nic", source=source, field=where)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{short_repr(value)} is not a number", source=source,
                                 field=f"{where}.{comp}")
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{short_repr(value)} must be finite and >= 0", source=source,
                                 field=f"{where}.{comp}")
            if key in table:
                raise InputError(f"component {comp!r} given twice", source=source, field=where)
            table[key] = float(value)
        out[str(tier)] = table
    return out


def read_libra_cost_model(path: str | Path, *, cache: ParseCache | None = None
                          ) -> dict[str, dict[str, float]]:
    """Read a LIBRA cost-model YAML: tier -> component (``link``/``switch``/``nic``) -> $/GB/s
    (``cache``: the current load's :class:`~libra_opt.io.files.ParseCache`)."""
    return parse_libra_prices(read_yaml(path, cache=cache), str(path), "cost_model")


def write_libra_cost_model(tables: Mapping[str, Mapping[str, float]], path: str | Path) -> None:
    """Write ``{tier: {component: value}}`` in LIBRA's cost-model layout."""
    for tier, comps in tables.items():
        extra = sorted(set(comps) - set(_COMP_OUT))
        if extra:
            raise InputError(f"tier {tier!r} prices {', '.join(extra)}, which the LIBRA "
                             "cost-model format cannot hold (it has Link, Switch and Nic)",
                             field=f"cost_model.{tier}")
    out = {tier: {_COMP_OUT[c]: float(v) for c, v in comps.items()}
           for tier, comps in tables.items()}
    write_text_atomic(path, "# Network component costs in $ per GB/s.\n"
                      + dump_yaml(out, sort_keys=False))


def read_libra_communicator(path: str | Path, *, cache: ParseCache | None = None
                            ) -> dict[str, tuple[int, ...]]:
    """Read a LIBRA communicator YAML into group spans: ``{"forward": span, "input_grad":
    span, "weight_grad": span}`` with ``-1`` (not spanned) turned into ``1`` (``cache``: the
    current load's :class:`~libra_opt.io.files.ParseCache`)."""
    src = str(path)
    data = _mapping(read_yaml(path, cache=cache), src, "communicator")
    unknown = sorted(set(map(str, data)) - set(LIBRA_PHASE_GROUPS))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected Forward, InputGrad, "
                         "WeightGrad", source=src)
    groups = {}
    for key, group in LIBRA_PHASE_GROUPS.items():
        if key not in data:
            raise InputError("missing (a list of group sizes, -1 = not spanned)", source=src,
                             field=key)
        v = data[key]
        if not isinstance(v, list) or not v:
            raise InputError("expected a list of group sizes", source=src, field=key)
        for i, k in enumerate(v):
            if isinstance(k, bool) or not isinstance(k, int) or (k < 1 and k != -1):
                raise InputError(f"{short_repr(k, 80)} must be a positive integer or -1 (not "
                                 "spanned)", source=src, field=f"{key}[{i}]")
        groups[group] = tuple(1 if k == -1 else k for k in v)
    if len({len(span) for span in groups.values()}) != 1:
        raise InputError("Forward, InputGrad and WeightGrad must list the same number of "
                         "dimensions", source=src)
    return groups


def write_libra_communicator(groups: Mapping[str, tuple[int, ...]], path: str | Path) -> None:
    """Write per-phase group spans (keys ``forward``/``input_grad``/``weight_grad``)."""
    lines = []
    for key, group in LIBRA_PHASE_GROUPS.items():
        if group not in groups:
            raise InputError(f"no span for group {group!r}", field="groups")
        span = ", ".join(str(k if k > 1 else -1) for k in groups[group])
        lines.append(f"{key}: [ {span} ]")
    write_text_atomic(path, "\n".join(lines) + "\n")
