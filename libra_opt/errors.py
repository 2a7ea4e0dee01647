"""The exception hierarchy of libra_opt: every error the package raises on purpose derives
from :class:`LibraOptError`; input errors carry the file, the field and what was expected.
"""

from __future__ import annotations

import contextlib
import re
import reprlib
from collections.abc import Iterator
from typing import Any

__all__ = [
    "LibraOptError",
    "InputError",
    "input_context",
    "option_context",
    "API_SOURCE",
    "short_repr",
    "MAX_ERROR_LINE",
    "InfeasibleDesignError",
    "UnboundedDesignError",
    "SolverError",
    "VerificationError",
]


#: The ``source`` of errors about values given in Python (not read from a file).
API_SOURCE = "<api>"

#: Longest one-line error message (characters); longer parts are shortened with "...".
MAX_ERROR_LINE = 500
#: Longest message kept in :attr:`InputError.message`.
_MAX_MESSAGE = 400
_MAX_SOURCE = 160
_MAX_FIELD = 120
#: Longest quote of a user value in an error message.
MAX_QUOTE = 200

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = MAX_QUOTE
_REPR.maxother = MAX_QUOTE
_REPR.maxlong = 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 8


def short_repr(value: Any, limit: int = MAX_QUOTE) -> str:
    """``repr(value)`` cut to at most ``limit`` characters, without formatting the whole value
    (containers to a bounded depth and length).

    Examples
    --------
    >>> short_repr("x" * 1000, limit=12)
    "'xxxxxxxx..."
    >>> short_repr(list(range(100)))
    '[0, 1, 2, 3, 4, 5, 6, 7, ...]'
    """
    try:
        if isinstance(value, str):
            text = repr(value[: limit + 1])
        else:
            text = _REPR.repr(value)
    except Exception:  # noqa: BLE001 - a user object whose repr fails (or a huge int)
        text = f"<{type(value).__name__}>"
    return _shorten(text, limit)


def _shorten(text: str, limit: int, keep: str = "head") -> str:
    """``text`` cut to ``limit`` characters: keep its head, its tail or both ends."""
    if len(text) <= limit:
        return text
    if limit <= 3:
        return text[:limit]
    if keep == "tail":
        return "..." + text[-(limit - 3):]
    if keep == "both":
        half = (limit - 3) // 2
        return text[:half] + "..." + text[-(limit - 3 - half):]
    return text[: limit - 3] + "..."


def _one_spaced(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` (bounded work: it may quote a huge value)."""
    return _shorten(" ".join(str(text)[: 4 * limit].split()), limit)


def _ends(text: str, n: int) -> str:
    """The first and last ``n`` characters of ``text`` (all of it when short)."""
    return text if len(text) <= 2 * n else text[:n] + "..." + text[-n:]


class LibraOptError(Exception):
    """Base class of every error raised by libra_opt."""


class InputError(LibraOptError, ValueError):
    """A descriptor, scenario or argument is malformed.

    Parameters
    ----------
    message : str
        What is wrong and what was expected.
    source : str, optional
        The file (or ``"<api>"``/``"<cli>"``) the bad value came from.
    field : str, optional
        Dotted path of the offending field, e.g. ``"fabric.dims[2].size"``.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.message = _one_spaced(message, _MAX_MESSAGE)
        self.source = source
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        """The error as one line: ``file: field: message``, at most :data:`MAX_ERROR_LINE`
        characters (an overlong file name keeps its tail, a field both ends, the message
        its head)."""
        parts = [
            _shorten(" ".join(self.source[-4 * _MAX_SOURCE:].split()), _MAX_SOURCE, "tail")
            if self.source else "",
            _shorten(" ".join(_ends(self.field, 4 * _MAX_FIELD).split()), _MAX_FIELD, "both")
            if self.field else "",
        ]
        prefix = ": ".join(p for p in parts if p)
        room = MAX_ERROR_LINE - len(prefix) - 2 if prefix else MAX_ERROR_LINE
        text = _one_spaced(self.message, room)
        return f"{prefix}: {text}" if prefix else text


def _join_fields(outer: str | None, inner: str | None) -> str | None:
    """``outer.inner`` (``outer[i]`` when ``inner`` is an index); either may be missing."""
    if not outer:
        return inner
    if not inner:
        return outer
    return f"{outer}{inner}" if inner.startswith("[") else f"{outer}.{inner}"


@contextlib.contextmanager
def input_context(source: str | None, field: str | None = None) -> Iterator[None]:
    """Name the file and field of any :class:`InputError` raised inside the block.

    An :class:`InputError` that names no file (or only :data:`API_SOURCE`) is raised again
    naming ``source``, its field prefixed by ``field``; one that names a file passes
    unchanged. Nested contexts compose.

    Examples
    --------
    >>> try:
    ...     with input_context("run.yaml", "workloads[2]"):
    ...         with input_context(None, "parallelism"):
    ...             raise InputError("expected an int >= 1, got 0", field="tp")
    ... except InputError as exc:
    ...     print(exc)
    run.yaml: workloads[2].parallelism.tp: expected an int >= 1, got 0
    """
    try:
        yield
    except InputError as exc:
        if exc.source and exc.source != API_SOURCE:
            raise
        new_source = source or exc.source
        new_field = _join_fields(field, exc.field)
        if new_source == exc.source and new_field == exc.field:
            raise
        raise InputError(exc.message, source=new_source, field=new_field).with_traceback(
            exc.__traceback__) from None


#: ``overwrite=True`` in a message written for Python callers: the command line's ``--overwrite``.
_KEYWORD_TRUE = re.compile(r"\b([a-z][a-z0-9_]*)=True\b")


@contextlib.contextmanager
def option_context(name: str | None, fields: tuple[str | None, ...] = (None,)) -> Iterator[None]:
    """Blame the option ``name`` for an :class:`InputError` raised inside the block about a
    value the caller gave: one that names no file (or only :data:`API_SOURCE`) and whose
    field is one of ``fields`` (by default: no field).

    ``name`` is a command-line option (``<cli>: --out: message``, ``overwrite=True`` in it
    spelled ``--overwrite``), a Python keyword (the error's field) or ``None`` (nothing).

    Examples
    --------
    >>> try:
    ...     with option_context("--out"):
    ...         raise InputError("'r' is not empty: give overwrite=True to replace it")
    ... except InputError as exc:
    ...     print(exc)
    <cli>: --out: 'r' is not empty: give --overwrite to replace it
    >>> with option_context("--csv", fields=("budget_usd",)):  # not this block's error
    ...     raise InputError("expected a number", source="s.yaml", field="budget_usd")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: s.yaml: budget_usd: expected a number
    """
    try:
        yield
    except InputError as exc:
        if name is None or (exc.source and exc.source != API_SOURCE) or exc.field not in fields:
            raise
        if name.startswith("--"):
            message = _KEYWORD_TRUE.sub(lambda m: "--" + m[1].replace("_", "-"), exc.message)
            error = InputError(message, source="<cli>", field=name)
        else:
            error = InputError(exc.message, source=exc.source, field=name)
        raise error.with_traceback(exc.__traceback__) from None


class InfeasibleDesignError(LibraOptError):
    """No bandwidth allocation satisfies the constraints; ``constraints``: the labels of an
    irreducible set of constraints that cannot hold together."""

    def __init__(self, message: str, constraints: tuple[str, ...] = ()):
        self.constraints = tuple(constraints)
        super().__init__(" ".join(message.split()))


class UnboundedDesignError(LibraOptError):
    """The objective has no attained optimum (e.g. nothing bounds bandwidth away from zero)."""


class SolverError(LibraOptError):
    """The numerical solver failed or returned an unusable status."""


class VerificationError(SolverError):
    """The independent numpy re-evaluation disagrees with the solver's answer."""
