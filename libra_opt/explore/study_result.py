"""The answer of a design study: a solution and the studies run around it, as one frozen value.

Its own module, importing no solver, sweep or comparison, so that ``libra_opt.report`` can
render a study without being able to run one (an import-linter contract says so).
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
        The scenario's optimum.
    sensitivity : pandas.DataFrame or None
        :func:`libra_opt.explore.sensitivity.sensitivity` of the optimum; ``None`` with
        ``sensitivity_error`` when it could not be computed.
    sensitivity_error : str or None
    budget_usd : tuple of float
        The swept network budgets, $ (empty when the optimum costs nothing).
    sweep_scenario : Scenario or None
        The scenario swept: the solution's, with objective perf.
    sweep : pandas.DataFrame or None
        One row per budget (:func:`libra_opt.explore.sweep.sweep`); ``None`` without budgets.
    families : tuple of str
        Fabric families compared.
    scaleout_radix : int
        Scale-out switch radix of the re-wired fabrics.
    own_label : str
        The comparison's label of the scenario's own fabric (``scenario (<family>)``).
    comparison : pandas.DataFrame or None
        :func:`libra_opt.explore.compare.compare_fabrics` in modes ``equal_bw`` and
        ``equal_budget``; ``None`` with ``comparison_error`` when not possible.
    comparison_error : str or None
    timings_s : FrozenMap of str to float
        Wall time of each part, s (``solve_s``, ``sweep_s``, ``compare_s``, ``search_s``,
        ``total_s``).
    search : SearchResult or None
        A co-design search over a bounded space
        (:func:`libra_opt.explore.study.report_search_space`), with its co-design gains in
        ``search.gains``: a :class:`libra_opt.explore.search.SearchResult` (typed ``Any``
        here so that rendering it needs no search module); ``None`` with ``search_error``
        when the search cannot take the scenario or was not asked for.
    search_error : str or None
        Why there is no search (one line).
    search_space : SearchSpace or None
        The space searched (:class:`libra_opt.explore.search.space.SearchSpace`).
    bands : FrozenMap of str to Band
        The error band of each model-based workload
        (:func:`libra_opt.explore.trust.scenario_bands`; empty without an error model).
    error_model : ErrorModel or None
        The validated runs the bands come from.
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
