"""DiLoCo across sites as a scenario the optimizer solves exactly (blocking or overlapped sync).

:func:`diloco_scenario` turns a scenario whose data-parallel group spans a *site*
dimension (the datacenter interconnect, a dimension of the fabric with its own tier,
price, power and latency) into one where

* the inner steps' data-parallel collectives stay inside a site (the group's span on the
  site dimension becomes 1), and
* a second workload, ``<name>_outer``, is one fragment's outer all-reduce of
  ``P_npu b / (8 F)`` bytes over the whole data-parallel group, weighted ``F / H`` times
  the workload's weight, with the hidden window ``tau C`` when the sync overlaps ``tau``
  inner steps of compute (``C``: the workload's compute per step,
  :attr:`~libra_opt.traffic.workload.Workload.compute_s`).

The weighted step time the optimizer minimizes is then the amortized step time
``T_inner(B) + (F / H) max(T_f(B) - tau C, 0)`` exactly (bandwidth and latency terms
alike; ``tau = 0`` is the blocking sync), under every collective and traffic model, so
budgets, power caps, sweeps of ``H``, ``F``, ``b`` and ``tau`` and the fast conic path all
apply; the numpy re-check evaluates the same formula
(:func:`libra_opt.traffic.diloco.amortized_exposed_s` in closed form). With ``tau > 0``
the scenario needs ``training_loop: no_overlap``: the sync hides behind compute on links
that are idle then (under an overlapped loop the step's own collectives would use them,
which the window does not charge; :class:`~libra_opt.errors.InputError` otherwise).

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
    """``scenario`` trained with DiLoCo across the sites of ``site_dim``.

    Parameters
    ----------
    scenario : Scenario
    site_dim : str
        The dimension joining the sites.
    settings : DiLoCoSettings
        ``H``, ``F``, ``b`` and ``tau`` (``overlap_steps``; 0: blocking sync).
    params_per_npu : float
        ``P_npu``: parameters each NPU holds (the model over its tensor and pipeline
        parallel degrees).
    dp_group : str
        The data-parallel group of every workload.

    Returns
    -------
    Scenario
        Workloads ``<name>`` (inner) and ``<name>_outer`` (hidden window ``tau C``),
        weights ``w`` and ``w F / H``.

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
