"""Bounded reading of input files: every error is one :class:`InputError` naming the file.

A path must name a regular file (not a directory, FIFO or device) of at most
:data:`MAX_INPUT_BYTES`, and no more than that is ever read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Hashable
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from libra_opt.errors import InputError, short_repr

__all__ = ["MAX_INPUT_BYTES", "ParseCache", "data_path", "packaged_names", "read_bytes",
           "read_text", "read_text_if_any"]

#: Largest input file read (bytes); the ``max_bytes`` keyword of the readers overrides it.
MAX_INPUT_BYTES = 64 * 1024 * 1024
_T = TypeVar("_T")

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def data_path(*parts: str) -> Any:
    """The packaged file or folder ``libra_opt/data/<parts>`` (a traversable)."""
    return resources.files("libra_opt").joinpath("data", *parts)


def packaged_names(folder: str) -> tuple[str, ...]:
    """Names (without ``.yaml``) of the YAML files of ``libra_opt/data/<folder>``, sorted."""
    return tuple(sorted(p.name[:-5] for p in data_path(folder).iterdir()
                        if p.name.endswith(".yaml")))


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def _check_path(path: str | Path) -> str:
    """``path`` as a string, once it is known not to be empty nor to hold a NUL byte."""
    if path is None or (isinstance(path, str) and not path.strip()):
        raise InputError("empty path; expected the name of a file")
    text = os.fspath(path)
    if "\0" in text:
        raise InputError(f"path {short_repr(text)} contains a NUL byte; expected a file name")
    return text


def read_bytes(path: str | Path, *, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (default :data:`MAX_INPUT_BYTES`);
    an :class:`InputError` naming the file when it is missing, not a regular file, too
    large or unreadable."""
    limit = MAX_INPUT_BYTES if max_bytes is None else int(max_bytes)
    p = src = _check_path(path)
    try:
        st = os.stat(p)  # follows symlinks: a link to /dev/zero is a device
    except FileNotFoundError:
        raise InputError("file not found", source=src) from None
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"is {_kind(st.st_mode)}; expected a regular file", source=src)
    if st.st_size > limit:
        raise InputError(f"file is {_mib(st.st_size)}; the limit is {_mib(limit)}", source=src)
    try:  # O_NONBLOCK: a FIFO swapped in since stat does not block open; fstat refuses it
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"is {_kind(st.st_mode)}; expected a regular file", source=src)
        # the size known now, then (a short read, a grown file) the rest in pieces of at
        # most 64 KiB: a read of the whole limit would allocate it
        want = min(st.st_size, limit) + 1
        chunks = [os.read(fd, want)]
        got = len(chunks[0])
        while chunks[-1] and got <= limit:
            ask = want - got if got < st.st_size else min(limit + 1 - got, 65536)
            chunks.append(os.read(fd, ask))
            got += len(chunks[-1])
        data = b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", source=src) from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise InputError(f"file is larger than the limit of {_mib(limit)}", source=src)
    return data


def read_text(path: str | Path, *, max_bytes: int | None = None,
              cache: ParseCache | None = None) -> str:
    """The UTF-8 text of a file (bounded as :func:`read_bytes`); an :class:`InputError`
    naming it when it cannot be read. With ``cache`` (the current load's
    :class:`ParseCache`) a file already read is not read again."""
    if cache is not None:
        return cache.get("text", path, lambda: read_text(path, max_bytes=max_bytes), max_bytes)
    data = read_bytes(path, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                         source=str(path), field=f"line {line}") from None


class ParseCache:
    """Each file read, and parsed, once within one top-level load (pass one to the readers'
    ``cache``); a file is known by its device, inode, size and modification time.

    Examples
    --------
    >>> from libra_opt.io.example_files import example_path
    >>> cache = ParseCache()
    >>> p = example_path("gpt3_175b_4d")
    >>> from libra_opt.io._yaml import read_yaml
    >>> first = read_yaml(p, cache=cache)      # read and parsed
    >>> again = read_yaml(p, cache=cache)      # neither read nor parsed: built anew
    >>> again == first and again is not first
    True
    """

    def __init__(self) -> None:
        self._memo: dict[Hashable, Any] = {}

    def get(self, kind: str, path: str | Path | None, make: Callable[[], _T],
            *extra: Hashable) -> _T:
        """``make()`` the first time ``(kind, file of path, *extra)`` is asked for, then its
        value (nothing memoised for a path that cannot be looked up, nor for an error)."""
        try:
            st = os.stat(path)  # type: ignore[arg-type]
        except (OSError, ValueError, TypeError):  # missing, NUL byte, None: make() says it
            return make()
        key = (kind, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, *extra)
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[no-any-return]


def read_text_if_any(path: str | Path | None, *, max_bytes: int | None = None) -> str | None:
    """The UTF-8 text of a file, or ``None`` when there is no path or it cannot be read (the
    reason logged).

    Examples
    --------
    >>> read_text_if_any(None) is None, read_text_if_any("/nonexistent/x.yaml") is None
    (True, True)
    """
    import logging

    if not path:
        return None
    try:
        return read_text(path, max_bytes=max_bytes)
    except InputError as exc:
        logging.getLogger(__name__).info("text not read: %s", exc)
        return None
