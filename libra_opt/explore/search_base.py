"""The base of a co-design search, built from a scenario and its one model-based workload.

The scenario gives the fabric family, prices, constraints, objective and TCO; its one
model-based workload gives the model, device, compute model, global batch, precision and
options (read from a file by :func:`libra_opt.io.search_file.read_search_workload`;
``libra_opt.load_search_base`` reads and builds). Candidates are then built in memory from
these values (:func:`libra_opt.explore.search.candidate_scenario`); no file is read.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from libra_opt.errors import InputError
from libra_opt.explore.search import (
    ModelEntry,
    SearchBase,
    SearchResult,
    candidate_scenario,
    codesign_gains,
    generate,
    run_search,
)
from libra_opt.explore.search_space import SearchSpace
from libra_opt.generators.mapping import place_groups
from libra_opt.scenario.scenario import Scenario

__all__ = ["make_search_base", "search"]


def make_search_base(scenario: Scenario, entry: ModelEntry, source: str | None = None
                     ) -> SearchBase:
    """The :class:`~libra_opt.explore.search.SearchBase` of ``scenario`` and its one
    model-based workload ``entry``.

    Raises
    ------
    InputError
        When the scenario transforms the workload (compression, fine-grained overlap,
        DiLoCo) so that the generator's workload is not the scenario's: the search
        regenerates every candidate's workload.

    Examples
    --------
    >>> import libra_opt as lo
    >>> base = lo.load_search_base("llama3_405b_h100_tco")   # reads, then make_search_base
    >>> base.entry.model.name, base.entry.parallelism.pp, base.scenario.fabric.n_npus
    ('llama3_405b', 16, 16384)
    """
    base = SearchBase(scenario, entry)
    fabric = scenario.fabric
    par = entry.parallelism
    g = generate(entry, par, fabric)
    again = candidate_scenario(base, fabric, g,
                               place_groups(fabric, par.degrees(), entry.mapping))
    if again.workloads != scenario.workloads:
        raise InputError(
            "the scenario transforms its workload (compression, fine_grained_overlap or "
            "diloco); the co-design search regenerates each candidate's workload from the "
            "model and cannot apply those: remove them for the search",
            source=source, field="workloads")
    return base


def search(
    scenario: SearchBase,
    *,
    top: int = 5,
    objective: str | None = None,
    space: SearchSpace | None = None,
    hb_domains: tuple[int, ...] | None = None,
    executor: str = "serial",
    workers: int | None = None,
    progress: Any = False,
    gains: bool = False,
) -> SearchResult:
    """Co-design search of a scenario: parallelization, placement, fabric shape and
    bandwidth chosen together (:func:`libra_opt.explore.search.run_search`).

    Parameters
    ----------
    scenario : SearchBase
        The base (:func:`make_search_base`; ``libra_opt.search`` also takes a scenario file
        or a shipped example's name).
    top : int
        Best candidates kept exact and returned with full solutions.
    objective : {'perf', 'perf_per_cost', 'tco'}, optional
        Override the scenario's objective.
    space : SearchSpace, optional
        The knobs and their values (default: all).
    hb_domains : tuple of int, optional
        HB-domain sizes of the fabric family (replaces ``space.hb_domains``).
    executor, workers, progress
        See :func:`~libra_opt.explore.search.run_search`.
    gains : bool
        Also compute :func:`~libra_opt.explore.search.codesign_gains` (one more search with
        an equal bandwidth split, and the conventional layout's optimum).

    Examples
    --------
    >>> import libra_opt as lo
    >>> space = lo.SearchSpace(micro_batch_sizes=(1,), interleave=(1,), recompute=("full",),
    ...                        zero=(1,), sequence_parallel=(True,), tp=(8,), cp=(1,))
    >>> res = lo.search("gpt3_175b_a100_cluster", top=2, space=space)
    >>> int(res.stats["solved"]) >= 1, len(res.solutions)
    (True, 2)
    """
    if not isinstance(scenario, SearchBase):
        raise InputError(f"expected a SearchBase, got {type(scenario).__name__} "
                         "(libra_opt.search reads a scenario file or example name)",
                         field="scenario")
    base = scenario
    space = space if space is not None else SearchSpace()
    if hb_domains is not None:
        space = dataclasses.replace(space, hb_domains=tuple(hb_domains))
    res = run_search(base, space, top=top, objective=objective, executor=executor,
                     workers=workers, progress=progress)
    if gains:
        g = codesign_gains(base, res, space, executor=executor, workers=workers)
        res = dataclasses.replace(res, gains=g)
    return res
