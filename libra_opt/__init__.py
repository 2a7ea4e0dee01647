"""libra_opt: exact, fast bandwidth allocation for multi-dimensional AI training fabrics.

One package per stage of the data path (the README's package table). ``import libra_opt as
lo`` is light: the names below load their module on first use (PEP 562), so evaluating a
design never imports cvxpy, nor anything matplotlib until a plot is drawn.

Examples
--------
>>> import libra_opt as lo
>>> scen = lo.examples.load("gpt3_175b_4d")
>>> scen.fabric.n_npus
4096
>>> sol = lo.solve(lo.examples.toy_scenario())
>>> sol.bw_gbps.round(3).tolist()
[200.0, 100.0]
>>> lo.solve("gpt3_175b_4d").bw_gbps.round(1).tolist()   # an example's name, or a path
[449.5, 276.3, 207.2, 66.9]
"""

from __future__ import annotations

import functools
import importlib
import os
from typing import TYPE_CHECKING, Any

from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    SolverError,
    UnboundedDesignError,
    VerificationError,
)

__version__ = "0.1.0"

#: Public name -> module that defines it (loaded on first attribute access).
_LAZY: dict[str, str] = {name: module for module, names in {
    "libra_opt.fabric.dims": ("Dim", "Fabric"),
    "libra_opt.fabric.builders": ("multi_dim", "rail_optimized_fat_tree", "rail_only", "as_family"),
    "libra_opt.traffic.workload": ("Collective", "Layer", "Phase", "Workload"),
    "libra_opt.traffic.step_time": ("step_time",),
    "libra_opt.traffic.timing": ("TimingModel",),
    "libra_opt.cost.prices": ("CostModel", "cost_coefficients"),
    "libra_opt.cost.tco": ("TcoModel",),
    "libra_opt.cost.goodput": ("ReliabilityModel", "daly_interval_s", "expected_goodput"),
    "libra_opt.cost.failures": ("failure_modes",),
    "libra_opt.generators.generator": ("generate_workload",),
    "libra_opt.generators.error_model": ("ErrorModel",),
    "libra_opt.scenario.scenario": ("Scenario",),
    "libra_opt.scenario.spec": ("ScenarioSpec",),
    "libra_opt.scenario.constraints": ("LinearConstraint", "parse_constraint"),
    "libra_opt.scenario.evaluate": ("Evaluation", "evaluate"),
    "libra_opt.scenario.failures": ("failure_report",),
    "libra_opt.optimize.problem": ("BandwidthProblem", "build_problem", "solve"),
    "libra_opt.optimize.solution": ("Solution",),
    "libra_opt.io.scenario_file": ("load_scenario", "load_spec", "save_spec", "spec_to_yaml"),
    "libra_opt.io.presets": ("load_model", "load_device", "catalog_cost_model"),
    "libra_opt.io.error_model": ("load_error_model",),
    "libra_opt.explore.compare": ("compare_fabrics",),
    "libra_opt.explore.pareto": ("pareto_front",),
    "libra_opt.explore.sensitivity": ("sensitivity",),
    "libra_opt.explore.search.space": ("SearchSpace",),
    "libra_opt.explore.failures": ("goodput_by_size",),
    "libra_opt.report.text": ("format_solution",),
    "libra_opt.report.plots": ("plot_allocation", "plot_step_breakdown", "plot_comparison",
                               "plot_fabric", "plot_goodput_by_size"),
    "libra_opt.report.sweep_plots": ("plot_sweep",),
}.items() for name in names}

#: Public submodules reachable as attributes (``lo.examples.load("gpt3_175b_4d")``).
_LAZY_MODULES: dict[str, str] = {
    "examples": "libra_opt.io.examples",
    "options": "libra_opt.options",
}

#: Functions defined here: the explore and scenario functions that also take a file or an
#: example name, or read the files a spec names (io sits beside, not below, them).
_OWN = ("apply_overrides", "compile", "load_solution", "save_solution", "search",
        "sweep", "write_report")

__all__ = [
    *_OWN,
    "InfeasibleDesignError",
    "InputError",
    "LibraOptError",
    "SolverError",
    "UnboundedDesignError",
    "VerificationError",
    *sorted(_LAZY),
    *sorted(_LAZY_MODULES),
]


def _scenario_or_spec(scenario: Any) -> Any:
    """A scenario or spec as given; a file or example name read (:func:`load_scenario`)."""
    if isinstance(scenario, str | os.PathLike):
        from pathlib import Path

        from libra_opt.io.scenario_file import load_scenario

        return load_scenario(scenario if isinstance(scenario, str) else Path(scenario))
    return scenario


def compile(spec: Any) -> Any:  # noqa: A001 - the documented name
    """The :class:`Scenario` of a :class:`ScenarioSpec` (which it keeps): entries still given
    by name or path are read first (:func:`libra_opt.io.resolve_spec`).

    Examples
    --------
    >>> import libra_opt as lo
    >>> spec = lo.load_spec("deepseek_v3_rail_only").replace("fabric.hb_domain", 16)
    >>> lo.compile(spec).fabric.sizes
    (16, 256)
    """
    from libra_opt.io.scenario_file import resolve_spec
    from libra_opt.scenario.compile import compile as compile_spec

    return compile_spec(resolve_spec(spec))


def apply_overrides(scenario: Any, overrides: Any) -> Any:
    """:func:`libra_opt.explore.overrides.apply_overrides` that also takes a scenario file or
    an example name, and reads a model, device or file an override names.

    Examples
    --------
    >>> import libra_opt as lo
    >>> lo.apply_overrides("deepseek_v3_rail_only", {"fabric.hb_domain": 16}).fabric.sizes
    (16, 256)
    """
    from libra_opt.explore.overrides import apply_overrides as apply
    from libra_opt.io.scenario_file import resolve_spec

    return apply(_scenario_or_spec(scenario), overrides, resolve=resolve_spec)


def sweep(problem: Any, axes: Any, **kwargs: Any) -> Any:
    """:func:`libra_opt.explore.sweep.sweep` that also takes a scenario file or an example
    name, and reads a model, device or file an axis names. ``out=DIR`` streams finished
    points into the results folder ``DIR`` (:mod:`libra_opt.io.results`; ``resume=True``
    continues its run, ``overwrite=True`` replaces it).

    Examples
    --------
    >>> import libra_opt as lo
    >>> df = lo.sweep("deepseek_v3_rail_only", {"fabric.hb_domain": [8, 16]}, progress=False)
    >>> df["status"].tolist()
    ['optimal', 'optimal']
    """
    from libra_opt.explore.sweep import sweep as run
    from libra_opt.io.scenario_file import resolve_spec

    kwargs.setdefault("resolve", resolve_spec)
    resume, overwrite = kwargs.pop("resume", False), kwargs.pop("overwrite", False)
    out = kwargs.get("out")
    if isinstance(out, str | os.PathLike):
        from libra_opt.io.results import results_stream

        kwargs["out"] = stream = results_stream(out, resume=resume, overwrite=overwrite,
                                                flag="out")
        try:
            return run(_scenario_or_spec(problem), axes, **kwargs)
        finally:
            stream.close()  # release the folder
    if resume or overwrite:
        raise InputError("resume and overwrite work on a results folder: give out=DIR",
                         field="resume" if resume else "overwrite")
    return run(_scenario_or_spec(problem), axes, **kwargs)


def search(scenario: Any, *, error_model: Any = "packaged", **kwargs: Any) -> Any:
    """:func:`libra_opt.explore.search.base.search` (the co-design search) that also takes a
    :class:`ScenarioSpec`, a scenario file or an example name. ``error_model`` gives the
    solved rows' error bands: ``"packaged"``, a file written by ``libra-opt validate
    --error-model``, an :class:`~libra_opt.generators.error_model.ErrorModel`, or ``None``.

    Examples
    --------
    >>> import libra_opt as lo
    >>> space = lo.SearchSpace(micro_batch_sizes=(1,), interleave=(1,), recompute=("full",),
    ...                        zero=(1,), sequence_parallel=(True,), tp=(8,), cp=(1,), pp=(2,))
    >>> res = lo.search("gpt3_175b_a100_cluster", top=1, space=space)
    >>> res.best(1)[["tp", "pp", "dp"]].to_dict("records")
    [{'tp': 8, 'pp': 2, 'dp': 64}]
    """
    from libra_opt.explore.search import search as run
    from libra_opt.scenario.spec import ScenarioSpec

    scenario = _scenario_or_spec(scenario)
    if isinstance(scenario, ScenarioSpec):
        scenario = compile(scenario)
    return run(scenario, error_model=_error_model(error_model), **kwargs)


def _error_model(value: Any) -> Any:
    """The ``error_model`` argument of :func:`search` as an ErrorModel (or ``None``)."""
    from libra_opt.generators.error_model import ErrorModel
    from libra_opt.io.error_model import load_error_model

    if value is None or isinstance(value, ErrorModel):
        return value
    if isinstance(value, str | os.PathLike):
        return load_error_model(None if value == "packaged" else value)
    raise InputError(f"expected 'packaged', a path, an ErrorModel or None, got "
                     f"{type(value).__name__}", field="error_model")


def save_solution(solution: Any, path: str | os.PathLike[str]) -> Any:
    """Write ``solution`` as JSON to ``path`` (atomically): :meth:`Solution.to_json
    <libra_opt.optimize.solution.Solution.to_json>` with the scenario's ``spec_hash``, the
    library version and the date. Returns the path.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import libra_opt as lo
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = lo.save_solution(lo.solve(lo.examples.toy_scenario()), pathlib.Path(d) / "t.json")
    ...     lo.load_solution(p, lo.examples.toy_scenario()).bw_gbps.round(3).tolist()
    [200.0, 100.0]
    """
    from libra_opt.io.output import write_text_atomic
    from libra_opt.io.results import library_version, utc_now
    from libra_opt.scenario.fingerprint import fingerprint

    return write_text_atomic(path, solution.to_json(
        spec_hash=fingerprint(solution.scenario), library_version=library_version(),
        created_utc=utc_now()))


def load_solution(path: str | os.PathLike[str], scenario: Any = None) -> Any:
    """The solution :func:`save_solution` wrote to ``path``, re-evaluated against
    ``scenario`` (a Scenario, a scenario file or an example's name; default: the one the
    document names).

    Raises
    ------
    InputError
        The file is not a saved solution, names no loadable scenario, or does not match the
        scenario.
    """
    from libra_opt.errors import input_context
    from libra_opt.io.results import read_json_document
    from libra_opt.optimize.solution import Solution
    from libra_opt.scenario.scenario import Scenario

    doc = read_json_document(path)
    if scenario is None:
        scenario = doc.get("scenario_source")
        if not scenario:
            raise InputError("the solution names no scenario file: pass the scenario",
                             source=str(path), field="scenario_source")
    scen = _scenario_or_spec(scenario)
    if not isinstance(scen, Scenario):
        raise InputError(f"expected a Scenario, a scenario file or an example name, got "
                         f"{type(scenario).__name__}", field="scenario")
    with input_context(str(path)):
        return Solution.from_json(doc, scen)


def write_report(scenario: Any, out_dir: Any, *, budget_points: int = 25,
                 families: Any = None, progress: Any = None,
                 provenance: Any = None, search: Any = True,
                 overwrite: bool = False, error_model: Any = "packaged") -> dict[str, Any]:
    """Run a design study (:func:`libra_opt.explore.study.design_study`), render it
    (:func:`libra_opt.report.html.build_report`) and write ``report.html``, ``report.md``,
    the Markdown's PNGs and ``manifest.json`` into ``out_dir`` and nowhere else, together
    (:func:`libra_opt.io.results.write_run_folder`).

    ``scenario`` is a Scenario, a Solution, a scenario file or an example's name. ``search``
    is the study's co-design search (``True``: the bounded space of
    :func:`libra_opt.explore.study.report_search_space`; a :class:`SearchSpace`; ``False``:
    none). A non-empty ``out_dir`` is refused before any work unless ``overwrite``.

    Returns ``{"html", "markdown", "manifest", "png:<name>" per figure: Path}``; an
    :class:`InputError` with ``field="out_dir"`` when the folder cannot be written.
    """
    import dataclasses

    from libra_opt.errors import option_context
    from libra_opt.explore.overrides import ScenarioBase
    from libra_opt.explore.sink import spec_fingerprint
    from libra_opt.explore.study import REPORT_FAMILIES, design_study
    from libra_opt.io.files import read_text_if_any
    from libra_opt.io.results import MANIFEST, check_run_folder, results_metadata, write_run_folder
    from libra_opt.report.html import (
        HTML_NAME,
        MARKDOWN_NAME,
        Provenance,
        build_report,
        figure_file_name,
        report_files,
    )

    with option_context("out_dir"):   # before any work
        check_run_folder(out_dir, [HTML_NAME, MARKDOWN_NAME], overwrite=overwrite)
    study = design_study(_scenario_or_spec(scenario), budget_points=budget_points,
                         families=REPORT_FAMILIES if families is None else families,
                         progress=progress, search=search,
                         error_model=_error_model(error_model))
    prov = provenance or Provenance()
    if prov.scenario_text is None:
        prov = dataclasses.replace(prov, scenario_text=read_text_if_any(study.scenario.source,
                                                                     max_bytes=1_000_000))
    report = build_report(study, provenance=prov)
    scen = study.scenario
    meta = results_metadata("report", scen.name, spec_fingerprint(ScenarioBase.of(scen)),
                            command=prov.command, search=search is not False,
                            budget_points=budget_points)
    with option_context("out_dir"):
        paths = {p.name: p for p in write_run_folder(out_dir, report_files(report), meta,
                                                     overwrite=overwrite)}
    written = {f"png:{name}": paths[figure_file_name(name)]
               for sec in report.sections for name, _c, _png in sec.figures}
    return {**written, "markdown": paths[MARKDOWN_NAME], "html": paths[HTML_NAME],
            "manifest": paths[MANIFEST]}


#: Names whose first argument may also be a shipped example's name or a scenario file's path.
_TAKES_NAMES = ("solve", "evaluate")


def _taking_names(func: Any) -> Any:
    """``func`` with a first argument that may name an example or a file (as ``sweep``)."""

    @functools.wraps(func)
    def call(scenario: Any, *args: Any, **kwargs: Any) -> Any:
        return func(_scenario_or_spec(scenario), *args, **kwargs)

    return call


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        if name in _TAKES_NAMES:
            value = _taking_names(value)
    elif name in _LAZY_MODULES:
        value = importlib.import_module(_LAZY_MODULES[name])
    else:
        raise AttributeError(f"module 'libra_opt' has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*__all__, "__version__"})


if TYPE_CHECKING:  # static analysers see the lazy names
    from libra_opt import options
    from libra_opt.cost.prices import CostModel, cost_coefficients
    from libra_opt.cost.tco import TcoModel
    from libra_opt.explore.compare import compare_fabrics
    from libra_opt.explore.pareto import pareto_front
    from libra_opt.explore.search import SearchSpace
    from libra_opt.explore.sensitivity import sensitivity
    from libra_opt.fabric.builders import as_family, multi_dim, rail_only, rail_optimized_fat_tree
    from libra_opt.fabric.dims import Dim, Fabric
    from libra_opt.generators.generator import generate_workload
    from libra_opt.io import examples
    from libra_opt.io.presets import catalog_cost_model, load_device, load_model
    from libra_opt.io.scenario_file import load_scenario, load_spec, save_spec, spec_to_yaml
    from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
    from libra_opt.optimize.solution import Solution
    from libra_opt.report.plots import (
        plot_allocation,
        plot_comparison,
        plot_fabric,
        plot_step_breakdown,
    )
    from libra_opt.report.sweep_plots import plot_sweep
    from libra_opt.report.text import format_solution
    from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
    from libra_opt.scenario.evaluate import Evaluation, evaluate
    from libra_opt.scenario.scenario import Scenario
    from libra_opt.scenario.spec import ScenarioSpec
    from libra_opt.traffic.step_time import step_time
    from libra_opt.traffic.timing import TimingModel
    from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
