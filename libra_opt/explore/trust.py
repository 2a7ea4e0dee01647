"""The model's error band on the answers of a study: the validated runs of validation
results (:func:`validated_runs`) and the trust columns of a search table
(:func:`search_columns`), by the rules of :class:`~libra_opt.generators.error_model.ErrorModel`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from libra_opt.explore.validation import TableResult
from libra_opt.generators.error_model import Band, ErrorModel, ValidatedRun
from libra_opt.generators.validation import ValidationTable
from libra_opt.scenario.scenario import Scenario

__all__ = ["validated_runs", "search_columns", "scenario_bands", "timing_outside", "widened"]


def validated_runs(tables: Sequence[ValidationTable],
                   results: Sequence[TableResult]) -> tuple[ValidatedRun, ...]:
    """The runs of ``tables`` with the errors of ``results`` (``validate(table)`` of each,
    in the same order)."""
    out = []
    for table, res in zip(tables, results, strict=True):
        for row, r in zip(table.rows, res.rows, strict=True):
            p = row.parallelism
            out.append(ValidatedRun(
                r.name, table.name, r.device, r.stack, r.role, r.error, r.variant_set,
                p.tp, p.cp, p.pp, p.ep, p.micro_batch_size, p.interleave, row.model.seq_len,
                p.n_npus, p.recompute,
                r.mfu_measured if math.isfinite(r.mfu_measured) else None))
    return tuple(out)


def search_columns(model: ErrorModel, table: object, device: str, stack: str, seq_len: int,
                   n_npus: int, rank_key: str = "objective", outside: tuple[str, ...] = ()
                   ) -> dict[str, list]:
    """The trust columns of a search table's rows (``rank_key``: the value they are ranked by;
    ``outside``: what else lies outside the envelope for every row, :func:`timing_outside`).

    Returns
    -------
    dict
        One value per row (NaN, ``''`` or ``False`` for rows not solved): ``band_pct``,
        ``step_time_lo_s`` / ``step_time_hi_s`` (the measured step times the band allows),
        ``outside_envelope``, ``mfu_above_measured`` (above the best measured on the device)
        and ``indistinguishable`` (within the ranking band of rank 1's value).
    """
    import pandas as pd

    assert isinstance(table, pd.DataFrame)
    best = model.best_mfu(device)
    rank_band = model.rank_band(device, stack)
    solved = table["status"] == "optimal"
    first = table.loc[table["rank"] == 1, rank_key]
    best_obj = float(first.iloc[0]) if len(first) else math.nan
    unsolved = (math.nan, math.nan, math.nan, "", False, False)
    values = []
    for ok, r in zip(solved, table.itertuples(index=False), strict=True):
        if not ok:
            values.append(unsolved)
            continue
        knobs = {**layout_knobs(r), "seq_len": seq_len, "n_npus": n_npus}
        b = widened(model, model.band(device, stack, knobs), outside)
        values.append((100 * b.rel_error, *b.interval_s(float(r.step_time_s)),
                       ", ".join(b.outside), best is not None and float(r.mfu) > best[0],
                       bool(math.isfinite(rank_band)
                            and float(getattr(r, rank_key)) <= best_obj * (1 + rank_band))))
    names = ("band_pct", "step_time_lo_s", "step_time_hi_s", "outside_envelope",
             "mfu_above_measured", "indistinguishable")
    return {k: [v[i] for v in values] for i, k in enumerate(names)}


#: The layout knobs a validated envelope checks (with the sequence length and GPU count).
LAYOUT_KNOBS = ("tp", "cp", "pp", "ep", "micro_batch_size", "interleave", "recompute")


def layout_knobs(layout: object) -> dict[str, int | str]:
    """:data:`LAYOUT_KNOBS` of a parallelization or a search row (same attribute names)."""
    return {k: getattr(layout, k) for k in LAYOUT_KNOBS}


def timing_outside(scenario: Scenario) -> tuple[str, ...]:
    """How ``scenario`` is timed otherwise than the validation tables are (pipelined
    collectives over hierarchical traffic at each device's own collective efficiencies).

    Examples
    --------
    >>> from libra_opt.io.scenario_file import load_scenario
    >>> timing_outside(load_scenario("gpt3_175b_a100_cluster"))
    ()
    """
    timing, out = scenario.timing, []
    if not (timing.is_pipelined and timing.hierarchical_traffic):
        out.append(f"timing {timing.collective_model} collectives, {timing.traffic_model} "
                   "traffic (validated: pipelined, hierarchical)")
    spec = scenario.spec
    if spec is not None and spec.collectives is not None and spec.collectives.efficiency:
        out.append("collectives.efficiency set (validated: each device's own)")
    return tuple(out)


def widened(model: ErrorModel, band: Band, outside: tuple[str, ...]) -> Band:
    """``band`` with more that lies outside the envelope: the worst error of any run."""
    if not outside:
        return band
    judged = sum(r.role == "validation" for r in model.runs)
    return Band(model.worst_band, band.basis if band.outside else
                f"the largest error of any of the {judged} validated runs",
                (*band.outside, *outside))


def scenario_bands(model: ErrorModel, scenario: Scenario) -> dict[str, Band]:
    """The error band of each model-based workload of a compiled ``scenario``, by name, widened
    (:func:`widened`) for a fixed efficiency, a model that is not a transformer, or a timing
    other than the validation tables' (:func:`timing_outside`).

    Examples
    --------
    >>> from libra_opt.io.error_model import load_error_model
    >>> from libra_opt.io.scenario_file import load_scenario
    >>> bands = scenario_bands(load_error_model(), load_scenario("gpt3_175b_a100_cluster"))
    >>> list(bands), bands["gpt3_175b"].inside
    (['gpt3_175b'], True)
    """
    from libra_opt.generators.descriptors import TransformerSpec
    from libra_opt.generators.parallelism import parallelism_from_dict
    from libra_opt.scenario.spec import thaw

    out: dict[str, Band] = {}
    spec = scenario.spec
    outside_timing = timing_outside(scenario)
    for w in spec.workloads if spec is not None else ():
        if w.model is None or w.device is None or w.parallelism is None:
            continue
        par = parallelism_from_dict(thaw(w.parallelism), None, "parallelism")
        device = w.device.value
        stack = par.software_stack or device.calibration_stack
        knobs = {**layout_knobs(par), "n_npus": par.n_npus}
        if isinstance(w.model.value, TransformerSpec):
            knobs["seq_len"] = w.model.value.seq_len
        band = model.band(device.key, stack, knobs)
        extra = []
        if not isinstance(w.model.value, TransformerSpec):
            extra.append(f"model {type(w.model.value).__name__} (validated: transformers)")
        if w.efficiency is not None and not isinstance(w.efficiency, Mapping):
            extra.append("a fixed compute efficiency (validated: the per-operator roofline)")
        extra += outside_timing
        if extra:
            band = widened(model, band, tuple(extra))
        out[w.name] = band
    return out
