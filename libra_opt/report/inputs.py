"""The report's inputs-and-provenance section (every input behind the numbers) and its
performance section (tokens per second, MFU, memory per NPU and the TCO)."""

from __future__ import annotations

import datetime
import platform
from dataclasses import dataclass, field
from importlib import metadata

import numpy as np

from libra_opt.cost.tco import tco_breakdown
from libra_opt.optimize.solution import Solution
from libra_opt.report.text import format_number, format_whole

__all__ = ["Provenance", "inputs_section_parts", "performance_section_parts"]


@dataclass(frozen=True)
class Provenance:
    """Where a report comes from: the command line, the scenario file's text as read, the
    ``--set PATH=VALUE`` edits applied to it, the time of creation (UTC) and the version."""

    command: str | None = None
    scenario_text: str | None = None
    overrides: tuple[str, ...] = ()
    created_utc: str = field(default_factory=lambda: datetime.datetime.now(
        datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))
    version: str = field(default_factory=lambda: _version())


def _version() -> str:
    try:
        return metadata.version("libra_opt")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        return "unknown (not installed)"


_g = format_number


def _groups_text(groups, dims) -> str:
    """``tp 8 (node 8), dp 64 (pod 64)``: each group's size and its span per dimension."""
    parts = []
    for name, spans in groups.items():
        size = int(np.prod(spans))
        where = ", ".join(f"{d.name} {k}" for d, k in zip(dims, spans, strict=True) if k > 1)
        parts.append(f"{name} {size}" + (f" ({where})" if where else ""))
    return "; ".join(parts) or "-"


def inputs_section_parts(sol: Solution, prov: Provenance):
    """``(text, tables, code)`` of the inputs-and-provenance section.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> text, tables, code = inputs_section_parts(solve(toy_scenario()), Provenance("cmd"))
    >>> [t[0] for t in tables]
    ['Provenance', 'Model options and constraints', 'Fabric', 'Unit prices per cost tier', 'Workloads']
    >>> tables[4][2][0][3]
    'dp 4 (node 2, pod 2)'
    """
    scen = sol.scenario
    prov_rows = [["libra_opt version", prov.version],
                 ["created", prov.created_utc],
                 ["command", prov.command or "(Python API)"],
                 ["scenario", f"{scen.name}" + (f" ({scen.source})" if scen.source else "")],
                 ["overrides (--set)", "; ".join(prov.overrides) or "none"],
                 ["Python", platform.python_version()],
                 ["solver", f"{sol.solver.solver} ({sol.solver.method}), status "
                            f"{sol.solver.status}"]]
    opts = [["objective", sol.objective],
            ["collective model", scen.collective_model],
            ["training loop", scen.training_loop],
            ["traffic model", scen.traffic_model],
            ["network budget", "none" if scen.budget_usd is None else f"${scen.budget_usd:,.0f}"],
            ["network power cap", "none" if scen.power_w is None else f"{scen.power_w:,.0f} W"],
            ["in-network reduction", ", ".join(scen.in_network_reduction) or "none"]]
    opts += [[f"constraint {i + 1}", c.label] for i, c in enumerate(scen.constraints)
             if c.label not in ("budget_usd", "power_w")]
    tiers = scen.cost_model.tiers
    comps = sorted({c for t in tiers.values() for c in t.usd_per_gbps})
    price_rows = [[name, *(_g(t.usd_per_gbps.get(c, 0.0)) for c in comps),
                   *(_g(t.w_per_gbps.get(c, 0.0)) for c in comps if t.w_per_gbps is not None)]
                  for name, t in tiers.items()]
    power = scen.cost_model.has_power
    price_header = (["tier"] + [f"{c} ($ per GB/s)" for c in comps]
                    + ([f"{c} (W per GB/s)" for c in comps] if power else []))
    dims_used = {d.tier for d in scen.fabric.dims}
    price_rows = [r for r in price_rows if r[0] in dims_used] or price_rows
    weights = scen.weights or (1.0,) * len(scen.workloads)
    wl_rows = []
    for w, wl in zip(weights, scen.workloads, strict=True):
        m = wl.metrics
        wl_rows.append([wl.name, f"{w:g}", f"{wl.n_layers:,}",
                        _groups_text(wl.groups, scen.fabric.dims),
                        "-" if m is None else f"{m.tokens_per_step:,.0f}",
                        "-" if m is None else f"{m.peak_flops_per_npu / 1e12:,.4g}"])
    fabric_rows = [[d.name, d.topology, f"{d.size:,}", d.tier] for d in scen.fabric.dims]
    tables = [
        ("Provenance", ["item", "value"], prov_rows),
        ("Model options and constraints", ["option", "value"], opts),
        ("Fabric", ["dimension", "topology", "size (NPUs)", "cost tier"], fabric_rows),
        ("Unit prices per cost tier", price_header, price_rows),
        ("Workloads", ["workload", "weight", "layers", "parallel groups: size (span per "
                       "dimension)", "tokens per step", "peak TFLOP/s per NPU"], wl_rows),
    ]
    text = ["Everything this report was computed from. Prices are the scenario's cost model "
            "(per GB/s of per-NPU bandwidth, by component); the parallel groups are the "
            "workloads' communicators as mapped onto the fabric's dimensions."]
    code = []
    if prov.scenario_text:
        code.append((f"Scenario file{f' ({scen.source})' if scen.source else ''}"
                     + (", before the overrides above" if prov.overrides else ""),
                     prov.scenario_text))
    else:
        text.append("The scenario was built in Python (no scenario file): its inputs are the "
                    "tables above.")
    return text, tables, code


def performance_section_parts(sol: Solution):
    """``(text, tables)`` of the performance section.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import solve
    >>> text, tables = performance_section_parts(solve(toy_scenario()))
    >>> tables, text[0][:40]
    ([], 'The workloads were given as traffic (no ')
    """
    scen, ev = sol.scenario, sol.evaluation
    rows = []
    for wl, t in zip(scen.workloads, ev.workloads, strict=True):
        m = wl.metrics
        if m is None:
            continue
        mem = "n/a"
        if m.memory_per_npu_bytes is not None:
            mem = f"{m.memory_per_npu_bytes / 1e9:,.1f}"
            if m.memory_capacity_bytes:
                mem += f" of {m.memory_capacity_bytes / 1e9:,.0f}"
        rows.append([t.name, f"{m.n_npus:,}", _g(t.step_time_s),
                     f"{m.throughput_tokens_per_s(t.step_time_s):,.0f}",
                     f"{100 * m.mfu(t.step_time_s):.1f}%", mem])
    text, tables = [], []
    if rows:
        tables.append(("Throughput and utilisation at the optimum",
                       ["workload", "NPUs", "step time (s)", "tokens per second",
                        "MFU (model FLOPs / peak)", "memory per NPU (GB)"], rows))
        text.append("MFU counts the model's FLOPs (no recomputation) over the NPUs' peak, "
                    "as Chowdhery et al. (PaLM, 2022) define it; memory is the most loaded "
                    "NPU's peak.")
    else:
        text.append("The workloads were given as traffic (no model configuration), so tokens "
                    "per second, MFU and memory are not known.")
    if scen.tco is not None:
        b = tco_breakdown(scen.tco, scen.fabric, scen.coefficients, ev.bw_gbps,
                          ev.weighted_step_time_s)
        trows = [[p, format_whole(getattr(b, f"{p}_usd"))]
                 for p in ("accelerators", "hosts", "network", "maintenance", "energy", "total")]
        trows.append(["per hour", format_whole(b.usd_per_hour)])
        if b.run_usd is not None:
            trows.append([f"one training run ({scen.tco.n_steps:,.0f} steps)",
                          format_whole(b.run_usd)])
        tables.append((f"Total cost of ownership over {scen.tco.lifetime_years:g} years ($)",
                       ["part", "cost ($)"], trows))
        text.append(f"TCO: capital (accelerators, hosts, network), maintenance and energy at "
                    f"{b.it_power_w / 1e3:,.1f} kW of IT power over the lifetime.")
    return text, tables
