"""Fingerprints: a SHA-256 of a value's canonical form, equal in every process, so that a
resumed study tells its own folder from another's and a saved solution names the scenario
it answers (reading no file: the exploration and file layers both use it).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical", "fingerprint"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def canonical(obj: Any) -> Any:
    """``obj`` as plain JSON values, the same in every process (sets sorted, arrays as
    lists, dataclasses as ``{"__type__": name, field: value}``, memory addresses removed).

    Examples
    --------
    >>> canonical({"b": {2, 1}, "a": (1.5, None)})
    {'a': [1.5, None], 'b': [1, 2]}
    """
    import numpy as np

    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else repr(obj)
    if isinstance(obj, np.generic):
        return canonical(obj.item())
    if isinstance(obj, np.ndarray):
        return canonical(obj.tolist())
    if isinstance(obj, enum.Enum):
        return canonical(obj.value)
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {"__type__": type(obj).__qualname__}
        for f in dataclasses.fields(obj):
            out[f.name] = canonical(getattr(obj, f.name))
        return out
    if isinstance(obj, Mapping):
        return {str(k): canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, set | frozenset):
        items = [canonical(v) for v in obj]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(obj, list | tuple):
        return [canonical(v) for v in obj]
    if callable(obj) and hasattr(obj, "__qualname__"):
        return f"{getattr(obj, '__module__', '')}.{obj.__qualname__}"
    return _ADDRESS.sub("", repr(obj))


def fingerprint(obj: Any) -> str:
    """SHA-256 (hex) of ``obj``'s :func:`canonical` JSON: equal for equal values (specs,
    scenarios), in any process.

    Examples
    --------
    >>> fingerprint({"a": 1}) == fingerprint({"a": 1}), fingerprint({"a": 1}) == fingerprint({"a": 2})
    (True, False)
    >>> fingerprint({"a": 1})[:12]   # sha256(b'{"a":1}')
    '015abd7f5cc5'
    """
    text = json.dumps(canonical(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
