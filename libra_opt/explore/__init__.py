"""Many answers: grid sweeps (:mod:`~libra_opt.explore.sweep`), Pareto fronts, sensitivities,
overrides, fabric comparisons, the co-design search, and the model against published runs
(:mod:`~libra_opt.explore.validation`, :mod:`~libra_opt.explore.calibration`,
:mod:`~libra_opt.explore.ranking`).

The public functions are :mod:`libra_opt`'s (``lo.sweep``, ``lo.compare_fabrics``,
``lo.pareto_front``, ``lo.sensitivity``, ``lo.apply_overrides``); this package imports none
of its modules itself, so a worker process that needs one module loads that one only.
"""
