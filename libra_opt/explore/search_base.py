"""The base of a co-design search, read once from a scenario file or a shipped example.

The scenario gives the fabric family, prices, constraints, objective and TCO; its one
model-based workload gives the model, device, compute model, global batch, precision and
options. Candidates are then built in memory from these values
(:func:`libra_opt.explore.search.candidate_scenario`); no file is read again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
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
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.io.example_files import example_path, is_example_name
from libra_opt.io.presets import device_from_value, load_model
from libra_opt.io.scenario_file import load_scenario_with_models
from libra_opt.io.yaml_util import load_yaml

__all__ = ["load_search_base", "search"]


def _resolve(ref: str | Path) -> Path:
    p = Path(ref)
    if p.is_file():
        return p
    if is_example_name(ref):
        return example_path(str(ref))
    return p


def load_search_base(ref: str | Path) -> SearchBase:
    """The :class:`~libra_opt.explore.search.SearchBase` of a scenario file or example name.

    Raises
    ------
    InputError
        When the scenario does not have exactly one workload, the workload is not a
        transformer described by ``model`` + ``parallelism`` + ``device``, or the scenario
        transforms it (compression, fine-grained overlap, DiLoCo) so that the generator's
        workload is not the scenario's: the search regenerates every candidate's workload.

    Examples
    --------
    >>> base = load_search_base("llama3_405b_h100_tco")
    >>> base.entry.model.name, base.entry.parallelism.pp, base.scenario.fabric.n_npus
    ('llama3_405b', 16, 16384)
    """
    scenario, generated = load_scenario_with_models(ref)
    path = _resolve(ref)
    source = str(path)
    raw = load_yaml(path)
    entries = raw.get("workloads") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or len(entries) != 1 or len(scenario.workloads) != 1:
        raise InputError("the co-design search takes a scenario with exactly one workload",
                         source=source, field="workloads")
    entry = entries[0]
    name = scenario.workloads[0].name
    if not isinstance(entry, dict) or "model" not in entry or name not in generated:
        raise InputError("the co-design search needs a model-based workload (model, "
                         "parallelism, device)", source=source, field="workloads[0]")
    model = load_model(entry["model"], base_dir=path.parent)
    if not isinstance(model, TransformerSpec):
        raise InputError(f"the co-design search covers transformer models; {model.name!r} is "
                         f"a {model.kind}", source=source, field=f"workloads[{name}].model")
    par = parallelism_from_dict(entry["parallelism"], source, f"workloads[{name}].parallelism")
    device = device_from_value(entry["device"], source, f"workloads[{name}].device")
    mapping = entry.get("mapping")
    base = SearchBase(scenario, ModelEntry(name, model, device, generated[name].efficiency,
                                           par, mapping))
    fabric = scenario.fabric
    g = generate(base.entry, par, fabric)
    again = candidate_scenario(base, fabric, g, place_groups(fabric, par.degrees(), mapping))
    if again.workloads != scenario.workloads:
        raise InputError(
            "the scenario transforms its workload (compression, fine_grained_overlap or "
            "diloco); the co-design search regenerates each candidate's workload from the "
            "model and cannot apply those: remove them for the search",
            source=source, field="workloads")
    return base


def search(
    scenario: str | Path | SearchBase,
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
    scenario : str, pathlib.Path or SearchBase
        A scenario file, a shipped example's name, or a base built in memory.
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
    base = scenario if isinstance(scenario, SearchBase) else load_search_base(scenario)
    space = space if space is not None else SearchSpace()
    if hb_domains is not None:
        space = dataclasses.replace(space, hb_domains=tuple(hb_domains))
    res = run_search(base, space, top=top, objective=objective, executor=executor,
                     workers=workers, progress=progress)
    if gains:
        g = codesign_gains(base, res, space, executor=executor, workers=workers)
        res = dataclasses.replace(res, gains=g)
    return res
