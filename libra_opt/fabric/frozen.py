"""Immutable containers for results and inputs: every mapping a result exposes is a
:class:`FrozenMap` (read-only, pickled by value), every array read-only and owned
(:func:`readonly_array`, :func:`freeze_arrays`), and results holding arrays derive from
:class:`FrozenOnUnpickle` (numpy unpickles arrays writable).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["FrozenAtInit", "FrozenMap", "FrozenOnUnpickle", "readonly_array", "freeze_arrays"]

K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """A read-only mapping over a private copy of its items; pickles as its items.

    Examples
    --------
    >>> import pickle
    >>> m = FrozenMap({"tp": (4, 1)})
    >>> m["tp"], len(m), dict(m)
    ((4, 1), 1, {'tp': (4, 1)})
    >>> pickle.loads(pickle.dumps(m)) == m
    True
    >>> m["dp"] = (2, 8)
    Traceback (most recent call last):
    ...
    TypeError: 'FrozenMap' object does not support item assignment
    """

    __slots__ = ("_items",)
    _items: dict[K, V]

    def __init__(self, items: Mapping[K, V] | Any = ()) -> None:
        object.__setattr__(self, "_items", dict(items._items if type(items) is FrozenMap
                                                else items))

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # The views and lookups of the private dict itself (read-only views): the Mapping
    # mixins would go through __getitem__ once per key.
    def keys(self) -> KeysView[K]:
        return self._items.keys()

    def values(self) -> ValuesView[V]:
        return self._items.values()

    def items(self) -> ItemsView[K, V]:
        return self._items.items()

    def get(self, key: K, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __eq__(self, other: object) -> bool:
        if type(other) is FrozenMap:
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other.items())
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a Mapping: unhashable, as before

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self) -> tuple[type, tuple[dict[K, V]]]:
        return (type(self), (dict(self._items),))

    def __or__(self, other: Mapping[K, V]) -> dict[K, V]:
        return {**self._items, **other}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    def copy(self) -> dict[K, V]:
        """A plain, writable ``dict`` of the items."""
        return dict(self._items)


def readonly_array(values: npt.ArrayLike, dtype: Any = float) -> np.ndarray:
    """A read-only copy of ``values`` (never a view of the caller's array).

    Examples
    --------
    >>> a = np.array([1.0, 2.0])
    >>> b = readonly_array(a)
    >>> a[0] = 5.0; b.tolist(), b.flags.writeable
    ([1.0, 2.0], False)
    """
    out = np.array(values, dtype=dtype, copy=True)
    out.setflags(write=False)
    return out


def freeze_arrays(obj: Any, _depth: int = 0) -> Any:
    """Make every numpy array reachable from ``obj`` read-only, in place, and return ``obj``.

    Walks dataclass fields (but those annotated as plain data), tuples, lists and mappings, a
    few levels deep. A dataclass declaring ``ARRAYS_FROZEN_AT_INIT = True`` freezes its own
    arrays when built and is not walked again inside another object.

    Examples
    --------
    >>> a = np.zeros(2)
    >>> _ = freeze_arrays(({"x": a},))
    >>> a.flags.writeable
    False
    """
    if _depth > 6:
        return obj
    cls: Any = type(obj)
    if cls in _LEAF_TYPES:
        return obj
    if isinstance(obj, np.ndarray):
        if obj.dtype != object:
            obj.setflags(write=False)
        return obj
    names = _dataclass_field_names(cls)
    if names is not None:
        if _depth and names and getattr(cls, "ARRAYS_FROZEN_AT_INIT", False):
            return obj  # frozen when it was built
        for name in names:
            v = getattr(obj, name, None)
            if type(v) not in _LEAF_TYPES:
                freeze_arrays(v, _depth + 1)
    elif isinstance(obj, (tuple, list, Mapping)):
        for v in obj.values() if isinstance(obj, Mapping) else obj:
            if type(v) not in _LEAF_TYPES:
                freeze_arrays(v, _depth + 1)
    return obj


#: Types that never hold an array (returned at once by :func:`freeze_arrays`).
_LEAF_TYPES = frozenset({int, float, bool, str, bytes, complex, type(None)})


@functools.cache
def _dataclass_field_names(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass type not annotated as plain data (``None``: not a dataclass)."""
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        return None
    fields = dataclasses.fields(cls)
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve at run time: walk every field
        return tuple(f.name for f in fields)
    return tuple(f.name for f in fields if not _plain_data(hints.get(f.name, Any)))


def _plain_data(tp: Any) -> bool:
    """Whether values of annotation ``tp`` are plain data (no array inside)."""
    if tp in _LEAF_TYPES:
        return True
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return True
    if origin in (tuple, typing.Union, types.UnionType):
        return bool(args) and all(a is Ellipsis or _plain_data(a) for a in args)
    if origin in (Mapping, dict, FrozenMap) and len(args) == 2:
        return _plain_data(args[0]) and _plain_data(args[1])
    return False


class FrozenOnUnpickle:
    """Mixin for frozen results holding arrays: unpickling (or a deep copy) locks every array
    again (``__setstate__`` restores the state, then :func:`freeze_arrays`).

    Examples
    --------
    >>> import copy
    >>> @dataclasses.dataclass(frozen=True)
    ... class Result(FrozenOnUnpickle):
    ...     x: np.ndarray
    ...     def __post_init__(self) -> None:
    ...         freeze_arrays(self)
    >>> r = copy.deepcopy(Result(np.zeros(2)))
    >>> r.x.flags.writeable
    False
    """

    __slots__ = ()

    def __setstate__(self, state: Any) -> None:
        # default pickling gives the instance dict, or ``(dict, slots)`` for slotted classes
        attrs, slots = state if isinstance(state, tuple) else (state, None)
        if attrs:
            self.__dict__.update(attrs)
        for name, value in (slots or {}).items():
            object.__setattr__(self, name, value)
        freeze_arrays([*(attrs or {}).values(), *(slots or {}).values()])


class FrozenAtInit(FrozenOnUnpickle):
    """Mixin for frozen dataclasses whose arrays are read-only from construction
    (:func:`freeze_arrays` in ``__post_init__``; not walked again inside another object)."""

    __slots__ = ()
    ARRAYS_FROZEN_AT_INIT: ClassVar[bool] = True

    def __post_init__(self) -> None:
        freeze_arrays(self)
