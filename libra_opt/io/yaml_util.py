"""Bounded, strict file reading: every error is one :class:`InputError` naming the file.

* a path must be non-empty and name a regular file (not a directory, FIFO or device, nor a
  symlink to one) of at most :data:`MAX_INPUT_BYTES`; at most that many bytes (+1) are
  ever read, so a huge or endless file is never read whole;
* YAML is read strictly: duplicate keys are errors, ``1e7`` is a number, no Python tags,
  and a document may nest at most :data:`MAX_YAML_DEPTH` levels and expand (aliases
  counted as copies of what they refer to) to at most :data:`MAX_YAML_NODES` nodes. Both
  are checked while the document is composed, before anything is expanded, so an alias
  bomb ("billion laughs") is rejected in microseconds wherever it sits.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

import yaml

from libra_opt.errors import InputError, short_repr

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "load_yaml",
    "read_bytes",
    "read_text",
]

#: Largest input file read (bytes); the ``max_bytes`` keyword of the readers overrides it.
MAX_INPUT_BYTES = 64 * 1024 * 1024
#: Largest YAML file read (bytes). YAML is parsed in pure Python at roughly 0.4 s per MB, so
#: YAML (scenarios, LIBRA files, catalogs, model descriptors: kilobytes in practice) gets a
#: tighter bound than plain text such as ASTRA-sim workloads; ``max_bytes`` overrides it.
MAX_YAML_BYTES = 4 * 1024 * 1024
#: Deepest nesting of sequences/mappings in a YAML document.
MAX_YAML_DEPTH = 100
#: Most nodes a YAML document may hold once every alias is expanded.
MAX_YAML_NODES = 1_000_000
#: Longest integer literal (digits) read from YAML.
_MAX_INT_DIGITS = 1000

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def _check_path(path: str | Path) -> Path:
    if path is None or (isinstance(path, str) and not path.strip()):
        raise InputError("empty path; expected the name of a file")
    if "\0" in str(path):
        raise InputError(f"path {short_repr(str(path))} contains a NUL byte; expected a file name")
    return Path(path)


def read_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default :data:`MAX_INPUT_BYTES`).

    Raises
    ------
    InputError
        Naming the file: empty path, missing, not a regular file, too large or unreadable.
    """
    limit = MAX_INPUT_BYTES if max_bytes is None else int(max_bytes)
    p = _check_path(path)
    src = str(p)
    try:
        st = os.stat(p)  # follows symlinks: a link to /dev/zero is a device
    except FileNotFoundError:
        raise InputError("file not found", source=src) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is {_kind(st.st_mode)}; expected a regular file", source=src)
    if st.st_size > limit:
        raise InputError(
            f"file is {_mib(st.st_size)}; the limit is {_mib(limit)}", source=src
        )
    try:
        # O_NONBLOCK: should the path have been swapped for a FIFO since stat, open does
        # not wait for a writer; fstat below then refuses it.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    try:
        with os.fdopen(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not stat.S_ISREG(mode):
                raise InputError(f"is {_kind(mode)}; expected a regular file", source=src)
            data = f.read(limit + 1)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    if len(data) > limit:
        raise InputError(f"file is larger than the limit of {_mib(limit)}", source=src)
    return data


def read_text(path: str | Path, *, max_bytes: int | None = None) -> str:
    """The UTF-8 text of a file (bounded as :func:`read_bytes`); an :class:`InputError`
    naming it when it cannot be read."""
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            source=str(path),
            field=f"line {line}",
        ) from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate keys, deep nesting and alias bombs.

    While composing, it keeps the expanded node count of every anchored node, so an alias
    adds the size of what it refers to without anything being copied.
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


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
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


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    digits = sum(ch.isdigit() for ch in str(node.value))
    if digits > _MAX_INT_DIGITS:
        raise yaml.constructor.ConstructorError(
            None, None, f"an integer of {digits} digits is too long", node.start_mark
        )
    try:
        return loader.construct_yaml_int(node)
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, "malformed integer", node.start_mark
        ) from None


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value) if isinstance(value, str | int | float | bool) or value is None else (
        f"<{type(value).__name__}>"
    )
    return text if len(text) <= limit else text[: limit - 3] + "..."


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
# YAML 1.1 reads 1e7 or 2e-3 (no decimal point) as strings; read them as numbers (YAML 1.2).
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def load_yaml(
    path: str | Path,
    *,
    max_bytes: int | None = None,
    max_depth: int | None = None,
    max_nodes: int | None = None,
) -> Any:
    """Read a YAML file strictly and within bounds.

    Parameters
    ----------
    path : str or pathlib.Path
    max_bytes, max_depth, max_nodes : int, optional
        Override :data:`MAX_YAML_BYTES`, :data:`MAX_YAML_DEPTH`, :data:`MAX_YAML_NODES`.

    Raises
    ------
    InputError
        If the file is missing, not a regular file, too large, malformed, has duplicate
        keys, nests too deep or expands to too many nodes -- naming the file and line.
    """
    p = _check_path(path)
    text = read_text(p, max_bytes=MAX_YAML_BYTES if max_bytes is None else max_bytes)
    loader = None
    try:
        loader = _StrictLoader(text)  # the reader rejects control characters here
        if max_depth is not None:
            loader.max_depth = int(max_depth)
        if max_nodes is not None:
            loader.max_nodes = int(max_nodes)
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML: {problem}", source=str(p), field=where) from None
    except RecursionError:  # not expected with the depth limit; never a traceback
        raise InputError("malformed YAML: nested too deep", source=str(p)) from None
    finally:
        if loader is not None:
            loader.dispose()
