"""libra_opt: exact, fast bandwidth allocation for multi-dimensional AI training fabrics."""

from libra_opt.constraints import LinearConstraint, parse_constraint
from libra_opt.cost import CostModel, cost_coefficients
from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    SolverError,
    UnboundedDesignError,
    VerificationError,
)
from libra_opt.evaluate import Evaluation, evaluate, step_time
from libra_opt.fabric import Dim, Fabric
from libra_opt.optimize import BandwidthProblem, build_problem, solve
from libra_opt.scenario import Scenario
from libra_opt.solution import Solution
from libra_opt.workload import Collective, Layer, Phase, Workload

__version__ = "0.1.0"

__all__ = [
    "BandwidthProblem",
    "Collective",
    "CostModel",
    "Dim",
    "Evaluation",
    "Fabric",
    "InfeasibleDesignError",
    "InputError",
    "Layer",
    "LibraOptError",
    "LinearConstraint",
    "Phase",
    "Scenario",
    "Solution",
    "SolverError",
    "UnboundedDesignError",
    "VerificationError",
    "Workload",
    "build_problem",
    "cost_coefficients",
    "evaluate",
    "parse_constraint",
    "solve",
    "step_time",
]
