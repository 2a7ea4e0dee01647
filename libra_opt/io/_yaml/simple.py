"""A reader for the plain block YAML that scenario and LIBRA files are written in.

Most input files are a few lines of block mappings and sequences whose leaves are plain or
simply quoted scalars, with flat flow collections (``[4, 8, 4]``, ``{name: pod, size:
32}``) and comments. :func:`parse_simple` reads exactly that subset, line by line, and
gives the same data as the strict loaders of :mod:`libra_opt.io._yaml.strict` (the same
implicit tags, the same scalar constructors). Anything outside the subset -- anchors,
aliases, tags, block scalars, multi-line scalars, nested flow collections, escapes,
complex or quoted keys, duplicate keys, odd indentation, directives, several documents,
numbers in other notations -- is not interpreted: :func:`parse_simple` returns
:data:`NOT_SIMPLE` and the caller reads the text with libyaml or the reference loader,
which also word every error. Reading a small file this way costs a fraction of
composing PyYAML nodes for it; a differential test holds both to the same data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["MAX_INT_DIGITS", "NOT_SIMPLE", "PLAIN_FLOAT", "PLAIN_INT", "TAG_PREFIX", "parse_simple", "plain_value"]


class _NotSimple:
    """The marker :func:`parse_simple` returns for text outside its subset."""

    def __repr__(self) -> str:
        return "NOT_SIMPLE"


#: Returned by :func:`parse_simple` for text it does not read.
NOT_SIMPLE: Any = _NotSimple()


class _Outside(Exception):
    """Raised inside the reader when the text leaves the subset."""


TAG_PREFIX = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (TAG_PREFIX + t for t in ("str", "int", "float", "bool", "null"))
#: A key: a plain word (resolved like any plain scalar, so ``on:`` is ``True`` as in YAML 1.1).
_KEY = r"[A-Za-z_][A-Za-z0-9_.\-]{0,1023}"  # YAML's simple keys: at most 1024 characters
#: ``key:`` or ``key: value`` (the value after at least one space).
_ENTRY = re.compile(r"(" + _KEY + r"):(?: +(.*))?")
#: A flat flow-mapping item.
_FLOW_ITEM = re.compile(r"(" + _KEY + r"): +(.+)")
#: Characters a plain scalar may not start with, and flow-collection characters.
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
_FLOW_CHARS = re.compile("[][{}#]")
#: Longest integer literal (digits) read from YAML.
MAX_INT_DIGITS = 1000
#: Plain decimal numbers, which PyYAML's constructors turn into exactly ``int(v)`` /
#: ``float(v)`` (no underscores, base prefixes, leading zeros, sexagesimal parts or .inf;
#: also used by the fast constructor of ``strict``).
PLAIN_INT = re.compile(rf"[-+]?[1-9][0-9]{{0,{MAX_INT_DIGITS - 1}}}|0")
PLAIN_FLOAT = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
#: Characters outside the subset: what PyYAML's reader refuses, and the tab, carriage
#: return and the line breaks other than ``\n`` (NEL, LS, PS).
_NON_PRINTABLE = re.compile(
    "[^\x0a\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


#: A line whose last bracket or brace opens (a flow collection running over several lines,
#: most often): such documents are declined before any line is read. (Each character is
#: scanned from one bracket at most: linear in the text.)
_UNCLOSED = re.compile(r"[\[{][^\[{\]}\n]*$", re.MULTILINE)


def plain_value(tag: str, text: str, bool_values: Mapping[str, bool]) -> Any:  # noqa: PLR0911
    """What PyYAML's safe constructors make of a scalar ``text`` tagged ``tag``, for the
    common forms: a string, a decimal integer or number (``int(text)`` / ``float(text)``
    exactly), a boolean word, a null; :data:`NOT_SIMPLE` for anything else (another tag,
    ``0x1F``, ``1_000``, ``.inf``, ``1:30``...), which the loaders' own constructors build.

    Examples
    --------
    >>> plain_value("tag:yaml.org,2002:float", "1e3", {}), plain_value("tag:yaml.org,2002:int", "0x1F", {})
    (1000.0, NOT_SIMPLE)
    """
    if tag == _STR:
        return text
    if tag == _INT:
        return int(text) if PLAIN_INT.fullmatch(text) else NOT_SIMPLE
    if tag == _FLOAT:
        return float(text) if PLAIN_FLOAT.fullmatch(text) else NOT_SIMPLE
    if tag == _BOOL:
        return bool_values.get(text.lower(), NOT_SIMPLE)
    if tag == _NULL:
        return None
    return NOT_SIMPLE


def _open_flow(text: str) -> bool:
    """Whether ``text`` opens a flow collection it does not close on its line."""
    if text[0] != "[" and text[0] != "{":
        return False
    cut = text.find(" #")
    end = (text if cut < 0 else text[:cut]).rstrip(" ")
    return end[-1] != ("]" if text[0] == "[" else "}")


def _bad_start(text: str) -> bool:
    """Whether a plain scalar may not start as ``text`` does: with an indicator, bar a
    minus sign before a digit or a point (a negative number)."""
    first = text[0]
    if first == "-":
        return len(text) < 2 or text[1] not in "0123456789."
    return first in _INDICATORS


def parse_simple(
    text: str,
    resolvers: Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]],
    bool_values: Mapping[str, bool],
    max_depth: int = 100,
    max_nodes: int = 1_000_000,
) -> Any:
    """The data of ``text`` if it is plain block YAML, else :data:`NOT_SIMPLE`.

    Parameters
    ----------
    text : str
        A whole YAML document.
    resolvers : mapping of str to tuple of (tag, pattern)
        The loader's implicit resolvers by first character (as PyYAML keeps them).
    bool_values : mapping of str to bool
        The loader's boolean words.
    max_depth, max_nodes : int
        A document nesting collections ``max_depth`` deep or holding ``max_nodes`` nodes
        is left to the loaders (which refuse what breaks their limits).

    Examples
    --------
    >>> import yaml
    >>> res = {k: tuple(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    >>> doc = "a: 1\\nb: [x, 2.5]\\nc:\\n- {n: p, on: yes}\\n- ~\\n"
    >>> parse_simple(doc, res, yaml.SafeLoader.bool_values)
    {'a': 1, 'b': ['x', 2.5], 'c': [{'n': 'p', True: True}, None]}
    >>> parse_simple("a: &x 1\\nb: *x\\n", res, yaml.SafeLoader.bool_values)
    NOT_SIMPLE
    """
    if "\r" in text or "\ufeff" in text or _UNCLOSED.search(text) or _NON_PRINTABLE.search(text):
        return NOT_SIMPLE
    try:
        return _Reader(text, resolvers, bool_values, max_depth, max_nodes).document()
    except (_Outside, RecursionError):
        return NOT_SIMPLE


class _Reader:
    """Block structure from indentation. Each line becomes tokens ``(column, kind, a, b)``:
    ``("-", None, None)`` a sequence dash; ``("k", key, value text or None)`` a mapping
    entry; ``("s", value text, None)`` a scalar after a dash on the same line."""

    def __init__(
        self,
        text: str,
        resolvers: Mapping[str, tuple[tuple[str, re.Pattern[str]], ...]],
        bool_values: Mapping[str, bool],
        max_depth: int,
        max_nodes: int,
    ) -> None:
        self.resolvers = resolvers
        self.bool_values = bool_values
        self.depth_left = max_depth  # collections that may still open inside one another
        self.nodes_left = max_nodes
        self.tokens: list[tuple[int, str, Any, Any]] = []
        for line in text.split("\n"):
            body = line.lstrip(" ")
            if not body or body[0] == "#":
                continue
            self._tokenize(len(line) - len(body), body)
        self.i = 0

    def _tokenize(self, col: int, body: str) -> None:
        while body[0] == "-" and (len(body) == 1 or body[1] == " "):  # "- ...": a dash
            self.tokens.append((col, "-", None, None))
            rest = body[1:].lstrip(" ")
            if not rest or rest[0] == "#":
                return
            col, body = col + len(body) - len(rest), rest
            if body[0] == "-" and (len(body) == 1 or body[1] == " "):
                raise _Outside  # "- - x": a sequence in a sequence on one line
            m = _ENTRY.fullmatch(body)
            if m is None:
                if _open_flow(body):
                    raise _Outside
                self.tokens.append((col, "s", body, None))
                return
            break
        m = _ENTRY.fullmatch(body)
        if m is None:
            raise _Outside  # a line that is neither an entry nor a dash (e.g. a continuation)
        value = m.group(2)
        if not (value and value.strip(" ")):
            value = None
        elif _open_flow(value):
            raise _Outside  # known at once: not worth tokenizing the rest
        self.tokens.append((col, "k", m.group(1), value))

    def _count(self, nodes: int, collection: bool = False) -> None:
        """Count nodes against the limits (a collection also opens a nesting level)."""
        self.nodes_left -= nodes
        if self.nodes_left <= 0 or (collection and self.depth_left <= 1):
            raise _Outside

    # --- structure -----------------------------------------------------------------------

    def document(self) -> Any:
        if not self.tokens or self.tokens[0][0] != 0:
            raise _Outside  # empty, or an indented top level
        value = self.node(0)
        if self.i != len(self.tokens):
            raise _Outside  # something left over: a dedent to an unknown column, say
        return value

    def node(self, col: int) -> Any:
        """The collection whose first token (at ``self.i``) sits at ``col``."""
        kind = self.tokens[self.i][1]
        self._count(1, collection=True)
        self.depth_left -= 1
        try:
            if kind == "-":
                return self.sequence(col)
            if kind == "k":
                return self.mapping(col)
            raise _Outside
        finally:
            self.depth_left += 1

    def nested(self, col: int, indentless: bool) -> Any:
        """The value of an entry or dash at ``col`` given on the following lines (``None`` if
        none); under a mapping key a sequence may sit at the key's own column."""
        if self.i < len(self.tokens):
            c, kind = self.tokens[self.i][0], self.tokens[self.i][1]
            if c > col or (indentless and c == col and kind == "-"):
                return self.node(c)
        self._count(1)  # an empty node
        return None

    def mapping(self, col: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        tokens = self.tokens
        while self.i < len(tokens) and tokens[self.i][0] == col:
            _, kind, key_text, value_text = tokens[self.i]
            if kind != "k":
                break  # a dash at the mapping's column: the end of an indentless sequence
            self._count(1)
            key = self.plain(key_text)
            if key in out:
                raise _Outside  # a duplicate key: the loaders word the error
            self.i += 1
            if value_text is None or value_text[0] == "#":
                out[key] = self.nested(col, indentless=True)
            else:
                out[key] = self.scalar(value_text)
                if self.i < len(tokens) and tokens[self.i][0] > col:
                    raise _Outside  # a continuation line of a scalar
        return out

    def sequence(self, col: int) -> list[Any]:
        items: list[Any] = []
        tokens = self.tokens
        while self.i < len(tokens) and tokens[self.i][0] == col and tokens[self.i][1] == "-":
            line_dash = self.i
            self.i += 1
            if self.i < len(tokens) and tokens[self.i][1] != "-" and self._same_line(line_dash):
                c, kind, a, _ = tokens[self.i]
                if kind == "s":
                    self.i += 1
                    items.append(self.scalar(a))
                    if self.i < len(tokens) and tokens[self.i][0] > col:
                        raise _Outside  # a continuation line of a scalar
                else:
                    self._count(1, collection=True)
                    self.depth_left -= 1
                    items.append(self.mapping(c))
                    self.depth_left += 1
            else:
                items.append(self.nested(col, indentless=False))
        if self.i < len(tokens) and tokens[self.i][0] > col:
            raise _Outside
        return items

    def _same_line(self, dash: int) -> bool:
        """Whether the token after the dash at ``dash`` was on the dash's line: then its
        column is past the dash (a token on a later line at such a column would make the
        dash's value a nested block, which ``nested`` reads the same way)."""
        return self.tokens[dash + 1][0] > self.tokens[dash][0]

    # --- scalars -------------------------------------------------------------------------

    def scalar(self, text: str) -> Any:
        """A value written on the line: a flat flow collection, a quoted or a plain scalar
        (a comment after it, `` #...``, is dropped)."""
        first = text[0]
        if first == "'" or first == '"':
            end = text.find(first, 1)
            rest = text[end + 1:].lstrip(" ") if end > 0 else "-"
            inner = text[1:end]
            if rest and (rest[0] != "#" or text[end + 1] != " ") or "\\" in inner or (
                "'" in inner
            ):
                raise _Outside  # escapes, doubled quotes, text after the closing quote
            self._count(1)
            return inner
        cut = text.find(" #")
        if cut >= 0:
            text = text[:cut]
        text = text.rstrip(" ")
        if first == "[":
            return self.flow(text, "]", self.flow_item)
        if first == "{":
            return self.flow_mapping(text)
        if _bad_start(text) or ": " in text or text[-1] == ":" or "\t" in text:
            raise _Outside
        self._count(1)
        return self.plain(text)

    def flow(self, text: str, close: str, item: Callable[[str], Any]) -> list[Any]:
        if text[-1] != close or _FLOW_CHARS.search(text, 1, len(text) - 1):
            raise _Outside
        inner = text[1:-1].strip(" ")
        if not inner:
            self._count(1, collection=True)
            return []
        parts = inner.split(",")
        self._count(1 + 2 * len(parts), collection=True)
        return [item(part.strip(" ")) for part in parts]

    def flow_item(self, text: str) -> Any:
        if text and (text[0] == "'" or text[0] == '"'):  # a quoted item without escapes
            inner = text[1:-1]
            if len(text) < 2 or text[-1] != text[0] or "'" in inner or '"' in inner or (
                "\\" in inner
            ):
                raise _Outside
            return inner
        if not text or _bad_start(text) or ":" in text or "?" in text:
            raise _Outside
        return self.plain(text)

    def flow_mapping(self, text: str) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in self.flow(text, "}", self.flow_pair):
            if key in out:
                raise _Outside
            out[key] = value
        return out

    def flow_pair(self, text: str) -> tuple[Any, Any]:
        m = _FLOW_ITEM.fullmatch(text)
        if m is None:
            raise _Outside
        return self.plain(m.group(1)), self.flow_item(m.group(2).strip(" "))

    def plain(self, text: str) -> Any:
        """A plain scalar, typed by the loader's implicit resolvers and built as PyYAML's
        safe constructors build it (other tags or notations: outside the subset)."""
        tag = None
        for candidate, pattern in self.resolvers.get(text[:1], ()):
            if pattern.match(text):
                tag = candidate
                break
        if tag is None:
            return text  # no resolver matches: a string
        value = plain_value(tag, text, self.bool_values)
        if value is not NOT_SIMPLE:
            return value
        raise _Outside  # timestamps, merge keys, 0x1F, 1_000, .inf, 1:30 ...
