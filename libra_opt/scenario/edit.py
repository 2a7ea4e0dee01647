"""Edits of a :class:`~libra_opt.scenario.spec.ScenarioSpec` by dotted path.

Path grammar (the same for :meth:`ScenarioSpec.replace`, ``--set PATH=VALUE``,
:func:`libra_opt.apply_overrides` and sweep axes):

* keys joined by dots, the scenario file's keys: ``fabric.dims.pod.size``,
  ``workloads.gpt3.parallelism.tp``, ``tco.pue``, ``collectives.chunks``;
* list items by ``[i]`` (0-based) or by their ``name`` (``.<name>`` or ``[<name>]`` for
  names with dots): ``fabric.dims[3].latency_s``, ``constraints.bounds.scaleout[1]``;
* ``fabric.<parameter>`` for a builder fabric's parameters (``fabric.hb_domain``);
* ``budget_usd`` and ``power_w`` (also ``constraints.budget_usd`` / ``constraints.power_w``;
  ``None`` removes the cap) and a linear constraint's label, i.e. its text as the scenario
  shows it (``"sum(bw) == 1000"``, ``"bw.hb >= 100.0"``): its right-hand side;
* a section that is absent is created by a path into it (``collectives.chunks``); the
  section's own checks then refuse keys it does not know.

A value is checked against the field's type (numbers may be given as text); inside an open
mapping (``parallelism``, builder parameters) it must be of the old value's kind.

Examples
--------
>>> parse_value("8"), parse_value("2e7"), parse_value("true"), parse_value("perf")
(8, 20000000.0, True, 'perf')
>>> segments("fabric.dims[3].size")
['fabric', 'dims', 3, 'size']
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping
from typing import Any

import numpy as np

from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.scenario._values import (
    API_SOURCE,
    FrozenMap,
    Ref,
    _hints,
    _Node,
    coerce,
    freeze,
    parse_value,
    union_members,
)

__all__ = ["CAP_PATHS", "canonical_path", "get_path", "parse_value", "segments", "set_path"]

#: Caps whose value is a right-hand side (aliases -> canonical name).
CAP_PATHS: dict[str, str] = {
    "budget_usd": "budget_usd",
    "power_w": "power_w",
    "constraints.budget_usd": "budget_usd",
    "constraints.power_w": "power_w",
}
_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def canonical_path(path: str) -> str:
    """``constraints.budget_usd`` -> ``budget_usd`` (and ``power_w``); other paths unchanged."""
    return CAP_PATHS.get(path, path)


@input_context(API_SOURCE)  # a value given in Python
def segments(path: str) -> list[str | int]:
    """``fabric.dims[3].size`` -> ``['fabric', 'dims', 3, 'size']``."""
    out: list[str | int] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == "." and out:
            pos += 1
        m = _SEGMENT.match(text, pos)
        if m is None or m.end() == pos:
            raise InputError(f"malformed path {short_repr(path)}: expected keys joined by "
                             "dots, list items as [i] or by name", field=path)
        key = m.group(1) if m.group(1) is not None else m.group(2).strip()
        if m.group(2) is not None and re.fullmatch(r"-?\d+", key):
            out.append(int(key))
        elif not key:
            raise InputError(f"malformed path {short_repr(path)}: empty key", field=path)
        else:
            out.append(key)
        pos = m.end()
    if not out:
        raise InputError("empty path", field=path)
    return out


@input_context(API_SOURCE)
def compatible(old: Any, new: Any, path: str) -> Any:
    """``new`` checked against the kind of ``old`` (numbers stay numbers, text stays text;
    an integral float is taken as an integer where ``old`` is one)."""
    if isinstance(new, np.generic):
        new = new.item()
    if old is None or new is None:
        return freeze(new)
    if isinstance(new, str) and not isinstance(old, str):
        new = parse_value(new)
    if isinstance(old, bool):
        if not isinstance(new, bool):
            raise InputError(f"expected true or false, got {short_repr(new)}", field=path)
        return new
    if isinstance(old, int | float):
        if isinstance(new, bool) or not isinstance(new, int | float):
            raise InputError(f"expected a number, got {short_repr(new)}", field=path)
        if isinstance(old, int) and isinstance(new, float) and new.is_integer():
            return int(new)
        return new
    for kind, what, ok in ((str, "text", str), (tuple, "a list", list | tuple),
                           (Mapping, "a mapping", Mapping)):
        if isinstance(old, kind) and not isinstance(new, ok):
            raise InputError(f"expected {what}, got {short_repr(new)}", field=path)
    return freeze(new)


@input_context(API_SOURCE)
def _dim_names(value: Any, path: str) -> tuple[str, ...]:
    """A list of dimension names given as a list, a YAML list text, one name, or none.

    Examples
    --------
    >>> _dim_names("[pod, node]", "p"), _dim_names("pod", "p"), _dim_names("none", "p")
    (('node', 'pod'), ('pod',), ())
    """
    if isinstance(value, str):
        value = parse_value(value)
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(sorted(set(value)))
    raise InputError(f"expected a list of dimension names, got {short_repr(value)}", field=path)


def _number(value: Any, path: str) -> float:
    """``value`` as a finite number (text parsed); errors name ``path``."""
    return float(coerce(float, value, path))


@input_context(API_SOURCE)
def set_path(spec: Any, path: str, value: Any) -> Any:
    """``spec`` with ``path`` set to ``value`` (see the module notes).

    Raises
    ------
    InputError
        Naming ``path`` (as given) and what was expected.
    """
    if not isinstance(path, str) or not path.strip():
        raise InputError(f"expected a path, got {short_repr(path)}", field="overrides")
    if path in CAP_PATHS:
        cap = None if value is None or (isinstance(value, str) and parse_value(value) is None) \
            else _number(value, path)
        return _rebuilt(spec, ["constraints", CAP_PATHS[path]], cap, path)
    if path in spec.rhs_labels():
        rhs = spec.constraints.rhs.set(path, _number(value, path))
        return _rebuilt(spec, ["constraints", "rhs"], rhs, path)
    if path == "in_network_reduction":
        return _rebuilt(spec, ["in_network_reduction"], _dim_names(value, path), path)
    return _rebuilt(spec, segments(path), value, path)


def _rebuilt(spec: Any, segs: list[str | int], value: Any, path: str) -> Any:
    try:
        return _set(spec, segs, value, path, "", None)
    except InputError as exc:
        if exc.field == path or exc.source not in (None, API_SOURCE):
            raise
        detail = f"{exc.field}: {exc.message}" if exc.field else exc.message
        raise InputError(detail, field=path) from None


def _where(where: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{where}[{key}]"
    return f"{where}.{key}" if where else key


def _set(node: Any, segs: list[str | int], value: Any, path: str, where: str,
         tp: Any) -> Any:
    """``node`` with ``segs`` set to ``value``; ``tp`` is the annotated type of ``node``
    (``None`` inside an open mapping)."""
    if not segs:
        if tp is None:
            return compatible(node, value, path)
        return coerce(tp, value, path, kind=where.rsplit(".", 1)[-1])  # a Ref: its field
    key, rest = segs[0], segs[1:]
    if isinstance(node, _Node):
        return _set_field(node, key, rest, value, path, where)
    if isinstance(node, Ref):
        if not isinstance(node.ref, FrozenMap):
            raise InputError(f"{where!r} holds {short_repr(node.ref, 60)}, not a mapping",
                             field=path)
        return Ref(_set(node.ref, segs, value, path, where, None))  # read again by io
    if node is None:
        if tp is not None and _is_spec_type(tp):
            # an absent section: built from the one key given (its checks apply)
            built = _set(FrozenMap(), segs, value, path, where, None)
            return coerce(tp, built, where)
        node = FrozenMap()
    if isinstance(node, tuple):
        i = _index(node, key, path, where)
        item_tp = None
        if tp is not None:
            item_tp = next((typing.get_args(a)[0] for a in union_members(tp)
                            if typing.get_origin(a) is tuple), None)
        new = _set(node[i], rest, value, path, _where(where, key), item_tp)
        return (*node[:i], new, *node[i + 1:])
    if isinstance(node, FrozenMap):
        if isinstance(key, int):
            raise InputError(f"{where or 'the spec'!r} is a mapping, not a list: use .key",
                             field=path)
        child = node.get(key)
        if child is None and key not in node and rest and not isinstance(rest[0], str):
            keys = ", ".join(map(str, node)) or "none"
            raise InputError(f"no key {short_repr(key, 60)} under {where or 'the spec'!r} "
                             f"(keys: {keys})", field=path)
        return node.set(key, _set(child, rest, value, path, _where(where, key), None))
    raise InputError(f"{where!r} holds {short_repr(node, 60)}, not a mapping or list", field=path)


def _set_field(node: Any, key: str | int, rest: list[str | int], value: Any, path: str,
               where: str) -> Any:
    names = [f.name for f in dataclasses.fields(node) if f.init]  # type: ignore[arg-type]
    if isinstance(key, str) and key not in names and _is_builder(node) \
            and node.builder is not None:
        args = node.args.set(key, _set(node.args.get(key), rest, value, path,
                                       _where(where, key), None))
        return dataclasses.replace(node, args=args)
    if not isinstance(key, str) or key not in names:
        shown = ", ".join(n for n in names if n not in ("source", "base_dir"))
        raise InputError(f"no field {short_repr(key, 60)} under {where or 'the spec'!r} "
                         f"(fields: {shown})", field=path)
    tp = _hints(typing.cast(Any, type(node)))[key]
    typed = getattr(node, "_OPEN", {}).get(key)
    current = getattr(node, key)
    if typed is not None and len(rest) == 1 and isinstance(rest[0], str) \
            and isinstance(current, FrozenMap) and typed(rest[0]) is not None:
        new: Any = current.set(rest[0], coerce(typed(rest[0]), value, path))
    else:
        new = _set(current, rest, value, path, _where(where, key), tp)
    try:
        return dataclasses.replace(node, **{key: new})
    except InputError as exc:
        if exc.source not in (None, API_SOURCE):
            raise
        raise InputError(exc.message, field=path) from None


def _is_spec_type(tp: Any) -> bool:
    return any(isinstance(a, type) and issubclass(a, _Node) for a in union_members(tp))


def _index(items: tuple[Any, ...], key: str | int, path: str, where: str) -> int:
    """The position of ``key`` (an index, or an item's ``name``) in ``items``."""
    if isinstance(key, int):
        if not -len(items) <= key < len(items):
            raise InputError(f"index {key} is out of range under {where!r} "
                             f"({len(items)} items)", field=path)
        return key % len(items)
    names = [getattr(it, "name", None) if not isinstance(it, Mapping) else it.get("name")
             for it in items]
    if key not in names:
        shown = ", ".join(str(n) for n in names if n is not None) or "none"
        raise InputError(f"no item named {short_repr(key, 60)} under {where!r} "
                         f"(names: {shown})", field=path)
    return names.index(key)


@input_context(API_SOURCE)
def get_path(spec: Any, path: str) -> Any:
    """The value at ``path`` of ``spec`` (a cap or a constraint label: its right-hand side,
    ``None`` when not replaced); a :class:`Ref` reads as what the scenario wrote.

    Raises
    ------
    InputError
        Naming ``path`` when nothing is there.

    Examples
    --------
    >>> from libra_opt.scenario.spec import DimSpec, FabricSpec, Ref, ScenarioSpec, WorkloadSpec
    >>> spec = ScenarioSpec(fabric=FabricSpec(dims=(DimSpec("node", "ring", 4, "NVLink"),)),
    ...                     cost_model={"NVLink": {"link": 1.0}},
    ...                     workloads=(WorkloadSpec("w", astra_sim=Ref("w.txt"),
    ...                                             communicator=Ref("c.yml")),))
    >>> get_path(spec.replace("fabric.dims.node.size", "8"), "fabric.dims[0].size")
    8
    """
    if path in CAP_PATHS:
        return getattr(spec.constraints, CAP_PATHS[path])
    if path in spec.rhs_labels():
        return spec.constraints.rhs.get(path)
    node: Any = spec
    where = ""
    for key in segments(path):
        if isinstance(node, Ref):
            node = node.ref
        if _is_builder(node) and isinstance(key, str) and node.builder is not None \
                and key not in {f.name for f in dataclasses.fields(node)}:
            node = node.args
        if isinstance(node, _Node) and isinstance(key, str) and \
                key in {f.name for f in dataclasses.fields(node)}:  # type: ignore[arg-type]
            node = getattr(node, key)
        elif isinstance(node, tuple):
            node = node[_index(node, key, path, where)]
        elif isinstance(node, Mapping) and key in node:
            node = node[key]
        else:
            raise InputError(f"nothing at {short_repr(key, 60)} under {where or 'the spec'!r}",
                             field=path)
        where = _where(where, key)
    return node.ref if isinstance(node, Ref) else node


def _is_builder(node: Any) -> bool:
    """Whether ``node`` is a builder fabric's spec (its parameters are reached as fields)."""
    return type(node).__name__ == "FabricSpec" and getattr(node, "builder", None) is not None
