"""Network cost and power: per-tier unit prices turned into linear coefficients per dimension.

Every topology buys link, switch-port and NIC bandwidth linear in the per-NPU bandwidth
``B_d`` (:func:`libra_opt.fabric.inventory.dimension_inventory`), so network cost is ``C(B) =
sum_d kappa_d B_d`` and power ``P(B) = sum_d pi_d B_d`` (LIBRA [1]_). Transceivers and copper
cables are added to the ``link`` column; a switch network with a radix is priced by whole
switches unless ``switch_pricing="used_ports"``.

References
----------
.. [1] W. Won et al., "LIBRA: Enabling Workload-Aware Multi-Dimensional Network Topology
   Optimization for Distributed Training of Large AI Models", ISPASS 2024, arXiv:2109.11762.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import numpy as np

from libra_opt.cost.aggregators import Aggregators
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenAtInit, FrozenMap
from libra_opt.fabric.heterogeneous import member_cost_factors
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.options import COMPONENTS, PRICED_COMPONENTS

__all__ = [
    "TierPrices",
    "CostModel",
    "CostCoefficients",
    "cost_coefficients",
    "CostBreakdown",
    "network_cost_breakdown",
]


def _price_map(values: Mapping[str, float] | None, what: str, tier: str) -> Mapping[str, float]:
    out: dict[str, float] = {}
    for comp, v in dict(values or {}).items():
        if comp not in PRICED_COMPONENTS:
            raise InputError(
                f"tier {tier!r}: unknown component {comp!r}; expected one of "
                f"{', '.join(PRICED_COMPONENTS)}",
                field=f"{what}.{tier}",
            )
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(
                f"tier {tier!r}, {comp}: {v!r} is not a number", field=f"{what}.{tier}.{comp}"
            ) from None
        if not math.isfinite(x) or x < 0:
            raise InputError(
                f"tier {tier!r}, {comp}: {v!r} must be finite and >= 0",
                field=f"{what}.{tier}.{comp}",
            )
        out[comp] = x
    return FrozenMap(out)


@dataclass(frozen=True)
class TierPrices:
    """Unit prices of one cost tier: component -> $ per GB/s, and W per GB/s (``None`` when power
    is not modelled).
    """

    tier: str
    usd_per_gbps: Mapping[str, float]
    w_per_gbps: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "usd_per_gbps", _price_map(self.usd_per_gbps, "cost_model", self.tier))
        if self.w_per_gbps is not None:
            object.__setattr__(
                self, "w_per_gbps", _price_map(self.w_per_gbps, "power_model", self.tier)
            )


@dataclass(frozen=True)
class CostModel:
    """Per-tier unit prices (and optionally power) for the network components; ``aggregators``
    prices the in-network optimizer's aggregation nodes (:mod:`libra_opt.cost.aggregators`).

    Examples
    --------
    >>> cm = CostModel.from_tables({"T": {"link": 2.0}}, {"T": {"link": 0.01}})
    >>> cm.tiers["T"].usd_per_gbps["link"], cm.has_power
    (2.0, True)
    """

    tiers: Mapping[str, TierPrices] = field(default_factory=dict)
    aggregators: Aggregators | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "tiers", FrozenMap(dict(self.tiers)))

    @property
    def has_power(self) -> bool:
        """True when every tier has a power table."""
        return bool(self.tiers) and all(t.w_per_gbps is not None for t in self.tiers.values())

    @classmethod
    def from_tables(
        cls,
        usd_per_gbps: Mapping[str, Mapping[str, float]],
        w_per_gbps: Mapping[str, Mapping[str, float]] | None = None,
    ) -> CostModel:
        """Build from ``{tier: {component: $/GB/s}}`` and the same shape in W/GB/s."""
        if w_per_gbps is not None:
            extra = sorted(set(w_per_gbps) - set(usd_per_gbps))
            if extra:
                raise InputError(
                    f"power tiers {', '.join(extra)} have no prices", field="power_model"
                )
            missing = sorted(set(usd_per_gbps) - set(w_per_gbps))
            if missing:
                raise InputError(
                    f"tiers {', '.join(missing)} have prices but no power entry "
                    "(give 0 where a component draws no power)",
                    field="power_model",
                )
        return cls({tier: TierPrices(tier, prices, None if w_per_gbps is None else w_per_gbps[tier])
                    for tier, prices in usd_per_gbps.items()})


@dataclass(frozen=True)
class CostCoefficients(FrozenAtInit):
    """Linear cost and power coefficients: ``(D, 3)`` $ and W (``None`` without power) per GB/s
    of ``B_d`` for link, switch and nic, and the $ and W that do not depend on ``B`` (the
    in-network optimizer's state memory), added to the network's cost and power and taken off
    the caps.
    """

    usd_by_component: np.ndarray
    w_by_component: np.ndarray | None
    fixed_usd: float = 0.0
    fixed_w: float = 0.0

    @property
    def usd_per_gbps(self) -> np.ndarray:
        """``kappa_d``: $ per GB/s of per-NPU bandwidth, shape ``(D,)``."""
        return self.usd_by_component.sum(axis=1)

    @property
    def w_per_gbps(self) -> np.ndarray | None:
        """``pi_d``: W per GB/s of per-NPU bandwidth, or ``None``."""
        return None if self.w_by_component is None else self.w_by_component.sum(axis=1)


def _add_part(
    usd: np.ndarray, power: np.ndarray | None, d: int, col: int, amount: float, key: str,
    prices: TierPrices, why: str, of: str = "",
) -> None:
    """Add ``amount`` GB/s of part ``key`` per GB/s of ``B_d`` to ``[d, col]``; ``why`` starts
    the error when the tier lacks its price (``of``: what it is per) or power."""
    if key not in prices.usd_per_gbps:
        raise InputError(
            f"{why} but tier {prices.tier!r} has no {key} price ($ per GB/s{of}; write 0 if "
            "it is free)",
            field=f"cost_model.{prices.tier}")
    usd[d, col] += amount * prices.usd_per_gbps[key]
    if power is None:
        return
    assert prices.w_per_gbps is not None
    if key not in prices.w_per_gbps:
        raise InputError(
            f"{why} but tier {prices.tier!r} has no {key} power entry (W per GB/s; write 0 "
            "if it draws none)",
            field=f"power_model.{prices.tier}")
    power[d, col] += amount * prices.w_per_gbps[key]


def cost_coefficients(fabric: Fabric, cost_model: CostModel,
                      in_network: Collection[int] = ()) -> CostCoefficients:
    """Linear $ and W coefficients of every dimension (``in_network``: indices of switch
    dimensions that reduce in the network and buy their tier's ``in_network_reduction``).

    Notes
    -----
    ``kappa_d = l_d p_link + u_d p_copper + s_d p_switch + c_d p_nic + o_d p_transceiver``, the
    GB/s of optical link, copper link, priced switch port, NIC port and transceiver per GB/s of
    ``B_d`` (:func:`dimension_inventory`) at their prices; the same with W for ``pi_d``. An
    in-network dimension adds ``s_d p_in_network_reduction``, one the aggregators attach to
    ``N p_port`` (``nic`` column); a heterogeneous dimension's row is multiplied by ``sum_g
    share_g fraction_g price_factor_g`` (``power_factor_g`` for W). A tier missing, or lacking
    a component a dimension needs, is an :class:`~libra_opt.errors.InputError`.

    Examples
    --------
    >>> from libra_opt.fabric.dims import Dim
    >>> f = Fabric((Dim("a", "ring", 4, "A"), Dim("b", "switch", 8, "B")))
    >>> cm = CostModel.from_tables({"A": {"link": 2.0}, "B": {"link": 1, "switch": 3, "nic": 4}})
    >>> cost_coefficients(f, cm).usd_per_gbps.tolist()
    [64.0, 256.0]
    """
    n_dims = fabric.n_dims
    usd = np.zeros((n_dims, len(COMPONENTS)))
    power = np.zeros((n_dims, len(COMPONENTS))) if cost_model.has_power else None
    for d, dim in enumerate(fabric.dims):
        if dim.tier not in cost_model.tiers:
            raise InputError(
                f"dimension {dim.name!r} uses tier {dim.tier!r}, which the cost model does not "
                f"price (tiers: {', '.join(cost_model.tiers) or 'none'})",
                field="cost_model",
            )
        prices = cost_model.tiers[dim.tier]
        inv = dimension_inventory(fabric, d)
        amounts = {
            "link": inv.optical_gbps_per_gbps,
            "switch": float(inv.switch_ports_priced),
            "nic": float(inv.nics),
        }
        for c, comp in enumerate(COMPONENTS):
            if comp not in dim.topology.components:
                continue
            if comp not in prices.usd_per_gbps:
                raise InputError(
                    f"dimension {dim.name!r} is a {dim.topology} and needs a {comp} price in "
                    f"tier {dim.tier!r} ($ per GB/s; write 0 if it is free)",
                    field=f"cost_model.{dim.tier}",
                )
            usd[d, c] = amounts[comp] * prices.usd_per_gbps[comp]
            if power is not None:
                assert prices.w_per_gbps is not None
                if comp not in prices.w_per_gbps:
                    raise InputError(
                        f"dimension {dim.name!r} needs a {comp} power entry in tier "
                        f"{dim.tier!r} (W per GB/s; write 0 if it draws none)",
                        field=f"power_model.{dim.tier}",
                    )
                power[d, c] = amounts[comp] * prices.w_per_gbps[comp]
        if "transceiver" in prices.usd_per_gbps:
            _add_part(usd, power, d, 0, inv.transceiver_gbps_per_gbps, "transceiver", prices,
                      f"dimension {dim.name!r} buys transceivers")
        if inv.copper_cables:
            if "copper" not in prices.usd_per_gbps:
                raise InputError(
                    f"dimension {dim.name!r} has {dim.copper_levels} copper cable level(s) but "
                    f"tier {dim.tier!r} has no copper price ($ per GB/s of a copper cable)",
                    field=f"cost_model.{dim.tier}",
                )
            _add_part(usd, power, d, 0, inv.copper_gbps_per_gbps, "copper", prices,
                      f"dimension {dim.name!r} has copper cables")
        if d in in_network:
            _add_part(usd, power, d, 1, float(inv.switch_ports_priced), "in_network_reduction",
                      prices, f"dimension {dim.name!r} reduces in the network", " of switch port")
    usd_factor, w_factor = member_cost_factors(fabric)  # 1 on a homogeneous dimension
    usd *= usd_factor[:, None]
    if power is not None:
        power *= w_factor[:, None]
    agg = cost_model.aggregators
    fixed_usd = fixed_w = 0.0
    if agg is not None:
        # added after the member factors: a cheaper NIC on the NPU side does not make the
        # aggregator's port cheaper, but a slower member group pushes (and needs) less
        # ingress: sum_g share_g fraction_g GB/s per GB/s of B_d
        for name in agg.dims:
            if name not in fabric.names:
                raise InputError(f"no dimension named {name!r}; names: "
                                 f"{', '.join(fabric.names)}", field="in_network_optimizer.dims")
            d = fabric.index(name)
            members = fabric.dims[d].members
            ingress = 1.0 if members is None else sum(
                sh * fr for sh, fr in zip(members.share, members.fraction, strict=True))
            usd[d, 2] += fabric.n_npus * ingress * agg.usd_per_port_gbps
            if power is not None:
                power[d, 2] += fabric.n_npus * ingress * agg.w_per_port_gbps
        fixed_usd, fixed_w = agg.state_usd, agg.state_w if power is not None else 0.0
    return CostCoefficients(usd, power, fixed_usd, fixed_w)


@dataclass(frozen=True)
class CostBreakdown(FrozenAtInit):
    """Network cost and power at one bandwidth allocation: ``(D, 3)`` arrays (link, switch, nic;
    power ``None`` when not modelled) and the fixed part.
    """

    usd_by_dim_component: np.ndarray
    w_by_dim_component: np.ndarray | None
    fixed_usd: float = 0.0
    fixed_w: float = 0.0

    @property
    def network_cost_usd(self) -> float:
        """Total network cost in $, the fixed part included."""
        return float(self.usd_by_dim_component.sum()) + self.fixed_usd

    @property
    def network_power_w(self) -> float | None:
        """Total network power in W (with the fixed part), or ``None`` when not modelled."""
        if self.w_by_dim_component is None:
            return None
        return float(self.w_by_dim_component.sum()) + self.fixed_w


def network_cost_breakdown(coeffs: CostCoefficients, bw_gbps: np.ndarray) -> CostBreakdown:
    """Cost and power per dimension and component at ``bw_gbps``, and the fixed part."""
    bw = np.asarray(bw_gbps, dtype=float)[:, None]
    usd = coeffs.usd_by_component * bw
    w = None if coeffs.w_by_component is None else coeffs.w_by_component * bw
    return CostBreakdown(usd, w, coeffs.fixed_usd, coeffs.fixed_w)
