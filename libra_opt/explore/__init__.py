"""Many answers: grid sweeps, Pareto fronts, sensitivities, overrides, fabric comparisons, and
the model against published runs (:mod:`~libra_opt.explore.validation`,
:mod:`~libra_opt.explore.calibration`, :mod:`~libra_opt.explore.ranking`)."""

from libra_opt.explore.compare import budget_optimum, compare_fabrics
from libra_opt.explore.grid import sweep_grid
from libra_opt.explore.overrides import apply_overrides
from libra_opt.explore.pareto import pareto_front
from libra_opt.explore.sensitivity import sensitivity
from libra_opt.explore.sweep import sweep

__all__ = [
    "apply_overrides",
    "budget_optimum",
    "compare_fabrics",
    "pareto_front",
    "sensitivity",
    "sweep",
    "sweep_grid",
]
