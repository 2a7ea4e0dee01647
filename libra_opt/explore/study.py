"""The studies a design review rests on, run once and handed over as one frozen value.

:func:`design_study` solves a scenario (unless handed a solution) and runs around its
optimum the sensitivity, a budget sweep, the fabric-family comparison and, for a scenario
whose one workload is generated from a model, a co-design search over a bounded space with
its gains. A study that cannot be run for the scenario is recorded as the reason, not
raised, so the review still shows every other part.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np

from libra_opt.errors import InputError, LibraOptError
from libra_opt.explore.compare import compare_fabrics
from libra_opt.explore.search import (
    SearchBase,
    SearchResult,
    SearchSpace,
    codesign_gains,
    run_search,
    search_base,
)
from libra_opt.explore.sensitivity import sensitivity
from libra_opt.explore.study_result import DesignStudy
from libra_opt.explore.sweep import sweep
from libra_opt.explore.trust import scenario_bands
from libra_opt.fabric.builders import as_family, fabric_family
from libra_opt.fabric.frozen import FrozenMap
from libra_opt.generators.error_model import ErrorModel
from libra_opt.optimize.problem import solve
from libra_opt.optimize.solution import Solution
from libra_opt.scenario.objective import PerfObjective
from libra_opt.scenario.scenario import Scenario

__all__ = ["design_study", "budget_values", "report_search_space", "study_search",
           "REPORT_FAMILIES", "DEFAULT_SCALEOUT_RADIX", "REPORT_SEARCH_TOP"]

logger = logging.getLogger(__name__)

REPORT_FAMILIES = ("fat_tree", "rail_only", "multi_dim")
"""Fabric families a design study compares (each with the scenario's own dimensions)."""

DEFAULT_SCALEOUT_RADIX = 64
"""Scale-out switch radix of the re-wired fabrics when the scenario's last dimension has none."""

REPORT_SEARCH_TOP = 5
"""Best candidates of a design study's co-design search (kept exact, shown in the report)."""


def report_search_space(base: SearchBase) -> SearchSpace:
    """The bounded space of a design study's search: every TP x CP x PP x DP (x EP)
    factorization and placement on the scenario's own fabric, with the workload's own
    micro-batch size, interleaving, recomputation, sequence parallelism and ZeRO stage.

    Examples
    --------
    >>> import libra_opt as lo
    >>> sp = report_search_space(search_base(lo.load_scenario("llama3_405b_h100_tco")))
    >>> sp.micro_batch_sizes, sp.interleave, sp.recompute, sp.zero, sp.hb_domains, sp.tp
    ((1,), (2,), ('full',), (1,), None, None)
    """
    p = base.entry.parallelism
    return SearchSpace(micro_batch_sizes=(p.micro_batch_size,), interleave=(p.interleave,),
                       recompute=(p.recompute,), sequence_parallel=(p.sequence_parallel,),
                       zero=(p.zero,), placements="all", hb_domains=None)


def study_search(scenario: Scenario, space: SearchSpace | None = None,
                 top: int = REPORT_SEARCH_TOP, error_model: ErrorModel | None = None
                 ) -> tuple[SearchResult | None, str | None, SearchSpace | None]:
    """The co-design search of a design study with its gains, the one-line reason when the
    search cannot take the scenario, and the space searched (default
    :func:`report_search_space`).

    Examples
    --------
    >>> import libra_opt as lo
    >>> res, why, _ = study_search(lo.load_scenario("gpt3_175b_4d"))
    >>> res is None, why
    (True, 'the co-design search needs a model-based workload (model, parallelism, device)')
    """
    try:
        base = search_base(scenario)
    except InputError as exc:
        return None, exc.message, None
    space = space if space is not None else report_search_space(base)
    res = run_search(base, space, top=top, error_model=error_model)
    if res.solutions:
        res = dataclasses.replace(res, gains=codesign_gains(base, res, space))
    return res, None, space


def budget_values(sol: Solution, n_points: int) -> list[float]:
    """Network budgets around an optimum's cost, $: ``n_points`` log-spaced from 0.25x to 4x its
    network cost (2x when the scenario has a budget); empty when it costs nothing.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> sol = solve(toy_scenario())
    >>> [round(v) for v in budget_values(sol, 3)]   # the optimum costs $121,600
    [30400, 121600, 486400]
    """
    cost = sol.network_cost_usd
    if not (cost > 0):
        return []
    hi = 4.0 if sol.scenario.budget_usd is None else 2.0
    return [float(v) for v in np.geomspace(0.25 * cost, hi * cost, n_points)]


def design_study(
    scenario_or_solution: Scenario | Solution,
    *,
    budget_points: int = 25,
    families: Sequence[str] = REPORT_FAMILIES,
    progress: Callable | bool | None = None,
    search: bool | SearchSpace = True,
    error_model: ErrorModel | None = None,
) -> DesignStudy:
    """Solve (if needed) and run the sensitivity, the budget sweep (``budget_points`` budgets,
    :func:`budget_values`; ``progress`` goes to the sweep), the fabric comparison of
    ``families`` (empty: the scenario's own) and the co-design search (``True``: over
    :func:`report_search_space`; a :class:`SearchSpace`; ``False``: none); ``error_model``
    gives the error bands of the workloads and of the search's rows.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> st = design_study(toy_scenario(), budget_points=3, families=(), progress=False)
    >>> st.sweep["status"].tolist(), st.solution.bw_gbps.round(3).tolist()
    (['optimal', 'optimal', 'optimal'], [200.0, 100.0])
    """
    t0 = time.perf_counter()
    sol = (scenario_or_solution if isinstance(scenario_or_solution, Solution)
           else solve(scenario_or_solution))
    timings = {"solve_s": time.perf_counter() - t0}
    scen = sol.scenario
    sens, sens_error = None, None
    try:
        sens = sensitivity(sol)
    except LibraOptError as exc:
        sens_error = str(exc)
    t1 = time.perf_counter()
    values = budget_values(sol, budget_points)
    swept, df = None, None
    if values:
        swept = scen
        if scen.objective_model != PerfObjective():
            swept = dataclasses.replace(scen, objective=PerfObjective.name)
        df = sweep(swept, {"budget_usd": values}, progress=progress)
    timings["sweep_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    radix = scen.fabric.dims[-1].switch_radix or DEFAULT_SCALEOUT_RADIX
    own = f"scenario ({fabric_family(scen.fabric)})"
    cmp_df, cmp_error = None, None
    try:  # the families re-wired, the scenario's own fabric under its own label
        fabrics = {}
        for fam in families:
            f = as_family(scen.fabric, fam, radix)
            fabrics[own if f == scen.fabric else fam] = f
        fabrics.setdefault(own, scen.fabric)
        cmp_df = compare_fabrics(scen, fabrics, bw_gbps=sol.bw_gbps.tolist(),
                                 modes=("equal_bw", "equal_budget"))
    except LibraOptError as exc:
        cmp_error = str(exc)
        logger.info("fabric comparison not possible: %s", exc)
    timings["compare_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    found: SearchResult | None = None
    found_error: str | None = "not asked for"
    space: SearchSpace | None = None
    if search is not False:
        try:
            found, found_error, space = study_search(
                scen, search if isinstance(search, SearchSpace) else None,
                error_model=error_model)
        except LibraOptError as exc:
            found_error = " ".join(str(exc).split())
            logger.info("co-design search not possible: %s", exc)
    timings["search_s"] = time.perf_counter() - t1
    timings["total_s"] = time.perf_counter() - t0
    bands = scenario_bands(error_model, scen) if error_model is not None else {}
    return DesignStudy(sol, sens, sens_error, tuple(values), swept, df, tuple(families), radix,
                       own, cmp_df, cmp_error, FrozenMap(timings), found, found_error, space,
                       FrozenMap(bands), error_model)
