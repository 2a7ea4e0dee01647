"""libra_opt: exact, fast bandwidth allocation for multi-dimensional AI training fabrics.

One package per stage of the data path (the import layers, lowest first; a package imports
only packages below it, siblings on one line are independent)::

    fabric                       what is built
    traffic | cost               what moves and how long it takes | what it costs
    generators | scenario        model configs -> workloads | the question
    optimize | io                the answer | every file read or written
    explore                      many answers (sweeps, fabric comparison)
    report                       text, JSON and plots
    cli                          the command line

``import libra_opt as lo`` is light: the names below load their module on first use
(PEP 562), so evaluating a design never imports cvxpy, and nothing imports matplotlib until
a plot is drawn.

Examples
--------
>>> import libra_opt as lo
>>> scen = lo.examples.load("gpt3_175b_4d")
>>> scen.fabric.n_npus
4096
>>> sol = lo.solve(lo.examples.toy_scenario())
>>> sol.bw_gbps.round(3).tolist()
[200.0, 100.0]
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    SolverError,
    UnboundedDesignError,
    VerificationError,
)

__version__ = "0.1.0"

#: Public name -> module that defines it (loaded on first attribute access).
_LAZY: dict[str, str] = {
    # fabric
    "Dim": "libra_opt.fabric.dims",
    "Fabric": "libra_opt.fabric.dims",
    "multi_dim": "libra_opt.fabric.builders",
    "rail_optimized_fat_tree": "libra_opt.fabric.builders",
    "rail_only": "libra_opt.fabric.builders",
    "as_family": "libra_opt.fabric.builders",
    # traffic
    "Collective": "libra_opt.traffic.workload",
    "Layer": "libra_opt.traffic.workload",
    "Phase": "libra_opt.traffic.workload",
    "Workload": "libra_opt.traffic.workload",
    "step_time": "libra_opt.traffic.step_time",
    # cost
    "CostModel": "libra_opt.cost.prices",
    "cost_coefficients": "libra_opt.cost.prices",
    "TcoModel": "libra_opt.cost.tco",
    # generators
    "generate_workload": "libra_opt.generators.generator",
    # scenario
    "Scenario": "libra_opt.scenario.scenario",
    "LinearConstraint": "libra_opt.scenario.constraints",
    "parse_constraint": "libra_opt.scenario.constraints",
    "Evaluation": "libra_opt.scenario.evaluate",
    "evaluate": "libra_opt.scenario.evaluate",
    # optimize
    "BandwidthProblem": "libra_opt.optimize.problem",
    "build_problem": "libra_opt.optimize.problem",
    "solve": "libra_opt.optimize.problem",
    "Solution": "libra_opt.optimize.solution",
    "save_solution": "libra_opt.explore.runs",
    "load_solution": "libra_opt.explore.runs",
    # io
    "load_scenario": "libra_opt.io.scenario_file",
    "load_model": "libra_opt.io.presets",
    "load_device": "libra_opt.io.presets",
    "catalog_cost_model": "libra_opt.io.presets",
    # explore
    "sweep": "libra_opt.explore.sweep",
    "compare_fabrics": "libra_opt.explore.compare",
    "pareto_front": "libra_opt.explore.pareto",
    "sensitivity": "libra_opt.explore.sensitivity",
    "apply_overrides": "libra_opt.explore.overrides",
    # report
    "format_solution": "libra_opt.report.text",
    "plot_allocation": "libra_opt.report.plots",
    "plot_step_breakdown": "libra_opt.report.plots",
    "plot_sweep": "libra_opt.report.plots",
    "plot_comparison": "libra_opt.report.plots",
    "plot_fabric": "libra_opt.report.plots",
}

#: Public submodules reachable as attributes (``lo.examples.load("gpt3_175b_4d")``).
_LAZY_MODULES: dict[str, str] = {
    "examples": "libra_opt.io.examples",
    "options": "libra_opt.options",
}

__all__ = [
    "InfeasibleDesignError",
    "InputError",
    "LibraOptError",
    "SolverError",
    "UnboundedDesignError",
    "VerificationError",
    *sorted(_LAZY),
    *sorted(_LAZY_MODULES),
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(_LAZY_MODULES[name])
    else:
        raise AttributeError(f"module 'libra_opt' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__"})


if TYPE_CHECKING:  # static analysers see the lazy names
    from libra_opt import options
    from libra_opt.cost.prices import CostModel, cost_coefficients
    from libra_opt.cost.tco import TcoModel
    from libra_opt.explore.compare import compare_fabrics
    from libra_opt.explore.overrides import apply_overrides
    from libra_opt.explore.pareto import pareto_front
    from libra_opt.explore.runs import load_solution, save_solution
    from libra_opt.explore.sensitivity import sensitivity
    from libra_opt.explore.sweep import sweep
    from libra_opt.fabric.builders import as_family, multi_dim, rail_only, rail_optimized_fat_tree
    from libra_opt.fabric.dims import Dim, Fabric
    from libra_opt.generators.generator import generate_workload
    from libra_opt.io import examples
    from libra_opt.io.presets import catalog_cost_model, load_device, load_model
    from libra_opt.io.scenario_file import load_scenario
    from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
    from libra_opt.optimize.solution import Solution
    from libra_opt.report.plots import (
        plot_allocation,
        plot_comparison,
        plot_fabric,
        plot_step_breakdown,
        plot_sweep,
    )
    from libra_opt.report.text import format_solution
    from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
    from libra_opt.scenario.evaluate import Evaluation, evaluate
    from libra_opt.scenario.scenario import Scenario
    from libra_opt.traffic.step_time import step_time
    from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
