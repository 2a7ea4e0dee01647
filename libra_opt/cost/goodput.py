"""Checkpoint/restart under failures: the checkpoint interval, goodput, hot spares, and the
``reliability:`` section of a scenario (:class:`ReliabilityModel`).

Notes
-----
With failures a Poisson process of rate ``1/M``, ``tau`` seconds of compute between
checkpoints written in ``delta``, and recoveries ``R_i`` of probability ``p_i`` (restarted
by a failure during them), one segment ``L = tau + delta`` takes ``E = M (e^{L/M} - 1)
sum_i p_i e^{R_i / M}`` on average and goodput is ``tau / E`` [2]_. Young's optimum interval
is ``sqrt(2 delta M)`` [1]_; Daly's, the default, ``sqrt(2 delta M) [1 + sqrt(delta / 2M) / 3
+ (delta / 2M) / 9] - delta`` for ``delta < 2M``, else ``M`` [2]_. Parts under repair in a
domain of failure rate ``lambda`` are Poisson with mean ``lambda repair_h`` (M/G/inf), so a
failure finds none of ``s`` hot spares free with probability ``P(Poisson(lambda repair_h)
>= s)`` (recovery then also waits ``replace_s``).

References
----------
.. [1] J. W. Young, "A first order approximation to the optimum checkpoint interval",
   Communications of the ACM 17(9), 1974.
.. [2] J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart
   dumps", Future Generation Computer Systems 22(3), 2006.
.. [3] A. Dubey et al., "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, Sec. 3.3.1
   (Tectonic: 2 TB/s sustained, 7 TB/s peak) and Sec. 3.3.4.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from libra_opt.cost.failures import check_rates
from libra_opt.cost.tco import TcoModel, section_from_mapping
from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.frozen import FrozenMap

__all__ = [
    "CHECKPOINT_WRITE_GBPS",
    "REPAIR_H",
    "ReliabilityModel",
    "daly_interval_s",
    "expected_goodput",
    "spare_shortfall_probability",
    "spares_rate_usd_per_s",
    "young_interval_s",
]

#: Default storage write bandwidth for checkpoints, GB/s (aggregate): the sustained
#: throughput of the Tectonic file system that served Llama 3's checkpoints ([3], Sec. 3.3.1).
CHECKPOINT_WRITE_GBPS = 2000.0
#: Default mean time to repair a failed part, hours: "days to replace optical links"
#: (Z. Cheng et al., "Enhancing network failure mitigation with performance-aware ranking",
#: NSDI 2025, arXiv:2305.13792, Sec. 1); an assumption, two days.
REPAIR_H = 48.0


def young_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Young's optimum checkpoint interval ``sqrt(2 delta M)`` (s) [1]_.

    Examples
    --------
    >>> young_interval_s(50.0, 3600.0)
    600.0
    """
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum checkpoint interval (s) [2]_ (see the module notes).

    Examples
    --------
    >>> round(daly_interval_s(50.0, 3600.0), 2)   # 600 (1 + 1/36 + 1/1296) - 50
    567.13
    >>> daly_interval_s(9000.0, 3600.0)           # delta >= 2M: the MTBF
    3600.0
    """
    if checkpoint_s >= 2.0 * mtbf_s:
        return mtbf_s
    x = checkpoint_s / (2.0 * mtbf_s)
    return young_interval_s(checkpoint_s, mtbf_s) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) \
        - checkpoint_s


def expected_goodput(interval_s: float, checkpoint_s: float, mtbf_s: float,
                     recovery_s: float | Sequence[float] | np.ndarray,
                     weights: Sequence[float] | np.ndarray | None = None) -> float:
    """Fraction of wall time that advances training: ``interval_s`` (``tau``) compute seconds
    between checkpoints of ``checkpoint_s`` (``delta``), a mean time between stopping failures
    ``mtbf_s`` (``M``, ``inf``: none), recoveries ``recovery_s`` (``R_i``) of probabilities
    ``weights`` (default equal): ``tau / (M (e^{(tau + delta)/M} - 1) sum_i p_i e^{R_i/M})``,
    without failures ``tau / (tau + delta)``.

    Examples
    --------
    >>> round(expected_goodput(600.0, 50.0, 3600.0, 300.0), 6)  # 600 / (3600 (e^{650/3600} - 1) e^{1/12})
    0.774907
    >>> expected_goodput(600.0, 0.0, math.inf, 300.0)
    1.0
    """
    r = np.atleast_1d(np.asarray(recovery_s, dtype=float))
    p = np.full(r.shape, 1.0 / r.size) if weights is None else np.asarray(weights, float)
    if not math.isfinite(mtbf_s):
        return interval_s / (interval_s + checkpoint_s)
    seg = mtbf_s * math.expm1((interval_s + checkpoint_s) / mtbf_s)
    return float(interval_s / (seg * float(p @ np.exp(r / mtbf_s)) / p.sum()))


def spare_shortfall_probability(failures_per_h: float, repair_h: float, spares: int) -> float:
    """Probability that a failure in a domain finds all its ``spares`` taken (module notes).

    Examples
    --------
    >>> spare_shortfall_probability(0.01, 48.0, 0)
    1.0
    >>> round(spare_shortfall_probability(0.01, 48.0, 1), 6)   # 1 - e^{-0.48}
    0.381217
    """
    if spares <= 0:
        return 1.0
    mu = failures_per_h * repair_h
    below = math.fsum(math.exp(j * math.log(mu) - mu - math.lgamma(j + 1)) if mu > 0
                      else float(j == 0) for j in range(spares))
    return max(0.0, 1.0 - below)


def spares_rate_usd_per_s(tco: TcoModel, n_spares: int) -> float:
    """What ``n_spares`` hot spare NPUs (with their host share, powered) add to the cluster's
    amortized cost, $ per second.

    Examples
    --------
    >>> t = TcoModel(8760, 0, 1000, 0, 1, 0.1, 1)
    >>> round(spares_rate_usd_per_s(t, 2) * 3600, 6)   # 2 x ($1/h capex + $0.1/h energy)
    2.2
    """
    hours = tco.lifetime_h
    capex = (tco.accelerator_usd + tco.host_usd_per_npu) \
        * (1.0 + tco.maintenance_fraction_per_year * tco.lifetime_years)
    energy = (tco.npu_power_w + tco.host_power_w_per_npu) / 1000.0 * tco.pue \
        * tco.electricity_usd_per_kwh * hours
    return n_spares * (capex + energy) / (3600.0 * hours)


def _number(v: Any) -> Any:
    """A number given as text (``--set reliability.replace_s=600``) as a number."""
    if isinstance(v, str):
        try:
            return float(v) if any(c in v for c in ".eE") else int(v)
        except ValueError:
            return v
    return v


#: Keys of ``reliability:`` that must be > 0 when given.
_POSITIVE = ("checkpoint_write_gbps", "repair_h", "checkpoint_interval_s", "run_days",
             "checkpoint_bytes")


@dataclass(frozen=True)
class ReliabilityModel:
    """The ``reliability:`` section: failure rates, recovery and spares.

    ``detection_s`` and ``restart_s`` (no defaults) are the seconds from a failure to the job
    being stopped and to restart it; ``replace_s`` is added when no hot spare is at hand.
    ``rates_per_h`` or ``mtbf_h`` replace default rates (giving ``rates``, :func:`check_rates`).
    Also ``gpus_per_host`` (8, the Grand Teton servers of [3]_), ``checkpoint_write_gbps``
    (:data:`CHECKPOINT_WRITE_GBPS`), ``spares_per_domain`` (per HB domain, priced),
    ``repair_h`` (:data:`REPAIR_H`), and optionally
    ``checkpoint_interval_s`` (Daly's optimum), ``run_days`` (the run's own, from ``tco``) and
    ``checkpoint_bytes`` (:func:`~libra_opt.generators.memory.checkpoint_bytes`).

    Examples
    --------
    >>> m = ReliabilityModel.from_mapping({"detection_s": 120, "restart_s": 480,
    ...                                    "mtbf_h": {"gpu": 50000}})
    >>> m.rates["gpu"], m.spares_per_domain
    (2e-05, 0)
    >>> ReliabilityModel.from_mapping({"detection_s": 1, "restart_s": 1,
    ...                                "checkpoint_write_gbps": 0})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: reliability.checkpoint_write_gbps: 0 must be a finite number > 0
    """

    detection_s: float
    restart_s: float
    rates_per_h: Mapping[str, float] | None = None
    mtbf_h: Mapping[str, float] | None = None
    gpus_per_host: int = 8
    checkpoint_write_gbps: float = CHECKPOINT_WRITE_GBPS
    replace_s: float = 0.0
    spares_per_domain: int = 0
    repair_h: float = REPAIR_H
    checkpoint_interval_s: float | None = None
    run_days: float | None = None
    checkpoint_bytes: float | None = None
    rates: Mapping[str, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("detection_s", "restart_s", "replace_s", *_POSITIVE):
            v = _number(getattr(self, name))
            positive = name in _POSITIVE
            if v is None and positive:
                continue
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) \
                    or v < 0 or (positive and v == 0):
                raise InputError(f"{short_repr(v, 60)} must be a finite number "
                                 f"{'> 0' if positive else '>= 0'}", field=f"reliability.{name}")
            object.__setattr__(self, name, float(v))
        for name in ("gpus_per_host", "spares_per_domain"):
            v = _number(getattr(self, name))
            low = 1 if name == "gpus_per_host" else 0
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InputError(f"{short_repr(v, 60)} must be an integer >= {low}",
                                 field=f"reliability.{name}")
            object.__setattr__(self, name, v)
        given = [{k: _number(x) for k, x in v.items()} if isinstance(v, Mapping) else v
                 for v in (self.rates_per_h, self.mtbf_h)]
        rates = check_rates(given[0], given[1])
        for name in ("rates_per_h", "mtbf_h"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, FrozenMap(dict(v)))
        object.__setattr__(self, "rates", FrozenMap(rates))

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], source: str | None = None
                     ) -> ReliabilityModel:
        """Build from a scenario's ``reliability:`` mapping; an unknown or missing key, or a bad
        value, raises :class:`~libra_opt.errors.InputError` naming ``reliability.<key>``.
        """
        return section_from_mapping(cls, data, source, "reliability", ("detection_s", "restart_s"),
                                    " (seconds; no default: state the recovery you assume)")

    def check(self, fabric: Fabric) -> None:
        """Refuse what does not fit ``fabric``: a tier no dimension has, a host size that does not
        divide the NPU count, or more spares than an HB domain holds NPUs.
        """
        tiers = {d.tier for d in fabric.dims}
        for key in (*(self.rates_per_h or {}), *(self.mtbf_h or {})):
            kind, _, tier = key.partition(".")
            if tier and tier not in tiers:
                which = "rates_per_h" if key in (self.rates_per_h or {}) else "mtbf_h"
                raise InputError(f"no dimension of the fabric has tier {tier!r} (tiers: "
                                 f"{', '.join(sorted(tiers))})",
                                 field=f"reliability.{which}.{key}")
        n0 = fabric.sizes[0]
        if self.spares_per_domain > n0:
            raise InputError(
                f"{self.spares_per_domain} spares per domain is more than the {n0} NPUs an "
                f"HB domain ({fabric.dims[0].name!r}) holds", field="reliability.spares_per_domain")
        if fabric.n_npus % self.gpus_per_host:
            raise InputError(f"gpus_per_host {self.gpus_per_host} does not divide the "
                             f"{fabric.n_npus:,} NPUs", field="reliability.gpus_per_host")
