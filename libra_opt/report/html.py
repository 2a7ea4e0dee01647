"""A design-review report of one scenario: ``report.html`` (one self-contained file) and
``report.md`` (with its PNGs beside it).

:func:`build_report` solves the scenario and gathers the sections — the solution table,
workload times, constraints with their shadow prices, the baselines, the sensitivity of
each dimension, a budget sweep with its Pareto front, and the fabric-family comparison.
:func:`render_html` and :func:`render_markdown` turn them into text, and
:func:`write_report` writes both files (and the PNGs of the Markdown file) into one
directory and nowhere else.

The HTML file embeds its plots as ``data:image/png;base64`` URIs and its CSS inline; it
loads no script, font, style sheet or image from anywhere. Every piece of user text
(scenario, workload, dimension and constraint names) is HTML-escaped.
"""

from __future__ import annotations

import base64
import dataclasses
import html
import io
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from libra_opt.errors import InputError, LibraOptError
from libra_opt.optimize.problem import solve
from libra_opt.optimize.solution import Solution
from libra_opt.options import OBJECTIVE_MEANING
from libra_opt.scenario.objective import PerfObjective
from libra_opt.scenario.scenario import Scenario

__all__ = ["ReportSection", "Report", "build_report", "render_html", "render_markdown",
           "write_report", "REPORT_FAMILIES"]

logger = logging.getLogger(__name__)

REPORT_FAMILIES = ("fat_tree", "rail_only", "multi_dim")
"""Fabric families the report compares (each with the scenario's own dimensions)."""

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{font-size:1.6em;border-bottom:2px solid #444;padding-bottom:.2em}
h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #bbb}
table{border-collapse:collapse;margin:.8em 0;font-size:.9em}
caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #ccc;padding:.25em .6em}
th{background:#f0f0f0}td{text-align:right}td:first-child{text-align:left}
figure{margin:1em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#555}
p.note{font-size:.9em;color:#444}
"""


@dataclass
class ReportSection:
    """One section of the report: paragraphs, tables and figures (PNG bytes).

    Attributes
    ----------
    title : str
    text : list of str
        Paragraphs (plain text; escaped when rendered).
    tables : list of (caption, header, rows)
        Cells are strings.
    figures : list of (name, caption, png bytes)
        ``name`` is a file-name part (``report_<name>.png`` beside ``report.md``).
    """

    title: str
    text: list[str] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    figures: list[tuple[str, str, bytes]] = field(default_factory=list)


@dataclass
class Report:
    """A report's title, summary lines, sections, the solution and the sweep behind it."""

    title: str
    summary: list[str]
    sections: list[ReportSection]
    solution: Solution
    sweep: object = None
    comparison: object = None
    timings_s: dict[str, float] = field(default_factory=dict)


def _png(fig) -> bytes:
    """The figure as PNG bytes; the figure is closed."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _g(x: float | None, digits: int = 6) -> str:
    """A number with ``digits`` significant digits and thousands separators; n/a if missing."""
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{float(x):,.{digits}g}"


def _usd(x: float | None) -> str:
    """Whole dollars with thousands separators (the column header says $)."""
    if x is None or not math.isfinite(float(x)):
        return "n/a"
    return f"{float(x):,.0f}"


def _unit_of(values: Sequence[float], kind: str) -> tuple[float, str]:
    from libra_opt.report.plots import _unit

    return _unit(list(values), kind)


def _solution_sections(sol: Solution) -> list[ReportSection]:
    from libra_opt.report.plots import plot_allocation, plot_dim_time, plot_step_breakdown

    scen, ev = sol.scenario, sol.evaluation
    usd = ev.cost.usd_by_dim_component.sum(axis=1)
    power = None if ev.cost.w_by_dim_component is None else ev.cost.w_by_dim_component.sum(axis=1)
    total = float(np.sum(sol.bw_gbps))
    header = ["dimension", "topology", "size", "tier", "bandwidth (GB/s per NPU)", "share",
              "network cost ($)"] + ([] if power is None else ["network power (W)"])
    rows = []
    for d, dim in enumerate(scen.fabric.dims):
        rows.append([dim.name, dim.topology, f"{dim.size:,}", dim.tier, f"{sol.bw_gbps[d]:.6g}",
                     f"{100 * sol.bw_gbps[d] / total:.1f}%" if total > 0 else "-", _usd(usd[d])]
                    + ([] if power is None else [_g(power[d])]))
    rows.append(["total", "", f"{scen.fabric.n_npus:,}", "", f"{total:.6g}", "100%",
                 _usd(ev.cost.network_cost_usd)]
                + ([] if power is None else [_g(ev.cost.network_power_w)]))
    alloc = ReportSection("Optimal bandwidth allocation", tables=[("Bandwidth per dimension",
                                                                   header, rows)])
    alloc.figures.append(("allocation", "Optimum and baselines, GB/s per NPU per dimension "
                          "(hatched: infeasible)", _png(plot_allocation(sol))))
    scale, unit = _unit_of([t.step_time_s for t in ev.workloads], "s")
    weights = scen.weights or (1.0,) * len(ev.workloads)
    wrows = [[t.name, f"{w:g}", _g(t.step_time_s / scale), _g(t.compute_s / scale),
              _g(t.comm_s / scale), _g(t.exposed_comm_s / scale)]
             for w, t in zip(weights, ev.workloads, strict=True)]
    wrows.append(["weighted", "", _g(ev.weighted_step_time_s / scale), "", "", ""])
    times = ReportSection("Step time", tables=[(
        "Step time per workload",
        ["workload", "weight", f"step time ({unit})", f"compute ({unit})",
         f"communication ({unit})", f"exposed communication ({unit})"], wrows)])
    times.figures.append(("step_breakdown", "Compute and exposed communication per group",
                          _png(plot_step_breakdown(sol))))
    times.figures.append(("dim_time", "Time per step each dimension is busy",
                          _png(plot_dim_time(sol))))
    return [alloc, times]


def _constraint_section(sol: Solution) -> ReportSection:
    unit = OBJECTIVE_MEANING[sol.objective][1]
    sec = ReportSection("Constraints and shadow prices")
    if not sol.constraints:
        sec.text.append("The scenario has no constraints besides positive bandwidth.")
        return sec
    rows = []
    for c in sol.constraints:
        rows.append([c.label, _g(c.lhs), c.sense, _g(c.rhs), _g(c.slack, 4),
                     "yes" if c.active else "no", _g(c.shadow_price, 4) if c.active else "0"])
    sec.tables.append(("Constraints at the optimum", ["constraint", "value", "sense", "bound",
                       "slack", "active", f"shadow price ({unit} per unit of bound)"], rows))
    active = [c for c in sol.constraints if c.active and c.shadow_price != 0]
    if active:
        sec.text.append("A shadow price is the objective's change per unit the bound moves, to "
                        "first order; the binding constraint with the largest effect is where "
                        "extra money, power or bandwidth pays off most.")
    for c in active:
        what = {"budget_usd": ("$", 1e6, "$1M"), "power_w": ("W", 1e3, "kW")}.get(
            c.label, ("GB/s", 100.0, "100 GB/s"))
        sec.text.append(
            f"{c.label}: {_g(c.shadow_price, 4)} {unit} per {what[0]} "
            f"({_g(c.shadow_price * what[1], 4)} {unit} per {what[2]}).")
    if not active:
        sec.text.append("No constraint binds with a non-zero shadow price: the optimum is "
                        "interior to every bound.")
    return sec


def _baseline_section(sol: Solution) -> ReportSection:
    ev = sol.evaluation
    scale, unit = _unit_of([ev.weighted_step_time_s], "s")
    rows = [["optimum", " / ".join(f"{b:.1f}" for b in sol.bw_gbps),
             _g(ev.weighted_step_time_s / scale), _usd(ev.cost.network_cost_usd), "yes",
             "1", "1"]]
    for b in sol.baselines:
        bev = b.evaluation
        rows.append([b.name, " / ".join(f"{x:.1f}" for x in bev.bw_gbps),
                     _g(bev.weighted_step_time_s / scale), _usd(bev.cost.network_cost_usd),
                     "yes" if b.feasible else "no", _g(b.step_time_ratio, 4),
                     _g(b.objective_ratio, 4)])
    total = float(np.sum(sol.bw_gbps))
    return ReportSection(
        "Baselines",
        text=[f"Reference allocations with the optimum's total bandwidth ({total:,.1f} GB/s "
              "per NPU): the equal split, and the split proportional to each dimension's "
              "bytes per step. 'feasible: no' means the allocation breaks a constraint of "
              "the scenario (for instance the budget)."],
        tables=[("Baselines at the same total bandwidth",
                 ["allocation", "bandwidth (GB/s, per dimension)", f"weighted step time ({unit})",
                  "network cost ($)", "feasible", "step time / optimum",
                  "objective / optimum"], rows)])


def _sensitivity_section(sol: Solution) -> ReportSection:
    from libra_opt.report.plots import plot_sensitivity

    sec = ReportSection("Sensitivity")
    try:
        from libra_opt.explore.sensitivity import sensitivity
    except ImportError:  # pragma: no cover - the explore layer without its sensitivity module
        sec.text.append("Sensitivity analysis is not available in this installation.")
        return sec
    try:
        df = sensitivity(sol)
    except LibraOptError as exc:
        sec.text.append(f"Sensitivity not computed: {exc}")
        return sec
    unit = OBJECTIVE_MEANING[sol.objective][1]
    names = {"dim": "dimension", "bw_gbps": "bandwidth (GB/s)",
             "usd_per_gbps": "price ($ per GB/s)",
             "step_s_per_gbps": "step time per GB/s, this dimension alone (s)",
             "step_s_per_usd": "step time per $, this dimension alone (s)",
             "bound_objective_per_gbps": f"objective per GB/s of its bounds, re-optimized ({unit})",
             "budget_objective_per_usd": f"objective per $ of budget, re-optimized ({unit})"}
    cols = [names.get(str(c), str(c)) for c in df.columns]
    exact = {"bw_gbps", "usd_per_gbps"}   # inputs: 6 digits; derivatives: 4
    rows = [[_g(float(v), 6 if c in exact else 4) if isinstance(v, float | np.floating)
             else str(v) for c, v in zip(df.columns, r, strict=True)]
            for r in df.itertuples(index=False)]
    sec.tables.append(("Marginal step time of each dimension", cols, rows))
    sec.text.append(
        "Negative values: step time falls as the dimension gets more money or bandwidth. "
        "'This dimension alone' keeps the others fixed; at a pipelined optimum the busy "
        "dimensions tie, so one of them alone often gains nothing (0) — the gain of more "
        "budget or bandwidth comes from re-balancing all of them, which the re-optimized "
        "columns (the shadow prices) measure.")
    try:
        sec.figures.append(("sensitivity", "Step time saved per $1M and per GB/s",
                            _png(plot_sensitivity(df))))
    except InputError as exc:  # columns the plot does not know
        logger.info("sensitivity plot skipped: %s", exc)
    return sec


def _budget_values(sol: Solution, n_points: int) -> list[float]:
    cost = sol.network_cost_usd
    if not (cost > 0):
        return []
    hi = 4.0 if sol.scenario.budget_usd is None else 2.0
    return [float(v) for v in np.geomspace(0.25 * cost, hi * cost, n_points)]


def _run_sweep(scen: Scenario, values: list[float], progress):
    """Budget sweep rows (``budget_usd`` column first); adds the budget row if missing."""
    from libra_opt.explore.sweep import sweep

    return sweep(scen, {"budget_usd": values}, progress=progress)


def _sweep_section(sol: Solution, n_points: int, progress) -> tuple[ReportSection, object]:
    from libra_opt.report.plots import plot_bandwidth_vs_budget, plot_pareto, plot_sweep

    sec = ReportSection("Budget sweep and Pareto front")
    values = _budget_values(sol, n_points)
    if not values:
        sec.text.append("No budget sweep: the optimum's network cost is zero.")
        return sec, None
    scen = sol.scenario
    if scen.objective_model != PerfObjective():
        scen = dataclasses.replace(scen, objective=PerfObjective.name)
        sec.text.append(f"The sweep minimizes step time (objective perf) under each budget; "
                        f"the scenario's own objective is {sol.objective}.")
    df = _run_sweep(scen, values, progress)
    ok = df[df["status"] == "optimal"]
    sec.text.append(
        f"{len(df)} network budgets from ${values[0] / 1e6:,.3g}M to ${values[-1] / 1e6:,.3g}M "
        f"(log-spaced around the optimum's cost), the scenario's other constraints kept; "
        f"{len(ok)} points have a design, {len(df) - len(ok)} do not.")
    if ok.empty:
        return sec, df
    scale, unit = _unit_of(ok["weighted_step_time_s"], "s")
    bw_cols = [c for c in df.columns if c.startswith("bw_") and c.endswith("_gbps")]
    rows = [[_usd(r["budget_usd"]), str(r["status"]),
             _g(r["weighted_step_time_s"] / scale) if r["status"] == "optimal" else "",
             _usd(r["network_cost_usd"]) if r["status"] == "optimal" else ""]
            + [f"{r[c]:.1f}" if r["status"] == "optimal" else "" for c in bw_cols]
            for _, r in df.iterrows()]
    sec.tables.append(("Budget sweep", ["budget ($)", "status", f"weighted step time ({unit})",
                                        "network cost ($)"]
                       + [f"{c[3:-5]} (GB/s)" for c in bw_cols], rows))
    sec.figures.append(("pareto", "Step time vs network cost: every budget's optimum, the "
                        "Pareto front, and the scenario's baselines (hollow: infeasible)",
                        _png(plot_pareto(df, solution=sol))))
    if "network_power_w" in ok and ok["network_power_w"].notna().any():
        sec.figures.append(("pareto_power", "Step time vs network power",
                            _png(plot_pareto(df, x="network_power_w", solution=sol))))
    sec.figures.append(("bandwidth_vs_budget", "Optimal bandwidth per dimension (stacked)",
                        _png(plot_bandwidth_vs_budget(df, x="budget_usd"))))
    sec.figures.append(("sweep", "Step time and bandwidth per dimension over the budget",
                        _png(plot_sweep(df, x="budget_usd"))))
    return sec, df


def _comparison_section(sol: Solution, families: Sequence[str]) -> tuple[ReportSection, object]:
    from libra_opt.explore.compare import compare_fabrics
    from libra_opt.fabric.builders import as_family, fabric_family
    from libra_opt.report.plots import plot_comparison

    scen = sol.scenario
    sec = ReportSection("Fabric families")
    radix = scen.fabric.dims[-1].switch_radix or 64
    own = f"scenario ({fabric_family(scen.fabric)})"
    fabrics = {}
    try:
        for fam in families:
            f = as_family(scen.fabric, fam, radix)
            fabrics[own if f == scen.fabric else fam] = f
        fabrics.setdefault(own, scen.fabric)
        df = compare_fabrics(scen, fabrics, bw_gbps=sol.bw_gbps.tolist(),
                             modes=("equal_bw", "equal_budget"))
    except LibraOptError as exc:
        sec.text.append(f"Fabric comparison not possible for this scenario: {exc}")
        return sec, None
    sec.text.append(
        f"The scenario's dimensions re-wired as each family (scale-out switch radix {radix}). "
        "equal_bw: the optimum's bandwidth on every fabric. equal_budget: the HB domain held, "
        f"the scale-out given what a ${df.attrs['scaleout_budget_usd'] / 1e6:,.4g}M "
        f"scale-out budget buys on each fabric (baseline {df.attrs['baseline']}).")
    rows = []
    for _, r in df.iterrows():
        rows.append([str(r["mode"]), str(r["fabric"]), " / ".join(f"{b:.1f}" for b in r["bw_gbps"]),
                     _g(r["step_time_s"]), _usd(r["network_cost_usd"]),
                     _g(r["network_power_w"]) if r["network_power_w"] is not None else "n/a",
                     f"{int(r['scaleout_tiers'])}",
                     _g(r.get("cost_reduction_pct"), 4), _g(r.get("step_time_change_pct"), 4)])
    sec.tables.append(("Fabric comparison", ["mode", "fabric", "bandwidth (GB/s)",
                                             "step time (s)", "network cost ($)",
                                             "network power (W)", "scale-out tiers",
                                             "cost reduction (%)", "step time change (%)"], rows))
    import matplotlib.pyplot as plt

    modes = list(dict.fromkeys(df["mode"]))
    fig, axes = plt.subplots(1, len(modes), figsize=(6.0 * len(modes), 4.4), squeeze=False,
                             layout="constrained")
    for a, m in zip(axes[0], modes, strict=True):
        plot_comparison(df, a, mode=m)
    sec.figures.append(("fabric_families", "Each fabric relative to the baseline (1.0 = same)",
                        _png(fig)))
    return sec, df


def build_report(
    scenario_or_solution: Scenario | Solution,
    *,
    budget_points: int = 25,
    families: Sequence[str] = REPORT_FAMILIES,
    progress: Callable | bool | None = None,
) -> Report:
    """Solve (if needed) and gather every section of the report.

    Parameters
    ----------
    scenario_or_solution : Scenario or Solution
    budget_points : int
        Points of the budget sweep (log-spaced from 0.25x to 4x the optimum's network
        cost; to 2x when the scenario already has a budget).
    families : sequence of str
        Fabric families to compare (:data:`REPORT_FAMILIES`).
    progress : callable or bool, optional
        Passed to the sweep.

    Returns
    -------
    Report
    """
    from libra_opt.report.plots import format_value

    t0 = time.perf_counter()
    sol = (scenario_or_solution if isinstance(scenario_or_solution, Solution)
           else solve(scenario_or_solution))
    timings = {"solve_s": time.perf_counter() - t0}
    scen, ev = sol.scenario, sol.evaluation
    summary = [
        f"{scen.fabric.n_dims}-D fabric of {scen.fabric.n_npus:,} NPUs "
        f"({' x '.join(f'{d.topology} {d.size}' for d in scen.fabric.dims)}); "
        f"{len(scen.workloads)} workload{'s' if len(scen.workloads) > 1 else ''}: "
        f"{', '.join(w.name for w in scen.workloads)}.",
        f"Objective {sol.objective}: {OBJECTIVE_MEANING[sol.objective][0]} = "
        f"{_g(sol.objective_value)} {OBJECTIVE_MEANING[sol.objective][1]}; solver status "
        f"{sol.solver.status} ({sol.solver.method}).",
        f"Weighted step time {_g(ev.weighted_step_time_s)} s; network cost "
        f"${ev.cost.network_cost_usd:,.0f}"
        + ("" if ev.cost.network_power_w is None else
           f"; network power {format_value(ev.cost.network_power_w, 'w')}") + ".",
    ]
    sections = _solution_sections(sol)
    sections += [_constraint_section(sol), _baseline_section(sol), _sensitivity_section(sol)]
    t1 = time.perf_counter()
    sweep_sec, df = _sweep_section(sol, budget_points, progress)
    timings["sweep_s"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    cmp_sec, cmp_df = _comparison_section(sol, families)
    timings["compare_s"] = time.perf_counter() - t1
    sections += [sweep_sec, cmp_sec]
    timings["total_s"] = time.perf_counter() - t0
    return Report(f"libra_opt report: {scen.name}", summary, sections, sol, df, cmp_df, timings)


def _html_table(caption: str, header: list[str], rows: list[list[str]]) -> str:
    from libra_opt.scenario.display import html_table

    return html_table(header, rows, caption)


def render_html(report: Report) -> str:
    """The report as one self-contained HTML document (inline CSS, images as data URIs).

    Examples
    --------
    >>> r = Report("a <b>", ["x & y"], [ReportSection("s", ["t"], [("c", ["h"], [["<1>"]])])],
    ...            solution=None)
    >>> h = render_html(r)
    >>> "<title>a &lt;b&gt;</title>" in h, "&lt;1&gt;" in h, "<b>" in h
    (True, True, False)
    """
    def esc(text: str) -> str:   # element content (attributes use html.escape in full)
        return html.escape(text, quote=False)

    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             f"<title>{esc(report.title)}</title>", f"<style>{_CSS}</style>", "</head>",
             "<body>", f"<h1>{esc(report.title)}</h1>"]
    parts += [f"<p>{esc(s)}</p>" for s in report.summary]
    for sec in report.sections:
        parts.append(f"<h2>{esc(sec.title)}</h2>")
        parts += [f'<p class="note">{esc(t)}</p>' for t in sec.text]
        parts += [_html_table(*t) for t in sec.tables]
        for _name, caption, png in sec.figures:
            data = base64.b64encode(png).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(caption)}" '
                         f'src="data:image/png;base64,{data}">'
                         f"<figcaption>{esc(caption)}</figcaption></figure>")
    parts += ["<p class=\"note\">Generated by libra_opt.</p>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _md(text: str) -> str:
    """Markdown-safe text: HTML escaped, table pipes escaped, one line."""
    return html.escape(" ".join(str(text).split()), quote=False).replace("|", "\\|")


def render_markdown(report: Report, figure_names: dict[str, str] | None = None) -> str:
    """The report as Markdown; figures link to ``figure_names[name]`` (relative file names).

    Examples
    --------
    >>> r = Report("t", [], [ReportSection("s", [], [("c", ["a|b"], [["1"]])])], solution=None)
    >>> print(render_markdown(r))
    # t
    <BLANKLINE>
    ## s
    <BLANKLINE>
    **c**
    <BLANKLINE>
    | a\\|b |
    | --- |
    | 1 |
    <BLANKLINE>
    """
    names = figure_names or {}
    lines = [f"# {_md(report.title)}", ""]
    lines += [f"{_md(s)}\n" for s in report.summary]
    for sec in report.sections:
        lines += [f"## {_md(sec.title)}", ""]
        lines += [f"{_md(t)}\n" for t in sec.text]
        for caption, header, rows in sec.tables:
            lines += [f"**{_md(caption)}**", "", "| " + " | ".join(_md(h) for h in header) + " |",
                      "|" + " --- |" * len(header)]
            lines += ["| " + " | ".join(_md(c) for c in r) + " |" for r in rows]
            lines.append("")
        for name, caption, _png_bytes in sec.figures:
            if name in names:
                lines += [f"![{_md(caption)}]({names[name]})", ""]
    return "\n".join(lines)


def write_report(
    scenario_or_solution: Scenario | Solution,
    out_dir: str | Path,
    *,
    budget_points: int = 25,
    families: Sequence[str] = REPORT_FAMILIES,
    progress: Callable | bool | None = None,
    flag: str | None = None,
) -> dict[str, Path]:
    """Write ``report.html``, ``report.md`` and the Markdown's PNGs into ``out_dir``.

    Every file lands inside ``out_dir`` (created if missing), each written atomically.

    Parameters
    ----------
    scenario_or_solution : Scenario or Solution
    out_dir : str or Path
    budget_points, families, progress
        See :func:`build_report`.
    flag : str, optional
        Command-line flag named in errors (``--out``).

    Returns
    -------
    dict of str to Path
        ``html``, ``markdown`` and ``png:<name>`` per figure.
    """
    from libra_opt.io.output import (
        check_output_dir,
        confined_path,
        write_bytes_atomic,
        write_text_atomic,
    )

    check_output_dir(out_dir, flag or "out_dir")
    report = build_report(scenario_or_solution, budget_points=budget_points, families=families,
                          progress=progress)
    written: dict[str, Path] = {}
    names: dict[str, str] = {}
    for sec in report.sections:
        for name, _caption, png in sec.figures:
            fname = f"report_{name}.png"
            path = confined_path(out_dir, fname, flag=flag)
            written[f"png:{name}"] = write_bytes_atomic(path, png, flag=flag)
            names[name] = fname
    written["markdown"] = write_text_atomic(confined_path(out_dir, "report.md", flag=flag),
                                            render_markdown(report, names), flag=flag)
    written["html"] = write_text_atomic(confined_path(out_dir, "report.html", flag=flag),
                                        render_html(report), flag=flag)
    return written
