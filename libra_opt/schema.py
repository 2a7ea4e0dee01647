"""Shared pydantic plumbing: a strict base model and ValidationError -> InputError."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from libra_opt.errors import InputError, short_repr

__all__ = ["StrictModel", "validate_as"]

T = TypeVar("T")


class StrictModel(BaseModel):
    """Frozen pydantic model that rejects unknown keys and non-finite numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def _loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


#: Error types of a key the model does not have (a model's, a dataclass's).
_UNKNOWN = ("extra_forbidden", "unexpected_keyword_argument")
_UNION_TAGS = {"transformer", "dlrm", "resnet", "constant", "saturating", "str", "int", "float", "bool"}


def _is_tag(part: str) -> bool:
    """Location parts pydantic adds for union members and validators (not user fields)."""
    return part.startswith("function-") or part in _UNION_TAGS or "[" in part


def validate_as(tp: type[T] | Any, data: Any, source: str | None, prefix: str | None = None) -> T:
    """Validate ``data`` as ``tp`` (a pydantic model or annotated type), raising InputError."""
    try:
        return TypeAdapter(tp).validate_python(data)
    except ValidationError as exc:
        raise _input_error(exc, source, prefix) from None


def _input_error(exc: ValidationError, source: str | None, prefix: str | None) -> InputError:
    """One-line :class:`InputError` naming the file, the dotted field and the problem."""
    errors = exc.errors(include_url=False)
    # An unknown key is usually a misspelt one: report it before the "missing" it causes.
    # Otherwise the deepest location: a union reports each member's complaint, and the one
    # that got furthest into the value is the real problem (not "should be a string").
    err = next(
        (e for e in errors if e["type"] in _UNKNOWN),
        max(errors, key=lambda e: len([p for p in e["loc"] if not (isinstance(p, str) and _is_tag(p))])),
    )
    # Discriminated unions and validators add their own tags to the location; drop them.
    loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and _is_tag(p)))
    inner = err.get("ctx", {}).get("error")
    if err["type"] in _UNKNOWN:
        msg = f"unknown key {short_repr(loc[-1], 80)}"
        loc = loc[:-1]
    elif isinstance(inner, InputError):  # a check of a validated dataclass
        msg = inner.message
        loc = (*loc, *([inner.field] if inner.field else []))
    elif err["type"] == "missing":
        msg = "required field is missing"
    else:
        got = err.get("input")
        msg = err["msg"]
        if not isinstance(got, Mapping | list):
            # never format a whole user value: a pasted blob is quoted, cut, in ~200 chars
            msg = f"{msg} (got {short_repr(got)})"
    more = len(errors) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    path = _loc(loc)
    if prefix:
        path = f"{prefix}.{path}" if path else prefix
    return InputError(msg, source=source, field=path or None)
