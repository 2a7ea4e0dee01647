"""Strict, bounded YAML: every error is one :class:`InputError` naming the file.

* YAML is read strictly: duplicate keys are errors, ``1e7`` is a number, no Python tags,
  and a document may nest at most :data:`MAX_YAML_DEPTH` levels and expand (aliases
  counted as copies of what they refer to) to at most :data:`MAX_YAML_NODES` nodes. Both
  are checked before anything is constructed (while composing, or on the composed node
  graph), so an alias bomb ("billion laughs") is rejected in microseconds wherever it sits;
* plain block documents are read by :mod:`libra_opt.io._yaml.simple`; the rest by libyaml
  (PyYAML's C parser and composer, our Python constructors) when PyYAML was built with it,
  else by the pure-Python reference loader. All apply the same rules and give the same
  data; every error is worded by the reference loader, so messages do not depend on which
  reader ran;
* the file itself is read by :func:`libra_opt.io.files.read_text` (regular files only,
  bounded), once per load with a :class:`~libra_opt.io.files.ParseCache`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from libra_opt.errors import InputError
from libra_opt.io._yaml.simple import (
    MAX_INT_DIGITS,
    NOT_SIMPLE,
    TAG_PREFIX,
    parse_simple,
    plain_value,
)
from libra_opt.io.files import ParseCache, _check_path, read_text

__all__ = [
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "read_yaml",
]

#: Largest YAML file read (bytes). Without libyaml (and for the rare documents it does not
#: take, see :func:`_c_eligible`) YAML is parsed in pure Python at roughly 0.4 s per MB, so
#: YAML (scenarios, LIBRA files, catalogs, model descriptors: kilobytes in practice) gets a
#: tighter bound than plain text such as ASTRA-sim workloads; ``max_bytes`` overrides it.
MAX_YAML_BYTES = 4 * 1024 * 1024
#: Deepest nesting of sequences/mappings in a YAML document.
MAX_YAML_DEPTH = 100
#: Most nodes a YAML document may hold once every alias is expanded.
MAX_YAML_NODES = 1_000_000
#: Deepest nesting libyaml's (recursive, C) composer is given: it recurses on the C stack
#: (a 512 KiB thread stack holds about 1000 levels), so deeper documents are first measured
#: from the event stream and, if deeper than this, left to the pure-Python loader.
_C_SAFE_DEPTH = 400
#: Text on which libyaml and PyYAML's reference loader disagree (found by differential
#: tests): a tab (libyaml takes it as a separator, ``a:\tb``), the NEL/LS/PS line breaks, a
#: byte-order mark past the first character, the bare non-specific tag ``!`` (on an empty
#: node libyaml reads ``''``, the reference loader ``None``) and a block scalar header
#: running into a comment. Documents holding any of these (anywhere, even in a string or a
#: comment) are read by the reference loader only, so the rules stay exactly today's.
_C_UNSAFE = re.compile(
    r"[\t\x85\u2028\u2029]|(?<!^)\ufeff"
    r"|(?<![^\s\[{,\ufeff])!(?![^\s\]},])"
    r"|[|>][-+0-9]*#"  # a block scalar header running into a comment: libyaml takes "|#"
)
#: Characters without which :data:`_C_UNSAFE` cannot match, bar its last alternative
#: (which needs a ``#`` and a ``|`` or ``>``).
_C_UNSAFE_CHARS = "\t\x85\u2028\u2029\ufeff!"

_log = logging.getLogger(__name__)

# --- the rules, shared by both loaders --------------------------------------------------------


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    if not isinstance(node, yaml.MappingNode):  # "!!map x"
        raise yaml.constructor.ConstructorError(
            None, None, f"expected a mapping node, but found {node.id}", node.start_mark
        )
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        mark = key_node.start_mark
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a scalar, not a list or mapping", mark
            ) from None
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {_short(key)} (line {mark.line + 1})", mark
            )
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


def _construct_int(loader: Any, node: yaml.ScalarNode) -> int:
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {digits} digits is too long", node.start_mark
        )
    try:
        return loader.construct_yaml_int(node)
    except (ValueError, IndexError):  # e.g. "!!int x", or "!!int ''" (PyYAML indexes [0])
        raise yaml.constructor.ConstructorError(
            None, None, "malformed integer", node.start_mark
        ) from None


def _checked(what: str, construct: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """``construct`` with PyYAML's own failures on odd explicitly tagged scalars (``!!float
    ''``, ``!!bool maybe``, ``!!timestamp 2020-13-45``) turned into a YAML error at the node."""

    def checked(loader: Any, node: Any) -> Any:
        try:
            return construct(loader, node)
        except (ValueError, IndexError, KeyError, TypeError, AttributeError, OverflowError):
            raise yaml.constructor.ConstructorError(
                None, None, f"malformed {what} {_short(node.value)}", node.start_mark
            ) from None

    return checked


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if isinstance(value, str | int | float | bool) or value is None else (
        f"<{type(value).__name__}>"
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _add_rules(cls: Any) -> None:
    """Install the strict constructors and the exponent-number resolver on a loader class."""
    cls.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
    cls.add_constructor("tag:yaml.org,2002:int", _construct_int)
    for what, tag, construct in (
        ("number", "float", yaml.constructor.SafeConstructor.construct_yaml_float),
        ("boolean", "bool", yaml.constructor.SafeConstructor.construct_yaml_bool),
        ("timestamp", "timestamp", yaml.constructor.SafeConstructor.construct_yaml_timestamp),
    ):
        cls.add_constructor(f"tag:yaml.org,2002:{tag}", _checked(what, construct))
    # YAML 1.1 reads 1e7 or 2e-3 (no decimal point) as strings; read them as numbers (YAML 1.2).
    cls.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
        list("-+0123456789"),
    )


# --- the reference loader (pure Python) --------------------------------------------------------


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, deep nesting and alias bombs.

    While composing, it keeps the expanded node count of every anchored node, so an alias
    adds the size of what it refers to without anything being copied. Its errors are the
    ones :func:`read_yaml` reports, whichever loader read the document.
    """

    max_depth = MAX_YAML_DEPTH
    max_nodes = MAX_YAML_NODES

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._expanded = 0
        self._counts: list[int] = []  # expanded size of each open node's children
        self._anchor_size: dict[str, int] = {}
        self._open_anchors: set[str] = set()

    # The scanner is quadratic in flow nesting and block nesting makes quadratic text:
    # stop both at the depth limit, before the composer sees them.
    def _too_deep(self) -> yaml.scanner.ScannerError:
        return yaml.scanner.ScannerError(
            None, None, f"nested more than {self.max_depth} levels deep (limit)", self.get_mark()
        )

    def fetch_flow_collection_start(self, TokenClass: Any) -> None:  # noqa: N803 - PyYAML's name
        if self.flow_level >= self.max_depth:
            raise self._too_deep()
        super().fetch_flow_collection_start(TokenClass)

    def add_indent(self, column: int) -> bool:
        if len(self.indents) >= self.max_depth:
            raise self._too_deep()
        return super().add_indent(column)

    def _grow(self, n: int, mark: Any, alias: bool) -> None:
        self._expanded += n
        if self._counts:
            self._counts[-1] += n
        if self._expanded > self.max_nodes:
            what = "with its aliases expanded, the document" if alias else "the document"
            raise yaml.composer.ComposerError(
                None, None, f"{what} has more than {self.max_nodes} nodes (limit)", mark
            )

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            anchor = event.anchor
            if anchor in self._open_anchors:
                raise yaml.composer.ComposerError(
                    None, None, f"alias *{anchor} refers to a node that contains it", event.start_mark
                )
            if anchor in self._anchor_size:
                self._grow(self._anchor_size[anchor], event.start_mark, alias=True)
            return super().compose_node(parent, index)
        if self._depth >= self.max_depth:
            raise yaml.composer.ComposerError(
                None, None, f"nested more than {self.max_depth} levels deep (limit)", event.start_mark
            )
        anchor = event.anchor
        if anchor is not None:
            self._open_anchors.add(anchor)
        self._grow(1, event.start_mark, alias=False)
        self._depth += 1
        self._counts.append(0)
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
            inner = self._counts.pop()
        if self._counts:
            self._counts[-1] += inner
        if anchor is not None:
            self._open_anchors.discard(anchor)
            self._anchor_size[anchor] = 1 + inner
        return node


_add_rules(_StrictLoader)
#: The implicit resolvers by first character (the same for both loaders, :func:`_add_rules`):
#: the plain block reader's and libyaml's tag resolution.
_IMPLICIT: Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]] = MappingProxyType({
    first: tuple(pairs) for first, pairs in _StrictLoader.yaml_implicit_resolvers.items()
})


def _parse_pure(text: str, max_depth: int, max_nodes: int) -> Any:
    """The document in ``text`` by the reference loader; raises ``yaml.YAMLError``."""
    return _compose_pure(text, max_depth, max_nodes)[1]


def _compose_pure(text: str, max_depth: int, max_nodes: int) -> tuple[_Composed, Any]:
    """The composed document in ``text`` and its data, by the reference loader."""
    loader = _StrictLoader(text)  # the reader rejects control characters here
    try:
        loader.max_depth = max_depth
        loader.max_nodes = max_nodes
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
        return _Composed(node, True, _StrictLoader), data
    finally:
        loader.dispose()


# --- the fast loader (libyaml) -----------------------------------------------------------------


class _Refused(yaml.YAMLError):
    """The composed document breaks a limit (the reference loader words the error)."""


def _check_graph(root: yaml.Node, max_depth: int, max_nodes: int) -> bool:
    """Refuse a composed document that nests or expands beyond the limits, without expanding it.

    libyaml's composer makes every alias a second reference to its anchor's node, so the
    document is a graph. Walked iteratively in document order, a node's first visit is where
    it is written (its nesting level is counted there, as the reference loader does); a
    later visit is an alias, which adds the memoised expanded size of that node; a visit to
    a node still open is an alias inside its own anchor.

    Returns
    -------
    bool
        Whether some node is reached twice (the document holds an alias).

    Raises
    ------
    _Refused
        Nesting deeper than ``max_depth``, more than ``max_nodes`` nodes with the aliases
        expanded, or a recursive alias.
    """
    if max_depth < 1 or max_nodes < 1:
        raise _Refused("limits below one node")
    size: dict[int, int] = {}  # id -> expanded size, for finished nodes
    open_ids: set[int] = set()
    scalar = yaml.ScalarNode
    mapping = yaml.MappingNode
    shared = False
    if type(root) is scalar:
        return shared
    # frames: [node id, iterator over children, expanded size so far]
    stack: list[list[Any]] = [[id(root), iter(_children(root, mapping)), 1]]
    open_ids.add(id(root))
    while stack:
        frame = stack[-1]
        child = next(frame[1], None)
        if child is None:
            stack.pop()
            ident, n = frame[0], frame[2]
            open_ids.discard(ident)
            size[ident] = n
            if stack:
                stack[-1][2] += n
                if stack[-1][2] > max_nodes:
                    raise _Refused("too many nodes")
            continue
        ident = id(child)
        if ident in size:  # an alias: counted expanded, not walked again
            frame[2] += size[ident]
            shared = True
        elif ident in open_ids:
            raise _Refused("recursive alias")
        elif len(stack) >= max_depth:
            raise _Refused("too deep")
        elif type(child) is scalar:
            size[ident] = 1
            frame[2] += 1
        else:
            open_ids.add(ident)
            stack.append([ident, iter(_children(child, mapping)), 1])
            continue
        if frame[2] > max_nodes:
            raise _Refused("too many nodes")
    return shared


_MAP, _SEQ, _MERGE, _VALUE = (TAG_PREFIX + t for t in ("map", "seq", "merge", "value"))


def _construct_fast(loader: Any, root: yaml.Node, shared: bool) -> Any:
    """The data of a composed, checked document: what ``loader.construct_document(root)``
    gives, built without PyYAML's per-node dispatch for the common tags.

    Maps, sequences, strings, plain decimal numbers, booleans and nulls are built here with
    the same rules (duplicate keys refused, keys hashable); another scalar (another tag, a
    number in another notation) is handed to the loader's own constructor. A document with
    any other collection (a mapping with merge keys, ``!!set``, ``!!omap``...) is built by
    ``loader.construct_document`` whole, so that objects shared through aliases and merges
    are shared exactly as PyYAML shares them (it flattens merge keys into the graph, which
    later constructions then read as plain mappings). ``shared`` (an alias somewhere): a
    node reached twice gives one object, as PyYAML gives.
    """
    memo: dict[int, Any] | None = {} if shared else None
    scalar, mapping, sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode
    bools = loader.bool_values
    error = yaml.constructor.ConstructorError

    def build(node: Any) -> Any:
        if memo is not None and id(node) in memo:
            return memo[id(node)]
        kind, tag = type(node), node.tag
        if kind is scalar:
            value = plain_value(tag, node.value, bools)
            if value is not NOT_SIMPLE:
                return value
        elif kind is mapping and tag == _MAP and not any(
            k.tag == _MERGE or k.tag == _VALUE for k, _ in node.value
        ):
            out: dict[Any, Any] = {}
            if memo is not None:
                memo[id(node)] = out
            for key_node, value_node in node.value:
                key = build(key_node)
                mark = key_node.start_mark
                try:
                    hash(key)
                except TypeError:
                    raise error(None, None, "a mapping key must be a scalar, not a list or "
                                "mapping", mark) from None
                if key in out:
                    raise error(None, None, f"duplicate key {_short(key)} (line "
                                f"{mark.line + 1})", mark)
                out[key] = build(value_node)
            return out
        elif kind is sequence and tag == _SEQ:
            items: list[Any] = []
            if memo is not None:
                memo[id(node)] = items
            items.extend(build(child) for child in node.value)
            return items
        if kind is not scalar:
            raise _Generic
        made = loader.construct_object(node, deep=True)
        if memo is not None:
            memo[id(node)] = made
        return made

    try:
        return build(root)
    except _Generic:
        loader.constructed_objects = {}
        loader.recursive_objects = {}
        return loader.construct_document(root)
    finally:
        loader.constructed_objects = {}
        loader.recursive_objects = {}


class _Generic(Exception):
    """A collection :func:`_construct_fast` leaves to PyYAML's constructors."""


def _children(node: Any, mapping: type) -> list[Any]:
    """A collection node's children in document order (a mapping's keys and values)."""
    value: list[Any] = node.value
    if type(node) is mapping:
        return [n for pair in value for n in pair]
    return value


def _c_depth_bound(text: str) -> int:
    """An upper bound on the nesting of the document in ``text``, from its characters alone.

    Flow collections each need a ``[`` or ``{``; block collections nested in one another
    start at increasing columns (an indentless sequence, as a mapping value, at the same
    one), so they are at most twice as many as the longest line is long.
    """
    longest = len(text) if len(text) < 200 else max(map(len, text.splitlines()), default=0)
    return text.count("[") + text.count("{") + 2 * (longest + 1) + 1


_CSafeLoader: Any = getattr(yaml, "CSafeLoader", None) if getattr(yaml, "__with_libyaml__", False) else None


if _CSafeLoader is not None:

    class _CStrictLoader(_CSafeLoader):  # type: ignore[misc,valid-type]
        """libyaml's parser and composer, PyYAML's safe constructors with our rules (the
        limits are checked on the composed graph, :func:`_check_graph`; the common nodes
        are built by :func:`_construct_fast`)."""

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            """PyYAML's tag resolution (the same resolvers, in the same order), without its
            per-node list building: libyaml's composer calls this once per node."""
            if kind is yaml.ScalarNode:
                if implicit[0]:
                    for tag, regexp in _IMPLICIT.get(value[:1], ()):
                        if regexp.match(value):
                            return tag
                return self.DEFAULT_SCALAR_TAG
            if kind is yaml.SequenceNode:
                return self.DEFAULT_SEQUENCE_TAG
            return self.DEFAULT_MAPPING_TAG

    _add_rules(_CStrictLoader)
    # the shortcut above holds while there are no path or wildcard resolvers, and the two
    # loaders resolve alike
    assert not _CStrictLoader.yaml_path_resolvers
    assert {k: tuple(v) for k, v in _CStrictLoader.yaml_implicit_resolvers.items()} == _IMPLICIT
    _C_LOADER: Any = _CStrictLoader
else:  # pragma: no cover - PyYAML built without libyaml
    _C_LOADER = None


def _c_nesting(text: str, stop: int) -> int:
    """Deepest collection nesting in ``text`` from libyaml's event stream, counting up to
    ``stop`` + 1 (the parser keeps its stack on the heap: no recursion)."""
    loader = _C_LOADER(text)
    try:
        depth = deepest = 0
        start = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
        end = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
        while not loader.check_event(yaml.StreamEndEvent):
            event = loader.get_event()
            if isinstance(event, start):
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if deepest > stop:
                        break
            elif isinstance(event, end):
                depth -= 1
        return deepest
    finally:
        loader.dispose()


#: A ``?`` after a plain scalar's character (``[a?]``, ``[a ?]``), not one opening a flow
#: entry's complex key (``[? a]``): libyaml reads ``[a?]`` as ``['a?']`` where the reference
#: loader refuses it (found by the differential test).
_PLAIN_QUESTION = re.compile(r"(?<![\[{,\s])\?|[^\s\[{,]\s+\?")
#: A comment: ``#`` at a line's start or after white space, to the end of the line.
_COMMENT = re.compile(r"(?:^|(?<=\s))#.*$", re.MULTILINE)


def _question_in_plain(text: str) -> bool:
    r"""Whether ``text`` may hold a ``?`` inside a plain scalar (:data:`_PLAIN_QUESTION`),
    comments aside; a line with a quote keeps its comment (a ``#`` may be quoted), so the
    answer errs towards yes.

    Examples
    --------
    >>> _question_in_plain("[a?]"), _question_in_plain("[? a]")
    (True, False)
    >>> _question_in_plain("# worth buying?\nx: [1, 2]")
    False
    """
    lines = [ln if ("'" in ln or '"' in ln) else _COMMENT.sub("", ln)
             for ln in text.split("\n")]
    return _PLAIN_QUESTION.search("\n".join(lines)) is not None


def _c_unsafe(text: str) -> bool:
    """Whether :data:`_C_UNSAFE` finds something in ``text`` (the pattern is searched only
    when ``text`` holds a character it needs: most documents hold none). So is a ``?``
    inside a plain scalar of a document with a flow collection (:func:`_question_in_plain`)."""
    if "?" in text and ("[" in text or "{" in text) and _question_in_plain(text):
        return True
    if "#" in text and ("|" in text or ">" in text):
        return _C_UNSAFE.search(text) is not None
    return any(ch in text for ch in _C_UNSAFE_CHARS) and _C_UNSAFE.search(text) is not None


def _c_eligible(text: str) -> bool:
    """Whether libyaml may read ``text``: it holds none of the characters on which libyaml
    and the reference loader disagree, and libyaml's recursive composer can take its depth."""
    if _C_LOADER is None or _c_unsafe(text):
        return False
    if _c_depth_bound(text) <= _C_SAFE_DEPTH:
        return True
    return _c_nesting(text, _C_SAFE_DEPTH) < _C_SAFE_DEPTH


def _parse_c(text: str, max_depth: int, max_nodes: int) -> Any:
    """The document in ``text`` by libyaml with our rules; raises ``yaml.YAMLError`` (or
    :class:`_Refused`) on anything the reference loader would refuse. Call only on text
    :func:`_c_eligible` accepts."""
    return _compose_c(text, max_depth, max_nodes)[1]


def _compose_c(text: str, max_depth: int, max_nodes: int) -> tuple[_Composed, Any]:
    """The composed document in ``text`` and its data, by libyaml (see :func:`_parse_c`)."""
    loader = _C_LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return _Composed(None, False, _C_LOADER), None
        shared = _check_graph(node, max_depth, max_nodes)
        return _Composed(node, shared, _C_LOADER), _construct_fast(loader, node, shared)
    finally:
        loader.dispose()


def _compose(text: str, max_depth: int, max_nodes: int) -> tuple[_Composed, Any]:
    """The plain block reader (:func:`~libra_opt.io._yaml.simple.parse_simple`) where the
    document is in its subset; else libyaml where it may read ``text``; the reference
    loader otherwise, and for the wording of every error (it refuses what libyaml
    refused, with today's message)."""
    data = parse_simple(text, _IMPLICIT, _StrictLoader.bool_values, max_depth,
                        max_nodes)
    if data is not NOT_SIMPLE:
        return _Composed(None, False, None, text=text, limits=(max_depth, max_nodes)), data
    try:
        if _c_eligible(text):
            return _compose_c(text, max_depth, max_nodes)
    except (yaml.YAMLError, RecursionError) as exc:
        _log.debug("libyaml refused the document (%s); the reference loader reports it", exc)
    return _compose_pure(text, max_depth, max_nodes)


def _parse(text: str, max_depth: int, max_nodes: int) -> Any:
    """The data of the document in ``text`` (see :func:`_compose`)."""
    return _compose(text, max_depth, max_nodes)[1]


class _Composed:
    """What a :class:`ParseCache` keeps of a YAML file, from which fresh data is built for
    each reader: the document's node graph (never handed out, so no reader can change what
    the next one gets; merge keys are flattened into it by the first construction), or for
    a document the plain block reader took, its text (read again from memory: cheaper than
    composing nodes, or copying the data)."""

    __slots__ = ("root", "shared", "loader_cls", "text", "limits")

    def __init__(self, root: yaml.Node | None, shared: bool, loader_cls: Any,
                 text: str | None = None, limits: tuple[int, int] = (0, 0)) -> None:
        self.root = root
        self.shared = shared
        self.loader_cls = loader_cls
        self.text = text
        self.limits = limits

    def construct(self) -> Any:
        """New data of the document (the same as its first construction)."""
        if self.text is not None:
            return parse_simple(self.text, _IMPLICIT, _StrictLoader.bool_values,
                                *self.limits)
        if self.root is None:
            return None
        loader = self.loader_cls("")
        try:
            return _construct_fast(loader, self.root, self.shared)
        finally:
            loader.dispose()


def read_yaml(
    path: str | Path,
    *,
    max_bytes: int | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
    cache: ParseCache | None = None,
) -> Any:
    """Read a YAML file strictly and within bounds.

    Parameters
    ----------
    path : str or pathlib.Path
    max_bytes, max_depth, max_nodes : int, optional
        Override :data:`MAX_YAML_BYTES`, :data:`MAX_YAML_DEPTH`, :data:`MAX_YAML_NODES`.
    cache : ParseCache, optional
        The current load's cache: a file it already holds is not read again.

    Raises
    ------
    InputError
        If the file is missing, not a regular file, too large, malformed, has duplicate
        keys, nests too deep or expands to too many nodes -- naming the file and line.
    """
    if cache is None:
        return _load_composed(path, max_bytes, max_depth, max_nodes)[1]
    fresh: list[Any] = []

    def make() -> _Composed:
        doc, data = _load_composed(path, max_bytes, max_depth, max_nodes)
        fresh.append(data)
        return doc

    doc = cache.get("yaml", path, make, max_bytes, max_depth, max_nodes)
    return fresh[0] if fresh else doc.construct()


def _load_composed(
    path: str | Path, max_bytes: int | None, max_depth: int | None, max_nodes: int | None
) -> tuple[_Composed, Any]:
    p = _check_path(path)
    text = read_text(p, max_bytes=MAX_YAML_BYTES if max_bytes is None else max_bytes)
    depth = MAX_YAML_DEPTH if max_depth is None else int(max_depth)
    nodes = MAX_YAML_NODES if max_nodes is None else int(max_nodes)
    try:
        return _compose(text, depth, nodes)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML: {problem}", source=str(p), field=where) from None
    except RecursionError:  # not expected with the depth limit; never a traceback
        raise InputError("malformed YAML: nested too deep", source=str(p)) from None
