"""Strict, bounded YAML through PyYAML: every error is one :class:`InputError` naming the file.

* duplicate keys are errors, keys must be scalars, no Python tags, and numbers follow
  YAML 1.2's core schema (``1.0e7`` is a number, ``012`` twelve, ``1:20`` text);
* nesting (:data:`MAX_YAML_DEPTH`) and the node count with aliases expanded
  (:data:`MAX_YAML_NODES`) are checked on the parser's events before anything is composed,
  so an alias bomb or a million nested brackets is refused in microseconds;
* libyaml parses and composes; a syntax error is worded by PyYAML's pure-Python parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from libra_opt.errors import InputError, short_repr
from libra_opt.io.files import ParseCache, _check_path, read_text

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "dump_yaml", "read_yaml"]

#: Largest YAML file read (bytes): YAML (kilobytes in practice) gets a tighter bound than
#: plain text such as ASTRA-sim workloads.
MAX_YAML_BYTES = 4 * 1024 * 1024
#: Deepest nesting of sequences/mappings in a YAML document (a scalar in 99 lists is at 100).
MAX_YAML_DEPTH = 100
#: Most nodes a YAML document may hold once every alias is expanded.
MAX_YAML_NODES = 1_000_000
#: Longest integer literal (digits) read from YAML.
MAX_INT_DIGITS = 1000
#: Deepest document ever composed, whatever ``max_depth`` says: libyaml's composer and
#: PyYAML's constructors recurse (on the C stack, a 512 KiB thread stack holds about 1000
#: levels), so a deeper document is refused as "nested too deep".
_COMPOSE_DEPTH = 400
#: A decimal number with a dot or an exponent, the exponent sign optional, or an infinity or
#: NaN (YAML 1.2; PyYAML's YAML 1.1 rule wants ``1.0e+7``); tried after the integers.
_FLOAT = re.compile(r"^[-+]?(?:(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?"
                    r"|[0-9][0-9_]*[eE][-+]?[0-9]+|\.(?:inf|Inf|INF))$|^\.(?:nan|NaN|NAN)$")
#: An integer by YAML 1.2's core schema (decimal, ``0o`` octal, ``0x`` hexadecimal), single
#: ``_`` between digits allowed (``1_000``): ``012`` is twelve, not YAML 1.1's octal ten, and ``1:20`` is text, not
#: YAML 1.1's sexagesimal eighty.
_INT = re.compile(r"^(?:[-+]?[0-9](?:_?[0-9])*|0o[0-7](?:_?[0-7])*"
                  r"|0x[0-9a-fA-F](?:_?[0-9a-fA-F])*)$")
_NUMBER_START = list("-+0123456789.")


def _error(problem: str, mark: Any) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, mark)


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    if not isinstance(node, yaml.MappingNode):  # "!!map x"
        raise _error(f"expected a mapping node, but found {node.id}", node.start_mark)
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        mark = key_node.start_mark
        try:
            hash(key)
        except TypeError:
            raise _error("a mapping key must be a scalar, not a list or mapping", mark) from None
        if key in seen:
            raise _error(f"duplicate key {short_repr(key, 80)} (line {mark.line + 1})", mark)
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_INT_DIGITS:
        raise _error(f"an integer of {digits} digits is too long", node.start_mark)
    text = str(node.value).replace("_", "")
    base = {"0o": 8, "0x": 16}.get(text[:2], 10)
    try:
        return int(text[2:] if base != 10 else text, base)
    except ValueError:  # e.g. "!!int x"
        raise _error("malformed integer", node.start_mark) from None


def _checked(what: str, construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``construct`` with PyYAML's own failures on odd explicitly tagged scalars (``!!float
    ''``, ``!!bool maybe``, ``!!timestamp 2020-13-45``) turned into a YAML error at the node."""

    def checked(loader: Any, node: Any) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError):
            raise _error(f"malformed {what} {short_repr(node.value, 80)}",
                         node.start_mark) from None

    return checked


def _resolve(loader: Any, kind: Any, value: Any, implicit: Any) -> str:
    """PyYAML's tag resolution without its per-node list building (the composer calls this
    once a node): the same implicit resolvers in the same order; there are no path or
    wildcard resolvers."""
    if kind is yaml.ScalarNode:
        if implicit[0]:
            for tag, regexp in loader.yaml_implicit_resolvers.get(value[:1], ()):
                if regexp.match(value):
                    return tag  # type: ignore[no-any-return]
        return loader.DEFAULT_SCALAR_TAG  # type: ignore[no-any-return]
    if kind is yaml.SequenceNode:
        return loader.DEFAULT_SEQUENCE_TAG  # type: ignore[no-any-return]
    return loader.DEFAULT_MAPPING_TAG  # type: ignore[no-any-return]


def _strict(base: type) -> Any:
    """``base`` (a PyYAML safe loader) with the rules: duplicate keys refused, bounded
    integers, tagged scalars checked, every decimal spelling of a number a number."""
    cls: Any = type(f"Strict{base.__name__}", (base,), {"resolve": _resolve})
    cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    cls.add_constructor("tag:yaml.org,2002:int", _construct_int)
    for what, tag in (("number", "float"), ("boolean", "bool"), ("timestamp", "timestamp")):
        construct = getattr(yaml.constructor.SafeConstructor, f"construct_yaml_{tag}")
        cls.add_constructor(f"tag:yaml.org,2002:{tag}", _checked(what, construct))
    _numbers_by_yaml_1_2(cls)
    return cls


def _numbers_by_yaml_1_2(cls: Any) -> None:
    """``cls`` (a loader or dumper) resolving plain integers and floats by :data:`_INT` and
    :data:`_FLOAT` alone, in place of YAML 1.1's rules."""
    cls.add_implicit_resolver("tag:yaml.org,2002:int", _INT, _NUMBER_START)  # own the table
    numbers = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float"}
    for first, resolvers in cls.yaml_implicit_resolvers.items():
        resolvers[:] = [r for r in resolvers if r[0] not in numbers]
        if first in _NUMBER_START:
            resolvers += [("tag:yaml.org,2002:int", _INT), ("tag:yaml.org,2002:float", _FLOAT)]


#: PyYAML's pure-Python loader with the rules: it words every syntax error.
_PURE = _strict(yaml.SafeLoader)
#: The loader that reads: libyaml's parser and composer where PyYAML has them.
_LOADER = _strict(yaml.CSafeLoader) if getattr(yaml, "__with_libyaml__", False) else _PURE


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting every string that :func:`read_yaml` (YAML 1.2's numbers)
    or a YAML 1.1 reader (``yaml.safe_load``: ``1:20``, ``0b101``, ``010``) would read as a
    number."""


_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", _INT, _NUMBER_START)  # beside 1.1's
_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, _NUMBER_START)


def dump_yaml(data: Any, **options: Any) -> str:
    """``data`` as YAML text that :func:`read_yaml` reads back as the same data
    (``yaml.safe_dump`` would write the string ``"1.0e7"`` plain, which reads as a number).

    Examples
    --------
    >>> dump_yaml({"name": "1.0e7", "size_bytes": 1.0e7})
    "name: '1.0e7'\\nsize_bytes: 10000000.0\\n"
    """
    return yaml.dump(data, Dumper=_Dumper, **options)


class _Limit(yaml.composer.ComposerError):
    """A document beyond a limit (worded here, whichever parser read it)."""


_STARTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_ENDS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _check_limits(loader: Any, max_depth: int, max_nodes: int) -> None:
    """Walk the first document's events: refuse nesting deeper than ``max_depth``, more than
    ``max_nodes`` nodes with every alias expanded, or an alias inside its own anchor
    (:class:`_Limit`; :class:`RecursionError` deeper than :data:`_COMPOSE_DEPTH`).

    A node's level is where it is written (an alias adds no nesting); an alias counts the
    expanded size of its anchor's node, kept per anchor, so nothing is expanded.
    """
    frames: list[list[Any]] = []  # [anchor, expanded size] of each open collection
    sizes: dict[str, int] = {}  # expanded size of each finished anchored node
    total = 0
    while True:
        event = loader.get_event()
        kind = type(event)
        if kind in _ENDS:
            anchor, n = frames.pop()
            if anchor is not None:
                sizes[anchor] = n
            if frames:
                frames[-1][1] += n
            continue
        if kind is yaml.AliasEvent:
            if any(frame[0] == event.anchor for frame in frames):
                raise _Limit(None, None, f"alias *{event.anchor} refers to a node that "
                             "contains it", event.start_mark)
            if event.anchor not in sizes:
                raise yaml.composer.ComposerError(
                    None, None, f"found undefined alias {event.anchor!r}", event.start_mark)
            n = sizes[event.anchor]
        elif kind is yaml.ScalarEvent or kind in _STARTS:
            if len(frames) >= max_depth:  # the node is at level len(frames) + 1
                raise _Limit(None, None, f"nested more than {max_depth} levels deep (limit)",
                             event.start_mark)
            if len(frames) >= _COMPOSE_DEPTH:
                raise RecursionError
            n = 1
        elif kind is yaml.DocumentEndEvent or kind is yaml.StreamEndEvent:
            return  # a second document is the composer's error
        else:
            continue
        total += n
        if total > max_nodes:
            what = "the document" if n == 1 else "with its aliases expanded, the document"
            raise _Limit(None, None, f"{what} has more than {max_nodes} nodes (limit)",
                         event.start_mark)
        if kind in _STARTS:
            frames.append([event.anchor, 1])
            continue
        if kind is yaml.ScalarEvent and event.anchor is not None:
            sizes[event.anchor] = 1
        if frames:
            frames[-1][1] += n


def _check_limits_of(text: str, max_depth: int, max_nodes: int, cls: Any = None) -> None:
    """:func:`_check_limits` on ``text`` read by ``cls`` (default :data:`_LOADER`)."""
    loader = (cls or _LOADER)(text)  # the pure reader refuses control characters here
    try:
        _check_limits(loader, max_depth, max_nodes)
    finally:
        loader.dispose()


def _compose_with(cls: Any, text: str, max_depth: int, max_nodes: int) -> yaml.Node | None:
    """The document's node graph by loader ``cls``, once :func:`_check_limits` passed."""
    _check_limits_of(text, max_depth, max_nodes, cls)
    loader = cls(text)
    try:
        return loader.get_single_node()  # type: ignore[no-any-return]
    finally:
        loader.dispose()


def _compose(text: str, max_depth: int, max_nodes: int) -> yaml.Node | None:
    """The node graph of the document in ``text``, limits checked first; a syntax error
    libyaml finds is worded by the pure-Python parser (where it finds one too)."""
    try:
        return _compose_with(_LOADER, text, max_depth, max_nodes)
    except _Limit:
        raise
    except yaml.YAMLError as exc:
        if _LOADER is _PURE:
            raise
        mark = getattr(exc, "problem_mark", None)
        if mark is not None and "maximum nesting depth" in str(getattr(exc, "problem", "")):
            # libyaml's own bound (1000 levels), met while it looked ahead for a key: the
            # limits are found in the text before that point, else it is too deep to compose
            try:
                _check_limits_of(text[: mark.index], max_depth, max_nodes)
            except _Limit:
                raise
            except yaml.YAMLError:
                pass
            raise RecursionError from None
        try:
            _compose_with(_PURE, text, max_depth, max_nodes)
        except yaml.YAMLError as worded:
            raise worded from None
        raise


def _construct(root: yaml.Node | None) -> Any:
    """New data from a composed document (a cached graph gives new data every time)."""
    if root is None:
        return None
    loader = _LOADER("")
    try:
        return loader.construct_document(root)
    finally:
        loader.dispose()


def read_yaml(path: str | Path, *, max_bytes: int = MAX_YAML_BYTES,
              max_depth: int = MAX_YAML_DEPTH, max_nodes: int = MAX_YAML_NODES,
              cache: ParseCache | None = None) -> Any:
    """Read a YAML file strictly and within bounds: ``max_bytes``, ``max_depth`` and
    ``max_nodes`` (with every alias expanded); with ``cache`` (the current load's), a file
    it holds is neither read nor parsed again.

    Raises
    ------
    InputError
        If the file is missing, not a regular file, too large, malformed, has duplicate
        keys, nests too deep or expands to too many nodes -- naming the file and line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "n.yaml"
    >>> _ = p.write_text("[1e7, 1.0e7, 19.5e12, -3.5E-2, .5, 1_000, '1e7', 012, 1:20]")
    >>> read_yaml(p)
    [10000000.0, 10000000.0, 19500000000000.0, -0.035, 0.5, 1000, '1e7', 12, '1:20']
    >>> _ = p.write_text("a: 1\\na: 2\\n")
    >>> read_yaml(p)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: ...: line 2, column 1: malformed YAML: duplicate key 'a' (line 2)
    """
    p = _check_path(path)

    def compose() -> yaml.Node | None:
        return _compose(read_text(p, max_bytes=max_bytes), max_depth, max_nodes)

    try:
        root = compose() if cache is None else cache.get("yaml", p, compose, max_bytes,
                                                         max_depth, max_nodes)
        return _construct(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML: {problem}", source=p, field=where) from None
    except RecursionError:  # deeper than the composer takes: never a traceback
        raise InputError("malformed YAML: nested too deep", source=p) from None
