"""The answer of a design study, in a module importing no solver, sweep or comparison, so
that ``libra_opt.report`` can render a study without being able to run one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from libra_opt.fabric.frozen import FrozenMap
from libra_opt.generators.error_model import ErrorModel
from libra_opt.optimize.solution import Solution
from libra_opt.scenario.scenario import Scenario

if TYPE_CHECKING:  # pandas is imported by the studies that make the tables
    import pandas as pd

__all__ = ["DesignStudy"]


@dataclass(frozen=True)
class DesignStudy:
    """A solution and the studies run around it (what a design review shows).

    Attributes
    ----------
    solution : Solution
    sensitivity, sensitivity_error
        :func:`libra_opt.explore.sensitivity.sensitivity` of the optimum, or why not.
    budget_usd : tuple of float
        The swept network budgets, $ (empty when the optimum costs nothing).
    sweep_scenario, sweep
        The scenario swept (objective perf) and one row per budget.
    families, scaleout_radix, own_label
        Fabric families compared, the re-wired scale-out radix and the scenario's own label.
    comparison, comparison_error
        :func:`libra_opt.explore.compare.compare_fabrics` (``equal_bw``, ``equal_budget``), or
        why not.
    timings_s : FrozenMap of str to float
        Wall time of each part, s.
    search, search_error, search_space
        The co-design search (:class:`libra_opt.explore.search.SearchResult`, typed ``Any`` so
        rendering it needs no search module) with its gains, or why there is none, and its space.
    bands : FrozenMap of str to Band
        The error band of each model-based workload (empty without an error model).
    error_model : ErrorModel or None
    """

    solution: Solution
    sensitivity: pd.DataFrame | None
    sensitivity_error: str | None
    budget_usd: tuple[float, ...]
    sweep_scenario: Scenario | None
    sweep: pd.DataFrame | None
    families: tuple[str, ...]
    scaleout_radix: int
    own_label: str
    comparison: pd.DataFrame | None
    comparison_error: str | None
    timings_s: FrozenMap
    search: Any = None
    search_error: str | None = None
    search_space: Any = None
    bands: FrozenMap = field(default_factory=lambda: FrozenMap({}))
    error_model: ErrorModel | None = None

    @property
    def scenario(self) -> Scenario:
        """The solved scenario."""
        return self.solution.scenario
