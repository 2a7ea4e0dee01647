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
from typing import Any, ClassVar

import numpy as np
import yaml

from libra_opt.errors import API_SOURCE, InputError, input_context, short_repr
from libra_opt.fabric.frozen import FrozenMap as ReadOnlyMap

__all__ = [
    "API_SOURCE",
    "FrozenMap",
    "Ref",
    "coerce",
    "freeze",
    "from_mapping",
    "parse_value",
    "thaw",
    "unique_labels",
]




class FrozenMap(ReadOnlyMap):
    """A read-only, hashable mapping (insertion order kept); nested values frozen: the
    results' read-only mapping (:class:`libra_opt.fabric.frozen.FrozenMap`) made a value of
    the recipe (hashable, compared and hashed by its frozen items).

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
    vt = type(value)
    if vt in _LEAVES or vt is FrozenMap or vt is Ref:
        return value
    if vt is dict:
        return FrozenMap(value)
    if vt is list or vt is tuple:
        return tuple(v if type(v) in _LEAVES else freeze(v) for v in value)
    if isinstance(value, FrozenMap | Ref) or dataclasses.is_dataclass(value):
        return value
    if isinstance(value, Mapping):
        return FrozenMap(value)
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
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
    """An entry read from a file or a packaged preset.

    Parameters
    ----------
    ref : str or FrozenMap
        What the scenario wrote: a preset name, a path (relative to the scenario's
        directory) or, for a device, a ``{preset: ..., field: value}`` mapping.
    value : object, optional
        The parsed value (a model descriptor, a :class:`~libra_opt.generators.devices.Device`,
        a :class:`~libra_opt.fabric.dims.Fabric`, price tables, a workload, communicator
        groups, collective settings or a catalog document); ``None`` while unresolved.
    path : str, optional
        The file it was read from, for messages (not compared).
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
    """Base of the spec's dataclasses: fields checked and frozen against their types."""

    #: Fields that are a Ref, with what they name (for the resolver and messages).
    _REFS: ClassVar[dict[str, str]] = {}

    def __post_init__(self) -> None:
        for name, tp, kind, optional, kept, words in _init_fields(typing.cast(Any, type(self))):
            old = getattr(self, name)
            if (old is None and optional) or type(old) in kept or (
                    type(old) is str and old in words):
                continue  # what coerce returns as it is
            new = coerce(tp, old, name, kind=kind)
            if new is not old:
                object.__setattr__(self, name, new)


@cache
def _init_fields(
    cls: Any,
) -> tuple[tuple[str, Any, str | None, bool, frozenset[type], frozenset[str]], ...]:
    """``(name, annotated type, Ref kind, None allowed, types kept, words kept)`` of each
    init field of a spec dataclass, where :func:`coerce` returns a value of a kept type as
    it is (the annotated class, or a union's first member or a Ref; never ``float``, which
    is checked for finiteness), and so a kept word (an option of a ``Literal`` of text): a
    pure function of the class, worked out once."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        tp = hints[f.name]
        origin, args = _type_parts(tp)
        if origin in (typing.Union, _UnionType):
            members = [a for a in args if a is not type(None)]
            kept = {members[0]} | ({Ref} if Ref in members else set())
            optional = type(None) in args
        else:
            kept, optional = {tp}, False
        kept = {k for k in kept if isinstance(k, type) and k is not float}
        words = frozenset(a for a in args if type(a) is str) if origin is typing.Literal \
            else frozenset()
        out.append((f.name, tp, cls._REFS.get(f.name), optional, frozenset(kept), words))
    return tuple(out)


@cache
def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls)


@cache
def _type_parts(tp: Any) -> tuple[Any, tuple[Any, ...]]:
    """``typing.get_origin`` and ``typing.get_args`` of an annotation, worked out once."""
    return typing.get_origin(tp), typing.get_args(tp)


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


def coerce(tp: Any, value: Any, path: str, *, kind: str | None = None) -> Any:
    """``value`` checked and converted to the annotated type ``tp`` (numbers given as text
    are parsed; numpy integers and integral floats are taken for integers).

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
            raise _bad(path, "a value", value)
        if isinstance(value, str) and str in args:
            return value
        members = [a for a in args if a is not type(None)]
        if type(value) is members[0] or (type(value) is Ref and Ref in members):
            # the first member's type, or a Ref (which no other member takes): one try
            return coerce(type(value), value, path, kind=kind)
        errors = []
        for a in members:
            try:
                return coerce(a, value, path, kind=kind)
            except InputError as exc:
                errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        raise _bad(path, " or ".join(_describe(a) for a in members), value)
    if origin is typing.Literal:
        options = args
        if vt is str and value in options:
            return value
        if isinstance(value, str) and value not in options:
            value = parse_value(value)  # a number given as text
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, float) and value.is_integer() and int(value) in options:
            value = int(value)
        if value not in options or isinstance(value, bool) != any(
                isinstance(o, bool) for o in options if o == value):
            raise InputError(f"{short_repr(value, 60)} is not one of "
                             f"{', '.join(map(str, options))}", source=API_SOURCE, field=path)
        return value
    if origin is tuple:
        (item, *_rest) = args
        if vt is tuple and item is not float and all(type(v) is item for v in value):
            return value  # each item already the annotated class: kept as it is
        value = _parse_text(value)
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise _bad(path, "a list", value)
        out = tuple(coerce(item, v, f"{path}[{i}]", kind=kind) for i, v in enumerate(value))
        return value if isinstance(value, tuple) and all(
            a is b for a, b in zip(out, value, strict=True)) else out
    if tp is bool:
        value = _parse_text(value)
        if not isinstance(value, bool | np.bool_):
            raise _bad(path, "true or false", value)
        return bool(value)
    if tp is int:
        value = _parse_text(value)
        if _is_int(value):
            return int(value)
        if _is_number(value) and float(value).is_integer():
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
    if tp is FrozenMap or origin is Mapping:  # an open mapping, frozen
        if isinstance(value, FrozenMap):
            return value
        value = _parse_text(value)
        if not isinstance(value, Mapping):
            raise _bad(path, "a mapping", value)
        return FrozenMap(value)
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
        raise _bad(path, f"a {kind or 'file'} reference (a name, a path or a Ref)", value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        value = _parse_text(value)
        if not isinstance(value, Mapping):
            raise _bad(path, "a mapping", value)
        return from_mapping(tp, value, path)
    raise TypeError(f"no rule for {tp!r}")  # pragma: no cover - a spec class's own bug


_UnionType = type(int | None)


def _describe(tp: Any) -> str:
    if tp is int:
        return "an integer"
    if tp is float:
        return "a number"
    if tp is str:
        return "text"
    if tp is FrozenMap or (isinstance(tp, type) and dataclasses.is_dataclass(tp)):
        return "a mapping"
    if typing.get_origin(tp) is tuple:
        return "a list"
    return getattr(tp, "__name__", str(tp))


def from_mapping(cls: type, data: Mapping[str, Any], path: str = "") -> Any:
    """A spec dataclass from a mapping of its fields (unknown or missing keys are errors
    naming ``path``)."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(str(k) for k in data if k not in names)
    where = path or cls.__name__
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected "
                         f"{', '.join(names)}", source=API_SOURCE, field=where)
    required = [f.name for f in dataclasses.fields(cls) if f.init
                and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [k for k in required if k not in data]
    if missing:
        raise InputError(f"missing {', '.join(missing)}", source=API_SOURCE, field=where)
    with input_context(API_SOURCE if path else None, path or None):
        return cls(**dict(data))


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
