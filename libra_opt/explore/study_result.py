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

    Each study is its table or result, or ``None`` with its ``*_error`` reason:
    ``sensitivity`` (:func:`libra_opt.explore.sensitivity.sensitivity`), ``sweep`` (one row per
    network budget in ``budget_usd`` of ``sweep_scenario``, objective perf), ``comparison``
    (:func:`libra_opt.explore.compare.compare_fabrics` of ``families`` re-wired at
    ``scaleout_radix``, the scenario's own fabric labelled ``own_label``) and ``search`` (a
    :class:`libra_opt.explore.search.SearchResult` with its gains over ``search_space``, typed
    ``Any`` so rendering it needs no search module). ``timings_s`` holds each part's wall time;
    ``bands`` the error band of each model-based workload from ``error_model``.
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
