"""Human-readable tables and JSON-ready dictionaries of solutions and evaluations."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from libra_opt.cost.tco import tco_breakdown
from libra_opt.optimize.solution import ConstraintReport, Solution
from libra_opt.options import COMPONENTS, OBJECTIVE_MEANING, Objective
from libra_opt.scenario.accuracy import same
from libra_opt.scenario.display import format_usd
from libra_opt.scenario.evaluate import Evaluation
from libra_opt.scenario.failures import FailureReport, failure_report
from libra_opt.scenario.objective import objective_of
from libra_opt.scenario.scenario import Scenario

__all__ = ["table", "format_evaluation", "format_solution", "solution_to_dict", "evaluation_to_dict",
           "rail_forwarding", "format_number", "format_column", "format_whole", "format_pct",
           "format_quantity", "settled", "constraint_rows", "allocations", "failure_lines", "failure_dict", "failure_section_parts"]


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """A plain-text table; ``align`` is one character per column, ``l`` or ``r``.

    Examples
    --------
    >>> print(table(["a", "bb"], [[1, "x"], [22, "yy"]], "rl"))
     a  bb
    --  --
     1  x
    22  yy
    """
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" * len(headers)
    lines = ["  ".join(c.rjust(w) if a == "r" else c.ljust(w)
                       for c, w, a in zip(r, widths, align, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_number(x: float | None, digits: int = 6) -> str:
    """``x`` to ``digits`` significant digits with thousands separators: the one rule for
    the numbers of the reports and the command line.

    A number with ``digits`` or more integer digits is written whole, magnitudes below 1e-4
    in scientific form; zero is never ``-0``; a missing or non-finite value is ``n/a``.

    Examples
    --------
    >>> format_number(1937540.3), format_number(10.974812), format_number(62776039.4)
    ('1,937,540', '10.9748', '62,776,039')
    >>> format_number(90112.0), format_number(12044.6, 4), format_number(1.42, 4)
    ('90,112', '12,045', '1.42')
    >>> format_number(-1.583e-08, 4), format_number(-0.0), format_number(None)
    ('-1.583e-08', '0', 'n/a')
    """
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    v = float(x)
    if abs(v) >= 10 ** (digits - 1):
        return f"{v:z,.0f}"
    return f"{v:z,.{digits}g}"


def format_column(values: Sequence[float], digits: int = 4) -> list[str]:
    """One table column's numbers with one number of decimals: ``digits`` significant digits
    of the largest magnitude, thousands separators, never an exponent.

    Examples
    --------
    >>> format_column([160.3, 136.04, 1.42])
    ['160.3', '136.0', '1.4']
    >>> format_column([1533.0, 12044.6, 292.0]), format_column([-0.0, float("nan")])
    (['1,533', '12,045', '292'], ['0', 'n/a'])
    """
    finite = [abs(float(v)) for v in values if math.isfinite(float(v))]
    top = max(finite, default=0.0)
    decimals = max(0, digits - 1 - math.floor(math.log10(top))) if top > 0 else 0
    return [f"{float(v):z,.{decimals}f}" if math.isfinite(float(v)) else "n/a" for v in values]


def format_whole(x: float | None) -> str:
    """Whole units with thousands separators (dollars, watts; the header names the unit).

    Examples
    --------
    >>> format_whole(62776039.4), format_whole(-0.2), format_whole(float("nan"))
    ('62,776,039', '0', 'n/a')
    """
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{float(x):z,.0f}"


def format_pct(x: float | None, decimals: int = 1, *, sign: bool = False) -> str:
    """A percentage (``x`` in percent) with ``decimals`` decimals; with ``sign`` a ``+``
    before positive values. A value that rounds to zero is ``0.0%``, never signed.

    Examples
    --------
    >>> format_pct(5.0, sign=True), format_pct(-0.0005, sign=True), format_pct(-0.04483, 2)
    ('+5.0%', '0.0%', '-0.04%')
    """
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    text = f"{float(x):z.{decimals}f}"
    return ("+" if sign and float(text) > 0 else "") + text + "%"


def format_quantity(x: float | None, unit: str) -> str:
    """``x`` with its unit, for sentences: dollars whole, anything else
    :func:`format_number` then the unit.

    Examples
    --------
    >>> format_quantity(62776039.4, "$"), format_quantity(24.49811, "s")
    ('$62,776,039', '24.4981 s')
    >>> format_quantity(28751734.2, "s*$")
    '28,751,734 s*$'
    """
    if unit == "$":
        return "n/a" if x is None or not math.isfinite(float(x)) else format_usd(x)
    return f"{format_number(x)} {unit}".rstrip()


def constraint_rows(sol: Solution) -> list[list[str]]:
    """The cells of each constraint of ``sol``: label, value, sense, bound, slack, active and
    shadow price (:func:`settled` values)."""
    rows = []
    for c in sol.constraints:
        lhs, slack = settled(c)
        rows.append([c.label, format_number(lhs), c.sense, format_number(c.rhs),
                     format_number(slack, 4), "yes" if c.active else "no",
                     format_number(c.shadow_price, 4) if c.active else "0"])
    return rows


def settled(c: ConstraintReport) -> tuple[float, float]:
    """A constraint row's value and slack with solver noise snapped to zero.

    A value or slack that is the same as 0 at the scale ``max(1, |bound|)``
    (:func:`~libra_opt.scenario.accuracy.same`) is read as 0: an active bound shows slack 0,
    not ``4.791e-09``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> settled(SimpleNamespace(lhs=600.0, rhs=600.0, slack=4.791e-09))
    (600.0, 0.0)
    """
    scale = max(1.0, abs(c.rhs))
    return ((0.0 if same(c.lhs, 0.0, scale=scale) else c.lhs),
            (0.0 if same(c.slack, 0.0, scale=scale) else c.slack))


def _si_time(t: float) -> str:
    if not np.isfinite(t):
        return "inf"
    if abs(t) >= 1:
        return f"{t:.4f} s"
    if abs(t) >= 1e-3:
        return f"{t * 1e3:.3f} ms"
    return f"{t * 1e6:.3f} us"


def _fabric_table(scen: Scenario, ev: Evaluation) -> str:
    total = float(np.sum(ev.bw_gbps))
    usd = ev.cost.usd_by_dim_component.sum(axis=1)
    power = None if ev.cost.w_by_dim_component is None else ev.cost.w_by_dim_component.sum(axis=1)
    busy = np.asarray(sum(t.busy_by_dim_s for t in ev.workloads), dtype=float)
    rows = [[dim.name, dim.topology, dim.size, dim.tier, f"{ev.bw_gbps[d]:.2f}",
             f"{100 * ev.bw_gbps[d] / total:.1f}%" if total > 0 else "-", format_usd(usd[d]),
             "n/a" if power is None else f"{power[d]:,.0f}", _si_time(float(busy[d]))]
            for d, dim in enumerate(scen.fabric.dims)]
    return table(["dim", "topology", "size", "tier", "bw GB/s", "share", "cost", "power W",
                  "busy/step"], rows, "llrlrrrrr")


def _workload_table(scen: Scenario, ev: Evaluation) -> str:
    rows = []
    for wt, t in zip(scen.weights or (), ev.workloads, strict=True):
        groups = ", ".join(f"{g} {_si_time(v)}" for g, v in t.comm_by_group_s.items() if v > 0)
        phases = (t.comm_by_phase_s[p] for p in ("forward", "input_grad", "weight_grad"))
        rows.append([t.name, f"{wt:g}", *map(_si_time, (t.step_time_s, t.compute_s, t.comm_s,
                                                         t.exposed_comm_s)),
                     " / ".join(map(_si_time, phases)), groups or "-"])
    return table(["workload", "weight", "step", "compute", "comm", "exposed comm",
                  "comm fwd / in-grad / w-grad", "comm per group"], rows, "lrrrrrll")


def _parts_text(by_dim_component, fixed: float, fmt: Callable[[float], str]) -> str:
    """``'switch $1.2M, nic $0.8M'``: each component's total, then the fixed part."""
    items = [f"{c} {fmt(v)}" for c, v in zip(COMPONENTS, by_dim_component.sum(axis=0),
                                              strict=True) if v > 0]
    return ", ".join(items + ([f"aggregator state memory {fmt(fixed)}"] if fixed else []))


def _cost_lines(ev: Evaluation) -> list[str]:
    c = ev.cost
    parts = _parts_text(c.usd_by_dim_component, c.fixed_usd, format_usd)
    lines = [f"Network cost: {format_usd(c.network_cost_usd)} ({parts or 'no priced components'})"]
    if c.network_power_w is None or c.w_by_dim_component is None:
        lines.append("Network power: not modelled (no power_model given)")
    else:
        parts = _parts_text(c.w_by_dim_component, c.fixed_w, lambda v: f"{v:,.0f} W")
        lines.append(f"Network power: {c.network_power_w:,.0f} W ({parts or 'none'})")
    return lines


def _throughput_table(scen: Scenario, ev: Evaluation) -> str | None:
    rows = []
    for wl, t in zip(scen.workloads, ev.workloads, strict=True):
        m = wl.metrics
        if m is None:
            continue
        mem = "-"
        if m.memory_per_npu_bytes is not None and m.memory_capacity_bytes:
            mem = f"{m.memory_per_npu_bytes / 1e9:.1f} / {m.memory_capacity_bytes / 1e9:.0f} GB"
        rows.append([t.name, f"{m.n_npus:,}", f"{m.tokens_per_step:,.0f}",
                     f"{m.model_flops_per_step:.3e}",
                     f"{m.throughput_tokens_per_s(t.step_time_s):,.0f}",
                     f"{100 * m.mfu(t.step_time_s):.1f}%", mem])
    if not rows:
        return None
    return table(["workload", "NPUs", "tokens/step", "model FLOPs/step", "tokens/s", "MFU",
                  "memory/NPU"], rows, "lrrrrrr")


def _tco_lines(scen: Scenario, ev: Evaluation) -> list[str]:
    if scen.tco is None:
        return []
    b = tco_breakdown(scen.tco, scen.fabric, scen.coefficients, ev.bw_gbps, ev.weighted_step_time_s)
    out = [f"TCO over {scen.tco.lifetime_years:g} years: {format_usd(b.total_usd)} (accelerators "
           f"{format_usd(b.accelerators_usd)}, hosts {format_usd(b.hosts_usd)}, network "
           f"{format_usd(b.network_usd)}, maintenance {format_usd(b.maintenance_usd)}, energy "
           f"{format_usd(b.energy_usd)} at {b.it_power_w / 1e3:,.1f} kW IT); "
           f"{format_usd(b.usd_per_hour)}/hour"]
    if b.run_usd is not None:
        out.append(f"One training run ({scen.tco.n_steps:,.0f} steps): {format_usd(b.run_usd)}")
    return out


def rail_forwarding(scen: Scenario, ev: Evaluation) -> list[dict[str, Any]]:
    """The Rail-only forwarding overhead of each workload (empty on other fabrics).

    Cross-rail bytes are relayed through the HB domain (:mod:`libra_opt.traffic.rail`); the
    overhead is against the same fabric with its rails joined by a spine, both under the
    native routing, at the evaluated bandwidth.

    Returns
    -------
    list of dict
        Per workload: ``workload``, ``forwarded_bytes_per_step`` (extra bytes per NPU per
        step over all dimensions), ``step_time_s`` (Rail-only), ``joined_step_time_s``
        (rails joined) and ``overhead_pct`` (``100 (t / t_joined - 1)``).

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.scenario.evaluate import evaluate
    >>> rail_forwarding(toy_scenario(), evaluate(toy_scenario(), [200, 100]))
    []
    """
    from libra_opt.fabric.builders import fabric_family
    from libra_opt.traffic.rail import joined_rails, rail_report
    from libra_opt.traffic.step_time import step_time

    if fabric_family(scen.fabric) != "rail_only":
        return []
    joined = joined_rails(scen.fabric)
    # native routing, timed per dimension (rails have no chunks for topology_aware)
    native = scen.timing_with(scen.timing.dims_at_once, traffic_model="native")
    out = []
    for wl in scen.workloads:
        rep = rail_report(wl, scen.fabric, ev.bw_gbps, native)
        extra = float((rep["count"] * rep["extra_hb_bytes"]).sum()) if len(rep) else 0.0
        t_rail = step_time(wl, scen.fabric, ev.bw_gbps, native).step_time_s
        t_joined = step_time(wl, joined, ev.bw_gbps, native).step_time_s
        out.append({
            "workload": wl.name,
            "forwarded_bytes_per_step": extra,
            "step_time_s": t_rail,
            "joined_step_time_s": t_joined,
            "overhead_pct": 100.0 * (t_rail / t_joined - 1.0) if t_joined > 0 else 0.0,
        })
    return out


def _rail_lines(scen: Scenario, ev: Evaluation) -> list[str]:
    rows = rail_forwarding(scen, ev)
    if not rows:
        return []
    return ["", "Rail-only forwarding (cross-rail bytes relayed through the HB domain; native "
            "routing, against the rails joined by a spine):", table(
                ["workload", "forwarded GB/NPU/step", "step (rail-only)", "step (rails joined)",
                 "overhead"],
                [[r["workload"], f"{r['forwarded_bytes_per_step'] / 1e9:,.3f}",
                  _si_time(r["step_time_s"]), _si_time(r["joined_step_time_s"]),
                  f"{r['overhead_pct']:+.2f}%"] for r in rows],
                "lrrrr")]


def _effect(rep: FailureReport, i: int, dims: tuple[str, ...]) -> str:
    m = rep.modes[i]
    if m.stops or m.dim is None:
        return "stops the job"
    return (f"{dims[m.dim]} at {100 * m.bw_factor:.1f}% ({rep.down_parts[i]:.3f} down on "
            "average)")


def failure_section_parts(scen: Scenario, ev: Evaluation
                          ) -> tuple[list[str], list[tuple[str, list[str], list[list[str]]]]]:
    """The report section's paragraphs and tables (caption, header, rows) of the design under
    failures (none without a ``reliability`` section)."""
    rel = scen.reliability
    if rel is None:
        return [], []
    rep = failure_report(scen, ev)
    per, unit = (rep.run_h, f"per {rep.run_h / 24:,.1f} days") if rep.run_h is not None \
        else (24.0, "per day")
    given = sorted({*(rel.rates_per_h or {}), *(rel.mtbf_h or {})})
    rows = [[m.where, f"{m.count:,}", f"{m.rate_per_h:.3g}", f"{m.failures_per_h * per:,.2f}",
             _effect(rep, i, scen.fabric.names)] for i, m in enumerate(rep.modes)]
    wrows = [[w.name, f"{w.checkpoint_bytes / 1e12:,.3f} TB", f"{w.checkpoint_s:.3g} s",
              f"{w.interval_s:,.1f} s", format_pct(100 * w.goodput, 2), f"{w.step_time_s:.4f} s",
              f"{w.expected_step_time_s:.4f} s", f"{w.effective_step_time_s:.4f} s",
              "-" if w.effective_tokens_per_s is None else
              f"{w.tokens_per_s:,.0f} -> {w.effective_tokens_per_s:,.0f}"]
             for w in rep.workloads]
    spares = (f"; {rep.n_spares:,} hot spares ({rel.spares_per_domain} per HB domain), "
              f"{format_pct(100 * rep.spare_shortfall, 2)} of NPU failures find none free"
              if rep.n_spares else "")
    replace = f" + {rel.replace_s:g} s without a spare" if rel.replace_s else ""
    text = ["Failure rates per part-hour: Llama 3 Table 5 defaults"
            + (f", {', '.join(given)} given" if given else "") + ".",
            f"Job MTTF {rep.job_mttf_h:.3g} h: {rep.stop_failures_per_h * per:,.1f} "
            f"interruptions and {rep.degrade_failures_per_h * per:,.1f} degradations {unit}; "
            f"mean recovery {rep.recovery_s:,.0f} s (detection {rel.detection_s:g} s + restart "
            f"{rel.restart_s:g} s{replace}){spares}."]
    if rep.run_cost_usd is not None and rep.failure_free_run_cost_usd is not None:
        extra = 100 * (rep.run_cost_usd / rep.failure_free_run_cost_usd - 1.0)
        text.append(f"One training run with failures: {format_usd(rep.run_cost_usd)} "
                    f"({format_pct(extra, 1, sign=True)} over "
                    f"{format_usd(rep.failure_free_run_cost_usd)}"
                    f"{f', spares {format_usd(rep.spares_usd)} capex' if rep.spares_usd else ''}).")
    tables = [("Failure modes: what breaks and what it does",
               ["mode", "parts", "rate/h", f"failures {unit}", "effect"], rows),
              ("Goodput under checkpoint/restart",
               ["workload", "checkpoint", "write", "interval", "goodput", "step",
                "with degraded parts", "effective step", "tokens/s -> with failures"], wrows)]
    return text, tables


def failure_lines(scen: Scenario, ev: Evaluation) -> list[str]:
    """Report lines of the design under failures (none without a ``reliability`` section).

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.scenario.evaluate import evaluate
    >>> failure_lines(toy_scenario(), evaluate(toy_scenario(), [200, 100]))
    []
    """
    text, tables = failure_section_parts(scen, ev)
    if not tables:
        return []
    return ["", "Failures and goodput:", table(*tables[0][1:], "lrrrl"), text[1],
            table(*tables[1][1:], "lrrrrrrrr"), text[0], *text[2:]]


def failure_dict(scen: Scenario, ev: Evaluation) -> dict[str, Any]:
    """JSON-ready ``{"reliability": ...}`` of the design under failures (empty without a
    ``reliability`` section)."""
    if scen.reliability is None:
        return {}
    rep = failure_report(scen, ev)
    head = ("job_mttf_h", "stop_failures_per_h", "degrade_failures_per_h", "run_h",
            "interruptions", "degradations", "recovery_s", "n_spares", "spare_shortfall")
    per_workload = ("checkpoint_bytes", "checkpoint_s", "interval_s", "goodput",
                    "expected_step_time_s", "effective_step_time_s", "effective_tokens_per_s")
    tail = ("effective_objective_value", "run_cost_usd", "failure_free_run_cost_usd",
            "spares_usd")
    return {"reliability": {
        **{k: getattr(rep, k) for k in head},
        "modes": [{"kind": m.kind, "where": m.where, "parts": m.count,
                   "rate_per_h": m.rate_per_h, "stops": m.stops,
                   "dim": None if m.dim is None else scen.fabric.names[m.dim],
                   "bw_factor": m.bw_factor, "down_parts": n}
                  for m, n in zip(rep.modes, rep.down_parts, strict=True)],
        "workloads": {w.name: {k: getattr(w, k) for k in per_workload} for w in rep.workloads},
        **{k: getattr(rep, k) for k in tail},
    }}


def _timing_text(scen: Scenario) -> str:
    """The timing choices and each dimension's collective efficiency (``hb at 0.8``)."""
    eff = () if scen.collectives is None else scen.collectives.efficiency
    text = f"{scen.collective_model} collectives, {scen.training_loop} loop, " \
           f"{scen.traffic_model} traffic"
    return text + "".join(f", {name} at {v if isinstance(v, str) else f'{v:g}'}"
                          for name, v in eff)


def format_evaluation(scen: Scenario, ev: Evaluation) -> str:
    """Report of a scenario evaluated at a given allocation."""
    lines = [
        f"Scenario {scen.name}: {scen.fabric.n_dims}-D fabric, {scen.fabric.n_npus:,} NPUs "
        f"({_timing_text(scen)})",
        "",
        _fabric_table(scen, ev),
        "",
        _workload_table(scen, ev),
    ]
    thr = _throughput_table(scen, ev)
    if thr:
        lines += ["", thr]
    lines += _rail_lines(scen, ev)
    lines += ["", *_cost_lines(ev), *_tco_lines(scen, ev)]
    lines += failure_lines(scen, ev)
    if ev.residuals:
        bad = ev.violated()
        lines.append(
            "Constraints: all satisfied" if not bad else f"Constraints VIOLATED: {'; '.join(bad)}"
        )
    return "\n".join(lines)


def allocations(sol: Solution) -> list[tuple[str, Evaluation, bool, float, float]]:
    """``(name, evaluation, feasible, step time ratio, objective ratio)`` of the optimum, then
    of each baseline."""
    return [("optimum", sol.evaluation, True, 1.0, 1.0),
            *((b.name, b.evaluation, b.feasible, b.step_time_ratio, b.objective_ratio)
              for b in sol.baselines)]


def _objective_str(objective: Objective, value: float) -> str:
    obj = objective_of(objective)
    if obj.unit == "s":
        return f"{obj.what} {_si_time(value)}"
    return f"{obj.what} {format_quantity(value, obj.unit)}"


def format_solution(sol: Solution) -> str:
    """The full report of a solved scenario: allocation, times, cost, constraints, baselines.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> print(format_solution(solve(toy_scenario())).splitlines()[0])
    Scenario toy: 2-D fabric, 32 NPUs (pipelined collectives, no_overlap loop, hierarchical traffic)
    """
    scen, ev = sol.scenario, sol.evaluation
    lines = [
        format_evaluation(scen, ev),
        f"Objective ({sol.objective}): {_objective_str(sol.objective, sol.objective_value)}",
    ]
    if sol.constraints:
        unit = OBJECTIVE_MEANING[sol.objective][1]
        lines += ["", table(
            ["constraint", "value", "", "bound", "slack", "active", f"shadow price ({unit}/unit)"],
            constraint_rows(sol), "lrlrrlr")]
        if ev.cost.fixed_usd or ev.cost.fixed_w:
            fixed = format_usd(ev.cost.fixed_usd)
            watts = f" and {ev.cost.fixed_w:,.0f} W" if ev.cost.fixed_w else ""
            lines.append(f"(rows on cost and power bound the per-dimension part: their caps less "
                         f"the fixed {fixed}{watts} of aggregator state memory)")
    if sol.baselines:
        total = float(np.sum(sol.bw_gbps))
        rows = [[name, " ".join(f"{x:.1f}" for x in e.bw_gbps), _si_time(e.weighted_step_time_s),
                 format_usd(e.cost.network_cost_usd), "yes" if ok else "no", f"{step:.3f}x",
                 f"{obj:.3f}x"] for name, e, ok, step, obj in allocations(sol)]
        lines += [
            "",
            f"Baselines at the same total bandwidth ({total:,.2f} GB/s per NPU):",
            table(["allocation", "bw GB/s", "weighted step", "network cost", "feasible",
                   "step / optimum", "objective / optimum"], rows, "llrrlrr"),
        ]
    s = sol.solver
    lines += [
        "",
        f"Solver: {s.solver} ({s.method}), status {s.status}, compile {s.compile_s * 1e3:.1f} ms, "
        f"solve {s.solve_s * 1e3:.2f} ms; numpy re-check: objective agrees to {s.objective_rel_gap:.1e}",
    ]
    return "\n".join(lines)


def evaluation_to_dict(scen: Scenario, ev: Evaluation) -> dict[str, Any]:
    """JSON-ready dictionary of an evaluation."""
    return {
        "scenario": scen.name,
        "dims": list(scen.fabric.names),
        "bw_gbps": [float(x) for x in ev.bw_gbps],
        "step_time_s": {t.name: t.step_time_s for t in ev.workloads},
        "weighted_step_time_s": ev.weighted_step_time_s,
        "breakdown": {t.name: {
            "compute_s": t.compute_s, "comm_s": t.comm_s, "exposed_comm_s": t.exposed_comm_s,
            "comm_by_phase_s": dict(t.comm_by_phase_s), "comm_by_group_s": dict(t.comm_by_group_s),
            "busy_by_dim_s": [float(x) for x in t.busy_by_dim_s],
            "traffic_by_dim_bytes": [float(x) for x in t.traffic_by_dim_bytes],
        } for t in ev.workloads},
        "network_cost_usd": ev.cost.network_cost_usd,
        "network_cost_by_dim_usd": [float(x) for x in ev.cost.usd_by_dim_component.sum(axis=1)],
        "network_cost_by_component_usd": dict(
            zip(COMPONENTS, (float(x) for x in ev.cost.usd_by_dim_component.sum(axis=0)), strict=True)
        ),
        "network_power_w": ev.cost.network_power_w,
        "network_fixed_usd": ev.cost.fixed_usd,
        "network_fixed_w": None if ev.cost.network_power_w is None else ev.cost.fixed_w,
        "throughput": {t.name: {
            "tokens_per_s": wl.metrics.throughput_tokens_per_s(t.step_time_s),
            "mfu": wl.metrics.mfu(t.step_time_s),
            "model_flops_per_step": wl.metrics.model_flops_per_step,
            "memory_per_npu_bytes": wl.metrics.memory_per_npu_bytes,
        } for wl, t in zip(scen.workloads, ev.workloads, strict=True) if wl.metrics is not None},
        "objective_value": ev.objective_value,
        "constraint_violation": {k: float(v) for k, v in ev.residuals.items()},
    } | ({"rail_forwarding": forwarding} if (forwarding := rail_forwarding(scen, ev)) else {}) \
      | failure_dict(scen, ev)


def solution_to_dict(sol: Solution) -> dict[str, Any]:
    """JSON-ready dictionary of a solution (the CLI's ``--json`` output)."""
    out = evaluation_to_dict(sol.scenario, sol.evaluation)
    out.update({
        "status": sol.solver.status,
        "objective": sol.objective,
        "objective_value": sol.objective_value,
        "solver": {"name": sol.solver.solver, **{k: getattr(sol.solver, k) for k in (
            "method", "compile_s", "solve_s", "objective_rel_gap")}},
        "constraints": [
            {"label": c.label, "value": c.lhs, "sense": c.sense, "bound": c.rhs,
             "slack": c.slack, "active": c.active, "shadow_price": c.shadow_price}
            for c in sol.constraints
        ],
        "baselines": [
            {"name": b.name, "bw_gbps": [float(x) for x in b.evaluation.bw_gbps],
             "weighted_step_time_s": b.evaluation.weighted_step_time_s,
             "network_cost_usd": b.evaluation.cost.network_cost_usd,
             "feasible": b.feasible, "step_time_ratio": b.step_time_ratio,
             "objective_ratio": b.objective_ratio}
            for b in sol.baselines
        ],
    })
    return out

