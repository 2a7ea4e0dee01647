"""The question: the recipe (ScenarioSpec), compiled without file access into a Scenario
(fabric, prices, workloads, constraints, objective) by
:func:`libra_opt.scenario.compile.compile`, and its evaluation."""

from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.objective import Objective, objective_of
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import ScenarioSpec

__all__ = [
    "Evaluation",
    "LinearConstraint",
    "Objective",
    "Scenario",
    "ScenarioSpec",
    "evaluate",
    "objective_of",
    "parse_constraint",
    "toy_scenario",
]
