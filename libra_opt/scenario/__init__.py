"""The question: a Scenario (fabric, prices, workloads, constraints, objective) and its evaluation."""

from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.scenario import Scenario

__all__ = [
    "Evaluation",
    "LinearConstraint",
    "Scenario",
    "evaluate",
    "parse_constraint",
    "toy_scenario",
]
