"""DiLoCo across sites as a scenario the optimizer solves exactly (blocking or overlapped sync):
the inner steps' data-parallel collectives stay inside a site and ``<name>_outer`` (one
fragment's outer all-reduce of ``P_npu b / (8 F)`` bytes, weighted ``F / H``, hidden behind
``tau C`` of compute) makes the weighted step time ``T_inner(B) + (F / H) max(T_f(B) - tau
C, 0)`` (:func:`libra_opt.traffic.diloco.diloco_workloads`; ``tau > 0`` needs the
``no_overlap`` loop).

References
----------
.. [1] A. Douillard et al., "DiLoCo: Distributed Low-Communication Training of Language
   Models", arXiv:2311.08105.
.. [2] A. Douillard et al., "Streaming DiLoCo with overlapping communication",
   arXiv:2501.18512.
"""

from __future__ import annotations

import dataclasses

from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.diloco import DiLoCoSettings, diloco_workloads

__all__ = ["diloco_scenario"]


def diloco_scenario(
    scenario: Scenario, site_dim: str, settings: DiLoCoSettings, params_per_npu: float,
    dp_group: str = "dp",
) -> Scenario:
    """``scenario`` trained with DiLoCo across the sites of ``site_dim`` (``settings``: ``H``,
    ``F``, ``b``, ``tau``; ``params_per_npu``: the parameters each NPU holds; ``dp_group``: the
    workloads' data-parallel group): workloads ``<name>`` and ``<name>_outer`` weighted ``w``
    and ``w F / H``.

    Examples
    --------
    >>> from libra_opt.cost.prices import CostModel
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
    >>> from libra_opt.fabric.dims import Dim, Fabric
    >>> f = Fabric((Dim("node", "ring", 4, "A"), Dim("site", "switch", 2, "W")))
    >>> cm = CostModel.from_tables({"A": {"link": 1.0}, "W": {"link": 1, "switch": 1, "nic": 1}})
    >>> ar = Collective("all_reduce", 2e9, "dp")
    >>> w = Workload("w", (Layer("l", Phase(0.1), Phase(0.0), Phase(0.2, (ar,))),), {"dp": (4, 2)})
    >>> d = diloco_scenario(Scenario(f, cm, (w,)), "site", DiLoCoSettings(100), 1e9)
    >>> [x.name for x in d.workloads], d.weights
    (['w', 'w_outer'], (1.0, 0.01))
    >>> dict(d.workloads[0].groups)["dp"], d.workloads[1].layers[0].weight_grad.collectives
    ((4, 1), (Collective(kind='all_reduce', size_bytes=2000000000.0, group='dp'),))
    >>> s = DiLoCoSettings(100, fragments=10, delta_bits=4, overlap_steps=2)
    >>> round(diloco_scenario(Scenario(f, cm, (w,)), "site", s, 1e9).workloads[1].hidden_window_s, 12)
    0.6
    """
    assert scenario.weights is not None
    workloads, weights = diloco_workloads(scenario.workloads, scenario.weights, scenario.fabric,
                                          site_dim, settings, params_per_npu, dp_group)
    return dataclasses.replace(scenario, workloads=workloads, weights=weights)
