"""Heterogeneous dimensions: NPUs of one dimension with different NIC speeds or efficiencies.

A dimension's NPUs may fall into member groups (Holmes class clusters [1]_: the same job
spread over NICs of different generations or vendors). Group ``g`` holds a ``share_g`` of
the dimension's NPUs, each with ``fraction_g x B_d`` GB/s of bandwidth into the dimension,
where ``B_d`` (the decision variable) is the bandwidth of a full-speed member. The group may
also have its own unit price and power (``price_factor_g``, ``power_factor_g``: multipliers
of the tier's prices, e.g. an older NIC generation that is cheaper per GB/s).

In YAML the block sits on the dimension::

    fabric:
      dims:
        - name: pod
          topology: switch
          size: 16
          tier: InterPod
          members:                        # optional; absent = every NPU at full speed
            fraction: [1.0, 0.5]          # bandwidth of each group, fraction of B_pod
            share: [0.5, 0.5]             # fraction of the dimension's NPUs in each group
            price_factor: [1.0, 0.6]      # optional, x the tier's $ per GB/s (default 1)
            power_factor: [1.0, 0.8]      # optional, x the tier's W per GB/s (default 1)
            size: [16, 12]                # optional: NPUs of one block of each group along
                                          # the dim (asymmetric sizes; max = the dim's size)

A fabric that is not written inline (``libra_network:`` or ``builder:``) takes the same
blocks in a ``members:`` mapping keyed by dimension name, next to the reference::

    fabric:
      builder: fat_tree
      n_npus: 1024
      hb_domain: 8
      members:
        scaleout: {fraction: [1.0, 0.5], share: [0.75, 0.25]}

(:func:`attach_members`; inline dims may use either place, not both for one dimension).
Every path is reachable by ``--set`` and sweep axes
(``fabric.dims.pod.members.fraction[1]=0.25``, ``fabric.members.scaleout.share[0]=0.5``).

Notes
-----
*Time.* A collective on dimension ``d`` runs in lock step: every NPU of the group must send
and receive its share before the next step, so the slowest member bounds it. With
``f_min = min_g fraction_g`` the time on ``d`` is ``traffic_d / (f_min B_d)`` (+ the
unchanged latency): still ``const / B_d``, so every objective stays convex and exact. The
optimizer divides each term's bytes by ``f_min``; the numpy evaluator multiplies the
bandwidth by ``f_min`` (the same formula from the other side).

*Cost and power.* Group ``g`` buys ``share_g x fraction_g x B_d`` GB/s per NPU of the
dimension's components at ``price_factor_g`` times the tier's price, so
``kappa_d' = kappa_d sum_g share_g fraction_g price_factor_g`` (and the same for power
with ``power_factor``): still linear in ``B_d``. A homogeneous dimension has factor 1.

*Asymmetric sizes* (``size``). The groups of the dimension are blocks of different sizes
``s_g`` (say servers of 8 and of 4 GPUs on the scale-up dimension, or pods of 16 and 12
nodes); the dimension's ``size`` ``n_d`` is the largest block, ``max_g s_g = n_d``. A
collective spanning the dimension runs in every block at once, in lock step, so the slowest
block bounds it:

``t_d = max_g traffic_d(s_g) / (fraction_g B_d)``.

For all-reduce, reduce-scatter, all-gather and all-to-all the hierarchical per-NPU
traffic on a dimension of ``k`` NPUs is ``c m (k-1)/k`` (``m`` the buffer entering the
dimension, which is the same in every block when ``d`` is the outermost dimension a
reduction spans, and for an all-gather when the *gathered* buffer is the same in every
block: smaller blocks hold larger shards). Then ``traffic_d(s_g) = traffic_d(n_d)
r(s_g) / r(n_d)`` with ``r(k) = (k - 1)/k``, and

``t_d = traffic_d(n_d) / (f_eff B_d)``, ``f_eff = min_{g: s_g > 1} fraction_g r(n_d) / r(s_g)``

-- still ``const / B_d``: the optimizer and the evaluator use ``f_eff`` where a dimension
without sizes uses ``f_min`` (:func:`slowest_fractions`). The latency steps are those of the
largest block (``n_d``): on a switch or fully-connected dimension every block takes the
same steps, so ``max_g (bytes_g / (fraction_g B) + alpha steps)`` is exactly the formula's
sum; on a ring (``s_g - 1`` steps) it is exact only when the largest block is also the
slowest in bytes, and a ring with ``latency_s > 0`` where it is not is refused. A block of
one NPU moves nothing on the dimension.

What is *not* modelled with ``size`` (refused by :func:`check_uneven_sizes`, which the
scenario runs, with the collective and the reason): point-to-point transfers on the
dimension (their bytes do not depend on the block), a group spanning only part of the
dimension (``k_d < n_d``: which blocks it uses is undefined), a reduction or all-gather
with a spanned dimension outside ``d`` (the shard leaving ``d`` would differ by block, so
the outer dimensions' traffic would too), in-network reduction on ``d``, the
``topology_aware`` collective model and the ``native`` traffic model (their traffic does
not scale by ``r(k)``). The cost counts are those of full blocks (an upper bound on the
components of the smaller ones). Beyond that, this model treats all members alike apart
from speed: it does not re-balance work (Holmes's scheduler places pipeline stages by NIC
type, which the mapping input can express).

References
----------
.. [1] F. Yang et al., "Holmes: Towards Distributed Training Across Clusters with
   Heterogeneous NIC Environments", ICPP 2024, arXiv:2312.03549.

Examples
--------
>>> m = DimMembers(fraction=(1.0, 0.5), share=(0.5, 0.5))
>>> m.slowest_fraction, m.usd_factor, m.w_factor
(0.5, 0.75, 0.75)
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
    """What the functions below read of a :class:`~libra_opt.fabric.dims.Fabric` (typed
    structurally: ``dims`` imports this module)."""

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
    """Member groups of one dimension: bandwidth fraction, share of NPUs, price and power.

    Parameters
    ----------
    fraction : tuple of float
        Bandwidth of each group as a fraction of ``B_d``, each in (0, 1].
    share : tuple of float
        Fraction of the dimension's NPUs in each group, each in (0, 1], summing to 1.
    price_factor : tuple of float, optional
        Multiplier (>= 0) of the tier's $ per GB/s for each group (default 1 each).
    power_factor : tuple of float, optional
        Multiplier (>= 0) of the tier's W per GB/s for each group (default 1 each).
    size : tuple of int, optional
        NPUs of one block of each group along the dimension (asymmetric sizes, see the
        module notes); the largest must equal the dimension's size (checked with the
        dimension, :func:`check_uneven_sizes`). Default: every block has the dimension's size.

    Raises
    ------
    InputError
        Naming the field (``members.fraction`` etc.) of a bad value.

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
        for i, f in enumerate(frac):
            if not 0 < f <= 1:
                raise InputError(f"fraction {f!r} of group {i} must be in (0, 1]",
                                 field=f"{field}.fraction")
        for i, s in enumerate(share):
            if not 0 < s <= 1:
                raise InputError(f"share {s!r} of group {i} must be in (0, 1]",
                                 field=f"{field}.share")
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

    @property
    def usd_factor(self) -> float:
        """``sum_g share_g fraction_g price_factor_g``: multiplier of the dimension's $/GB/s."""
        assert self.price_factor is not None
        return float(sum(s * f * p for s, f, p in
                         zip(self.share, self.fraction, self.price_factor, strict=True)))

    @property
    def w_factor(self) -> float:
        """``sum_g share_g fraction_g power_factor_g``: multiplier of the dimension's W/GB/s."""
        assert self.power_factor is not None
        return float(sum(s * f * p for s, f, p in
                         zip(self.share, self.fraction, self.power_factor, strict=True)))


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
    """``fabric`` with the ``members:`` blocks of a mapping keyed by dimension name.

    For fabrics not written inline (a LIBRA network file, a builder): the same blocks as a
    dimension's inline ``members:``. A dimension that already has members is an error
    (give them in one place).

    Parameters
    ----------
    fabric : Fabric
    members : mapping of str to mapping, or None
        ``{dim name: {fraction: [...], share: [...], ...}}``.
    field : str
        Where the mapping was read (named in errors).

    Raises
    ------
    InputError
        An unknown dimension name, a dimension given twice, or a bad block (the field
        ``fabric.members.<name>.<key>``).

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
    """Refuse what the asymmetric-size model (``members.size``) does not time exactly.

    Nothing is checked on a fabric without ``size`` on any dimension. On a dimension ``d``
    with sizes: the largest block equals the dimension's size, every block fits in it, and
    every collective whose group spans ``d`` is an all-reduce, reduce-scatter, all-gather or
    all-to-all over the whole dimension (``k_d = n_d``), with no spanned dimension outside
    ``d`` for the three reductions / gathers, under the hierarchical traffic model and a
    collective model other than ``topology_aware``, and ``d`` not reducing in the network.
    Under these conditions :func:`slowest_fractions` is exact (module notes).

    ``timing_refusal`` names the timing choice that rules the sizes out (``"collective_model
    'topology_aware'"``, from ``TimingModel.uneven_sizes_refusal``), ``None`` when the
    timing allows them; ``in_network`` names the dimensions that reduce in the network.

    Raises
    ------
    InputError
        Naming the dimension (``fabric.dims.<name>.members.size``) and, for a collective,
        the workload, its group and the reason.

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
