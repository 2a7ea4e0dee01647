"""The base of a co-design search, from a compiled scenario's spec (no file is read), and
:func:`search`, the public entry point."""

from __future__ import annotations

import dataclasses
from typing import Any

from libra_opt.errors import InputError
from libra_opt.explore.search.candidates import ModelEntry, SearchBase, candidate_scenario, generate
from libra_opt.explore.search.engine import SearchResult, codesign_gains, run_search
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
    """The :class:`~libra_opt.explore.search.SearchBase` of a compiled scenario, from its spec.
    A scenario without a spec, without exactly one workload, whose workload is not a
    transformer described by ``model`` + ``parallelism`` + ``device``, or that transforms it
    (compression, fine-grained overlap, DiLoCo) is refused: the search regenerates every
    candidate's workload.

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
    # unscaled: the generator applies the software stack's constant
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
    """Co-design search of a compiled scenario (its spec is the base, :func:`search_base`) or of
    a base: :func:`~libra_opt.explore.search.run_search` with its parameters, ``hb_domains``
    replacing ``space.hb_domains`` and ``gains`` adding
    :func:`~libra_opt.explore.search.codesign_gains`.

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

