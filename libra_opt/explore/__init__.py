"""Many answers: sweeps, Pareto fronts, sensitivities, overrides, fabric comparisons, the
co-design search and the model against published runs. The public functions are
:mod:`libra_opt`'s; this package imports none of its modules itself, so a worker process
loads only the module it needs.
"""
