"""Placement of parallelism groups onto fabric dimensions (LIBRA's "communicator").

The NPUs form a grid of five axes, innermost first: ``tp, cp, ep, edp, pp`` (``edp = dp /
ep``). Each axis spans ``k_d`` NPUs of each dimension; per axis their product is its degree,
per dimension their product is its size.

**Automatic placement** walks the axes in that order (Megatron-Core's rank order) and gives
each ``gcd(remaining degree, free capacity)`` NPUs of each dimension, innermost first.
**Explicit placement** (``mapping``): for any of ``tp``, ``cp``, ``ep``, ``dp``, ``pp``, a
list of dimension names (the whole of each) or ``{dim: count}``; ``dp`` is the whole
data-parallel group, ``ep`` by default its innermost part; axes left out are placed
automatically.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric

__all__ = ["AXES", "MAPPING_KEYS", "Placement", "place_groups"]

AXES: tuple[str, ...] = ("tp", "cp", "ep", "edp", "pp")
MAPPING_KEYS: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")


@dataclass(frozen=True)
class Placement:
    """Spans of the five axes on a fabric.

    Attributes
    ----------
    dim_names : tuple of str
        Fabric dimension names, innermost first.
    spans : mapping of str to tuple of int
        Axis (tp, cp, ep, edp, pp) -> ``k_d`` per dimension.
    """

    dim_names: tuple[str, ...]
    spans: Mapping[str, tuple[int, ...]]

    def span(self, *axes: str) -> tuple[int, ...]:
        """Span of the group formed by the product of ``axes``."""
        out = [1] * len(self.dim_names)
        for ax in axes:
            for d, k in enumerate(self.spans[ax]):
                out[d] *= k
        return tuple(out)

    def groups(self) -> dict[str, tuple[int, ...]]:
        """Workload groups and their spans: the axes ``tp``, ``cp``, ``pp``, ``ep``; ``dp`` (dense
        gradients) ``ep x edp x cp``; ``edp`` (expert gradients) ``edp x cp``.

        Examples
        --------
        >>> from libra_opt.fabric.dims import Dim, Fabric
        >>> f = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 16, "B")))
        >>> p = place_groups(f, {"tp": 8, "cp": 1, "ep": 1, "edp": 4, "pp": 4})
        >>> p.groups()["dp"], p.groups()["pp"]
        ((1, 4), (1, 4))
        """
        return {
            "tp": self.span("tp"),
            "cp": self.span("cp"),
            "pp": self.span("pp"),
            "ep": self.span("ep"),
            "dp": self.span("ep", "edp", "cp"),
            "edp": self.span("edp", "cp"),
        }

    def describe(self) -> str:
        """``tp: node 8 | dp: pod 16``-style summary of the non-trivial axes (``edp`` reads ``dp``
        without expert parallelism).

        Examples
        --------
        >>> from libra_opt.fabric.builders import multi_dim
        >>> f = multi_dim((4, 4), ("ring", "switch"))
        >>> place_groups(f, {"tp": 4, "edp": 4}).describe()
        'tp: chiplet 4 | dp: package 4'
        >>> place_groups(f, {"tp": 4, "ep": 2, "edp": 2}).describe()
        'tp: chiplet 4 | ep: package 2 | edp: package 2'
        """
        dense = not any(k > 1 for k in self.spans["ep"])
        parts = []
        for ax in AXES:
            dims = [f"{n} {k}" for n, k in zip(self.dim_names, self.spans[ax], strict=True) if k > 1]
            if dims:
                parts.append(f"{'dp' if dense and ax == 'edp' else ax}: {', '.join(dims)}")
        return " | ".join(parts) or "single NPU"


def _parse_entry(key: str, value: Any, fabric: Fabric, prefix: str) -> list[int]:
    fld = f"{prefix}.{key}"
    span = [1] * fabric.n_dims
    if isinstance(value, str):
        value = [value]
    if isinstance(value, Sequence):
        for name in value:
            if not isinstance(name, str):
                raise InputError(f"expected dimension names, got {name!r}", field=fld)
            d = _dim_index(fabric, name, fld)
            if span[d] != 1:
                raise InputError(f"dimension {name!r} listed twice", field=fld)
            span[d] = fabric.dims[d].size
        return span
    if isinstance(value, Mapping):
        for name, count in value.items():
            d = _dim_index(fabric, str(name), fld)
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InputError(f"count {count!r} on {name!r} must be a positive integer",
                                 field=f"{fld}.{name}")
            if fabric.dims[d].size % count:
                raise InputError(
                    f"{count} does not divide the size {fabric.dims[d].size} of dimension "
                    f"{name!r}",
                    field=f"{fld}.{name}",
                )
            span[d] = count
        return span
    raise InputError("expected a list of dimension names or a mapping dimension -> count, got "
                     f"{value!r}", field=fld)


def _dim_index(fabric: Fabric, name: str, fld: str) -> int:
    if name not in fabric.names:
        raise InputError(f"no dimension named {name!r}; the fabric has {', '.join(fabric.names)}",
                         field=fld)
    return fabric.names.index(name)


def _fmt(span: Sequence[int], fabric: Fabric) -> str:
    parts = [f"{n}: {k}" for n, k in zip(fabric.names, span, strict=True) if k > 1]
    return ", ".join(parts) or "no dimension"


def _carve(degree: int, capacity: Sequence[int]) -> tuple[list[int], int]:
    """``gcd(degree left, capacity)`` of each dimension in turn, and the degree left over."""
    span = []
    for c in capacity:
        span.append(math.gcd(degree, c))
        degree //= span[-1]
    return span, degree


def place_groups(fabric: Fabric, degrees: Mapping[str, int],
                 mapping: Mapping[str, Any] | None = None, prefix: str = "mapping") -> Placement:
    """Place the parallelism axes on ``fabric``.

    Parameters
    ----------
    degrees : mapping
        Degree of each axis: ``tp``, ``cp``, ``ep``, ``edp``, ``pp`` (missing = 1).
    mapping : mapping, optional
        Explicit placement (module notes); ``None`` places everything automatically.
    prefix : str
        Field path of ``mapping`` in error messages.

    Notes
    -----
    Once the degrees multiply to the NPU count, automatic placement always succeeds: for every
    prime ``q`` the multiplicities left in the free capacity equal those left in the degrees, and
    ``gcd`` dimension by dimension hands them out greedily.

    Raises
    ------
    InputError
        When the degrees do not multiply to the NPU count, an explicit span does not match its
        degree, a count does not divide a dimension or a dimension is over-subscribed.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> f = Fabric((Dim("node", "switch", 8, "A"), Dim("pod", "switch", 32, "B")))
    >>> place_groups(f, {"tp": 4, "edp": 64}).describe()
    'tp: node 4 | dp: node 2, pod 32'
    >>> place_groups(f, {"tp": 8, "edp": 32}, {"tp": ["node"], "dp": {"pod": 32}}).describe()
    'tp: node 8 | dp: pod 32'
    >>> place_groups(f, {"tp": 8, "edp": 16})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: mapping: tp x cp x dp x pp = 8 x 1 x 16 x 1 = 128 NPUs, the fabric has 256 (node 8 x pod 32)
    """
    deg = {ax: int(degrees.get(ax, 1)) for ax in AXES}
    unknown_axes = sorted(set(degrees) - set(AXES))
    if unknown_axes:
        raise InputError(f"unknown axes {unknown_axes}", field=prefix)
    total = math.prod(deg.values())
    if total != fabric.n_npus:
        dims = " x ".join(f"{d.name} {d.size}" for d in fabric.dims)
        raise InputError(
            f"tp x cp x dp x pp = {deg['tp']} x {deg['cp']} x {deg['ep'] * deg['edp']} x "
            f"{deg['pp']} = {total} NPUs, the fabric has {fabric.n_npus} ({dims})",
            field=prefix,
        )
    mapping = dict(mapping or {})
    unknown = sorted(set(map(str, mapping)) - set(MAPPING_KEYS))
    if unknown:
        raise InputError(f"unknown group(s) {', '.join(unknown)}; expected some of "
                         f"{', '.join(MAPPING_KEYS)}", field=prefix)
    explicit: dict[str, list[int]] = {}
    for key in MAPPING_KEYS:
        if key not in mapping:
            continue
        span = _parse_entry(key, mapping[key], fabric, prefix)
        want = deg["ep"] * deg["edp"] if key == "dp" else deg[key]
        if math.prod(span) != want:
            raise InputError(
                f"{key} spans {math.prod(span)} NPUs ({_fmt(span, fabric)}), the parallelism "
                f"has {key} = {want}",
                field=f"{prefix}.{key}",
            )
        explicit[key] = span
    # capacity check on the user's own groups (ep inside dp is checked below)
    free = list(fabric.sizes)
    for key, span in explicit.items():
        if key == "ep" and "dp" in explicit:
            continue
        for d, k in enumerate(span):
            if free[d] % k:
                taken = [f"{a} {s[d]}" for a, s in explicit.items()
                         if s[d] > 1 and not (a == "ep" and "dp" in explicit)]
                raise InputError(f"dimension {fabric.names[d]!r} (size {fabric.dims[d].size}) is "
                                 f"over-subscribed: {' x '.join(taken)}", field=prefix)
            free[d] //= k
    if "dp" in explicit:
        dp_span = explicit.pop("dp")
        if "ep" in explicit:
            for d, (kd, ke) in enumerate(zip(dp_span, explicit["ep"], strict=True)):
                if kd % ke:
                    raise InputError(
                        f"ep takes {ke} NPUs of {fabric.names[d]!r} but dp only {kd}; ep must "
                        "be a part of dp",
                        field=f"{prefix}.ep",
                    )
        else:
            ep_span, g = _carve(deg["ep"], dp_span)
            if g > 1:
                raise InputError(f"ep = {deg['ep']} cannot be carved out of dp's span "
                                 f"({_fmt(dp_span, fabric)})", field=f"{prefix}.dp")
            explicit["ep"] = ep_span
        explicit["edp"] = [kd // ke for kd, ke in zip(dp_span, explicit["ep"], strict=True)]
    spans: dict[str, tuple[int, ...]] = {}
    for ax in AXES:
        if ax in explicit:
            spans[ax] = tuple(explicit[ax])
            continue
        span, g = _carve(deg[ax], free)
        free = [f // k for f, k in zip(free, span, strict=True)]
        if g > 1:  # unreachable when the degrees multiply to the free capacity (see Notes)
            raise InputError(
                f"cannot place {ax} = {deg[ax]}: only {math.prod(free) * math.prod(span)} "
                f"NPUs left whose factors fit ({_fmt(free, fabric)} free); give an explicit "
                "mapping",
                field=prefix,
            )
        spans[ax] = tuple(span)
    return Placement(fabric.names, MappingProxyType(spans))
