"""Many answers: sweeps over constraint bounds and comparisons of fabric families."""

from libra_opt.explore.compare import budget_optimum, compare_fabrics
from libra_opt.explore.sweep import sweep

__all__ = ["budget_optimum", "compare_fabrics", "sweep"]
