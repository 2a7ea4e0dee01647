"""The values a :class:`~libra_opt.scenario.spec.ScenarioSpec` is made of: read-only
mappings (:class:`FrozenMap`), file-backed entries (:class:`Ref`), the base of the spec's
dataclasses (fields checked against their annotated types by :func:`coerce`) and the
parsing of values given as text (:func:`parse_value`)."""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np
import yaml

from libra_opt.errors import API_SOURCE, InputError, input_context, short_repr
from libra_opt.fabric.frozen import FrozenMap as ReadOnlyMap

__all__ = [
    "API_SOURCE",
    "FrozenMap",
    "Ref",
    "bounded",
    "coerce",
    "freeze",
    "from_mapping",
    "missing_error",
    "parse_value",
    "thaw",
    "unique_labels",
]


class FrozenMap(ReadOnlyMap):
    """A read-only, hashable mapping (insertion order kept) whose nested values are frozen.

    Examples
    --------
    >>> m = FrozenMap({"tp": 8, "precision": {"grad_bytes": 4}, "dims": [1, 2]})
    >>> m["dims"], m["precision"]["grad_bytes"], m == {"tp": 8, "precision": {"grad_bytes": 4},
    ...                                                 "dims": (1, 2)}
    ((1, 2), 4, True)
    >>> hash(m) == hash(FrozenMap(thaw(m)))
    True
    """

    __slots__ = ("_h",)
    _h: int | None

    def __init__(self, data: Mapping[Any, Any] | None = None) -> None:
        if type(data) is FrozenMap:  # its values are frozen already
            d = dict(data._items)
        else:
            d = {} if data is None else {
                k: v if type(v) in _LEAVES else freeze(v) for k, v in dict(data).items()}
        object.__setattr__(self, "_items", d)
        object.__setattr__(self, "_h", None)

    def __hash__(self) -> int:  # type: ignore[override]
        if self._h is None:
            object.__setattr__(self, "_h", hash(tuple(self._items.items())))
        return self._h  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenMap):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == {k: freeze(v) for k, v in other.items()}
        return NotImplemented

    def set(self, key: Any, value: Any) -> FrozenMap:
        """A copy with ``key`` set to ``value``."""
        return FrozenMap({**self._items, key: value})


def freeze(value: Any) -> Any:
    """``value`` with mappings as :class:`FrozenMap`, lists as tuples, numpy scalars as
    Python numbers."""
    if type(value) in _LEAVES or isinstance(value, FrozenMap | Ref) \
            or dataclasses.is_dataclass(value):
        return value
    if isinstance(value, Mapping):
        return FrozenMap(value)
    if isinstance(value, list | tuple):
        return tuple(v if type(v) in _LEAVES else freeze(v) for v in value)
    if isinstance(value, np.generic):
        return value.item()
    return value


#: Types :func:`freeze` returns as they are.
_LEAVES = frozenset({str, int, float, bool, type(None)})


def thaw(value: Any) -> Any:
    """Plain Python data (dicts and lists) of a frozen value, as a YAML document holds it."""
    if type(value) in _LEAVES:
        return value
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class Ref:
    """An entry read from a file or a packaged preset: ``ref``, what the scenario wrote (a
    preset name, a path relative to the scenario's directory, or a device's ``{preset: ...,
    field: value}``); ``value``, what :mod:`libra_opt.io` parsed from it (``None`` while
    unresolved); ``path``, the file it was read from (for messages, not compared).
    """

    ref: Any
    value: Any = None
    path: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "ref", freeze(self.ref))

    @property
    def resolved(self) -> bool:
        """Whether :attr:`value` was read."""
        return self.value is not None


class _Node:
    """Base of the spec's dataclasses: fields checked and frozen against their types, and
    against the bounds of :func:`bounded` fields."""

    def __post_init__(self) -> None:
        for name, tp, kind, optional, kept, words, bounds in _init_fields(
                typing.cast(Any, type(self))):
            value = getattr(self, name)
            if not ((value is None and optional) or type(value) in kept or (
                    type(value) is str and value in words)):  # else what coerce returns
                new = coerce(tp, value, name, kind=kind)
                if new is not value:
                    object.__setattr__(self, name, new)
                    value = new
            if bounds and value is not None:
                _check_bounds(name, value, bounds)


def bounded(default: Any = dataclasses.MISSING, *, gt: float | None = None,
            ge: float | None = None, le: float | None = None) -> Any:
    """A spec field whose number is checked against ``gt`` / ``ge`` / ``le`` on every
    construction (``None``, where the type allows it, is not checked)."""
    bounds = tuple((op, b) for op, b in ((">", gt), (">=", ge), ("<=", le)) if b is not None)
    return field(default=default, metadata={"bounds": bounds})


_OPS = {">": float.__gt__, ">=": float.__ge__, "<=": float.__le__}


def _check_bounds(name: str, value: Any, bounds: tuple[tuple[str, float], ...]) -> None:
    for op, b in bounds:
        if not _OPS[op](float(value), b):
            shown = int(b) if float(b).is_integer() else b
            raise InputError(f"{name} {short_repr(value, 60)} is out of range: expected a "
                             f"number {op} {shown}",
                             source=API_SOURCE, field=name)


@cache
def _init_fields(cls: Any) -> tuple[tuple[Any, ...], ...]:
    """``(name, type, Ref kind, None allowed, types kept, words kept, bounds)`` of each init
    field of a spec dataclass: a value of a kept type (not ``float``, checked for finiteness)
    or a kept word (a ``Literal`` option) is what :func:`coerce` would return."""
    hints = _hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        origin, args = _type_parts(tp)
        members = [a for a in union_members(tp) if a is not type(None)]
        optional = len(members) < len(union_members(tp))
        kept = {members[0]} | ({Ref} if Ref in members else set())
        kept = {k for k in kept if isinstance(k, type) and k is not float}
        words = frozenset(a for a in args if type(a) is str) if origin is typing.Literal \
            else frozenset()
        out.append((f.name, tp, f.name, optional, frozenset(kept), words,
                    f.metadata.get("bounds", ())))
    return tuple(out)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _type_parts(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """``typing.get_origin`` and ``typing.get_args`` of an annotation, worked out once."""
    return typing.get_origin(tp), typing.get_args(tp)


def union_members(tp: Any) -> tuple[Any, ...]:
    """The members of a union type (``None`` too), else ``(tp,)``."""
    origin, args = _type_parts(tp)
    return args if origin in (typing.Union, _UnionType) else (tp,)


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


def _is_number(value: Any) -> bool:
    return (isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool | np.bool_))


def _bad(path: str, what: str, value: Any) -> InputError:
    return InputError(f"expected {what}, got {short_repr(value, 80)}", source=API_SOURCE,
                      field=path)


def _parse_text(value: Any) -> Any:
    return parse_value(value) if isinstance(value, str) else value


def coerce(tp: Any, value: Any, path: str, *, kind: str | None = None,
           strict: bool = False) -> Any:
    """``value`` checked and converted to the annotated type ``tp`` (numbers given as text
    are parsed; numpy integers and integral floats are taken for integers, unless
    ``strict``: a file's integer is an integer).

    Raises
    ------
    InputError
        Naming ``path`` and what was expected.

    Examples
    --------
    >>> coerce(int, np.int64(4), "p"), coerce(int, 8.0, "p"), coerce(float | None, "2e7", "p")
    (4, 8, 20000000.0)
    >>> coerce(int, 2.5, "workloads.w.parallelism.tp")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <api>: workloads.w.parallelism.tp: expected a number (an integer), got 2.5
    """
    vt = type(value)
    if vt is tp and tp is not float:  # the common case: already the annotated type
        return value
    if tp is float and vt is float and math.isfinite(value):
        return value
    origin, args = _type_parts(tp)
    if tp is Any:
        return freeze(value)
    if origin in (typing.Union, _UnionType):
        if value is None:
            if type(None) in args:
                return None
            raise _bad(path, " or ".join(dict.fromkeys(_describe(a, kind) for a in args
                                                       if a is not type(None))), value)
        if isinstance(value, str) and str in args:
            return value
        members = [a for a in args if a is not type(None)]
        if type(value) is members[0] or (type(value) is Ref and Ref in members):
            # the first member's type, or a Ref (which no other member takes): one try
            return coerce(type(value), value, path, kind=kind, strict=strict)
        errors = []
        for a in members:
            try:
                return coerce(a, value, path, kind=kind, strict=strict)
            except InputError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise _bad(path, " or ".join(dict.fromkeys(_describe(a, kind) for a in members)), value)
    if origin is typing.Literal:
        if vt is str and value in args:
            return value
        if isinstance(value, str):
            value = parse_value(value)  # a number given as text
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and value.is_integer() and int(value) in args:
            value = int(value)
        if value not in args or isinstance(value, bool) != any(
                isinstance(o, bool) for o in args if o == value):
            raise InputError(f"{short_repr(value, 60)} is not one of "
                             f"{', '.join(map(str, args))}", source=API_SOURCE, field=path)
        return value
    if origin is tuple:
        item = args[0]
        if vt is tuple and item is not float and all(type(v) is item for v in value):
            return value  # each item already the annotated class: kept as it is
        value = _parse_text(value)
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise _bad(path, "a list", value)
        out = tuple(coerce(item, v, f"{path}[{i}]", kind=kind, strict=strict)
                    for i, v in enumerate(value))
        return value if isinstance(value, tuple) and all(
            a is b for a, b in zip(out, value, strict=True)) else out
    if tp is bool:
        value = _parse_text(value)
        if not isinstance(value, bool | np.bool_):
            raise _bad(path, "true or false", value)
        return bool(value)
    if tp is int:
        if not strict:
            value = _parse_text(value)
        if _is_int(value) or (not strict and _is_number(value) and float(value).is_integer()):
            return int(value)
        raise _bad(path, "a number (an integer)", value)
    if tp is float:
        value = _parse_text(value)
        if not _is_number(value) or not math.isfinite(float(value)):
            raise _bad(path, "a finite number", value)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _bad(path, "text", value)
        return value
    if tp is FrozenMap or origin is Mapping:  # a mapping, frozen; its values typed when given
        value = value if isinstance(value, FrozenMap) else _parse_text(value)
        if not isinstance(value, Mapping):
            raise _bad(path, "a mapping", value)
        item = args[1] if args else Any
        if item is Any:
            return value if isinstance(value, FrozenMap) else FrozenMap(value)
        items = {k: coerce(item, v, f"{path}.{k}", kind=kind, strict=strict)
                 for k, v in value.items()}
        return value if isinstance(value, FrozenMap) and all(
            items[k] is v for k, v in value.items()) else FrozenMap(items)
    if tp is Ref:
        if isinstance(value, Ref):
            return value
        if kind == "device" and isinstance(value, str) and value.lstrip().startswith("{"):
            value = _parse_text(value)  # {preset: ..., field: value}
        if isinstance(value, str) or (kind == "device" and isinstance(value, Mapping)):
            return Ref(value)  # unresolved: io reads it
        name = getattr(value, "key", None) or getattr(value, "name", None)
        if kind in ("model", "device") and isinstance(name, str):
            return Ref(name, value)  # a value built in Python (a preset's object)
        raise _bad(path, _describe(Ref, kind), value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        value = _parse_text(value)
        if not isinstance(value, Mapping):
            raise _bad(path, "a mapping", value)
        return from_mapping(tp, value, path, strict=strict)
    raise TypeError(f"no rule for {tp!r}")  # pragma: no cover - a spec class's own bug


_UnionType = type(int | None)
_NAMES = {int: "an integer", float: "a number", str: "text"}


def _describe(tp: Any, kind: str | None = None) -> str:
    if tp is Ref:
        return "a device preset name or a mapping" if kind == "device" else \
            "a name or a path"
    if tp in _NAMES:
        return _NAMES[tp]
    origin = typing.get_origin(tp)
    if tp is FrozenMap or origin is Mapping or dataclasses.is_dataclass(tp):
        return "a mapping"
    return "a list" if origin is tuple else getattr(tp, "__name__", str(tp))


def from_mapping(cls: type, data: Mapping[str, Any], path: str = "", *, strict: bool = False,
                 **given: Any) -> Any:
    """A spec dataclass from a mapping of its fields, as a file holds it (``strict``: each
    value checked against its field's type before the class's own checks), with the
    fields ``given`` beside them. Unknown or missing keys are errors naming ``path``."""
    fields = [f for f in dataclasses.fields(cls) if f.init and f.compare]
    names = [f.name for f in fields]
    where = path or None
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected "
                         f"{', '.join(names)}", source=API_SOURCE, field=where)
    missing = [f.name for f in fields if f.name not in data
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise missing_error(missing, path)
    values = dict(data)
    if strict:
        hints = _hints(cls)
        for key, value in values.items():
            values[key] = coerce(hints[key], value, f"{path}.{key}" if path else key,
                                 kind=key, strict=True)
    with input_context(API_SOURCE if path else None, where):
        return cls(**values, **given)


def missing_error(keys: list[str], path: str = "") -> InputError:
    """The error for required ``keys`` (of the section at ``path``) that were not given."""
    more = f" (also missing: {', '.join(keys[1:])})" if keys[1:] else ""
    return InputError(f"required field is missing{more}", source=API_SOURCE,
                      field=f"{path}.{keys[0]}" if path else keys[0])


def unique_labels(labels: list[str]) -> list[str]:
    """Labels with repeats numbered: ``["a", "a"]`` -> ``["a", "a (#2)"]``.

    Examples
    --------
    >>> unique_labels(["x <= 1", "y", "x <= 1"])
    ['x <= 1', 'y', 'x <= 1 (#2)']
    """
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} (#{seen[label]})")
    return out


def parse_value(text: str) -> Any:
    """A value given as text on the command line: a number, ``true``/``false``, ``null``,
    a YAML list or mapping (``[1, 2]``, ``{tp: 8}``), else the text itself.

    Examples
    --------
    >>> parse_value("[100, null]"), parse_value("null")
    ([100, None], None)
    """
    s = text.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if s[:1] in "[{":
        try:
            return yaml.safe_load(s)
        except yaml.YAMLError:
            raise InputError(f"malformed list or mapping {short_repr(s)}",
                             source="<cli>", field="--set") from None
    return s
