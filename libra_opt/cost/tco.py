"""Total cost of ownership of a training cluster and the cost of one training run.

With the network's linear cost and power, the cluster's cost per second is linear in the
bandwidth, ``rate(B) = r0 + r . B``, so a run's cost ``steps x step_time(B) x rate(B)`` has
the product form the optimizer solves exactly (objective ``tco``).

Notes
-----
With ``N`` NPUs of price ``a`` and power ``p_a`` (hosts ``h``, ``p_h``), ``H = 8760 Y``
hours, maintenance ``m`` of capex per year, energy ``c`` $/kWh, ``kappa``, ``pi`` the
network's $ and W per GB/s and ``F_usd``, ``F_w`` its parts independent of ``B``: TCO ``=
capex (1 + m Y) + IT power / 1000 x PUE x c x H``, amortized over ``3600 H`` s, hence ``r0 =
[(N (a + h) + F_usd)(1 + m Y) + (N (p_a + p_h) + F_w) PUE c H / 1000] / (3600 H)`` and
``r_d = [kappa_d (1 + m Y) + pi_d PUE c H / 1000] / (3600 H)``.

References
----------
.. [1] L. A. Barroso, U. Hoelzle, P. Ranganathan, "The Datacenter as a Computer", 3rd ed.,
   ch. 6 (TCO: capex amortization plus opex, energy scaled by PUE).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
import numpy.typing as npt

from libra_opt.cost.catalog import finite_number
from libra_opt.cost.prices import CostCoefficients
from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Fabric

__all__ = [
    "HOURS_PER_YEAR",
    "TcoModel",
    "TcoBreakdown",
    "cluster_rate_coefficients",
    "section_from_mapping",
    "tco_breakdown",
    "training_run_cost_usd",
]

#: Hours in a (365-day) year.
HOURS_PER_YEAR = 8760.0


@dataclass(frozen=True)
class TcoModel:
    """Non-network cost parameters of a cluster: the price of one NPU and of its host share
    (server, CPU, memory, storage; $), their average power under training load (W), the PUE
    (>= 1), the energy price ($/kWh), the capex lifetime (years), the run length (``steps``, or
    ``tokens`` and ``tokens_per_step``) and the yearly maintenance as a fraction of capex.

    Examples
    --------
    >>> t = TcoModel(25000, 5000, 700, 300, 1.2, 0.1, 4, tokens=1e12, tokens_per_step=4e6)
    >>> t.n_steps, t.lifetime_h
    (250000.0, 35040.0)
    """

    accelerator_usd: float
    host_usd_per_npu: float
    npu_power_w: float
    host_power_w_per_npu: float
    pue: float
    electricity_usd_per_kwh: float
    lifetime_years: float
    steps: float | None = None
    tokens: float | None = None
    tokens_per_step: float | None = None
    maintenance_fraction_per_year: float = 0.0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if v is not None:
                positive = f.name in ("lifetime_years", "steps", "tokens", "tokens_per_step", "pue")
                object.__setattr__(self, f.name, finite_number(v, f"tco.{f.name}",
                                                               positive=positive))
        if self.pue < 1:
            raise InputError(f"pue {self.pue!r} must be >= 1 (facility / IT power)",
                             field="tco.pue")
        if self.steps is not None and self.tokens is not None:
            raise InputError("give steps or tokens (with tokens_per_step), not both",
                             field="tco.steps")
        if (self.tokens is None) != (self.tokens_per_step is None):
            raise InputError("tokens and tokens_per_step go together", field="tco.tokens")

    @property
    def lifetime_h(self) -> float:
        """Amortization period in hours."""
        return self.lifetime_years * HOURS_PER_YEAR

    @property
    def n_steps(self) -> float:
        """Steps of one training run (``steps``, or ``tokens / tokens_per_step``); an
        :class:`~libra_opt.errors.InputError` if neither was given.
        """
        if self.steps is not None:
            return self.steps
        if self.tokens is not None and self.tokens_per_step is not None:
            return self.tokens / self.tokens_per_step
        raise InputError("the run length is missing: give steps, or tokens and "
                         "tokens_per_step", field="tco.steps")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str | None = None) -> TcoModel:
        """Build from a scenario's ``tco:`` mapping (keys are the field names).

        Examples
        --------
        >>> TcoModel.from_mapping({"accelerator_usd": 1, "host_usd_per_npu": 0,
        ...     "npu_power_w": 1, "host_power_w_per_npu": 0, "pue": 1,
        ...     "electricity_usd_per_kwh": 0.1, "lifetime_years": 1, "steps": 10}).steps
        10.0
        """
        return section_from_mapping(cls, data, source, "tco", [f.name for f in fields(cls)][:7])


def section_from_mapping(cls: type, data: Mapping[str, Any], source: str | None, section: str,
                         required: Sequence[str], hint: str = "") -> Any:
    """``cls(**data)`` for a scenario's ``section:`` mapping, refusing unknown and missing keys
    (``hint`` follows the missing ones)."""
    if not isinstance(data, Mapping):
        raise InputError("expected a mapping", source=source, field=section)
    names = [f.name for f in fields(cls) if f.init]
    unknown = sorted(map(str, set(data) - set(names)))
    if unknown:
        raise InputError(f"unknown key(s) {', '.join(unknown)}; expected {', '.join(names)}",
                         source=source, field=section)
    missing = [k for k in required if k not in data]
    if missing:
        raise InputError(f"missing {', '.join(missing)}{hint}", source=source, field=section)
    with input_context(source):
        return cls(**dict(data))


def _network_power(coeffs: CostCoefficients, n_dims: int, allow_missing_power: bool) -> np.ndarray:
    if coeffs.w_per_gbps is None:
        if not allow_missing_power:
            raise InputError(
                "TCO needs the network's power (W per GB/s): give a power_model, or a cost "
                "catalog with watts (e.g. cost_model: {catalog: current_2025})",
                field="power_model",
            )
        return np.zeros(n_dims)
    return np.asarray(coeffs.w_per_gbps, dtype=float)


def cluster_rate_coefficients(
    tco: TcoModel, fabric: Fabric, coeffs: CostCoefficients, *, allow_missing_power: bool = False
) -> tuple[float, np.ndarray]:
    """Cluster cost per second ``(r0, r)``, ``r0 + r . B`` in $/s (module notes);
    ``allow_missing_power`` counts the network at 0 W when ``coeffs`` has no power.

    Examples
    --------
    One NPU of $8760 and 1 kW over one year at PUE 1 and $0.1/kWh, no network:

    >>> from libra_opt.cost.prices import CostModel, cost_coefficients
    >>> from libra_opt.fabric.builders import multi_dim
    >>> f = multi_dim((1,), ("ring",), tiers=("T",))
    >>> k = cost_coefficients(f, CostModel.from_tables({"T": {"link": 0.0}}, {"T": {"link": 0.0}}))
    >>> r0, r = cluster_rate_coefficients(TcoModel(8760, 0, 1000, 0, 1, 0.1, 1), f, k)
    >>> round(r0 * 3600, 6)     # $1/h capex + $0.1/h energy
    1.1
    """
    hours = tco.lifetime_h
    capex_factor = 1.0 + tco.maintenance_fraction_per_year * tco.lifetime_years
    energy_usd_per_w = tco.pue * tco.electricity_usd_per_kwh * hours / 1000.0
    n = fabric.n_npus
    fixed_usd = (n * (tco.accelerator_usd + tco.host_usd_per_npu) + coeffs.fixed_usd) * capex_factor
    fixed_usd += (n * (tco.npu_power_w + tco.host_power_w_per_npu) + coeffs.fixed_w) \
        * energy_usd_per_w
    kappa = np.asarray(coeffs.usd_per_gbps, dtype=float)
    pi = _network_power(coeffs, fabric.n_dims, allow_missing_power)
    seconds = 3600.0 * hours
    return fixed_usd / seconds, (kappa * capex_factor + pi * energy_usd_per_w) / seconds


@dataclass(frozen=True)
class TcoBreakdown:
    """Lifetime TCO of a cluster at one bandwidth allocation ($ or W): capex parts, maintenance,
    IT power (NPUs, hosts and network), lifetime energy (PUE included), the total, the amortized
    $/hour and the cost of one run (``None`` without a step time).
    """

    accelerators_usd: float
    hosts_usd: float
    network_usd: float
    maintenance_usd: float
    it_power_w: float
    energy_usd: float
    total_usd: float
    usd_per_hour: float
    run_usd: float | None


def tco_breakdown(
    tco: TcoModel,
    fabric: Fabric,
    coeffs: CostCoefficients,
    bw_gbps: npt.ArrayLike,
    step_time_s: float | None = None,
    *,
    allow_missing_power: bool = False,
) -> TcoBreakdown:
    """Capex, energy, amortized $/hour and (with ``step_time_s``) the run cost.

    Examples
    --------
    >>> from libra_opt.cost.prices import CostModel, cost_coefficients
    >>> from libra_opt.fabric.builders import multi_dim
    >>> f = multi_dim((4,), ("ring",), tiers=("T",))
    >>> k = cost_coefficients(f, CostModel.from_tables({"T": {"link": 10.0}}, {"T": {"link": 1.0}}))
    >>> b = tco_breakdown(TcoModel(1000, 0, 100, 0, 1.5, 0.2, 1, steps=3600), f, k, [50.0], 1.0)
    >>> b.network_usd, b.it_power_w      # 10 $ x 4 NPUs x 50 GB/s; 400 W + 200 W
    (2000.0, 600.0)
    >>> round(b.energy_usd, 2)           # 0.6 kW x 1.5 x 0.2 $/kWh x 8760 h
    1576.8
    >>> round(b.run_usd, 4)              # 3600 s of a cluster costing (6000 + 1576.8) $/8760 h
    0.8649
    """
    bw = np.asarray(bw_gbps, dtype=float)
    n = fabric.n_npus
    network_usd = float(np.asarray(coeffs.usd_per_gbps) @ bw) + coeffs.fixed_usd
    pi = _network_power(coeffs, fabric.n_dims, allow_missing_power)
    capex = n * (tco.accelerator_usd + tco.host_usd_per_npu) + network_usd
    maintenance = capex * tco.maintenance_fraction_per_year * tco.lifetime_years
    power = n * (tco.npu_power_w + tco.host_power_w_per_npu) + float(pi @ bw) + coeffs.fixed_w
    energy = power / 1000.0 * tco.pue * tco.electricity_usd_per_kwh * tco.lifetime_h
    total = capex + maintenance + energy
    per_hour = total / tco.lifetime_h
    run = None
    if step_time_s is not None:
        run = training_run_cost_usd(tco, step_time_s, per_hour / 3600.0)
    return TcoBreakdown(
        accelerators_usd=n * tco.accelerator_usd,
        hosts_usd=n * tco.host_usd_per_npu,
        network_usd=network_usd,
        maintenance_usd=maintenance,
        it_power_w=power,
        energy_usd=energy,
        total_usd=total,
        usd_per_hour=per_hour,
        run_usd=run,
    )


def training_run_cost_usd(tco: TcoModel, step_time_s: float, rate_usd_per_s: float) -> float:
    """``n_steps x step_time_s x rate_usd_per_s``: the cluster time one run consumes, in $.

    Examples
    --------
    >>> t = TcoModel(1, 0, 1, 0, 1, 0.1, 1, steps=1000)
    >>> training_run_cost_usd(t, 2.0, 0.5)
    1000.0
    """
    return tco.n_steps * float(step_time_s) * float(rate_usd_per_s)
