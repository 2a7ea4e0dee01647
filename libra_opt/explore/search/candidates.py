"""Candidates of the co-design search: what one is made of, the scenario it becomes, its
optimum or fixed-bandwidth evaluation and its full solution."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from libra_opt.cost.tco import cluster_rate_coefficients, training_run_cost_usd
from libra_opt.errors import InfeasibleDesignError, InputError, LibraOptError, UnboundedDesignError
from libra_opt.explore.search.bounds import ShapeBounds
from libra_opt.explore.search.fabrics import FabricShape
from libra_opt.explore.search.space import MemoryModel, placement_key, placement_of, span_matrices
from libra_opt.explore.search.spec import SEARCH_KNOBS, candidate_spec
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, Device
from libra_opt.generators.generated import GeneratedWorkload, model_flops_utilization, step_metrics
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.mapping import Placement, place_groups
from libra_opt.generators.parallelism import Parallelism
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.optimize.solution import Solution
from libra_opt.scenario.evaluate import Evaluation, evaluate
from libra_opt.scenario.failures import failure_report
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import ScenarioSpec

__all__ = [
    "ModelEntry",
    "SearchBase",
    "Candidate",
    "candidate_scenario",
    "conventional_parallelism",
    "generate",
]


@dataclass(frozen=True)
class ModelEntry:
    """What the base scenario's model-based workload is made of: its name, model, device, the
    requested compute model (before the software stack's constant), the base parallelization
    (its global batch, precision, data-parallel mode and options are kept) and placement.
    """

    name: str
    model: TransformerSpec
    device: Device
    efficiency: ComputeEfficiency
    parallelism: Parallelism
    mapping: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class SearchBase:
    """The base scenario, its one model-based workload and the spec both come from
    (:func:`libra_opt.explore.search.base.search_base`); without a spec only the base fabric
    is searched.
    """

    scenario: Scenario
    entry: ModelEntry
    spec: ScenarioSpec | None = None


@dataclass(frozen=True)
class Candidate:
    """One point of the space: a parallelization, a placement and a fabric shape."""

    parallelism: Parallelism
    placement: Placement
    shape: FabricShape


def generate(entry: ModelEntry, par: Parallelism, fabric: Fabric) -> GeneratedWorkload:
    """The generator's workload of ``par`` on ``fabric`` (automatic placement, memory not
    checked); its layers do not depend on the placement, only its groups do."""
    return generate_workload(entry.model, par, entry.device, fabric,
                             efficiency=entry.efficiency, name=entry.name, check_memory=False)


def _placed(generated: GeneratedWorkload, placement: Placement, **changes: Any) -> Any:
    """The generated workload with the placement's groups, keeping its flat walk."""
    wl = dataclasses.replace(generated.workload, groups=placement.groups(), **changes)
    flat = generated.workload.__dict__.get("flat")
    if flat is not None:
        wl.__dict__["flat"] = flat  # functools.cached_property's own slot
    return wl


def candidate_scenario(base: SearchBase, fabric: Fabric, generated: GeneratedWorkload,
                       placement: Placement) -> Scenario:
    """The scenario of one candidate: the base scenario with the candidate's fabric and its
    workload (the generated layers, the placement's groups).

    Examples
    --------
    >>> import libra_opt as lo
    >>> from libra_opt.explore.search.base import search_base
    >>> base = search_base(lo.load_scenario("gpt3_175b_a100_cluster"))
    >>> f = base.scenario.fabric
    >>> par = base.entry.parallelism
    >>> g = generate(base.entry, par, f)
    >>> s = candidate_scenario(base, f, g, place_groups(f, par.degrees(), base.entry.mapping))
    >>> s.workloads == base.scenario.workloads
    True
    """
    m0 = base.scenario.workloads[0].metrics  # the model and precision: the checkpoint's
    ckpt = None if m0 is None else m0.checkpoint_bytes
    wl = _placed(generated, placement, name=base.entry.name,
                 metrics=step_metrics(generated, ckpt))
    return dataclasses.replace(base.scenario, fabric=fabric, workloads=(wl,))


@dataclass(frozen=True)
class _ShapeContext:
    shape: FabricShape
    scenario: Scenario | None  # the base workload on this shape: rows, coefficients
    bounds: ShapeBounds | None


@dataclass(frozen=True)
class _Context:
    """Everything a worker needs (pickled once per chunk)."""

    base: SearchBase
    shapes: tuple[_ShapeContext, ...]
    dim_names: tuple[str, ...]
    fixed_bw_gbps: tuple[float, ...] | None
    all_placements: bool
    top: int
    prune: bool
    spec: ScenarioSpec | None = None  # the solutions' base spec (None: not the spec's problem)
    rank_failures: bool = False  # rank by the objective under failures

    @property
    def rank_key(self) -> str:
        """The result column candidates are ranked (and pruned) by."""
        return "effective_objective" if self.rank_failures else "objective"


_KNOBS = SEARCH_KNOBS[:-2]  # the knobs of a result row (not the overlap options)


def _row(index: tuple[int, int, int], shape: FabricShape | None, par: Parallelism,
         placement: str, status: str, reason: str = "", n: int = 1, **values: Any) -> dict:
    row = {"index": index, "fabric": "*" if shape is None else shape.label,
           "hb_domain": None if shape is None else shape.hb_domain,
           **{k: getattr(par, k) for k in _KNOBS},
           "placement": placement, "n_candidates": n, "status": status, "reason": reason}
    row.update(values)
    return row


def _matrices(ctx: _Context, shape: FabricShape, par: Parallelism,
              cache: dict | None = None) -> list[tuple[tuple[int, ...], ...]]:
    """The placements of ``par`` on ``shape`` as span matrices, in enumeration order."""
    assert shape.fabric is not None
    key = (shape.fabric.sizes, tuple(par.degrees().values()))
    if cache is not None and key in cache:
        return cache[key]
    if ctx.all_placements:
        out = span_matrices(shape.fabric.sizes, par.degrees())
    else:
        out = [placement_key(place_groups(shape.fabric, par.degrees()))]
    if cache is not None:
        cache[key] = out
    return out


def _solved_values(ctx: _Context, scen: Scenario, g: GeneratedWorkload, ev: Evaluation,
                   objective: float) -> dict:
    bw, step_s = ev.bw_gbps, ev.weighted_step_time_s
    cost, power = ev.cost.network_cost_usd, ev.cost.network_power_w
    out: dict[str, Any] = {
        "objective": objective, "step_time_s": step_s,
        "tokens_per_s": g.tokens_per_step / step_s,
        "mfu": model_flops_utilization(g, step_s),
        "memory_per_npu_gb": g.memory.total_bytes / 1e9,
    }
    for name, b in zip(scen.fabric.names, bw, strict=True):
        out[f"bw_{name}_gbps"] = float(b)
    out["network_cost_usd"] = cost
    out["network_power_w"] = math.nan if power is None else power
    if ctx.rank_failures:
        rep = failure_report(scen, ev)
        out["goodput"] = rep.goodput
        out["effective_objective"] = rep.effective_objective_value * objective \
            / ev.objective_value  # on the solver's objective value, as the ranking's
    out["run_cost_usd"] = out["run_cost_usd_per_mtoken"] = math.nan
    if scen.tco is not None:
        try:
            r0, r = cluster_rate_coefficients(scen.tco, scen.fabric, scen.coefficients)
            run = training_run_cost_usd(scen.tco, step_s, r0 + float(r @ bw))
        except InputError:
            return out  # no run length, or no power model for the energy
        out["run_cost_usd"] = run
        out["run_cost_usd_per_mtoken"] = run / (scen.tco.n_steps * g.tokens_per_step) * 1e6
    return out


def _inner(ctx: _Context, scen: Scenario, g: GeneratedWorkload) -> tuple[str, str, dict]:
    """Status, reason and values of one candidate: its exact bandwidth optimum, or its
    evaluation at the fixed bandwidth."""
    try:
        if ctx.fixed_bw_gbps is not None:
            ev = evaluate(scen, np.asarray(ctx.fixed_bw_gbps))
            bad = ev.violated()
            if bad:
                return "infeasible", "the fixed bandwidth violates " + ", ".join(bad), {}
            return "optimal", "", _solved_values(ctx, scen, g, ev, ev.objective_value)
        sol = solve(build_problem(scen), with_baselines=False)
    except InfeasibleDesignError as exc:
        return "infeasible", " ".join(str(exc).split()), {}
    except UnboundedDesignError as exc:
        return "unbounded", " ".join(str(exc).split()), {}
    except LibraOptError as exc:
        return "error", " ".join(str(exc).split()), {}
    return "optimal", "", _solved_values(ctx, scen, g, sol.evaluation, sol.objective_value)


def _generate_shared(ctx: _Context, par: Parallelism, fabric: Fabric,
                     shared: dict) -> GeneratedWorkload:
    """:func:`generate`, shared by ZeRO 1 and 2: the same step, the memory from
    :class:`MemoryModel` (the tests check it equals a fresh generation)."""
    if par.zero not in (1, 2):
        return generate(ctx.base.entry, par, fabric)
    key = par.model_copy(update={"zero": 1}).model_dump_json()
    g = shared.get(key)
    if g is None:
        g = generate(ctx.base.entry, par, fabric)
        shared[key] = g
        return g
    memory = MemoryModel(ctx.base.entry.model, ctx.base.entry.device.hbm_bytes)
    return dataclasses.replace(g, memory=memory.breakdown(par))


def _resolve(ctx: _Context, row: Any) -> tuple[Candidate, Solution]:
    """The full solution of a solved row (regenerated and re-solved, with baselines)."""
    pi, si, qi = row["index"]
    sc = ctx.shapes[si]
    assert sc.shape.fabric is not None
    par = Parallelism.model_validate({**ctx.base.entry.parallelism.model_dump(), **{
        k: (v.item() if hasattr(v, "item") else v)
        for k, v in row.items() if k in _KNOBS}})
    pl = placement_of(sc.shape.fabric, _matrices(ctx, sc.shape, par)[qi])
    g = generate(ctx.base.entry, par, sc.shape.fabric)
    scen = candidate_scenario(ctx.base, sc.shape.fabric, g, pl)
    if ctx.spec is not None:
        # the scenario compile(spec) gives (the test suite checks the equivalence)
        object.__setattr__(scen, "spec", candidate_spec(
            ctx.spec, ctx.base.entry.name, ctx.base.entry.parallelism, par, pl,
            sc.shape.hb_domain, sc.shape.edits))
    return Candidate(par, pl, sc.shape), solve(build_problem(scen))


def conventional_parallelism(base: SearchBase) -> tuple[Parallelism, dict[str, Any]]:
    """The conventional layout and its mapping: TP = the HB (innermost) dimension, the base's PP
    over the scale-out (outermost) dimension, DP the rest; the base's other knobs.
    """
    fabric, p0 = base.scenario.fabric, base.entry.parallelism
    hb = fabric.dims[0]
    dp = fabric.n_npus // (hb.size * p0.pp * p0.cp)
    par = Parallelism.model_validate({**p0.model_dump(), "tp": hb.size, "dp": dp,
                                      "ep": math.gcd(p0.ep, dp)})
    return par, {"tp": [hb.name], "pp": {fabric.dims[-1].name: p0.pp}}
