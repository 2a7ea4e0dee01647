"""The question: the recipe (ScenarioSpec), compiled without file access into a Scenario
(fabric, prices, workloads, constraints, objective) by
:func:`libra_opt.scenario.compile.compile`, and its evaluation."""
