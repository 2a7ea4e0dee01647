"""The answer: aggregated terms, the convex program, LP feasibility, solve, the Solution."""

from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
from libra_opt.optimize.solution import Baseline, ConstraintReport, Solution, SolverInfo

__all__ = [
    "BandwidthProblem",
    "Baseline",
    "ConstraintReport",
    "Solution",
    "SolverInfo",
    "build_problem",
    "solve",
]
