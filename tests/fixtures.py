"""Small fabrics and workloads whose traffic is derived by hand, shared by the tests."""

import math
import signal

from libra_opt.cost.prices import CostModel
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


def fabric_2d(latency_s=0.0):
    return Fabric((Dim("node", "ring", 4, "A", latency_s), Dim("pod", "switch", 8, "B", latency_s)))


def cost_2d():
    # kappa = 32 NPUs x (2) and 32 x (4 + 10 + 20) = (64, 1088) $ per GB/s
    return CostModel.from_tables(
        {"A": {"link": 2.0}, "B": {"link": 4.0, "switch": 10.0, "nic": 20.0}},
        {"A": {"link": 0.01}, "B": {"link": 0.02, "switch": 0.05, "nic": 0.1}},
    )


def workload_2d():
    """Traffic per NPU (GB), derived by hand:
    l1 forward: all-reduce 1 GB over (4, 1): node 2*1*3/4 = 1.5
    l2 weight-grad: all-reduce 2 GB over (2, 8): node 2*2/2 = 2, m -> 1; pod 2*1*7/8 = 1.75
    l3 forward: all-to-all 0.5 GB over (4, 8): node 0.5*3/4 = 0.375, pod 0.5*7/8 = 0.4375
    Compute: 1 ms + 2 ms + 0.5 ms per step.
    """
    return Workload(
        "w2",
        (
            Layer("l1", Phase(1e-3, (Collective("all_reduce", 1e9, "tp"),))),
            Layer("l2", Phase(0.0), Phase(0.0), Phase(2e-3, (Collective("all_reduce", 2e9, "dp"),))),
            Layer("l3", Phase(0.5e-3, (Collective("all_to_all", 0.5e9, "ep"),))),
        ),
        {"tp": (4, 1), "dp": (2, 8), "ep": (4, 8)},
    )


def scenario_2d(constraints=(), objective="perf", **kw):
    f = fabric_2d(kw.pop("latency_s", 0.0))
    cons = tuple(parse_constraint(c, f) for c in constraints)
    return Scenario(f, cost_2d(), (workload_2d(),), constraints=cons, objective=objective, **kw)


def write_scenario_files(directory, scenario_yaml, workload_txt, communicator_yml):
    """Write ``s.yaml`` (referring to ``w.txt`` and ``comm.yml``), ``w.txt`` and
    ``comm.yml`` into ``directory``; returns the scenario's path."""
    (directory / "w.txt").write_text(workload_txt)
    (directory / "comm.yml").write_text(communicator_yml)
    path = directory / "s.yaml"
    path.write_text(scenario_yaml)
    return path


def same(a, b) -> bool:
    """Equal with identical types all the way down (1, 1.0 and True differ; NaN == NaN):
    how two YAML readers' data are compared."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def interruptible() -> None:
    """``preexec_fn`` of a command a test interrupts with SIGINT: the default disposition,
    so that the Python it runs turns SIGINT into KeyboardInterrupt as at a terminal. A suite
    started in the background by a non-interactive shell inherits SIGINT ignored, and a
    Python started with SIGINT ignored keeps ignoring it (Ctrl-C could not be simulated)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
