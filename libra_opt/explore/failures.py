"""Failure studies: goodput against cluster size for each fabric family. :func:`goodput_by_size`
moves a two-level scenario to other NPU counts and families by path overrides
(:func:`scaled_overrides`), solves each and evaluates it under failures
(:func:`~libra_opt.scenario.failures.failure_report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError, LibraOptError
from libra_opt.explore.overrides import ScenarioBase
from libra_opt.optimize.problem import solve
from libra_opt.scenario.failures import failure_report
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import API_SOURCE, thaw

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["goodput_by_size", "scaled_overrides"]


def scaled_overrides(scenario: Scenario, n_npus: int, family: str) -> dict[str, Any]:
    """The overrides that move ``scenario`` to ``n_npus`` NPUs of fabric ``family`` (refused for a
    scenario that is not a two-level builder fabric with one model-based workload, or an
    ``n_npus`` its parallelization does not split).

    Examples
    --------
    >>> import libra_opt as lo
    >>> o = scaled_overrides(lo.load_scenario("llama3_405b_h100_tco"), 4096, "rail_only")
    >>> o["fabric.builder"], o["workloads.llama3_405b.parallelism.dp"], o[
    ...     "workloads.llama3_405b.mapping"]["dp"]
    ('rail_only', 32, {'scaleout': 32})
    """
    spec = scenario.spec
    if spec is None or spec.fabric.builder not in ("fat_tree", "rail_only",
                                                   "rail_optimized_fat_tree") \
            or len(spec.workloads) != 1 or spec.workloads[0].parallelism is None:
        raise InputError("a failure study by size needs a scenario compiled from a spec with "
                         "a fat_tree or rail_only builder fabric and one model-based workload",
                         source=API_SOURCE, field="scenario")
    w = spec.workloads[0]
    par = thaw(w.parallelism)
    other = par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1)
    dp0 = par.get("dp", scenario.fabric.n_npus // other)
    if n_npus % other:
        raise InputError(f"{n_npus} NPUs do not split into tp x pp x cp = {other}",
                         source=API_SOURCE, field="n_npus")
    dp = n_npus // other
    prefix = f"workloads.{w.name}"
    out: dict[str, Any] = {"fabric.builder": family, "fabric.n_npus": n_npus,
                           f"{prefix}.parallelism.dp": dp}
    if "global_batch_size" in par:
        out[f"{prefix}.parallelism.global_batch_size"] = par["global_batch_size"] * dp // dp0
    if w.mapping is not None:
        mapping = thaw(w.mapping)
        outer = scenario.fabric.names[-1]
        if isinstance(mapping.get("dp"), dict) and set(mapping["dp"]) == {outer}:
            mapping["dp"] = {outer: mapping["dp"][outer] * dp // dp0}
        else:
            mapping.pop("dp", None)
        out[f"{prefix}.mapping"] = mapping
    return out


def goodput_by_size(scenario: Scenario, n_npus: Sequence[int],
                    families: Sequence[str] = ("fat_tree", "rail_only")) -> pd.DataFrame:
    """Goodput, throughput and cost under failures for each size of each family (an
    :class:`~libra_opt.errors.InputError` without a ``reliability`` section or for a scenario
    :func:`scaled_overrides` refuses): one row per family and size with ``status``
    (``optimal`` or the error of a point that cannot be built or solved), ``step_time_s``,
    ``goodput``, ``throughput_fraction`` (failure-free over effective step time),
    ``job_mttf_h``, ``interruptions_per_day``, ``degradations_per_day``, ``network_parts``,
    ``tokens_per_s``, ``effective_tokens_per_s``, ``network_cost_usd``, ``run_cost_usd`` and
    ``run_cost_with_failures_usd``.
    """
    import pandas as pd

    if scenario.reliability is None:
        raise InputError("a failure study needs a reliability section", source=API_SOURCE,
                         field="reliability")
    base = ScenarioBase.of(scenario)
    edits = {(f, int(n)): scaled_overrides(scenario, int(n), f)  # bad input: before the work
             for f in families for n in n_npus}
    rows = []
    for (family, n), edit in edits.items():
        row: dict[str, Any] = {"family": family, "n_npus": n}
        try:
            scen = base.apply(edit)
            sol = solve(scen, with_baselines=False)
        except LibraOptError as exc:
            rows.append({**row, "status": " ".join(str(exc).split())})
            continue
        rep = failure_report(scen, sol.evaluation)
        w = rep.workloads[0]
        rows.append({
            **row, "status": "optimal", "step_time_s": w.step_time_s,
            "goodput": w.goodput,
            "throughput_fraction": w.step_time_s / w.effective_step_time_s,
            "job_mttf_h": rep.job_mttf_h,
            "interruptions_per_day": 24.0 * rep.stop_failures_per_h,
            "degradations_per_day": 24.0 * rep.degrade_failures_per_h,
            "network_parts": sum(m.count for m in rep.modes
                                 if m.kind in ("switch", "link")),
            "tokens_per_s": w.tokens_per_s,
            "effective_tokens_per_s": w.effective_tokens_per_s,
            "network_cost_usd": sol.network_cost_usd,
            "run_cost_usd": rep.failure_free_run_cost_usd,
            "run_cost_with_failures_usd": rep.run_cost_usd,
        })
    return pd.DataFrame(rows)
