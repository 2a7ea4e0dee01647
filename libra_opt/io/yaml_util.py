"""Strict YAML loading: duplicate keys are errors, every error names file, line and column."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from libra_opt.errors import InputError

__all__ = ["load_yaml", "read_text"]


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys instead of keeping the last one."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False):
    loader.flatten_mapping(node)
    seen: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (line {mark.line + 1})", mark
            )
        seen[key] = loader.construct_object(value_node, deep=deep)
    return seen


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
# YAML 1.1 reads 1e7 or 2e-3 (no decimal point) as strings; read them as numbers (YAML 1.2).
_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def read_text(path: str | Path) -> str:
    """The UTF-8 text of a file; an :class:`InputError` naming it when it cannot be read."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", source=str(p)) from None


def load_yaml(path: str | Path) -> Any:
    """Read a YAML file strictly.

    Raises
    ------
    InputError
        If the file is missing, unreadable, malformed or has duplicate keys.
    """
    p = Path(path)
    text = read_text(p)
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - strict SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(f"malformed YAML: {problem}", source=str(p), field=where) from None
