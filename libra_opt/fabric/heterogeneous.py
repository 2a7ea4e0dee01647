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

Every path is reachable by ``--set`` and sweep axes
(``fabric.dims.pod.members.fraction[1]=0.25``).

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

This model treats all members alike apart from speed: it does not re-balance work
(Holmes's scheduler places pipeline stages by NIC type, which the mapping input can
express) and it does not model asymmetric group sizes across dimensions.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from libra_opt.errors import InputError

__all__ = ["DimMembers", "members_from_mapping", "slowest_fractions", "member_cost_factors"]

#: Tolerance of the check that the shares sum to 1.
SHARE_TOL = 1e-9
_KEYS = ("fraction", "share", "price_factor", "power_factor")


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
    libra_opt.errors.InputError: members: unknown key(s) speed; expected fraction, share, price_factor, power_factor
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
    """``(D,)`` ``f_min`` of every dimension (1 for a homogeneous one).

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> f = Fabric((Dim("a", "ring", 4, "T"),
    ...             Dim("b", "switch", 8, "T", members=DimMembers((1.0, 0.4), (0.5, 0.5)))))
    >>> slowest_fractions(f).tolist()
    [1.0, 0.4]
    """
    return np.array([1.0 if d.members is None else d.members.slowest_fraction
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
