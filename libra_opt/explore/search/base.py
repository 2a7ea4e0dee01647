"""The base of a co-design search, taken from a compiled scenario's spec (no file is read).

The scenario's :class:`~libra_opt.scenario.spec.ScenarioSpec` gives the fabric family (its
builder call and ``hb_domain``), prices, constraints, objective and TCO; its one model-based
workload entry gives the model, device, compute model, global batch, precision, options and
mapping. A scenario file or an example name is read by :func:`libra_opt.search` and
``libra-opt search`` (through :mod:`libra_opt.io`), which hand the compiled scenario here.

A candidate *is* a spec edit (:func:`libra_opt.explore.search.spec.candidate_spec`: the
parallelism knobs, the placement as a ``mapping`` and ``fabric.hb_domain`` replaced by dotted
path); compiling it with the pure :func:`libra_opt.scenario.compile.compile` gives the
candidate's scenario. The search builds the same scenario directly
(:func:`libra_opt.explore.search.candidate_scenario`: the layers generated once per
parallelization and shared by its placements; measured on Llama 3 405B, a compile per
candidate costs about 9 ms against 0.15 ms); the test suite checks on samples of
candidates that both give the same scenario and step time. The returned top solutions'
scenarios carry their candidate's spec.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from libra_opt.errors import InputError
from libra_opt.explore.search.engine import (
    ModelEntry,
    SearchBase,
    SearchResult,
    candidate_scenario,
    codesign_gains,
    generate,
    run_search,
)
from libra_opt.explore.search.space import SearchSpace
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, efficiency_from_value
from libra_opt.generators.error_model import ErrorModel
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.scenario.compile import generate_entry
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import API_SOURCE, thaw

__all__ = ["search_base", "search"]

def search_base(scenario: Scenario) -> SearchBase:
    """The :class:`~libra_opt.explore.search.SearchBase` of a compiled scenario, from its
    spec (``scenario.spec``).

    Raises
    ------
    InputError
        When the scenario has no spec (built from objects, not compiled), does not have
        exactly one workload, the workload is not a transformer described by ``model`` +
        ``parallelism`` + ``device``, or the scenario transforms it (compression,
        fine-grained overlap, DiLoCo) so that the generator's workload is not the
        scenario's: the search regenerates every candidate's workload.

    Examples
    --------
    >>> import libra_opt as lo
    >>> base = search_base(lo.load_scenario("llama3_405b_h100_tco"))
    >>> base.entry.model.name, base.entry.parallelism.pp, base.spec.fabric.args["hb_domain"]
    ('llama3_405b', 16, 8)
    """
    spec = scenario.spec
    source = scenario.source or API_SOURCE
    if spec is None:
        raise InputError("the co-design search needs a scenario compiled from a spec "
                         "(libra_opt.compile or libra_opt.load_scenario); this one was built "
                         "from objects", source=source, field="scenario")
    if len(spec.workloads) != 1 or len(scenario.workloads) != 1:
        raise InputError("the co-design search takes a scenario with exactly one workload",
                         source=source, field="workloads")
    w = spec.workloads[0]
    if w.model is None or w.parallelism is None or w.device is None:
        raise InputError("the co-design search needs a model-based workload (model, "
                         "parallelism, device)", source=source, field="workloads[0]")
    model = w.model.value
    if not isinstance(model, TransformerSpec):
        kind = getattr(model, "kind", type(model).__name__)
        raise InputError(f"the co-design search covers transformer models; "
                         f"{getattr(model, 'name', w.model.ref)!r} is a {kind}",
                         source=source, field=f"workloads[{w.name}].model")
    if spec.compression is not None or spec.fine_grained_overlap is not None \
            or spec.diloco is not None:
        raise _transformed(source)
    prefix = f"workloads[{w.name}]"
    par = parallelism_from_dict(thaw(w.parallelism), source, f"{prefix}.parallelism")
    mapping = None if w.mapping is None else thaw(w.mapping)
    generate_entry(dataclasses.replace(w, check_memory=False), scenario.fabric, source)
    device = w.device.value
    # the requested, unscaled compute model: the generator applies the software stack's
    # constant once (libra_opt.generators.generator.timing_model)
    requested = (efficiency_from_value(thaw(w.efficiency), f"{prefix}.efficiency")
                 if w.efficiency is not None
                 else ComputeEfficiency("roofline", device.default_efficiency, from_device=True))
    base = SearchBase(scenario, ModelEntry(w.name, model, device, requested, par, mapping),
                      spec)
    fabric = scenario.fabric
    again = candidate_scenario(base, fabric, generate(base.entry, par, fabric),
                               place_groups(fabric, par.degrees(), mapping))
    if again.workloads != scenario.workloads:
        raise _transformed(source)
    return base


def _transformed(source: str) -> InputError:
    return InputError(
        "the scenario transforms its workload (compression, fine_grained_overlap or "
        "diloco); the co-design search regenerates each candidate's workload from the "
        "model and cannot apply those: remove them for the search",
        source=source, field="workloads")


def search(
    scenario: Scenario | SearchBase,
    *,
    top: int = 5,
    objective: str | None = None,
    space: SearchSpace | None = None,
    hb_domains: tuple[int, ...] | None = None,
    executor: Any = "serial",
    max_workers: int | None = None,
    scheduler: str | None = None,
    progress: Any = False,
    gains: bool = False,
    error_model: ErrorModel | None = None,
    rank: str = "objective",
) -> SearchResult:
    """Co-design search of a scenario: parallelization, placement, fabric shape and
    bandwidth chosen together (:func:`libra_opt.explore.search.run_search`).

    :func:`libra_opt.search` also takes a scenario file or a shipped example's name.

    Parameters
    ----------
    scenario : Scenario or SearchBase
        A compiled scenario (its spec is the base, :func:`search_base`), or a base.
    top : int
        Best candidates kept exact and returned with full solutions.
    objective : {'perf', 'perf_per_cost', 'tco'}, optional
        Override the scenario's objective.
    space : SearchSpace, optional
        The knobs and their values (default: all).
    hb_domains : tuple of int, optional
        HB-domain sizes of the fabric family (replaces ``space.hb_domains``).
    executor, max_workers, scheduler, progress
        Where it runs and its progress bar; see :func:`~libra_opt.explore.search.run_search`.
    gains : bool
        Also compute :func:`~libra_opt.explore.search.codesign_gains` (one more search with
        an equal bandwidth split, and the conventional layout's optimum).
    error_model : ErrorModel, optional
        The validated runs the solved rows' error bands come from (see
        :func:`~libra_opt.explore.search.run_search`; :func:`libra_opt.search` gives the
        packaged ones unless told otherwise).
    rank : {'objective', 'failures'}
        Rank by the objective, or by the objective under failures (the scenario's
        ``reliability`` section; :mod:`libra_opt.explore.search`).

    Examples
    --------
    >>> import libra_opt as lo
    >>> space = lo.SearchSpace(micro_batch_sizes=(1,), interleave=(1,), recompute=("full",),
    ...                        zero=(1,), sequence_parallel=(True,), tp=(8,), cp=(1,))
    >>> res = lo.search("gpt3_175b_a100_cluster", top=2, space=space)
    >>> int(res.stats["solved"]) >= 1, len(res.solutions)
    (True, 2)
    >>> res.solutions[0].scenario.spec.workloads[0].parallelism["tp"]
    8
    """
    base = scenario if isinstance(scenario, SearchBase) else search_base(scenario)
    space = space if space is not None else SearchSpace()
    if hb_domains is not None:
        space = dataclasses.replace(space, hb_domains=tuple(hb_domains))
    res = run_search(base, space, top=top, objective=objective, executor=executor,
                     max_workers=max_workers, scheduler=scheduler, progress=progress,
                     error_model=error_model, rank=rank)
    if gains:
        g = codesign_gains(base, res, space, executor=executor, max_workers=max_workers,
                           scheduler=scheduler)
        res = dataclasses.replace(res, gains=g)
    return res

