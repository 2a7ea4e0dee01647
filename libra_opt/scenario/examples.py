"""Small built-in scenarios for examples, doctests and quick experiments."""

from __future__ import annotations

from libra_opt.cost.prices import CostModel
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.topology import Ring, Switch
from libra_opt.options import Objective
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

__all__ = ["toy_scenario"]


def toy_scenario(objective: Objective = "perf") -> Scenario:
    """One layer, one 1 GB all-reduce over a 2 x 2 group on a ring of 4 inside a switch of 8
    (32 NPUs, round prices in $ and W per GB/s), total bandwidth 300 GB/s.

    The all-reduce sends 1 GB on ``node`` and 0.5 GB on ``pod`` per NPU, so the pipelined
    optimum equalises ``1/B_node = 0.5/B_pod``: ``B = (200, 100)`` GB/s.

    Examples
    --------
    >>> toy_scenario().fabric.n_npus
    32
    """
    fabric = Fabric((Dim("node", Ring(), 4, "Node"), Dim("pod", Switch(), 8, "Pod")))
    prices = CostModel.from_tables(
        {"Node": {"link": 2.0}, "Pod": {"link": 4.0, "switch": 10.0, "nic": 20.0}},
        {"Node": {"link": 0.01}, "Pod": {"link": 0.02, "switch": 0.05, "nic": 0.1}})
    wl = Workload("toy", (Layer("l0", Phase(0.01, (Collective("all_reduce", 1e9, "dp"),))),),
                  {"dp": (2, 2)})
    return Scenario(fabric, prices, (wl,),
                    constraints=(parse_constraint("sum(bw) == 300", fabric),),
                    objective=objective, name="toy")
