"""The objectives as types: each owns its name, what its value measures, its unit and its
numpy evaluation, so code that depends on the objective asks it instead of comparing names.

========================  ===============================================  =====
objective                 value                                            unit
========================  ===============================================  =====
:class:`PerfObjective`    weighted step time ``T = sum_w a_w T_w``         s
:class:`PerfPerCostObjective`  ``T x C(B)``, ``C = k0 + kappa . B``        s*$
:class:`TcoObjective`     one training run: ``steps x T x (r0 + r . B)``   $
========================  ===============================================  =====

``a_w``: workload weights; ``C(B)``: the network's cost at bandwidths ``B`` (fixed part
``k0``: in-network aggregator state memory); ``r0 + r . B``: the cluster's cost per second
(:func:`libra_opt.cost.tco.cluster_rate_coefficients`: accelerators, hosts and energy over
the lifetime, plus the network).

Examples
--------
>>> objective_of("perf_per_cost").what, objective_of("perf_per_cost").unit
('weighted step time x network cost', 's*$')
>>> objective_of("perf").value(None, 0.5, 2e6, None)
0.5
>>> objective_of("fast")
Traceback (most recent call last):
...
libra_opt.errors.InputError: objective: 'fast' is not one of perf, perf_per_cost, tco
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from libra_opt.cost.tco import cluster_rate_coefficients
from libra_opt.errors import InputError, short_repr
from libra_opt.options import OBJECTIVE_MEANING, OBJECTIVES
from libra_opt.options import Objective as ObjectiveName

__all__ = [
    "Objective",
    "PerfObjective",
    "PerfPerCostObjective",
    "TcoObjective",
    "objective_of",
]


@dataclass(frozen=True)
class Objective:
    """What the optimizer minimises (a base: one subclass per objective).

    Class attributes: ``name`` (as a scenario spells it), ``needs_tco`` (the scenario's TCO
    model enters the value), ``prices_network`` (the network's cost multiplies the step
    time), ``fixed_cost`` (the value has a part that no bandwidth removes, so it falls
    toward an infimum along a ray without a step-time floor).
    """

    name: ClassVar[ObjectiveName]
    needs_tco: ClassVar[bool] = False
    prices_network: ClassVar[bool] = False
    fixed_cost: ClassVar[bool] = False

    @property
    def what(self) -> str:
        """What the value measures."""
        return OBJECTIVE_MEANING[self.name][0]

    @property
    def unit(self) -> str:
        """The value's unit: ``s``, ``s*$`` or ``$``."""
        return OBJECTIVE_MEANING[self.name][1]

    def value(self, scenario: Any, weighted_step_time_s: float,
              network_cost_usd: float, bw_gbps: np.ndarray | None) -> float:
        """The objective's value at an allocation (numpy; see the module table);
        ``scenario``: the :class:`~libra_opt.scenario.scenario.Scenario` (its TCO model and
        cost coefficients)."""
        raise NotImplementedError  # pragma: no cover - every objective defines it


@dataclass(frozen=True)
class PerfObjective(Objective):
    """Minimise the weighted step time (s)."""

    name: ClassVar[ObjectiveName] = "perf"

    def value(self, scenario: Any, weighted_step_time_s: float,
              network_cost_usd: float, bw_gbps: np.ndarray | None) -> float:
        return float(weighted_step_time_s)


@dataclass(frozen=True)
class PerfPerCostObjective(Objective):
    """Minimise weighted step time x network cost (s x $)."""

    name: ClassVar[ObjectiveName] = "perf_per_cost"
    prices_network: ClassVar[bool] = True

    def value(self, scenario: Any, weighted_step_time_s: float,
              network_cost_usd: float, bw_gbps: np.ndarray | None) -> float:
        return float(weighted_step_time_s) * float(network_cost_usd)


@dataclass(frozen=True)
class TcoObjective(Objective):
    """Minimise the cost of one training run: steps x weighted step time x the cluster's
    cost per second ($; needs the scenario's ``tco``)."""

    name: ClassVar[ObjectiveName] = "tco"
    needs_tco: ClassVar[bool] = True
    fixed_cost: ClassVar[bool] = True

    def value(self, scenario: Any, weighted_step_time_s: float,
              network_cost_usd: float, bw_gbps: np.ndarray | None) -> float:
        if scenario is None or scenario.tco is None or bw_gbps is None:
            raise InputError("objective 'tco' needs the scenario's tco section and the "
                             "bandwidths", field="tco")
        r0, r = cluster_rate_coefficients(scenario.tco, scenario.fabric, scenario.coefficients)
        return float(scenario.tco.n_steps * weighted_step_time_s
                     * (r0 + float(r @ np.asarray(bw_gbps, dtype=float))))


_BY_NAME: dict[str, Objective] = {o.name: o for o in (PerfObjective(), PerfPerCostObjective(),
                                                       TcoObjective())}
assert tuple(_BY_NAME) == OBJECTIVES  # one type per option, in the options' order


def objective_of(name: str) -> Objective:
    """The :class:`Objective` named ``name`` (``perf``, ``perf_per_cost``, ``tco``); an
    :class:`InputError` for any other name."""
    obj = _BY_NAME.get(name) if isinstance(name, str) else None
    if obj is None:
        raise InputError(f"{short_repr(name, 60)} is not one of {', '.join(OBJECTIVES)}",
                         field="objective")
    return obj
