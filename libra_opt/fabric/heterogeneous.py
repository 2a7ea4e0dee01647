"""Heterogeneous dimensions: NPUs of one dimension with different NIC speeds or efficiencies.

Group ``g`` of a dimension's NPUs (Holmes class clusters [1]_) holds a ``share_g`` of them,
each with ``fraction_g x B_d`` GB/s (``B_d``: a full-speed member's), optionally at
``price_factor_g`` / ``power_factor_g`` times the tier's prices and in blocks of ``size_g``
NPUs (the YAML is shown in the README).

Notes
-----
A collective runs in lock step, so the slowest member bounds it: the time on ``d`` is
``traffic_d / (f_min B_d)``, ``f_min = min_g fraction_g``, still ``const / B_d``. Cost and
power scale by ``sum_g share_g fraction_g price_factor_g`` (``power_factor_g``). With block
sizes (the largest ``n_d``, the dimension's size) the slowest block bounds it, and for
all-reduce, reduce-scatter, all-gather and all-to-all (traffic ``c m (k-1)/k`` on ``k``
NPUs, ``r(k) = (k - 1)/k``)

``t_d = traffic_d(n_d) / (f_eff B_d)``, ``f_eff = min_{g: s_g > 1} fraction_g r(n_d) / r(s_g)``

(:func:`slowest_fractions`), with the largest block's latency steps; what this does not
time exactly is refused (:func:`check_uneven_sizes`). Costs count full blocks.

References
----------
.. [1] F. Yang et al., "Holmes: Towards Distributed Training Across Clusters with
   Heterogeneous NIC Environments", ICPP 2024, arXiv:2312.03549.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from libra_opt.errors import InputError

__all__ = [
    "DimMembers",
    "members_from_mapping",
    "slowest_fractions",
    "member_cost_factors",
    "attach_members",
    "check_uneven_sizes",
]

#: Tolerance of the check that the shares sum to 1.
SHARE_TOL = 1e-9
_KEYS = ("fraction", "share", "price_factor", "power_factor", "size")
#: Collective kinds whose per-NPU traffic on a dimension of k NPUs scales as (k - 1) / k.
_SCALING_KINDS = ("all_reduce", "reduce_scatter", "all_gather", "all_to_all")


class _Fabric(Protocol):
    """What is read of a :class:`~libra_opt.fabric.dims.Fabric` (``dims`` imports this)."""

    @property
    def dims(self) -> tuple[Any, ...]: ...


def _floats(values: Any, key: str, field: str) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise InputError(f"{key} {values!r} must be a list of numbers", field=f"{field}.{key}")
    out = []
    for v in values:
        if isinstance(v, bool):
            raise InputError(f"{key} {v!r} is not a number", field=f"{field}.{key}")
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{key} {v!r} is not a number", field=f"{field}.{key}") from None
        if not math.isfinite(x):
            raise InputError(f"{key} {v!r} must be finite", field=f"{field}.{key}")
        out.append(x)
    return tuple(out)


@dataclass(frozen=True)
class DimMembers:
    """Member groups of one dimension: bandwidth ``fraction`` of ``B_d`` (each in (0, 1]),
    ``share`` of the NPUs (each in (0, 1], summing to 1), optional ``price_factor`` and
    ``power_factor`` (>= 0, default 1) and block ``size`` (the largest must equal the
    dimension's size, :func:`check_uneven_sizes`).

    Examples
    --------
    >>> DimMembers((1.0, 0.0), (0.5, 0.5))
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: members.fraction: fraction 0.0 of group 1 must be in (0, 1]
    """

    fraction: tuple[float, ...]
    share: tuple[float, ...]
    price_factor: tuple[float, ...] | None = None
    power_factor: tuple[float, ...] | None = None
    size: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        field = "members"
        frac = _floats(self.fraction, "fraction", field)
        share = _floats(self.share, "share", field)
        if not frac:
            raise InputError("fraction needs at least one group", field=f"{field}.fraction")
        if len(share) != len(frac):
            raise InputError(f"{len(share)} shares for {len(frac)} fractions (one per group)",
                             field=f"{field}.share")
        for key, vals in (("fraction", frac), ("share", share)):
            for i, v in enumerate(vals):
                if not 0 < v <= 1:
                    raise InputError(f"{key} {v!r} of group {i} must be in (0, 1]",
                                     field=f"{field}.{key}")
        if abs(sum(share) - 1.0) > SHARE_TOL:
            raise InputError(f"shares {list(share)} sum to {sum(share):.12g}, not 1",
                             field=f"{field}.share")
        object.__setattr__(self, "fraction", frac)
        object.__setattr__(self, "share", share)
        for key in ("price_factor", "power_factor"):
            raw = getattr(self, key)
            vals = (1.0,) * len(frac) if raw is None else _floats(raw, key, field)
            if len(vals) != len(frac):
                raise InputError(f"{len(vals)} values for {len(frac)} groups",
                                 field=f"{field}.{key}")
            if any(v < 0 for v in vals):
                raise InputError(f"{key} {list(vals)} must be >= 0", field=f"{field}.{key}")
            object.__setattr__(self, key, vals)
        if self.size is not None:
            sizes = _floats(self.size, "size", field)
            if len(sizes) != len(frac):
                raise InputError(f"{len(sizes)} sizes for {len(frac)} groups",
                                 field=f"{field}.size")
            for i, n in enumerate(sizes):
                if n != int(n) or n < 1:
                    raise InputError(f"size {n:g} of group {i} must be a whole number >= 1",
                                     field=f"{field}.size")
            object.__setattr__(self, "size", tuple(int(n) for n in sizes))

    def effective_fraction(self, n: int) -> float:
        """``f_eff`` on a dimension of ``n`` NPUs: ``min_g fraction_g r(n) / r(s_g)`` over
        the groups with blocks of more than one NPU (``f_min`` without sizes).

        Examples
        --------
        Blocks of 8 at full speed and of 4 at 0.6 B: ``r(8) / r(4) = (7/8) / (3/4)``.

        >>> round(DimMembers((1.0, 0.6), (0.5, 0.5), size=(8, 4)).effective_fraction(8), 12)
        0.7
        """
        if self.size is None:
            return self.slowest_fraction
        if n < 2:
            return 1.0
        r_n = (n - 1) / n
        return min((f * r_n / ((s - 1) / s)
                    for f, s in zip(self.fraction, self.size, strict=True) if s > 1),
                   default=1.0)

    @property
    def slowest_fraction(self) -> float:
        """``f_min``: the bandwidth fraction of the slowest group (it bounds a collective)."""
        return min(self.fraction)

    def _bought(self, factors: tuple[float, ...] | None) -> float:
        assert factors is not None
        return float(sum(s * f * p for s, f, p in
                         zip(self.share, self.fraction, factors, strict=True)))

    @property
    def usd_factor(self) -> float:
        """``sum_g share_g fraction_g price_factor_g``: multiplier of the dimension's $/GB/s."""
        return self._bought(self.price_factor)

    @property
    def w_factor(self) -> float:
        """``sum_g share_g fraction_g power_factor_g``: multiplier of the dimension's W/GB/s."""
        return self._bought(self.power_factor)


def members_from_mapping(data: Mapping[str, Any] | DimMembers | None) -> DimMembers | None:
    """A ``members:`` mapping (the YAML block) as :class:`DimMembers`.

    Examples
    --------
    >>> members_from_mapping({"fraction": [1, 0.25], "share": [0.75, 0.25]}).usd_factor
    0.8125
    >>> members_from_mapping({"fraction": [1], "share": [1], "speed": [2]})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: members: unknown key(s) speed; expected fraction, share, price_factor, power_factor, size
    """
    if data is None or isinstance(data, DimMembers):
        return data
    if not isinstance(data, Mapping):
        raise InputError(f"expected a mapping with keys {', '.join(_KEYS)}, got {data!r}",
                         field="members")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(map(str, unknown))}; expected "
                         f"{', '.join(_KEYS)}", field="members")
    missing = [k for k in ("fraction", "share") if k not in data]
    if missing:
        raise InputError(f"missing key(s) {', '.join(missing)}", field="members")
    return DimMembers(**{k: data[k] for k in _KEYS if k in data})


def slowest_fractions(fabric: _Fabric) -> np.ndarray:
    """``(D,)`` ``f_min`` of every dimension (1 for a homogeneous one); ``f_eff`` of a
    dimension with asymmetric block sizes (:meth:`DimMembers.effective_fraction`).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> f = Fabric((Dim("a", "ring", 4, "T"),
    ...             Dim("b", "switch", 8, "T", members=DimMembers((1.0, 0.4), (0.5, 0.5)))))
    >>> slowest_fractions(f).tolist()
    [1.0, 0.4]
    """
    return np.array([1.0 if d.members is None else d.members.effective_fraction(d.size)
                     for d in fabric.dims])


def member_cost_factors(fabric: _Fabric) -> tuple[np.ndarray, np.ndarray]:
    """``(D,)`` multipliers of every dimension's $ and W per GB/s (1 when homogeneous).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> m = DimMembers((1.0, 0.5), (0.5, 0.5), price_factor=(1.0, 0.6))
    >>> usd, w = member_cost_factors(Fabric((Dim("b", "switch", 8, "T", members=m),)))
    >>> usd.tolist(), w.tolist()   # 0.5 + 0.5*0.5*0.6, 0.5 + 0.5*0.5
    ([0.65], [0.75])
    """
    usd = [1.0 if d.members is None else d.members.usd_factor for d in fabric.dims]
    w = [1.0 if d.members is None else d.members.w_factor for d in fabric.dims]
    return np.array(usd), np.array(w)


def attach_members(fabric: Any, members: Mapping[str, Any] | None, field: str = "fabric.members"
                   ) -> Any:
    """``fabric`` with the ``members:`` blocks of a mapping keyed by dimension name (for fabrics
    not written inline); an unknown name, a dimension that already has members or a bad block
    is an :class:`~libra_opt.errors.InputError` naming ``<field>.<name>.<key>``.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> f = Fabric((Dim("hb", "switch", 8, "T"), Dim("so", "switch", 16, "T")))
    >>> g = attach_members(f, {"so": {"fraction": [1, 0.5], "share": [0.5, 0.5]}})
    >>> slowest_fractions(g).tolist()
    [1.0, 0.5]
    """
    if not members:
        return fabric
    if not isinstance(members, Mapping):
        raise InputError(f"expected a mapping of dimension name to members, got "
                         f"{type(members).__name__}", field=field)
    names = [d.name for d in fabric.dims]
    dims = list(fabric.dims)
    for name, block in members.items():
        if name not in names:
            raise InputError(f"no dimension named {name!r}; names: {', '.join(names)}",
                             field=field)
        i = names.index(name)
        if dims[i].members is not None:
            raise InputError(f"dimension {name!r} already has members (given inline); give "
                             "them in one place", field=f"{field}.{name}")
        try:
            dims[i] = dataclasses.replace(dims[i], members=members_from_mapping(block))
        except InputError as exc:
            sub = (exc.field or "members").removeprefix("members")
            raise InputError(exc.message, field=f"{field}.{name}{sub}") from None
    return dataclasses.replace(fabric, dims=tuple(dims))


class _Workload(Protocol):
    """What :func:`check_uneven_sizes` reads of a workload (typed structurally)."""

    @property
    def name(self) -> str: ...

    @property
    def flat(self) -> Any: ...

    @property
    def groups(self) -> Mapping[str, Sequence[int]]: ...


def check_uneven_sizes(fabric: _Fabric, workloads: Sequence[_Workload],
                       timing_refusal: str | None = None,
                       in_network: Sequence[str] = ()) -> None:
    """Refuse what the asymmetric-size model (``members.size``) does not time exactly, naming
    ``fabric.dims.<name>.members.size`` and, for a collective, the workload and group.

    On a dimension with sizes the largest block must equal its size, and every collective over
    it must be an all-reduce, reduce-scatter, all-gather or all-to-all over the whole dimension,
    not reaching outside it (but for all-to-all), under the hierarchical traffic model, a
    collective model other than ``topology_aware`` (``timing_refusal`` names the choice that
    rules sizes out) and no in-network reduction on it (``in_network``).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> m = DimMembers((1.0, 1.0), (0.5, 0.5), size=(8, 6))
    >>> check_uneven_sizes(Fabric((Dim("hb", "switch", 4, "T", members=m),)), [])
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: fabric.dims.hb.members.size: the largest block (8 NPUs) must equal the dimension's size 4
    """
    uneven = [d for d, dim in enumerate(fabric.dims)
              if dim.members is not None and dim.members.size is not None]
    if not uneven:
        return
    for d in uneven:
        dim = fabric.dims[d]
        field = f"fabric.dims.{dim.name}.members.size"
        sizes = dim.members.size
        if max(sizes) != dim.size:
            raise InputError(f"the largest block ({max(sizes)} NPUs) must equal the "
                             f"dimension's size {dim.size}", field=field)
        if timing_refusal is not None:
            raise InputError(f"asymmetric block sizes are modelled under the hierarchical "
                             f"traffic model with the pipelined or sequential collective "
                             f"model, not {timing_refusal}", field=field)
        if dim.name in in_network:
            raise InputError(f"asymmetric block sizes on {dim.name!r} are not modelled with "
                             "in-network reduction on it", field=field)
        if dim.topology.forwards and dim.latency_s > 0:
            f_eff = dim.members.effective_fraction(dim.size)
            f_full = min(f for f, n in zip(dim.members.fraction, sizes, strict=True)
                         if n == dim.size)
            if f_full > f_eff * (1 + 1e-12):
                raise InputError(
                    f"on the {dim.topology} {dim.name!r} with latency_s > 0 a smaller block is the "
                    "slowest in bytes while the largest pays the most steps, so "
                    "max_g (bytes_g / (fraction_g B) + alpha (s_g - 1) steps) is not one "
                    "const / B term plus a constant; give latency_s: 0, or sizes where the "
                    "largest block is also the slowest", field=field)
    for wl in workloads:
        seen: set[tuple[str, str]] = set()
        for kind, _size, group in wl.flat.collectives:
            if (kind, group) in seen:
                continue
            seen.add((kind, group))
            span = [int(k) for k in wl.groups[group]]
            spanned = [d for d, k in enumerate(span) if k > 1]
            for d in uneven:
                if span[d] <= 1:
                    continue
                dim = fabric.dims[d]
                where = (f"workload {wl.name!r}: {kind} over group {group!r} on "
                         f"{dim.name!r} (asymmetric block sizes)")
                field = f"fabric.dims.{dim.name}.members.size"
                if kind not in _SCALING_KINDS:
                    raise InputError(f"{where}: a {kind} moves the same bytes in every block; "
                                     "only all-reduce, reduce-scatter, all-gather and "
                                     "all-to-all are modelled", field=field)
                if len({dim.topology.traffic_factor(kind, n) for n in dim.members.size
                        if n > 1}) > 1:
                    raise InputError(f"{where}: on a {dim.topology} its bytes do not scale "
                                     "as (k-1)/k with the block size k", field=field)
                if span[d] != dim.size:
                    raise InputError(f"{where}: the group spans {span[d]} of the "
                                     f"dimension's {dim.size} NPUs; with uneven blocks it "
                                     "must span the whole dimension", field=field)
                if kind != "all_to_all" and spanned[-1] != d:
                    raise InputError(f"{where}: the group also spans "
                                     f"{fabric.dims[spanned[-1]].name!r} outside it; the "
                                     "shard leaving an uneven dimension differs by block",
                                     field=field)
