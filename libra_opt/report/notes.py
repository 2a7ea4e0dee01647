"""Sentences that explain a table before a reader misreads it: what a fabric comparison's
rows are and why two cost the same (:func:`family_notes`), and why rows of a sweep give the
same design (:func:`identical_rows_note`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from libra_opt.report._style import format_value, quantity
from libra_opt.report.text import format_number, format_pct, format_whole
from libra_opt.scenario.accuracy import same
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.timing import TimingModel

__all__ = ["MULTI_DIM_NOTE", "COMPARISON_COLUMNS", "binding_constraints", "comparison_rows",
           "family_label", "family_notes", "identical_rows_note"]

MULTI_DIM_NOTE = (
    "multi_dim is LIBRA's ideal fabric: every dimension is one logical switch with no radix "
    "limit (1 tier, a single scale-out switch however many NPUs it joins). No real switch has "
    "that many ports at this size, so its cost and power are a lower bound for the network, "
    "not a design that can be bought; compare the buildable fabrics (fat_tree, rail_only) "
    "with each other.")


def family_label(fabric: str) -> str:
    """A comparison row's fabric as a table shows it: ``multi_dim`` says it is ideal.

    Examples
    --------
    >>> family_label("multi_dim"), family_label("scenario (multi_dim)"), family_label("fat_tree")
    ('multi_dim (ideal, no radix limit)', 'scenario (multi_dim, ideal, no radix limit)', 'fat_tree')
    """
    if fabric == "multi_dim":
        return "multi_dim (ideal, no radix limit)"
    return fabric.replace("(multi_dim)", "(multi_dim, ideal, no radix limit)")


def _count(x) -> str:
    return "n/a" if x is None or x != x else f"{int(x):,}"


def _pct(x) -> str:
    return format_pct(x, 2)


#: Column of a fabric comparison -> (header, cell format, alignment).
COMPARISON_COLUMNS: dict[str, tuple[str, Callable[[Any], str], str]] = {
    "mode": ("mode", str, "l"),
    "fabric": ("fabric", lambda f: family_label(str(f)), "l"),
    "bw_gbps": ("bw (GB/s)", lambda bw: " / ".join(f"{b:.1f}" for b in bw), "r"),
    "step_time_s": ("step time (s)", format_number, "r"),
    "network_cost_usd": ("network cost ($)", format_whole, "r"),
    "scaleout_cost_usd": ("scale-out cost ($)", format_whole, "r"),
    "network_power_w": ("network power (W)", format_whole, "r"),
    "scaleout_tiers": ("scale-out tiers", _count, "r"),
    "hb_switches": ("HB switches", _count, "r"),
    "scaleout_switches": ("scale-out switches", _count, "r"),
    "cost_reduction_pct": ("cost reduction", _pct, "r"),
    "power_reduction_pct": ("power reduction", _pct, "r"),
    "step_time_change_pct": ("step time change", _pct, "r"),
}


def comparison_rows(df: pd.DataFrame, columns: Sequence[str]) -> list[list[str]]:
    """The cells of a fabric comparison's ``columns`` (:data:`COMPARISON_COLUMNS` formats),
    one list per row."""
    return [[COMPARISON_COLUMNS[c][1](r.get(c)) for c in columns] for _, r in df.iterrows()]


def binding_constraints(scen: Scenario, bw_gbps: Sequence[float], *,
                        exclude: Sequence[str] = ("budget_usd", "power_w")) -> list[str]:
    """Labels of the scenario's constraints that hold with equality at ``bw_gbps``.

    An inequality binds when its two sides are the same up to solver round-off; the budget
    and power cap are left out (``exclude``): what *else* fixes the design?

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> binding_constraints(toy_scenario(), [200.0, 100.0])
    ['sum(bw) == 300']
    """
    ev = evaluate(scen, bw_gbps)
    bw = np.asarray(ev.bw_gbps, dtype=float)
    cost = float(ev.cost.network_cost_usd)
    power = float(ev.cost.network_power_w or 0.0)
    out = []
    for c in scen.constraints:
        if c.label in exclude:
            continue
        lhs = float(np.dot(c.bw_coef, bw)) + c.cost_coef * cost + c.power_coef * power
        if c.sense == "==" or same(lhs, c.rhs, scale=max(abs(c.rhs), abs(lhs), 1.0)):
            out.append(c.label)
    return out


def identical_rows_note(df: pd.DataFrame, scen: Scenario, *, x: str = "budget_usd") -> str | None:
    """Why consecutive rows of a sweep over ``x`` give the same design, or ``None``.

    Rows are the same design when their ``bw_<dim>_gbps`` are the same up to round-off; the
    note counts them, gives the range of ``x`` and names the constraints binding there.

    Examples
    --------
    >>> import pandas as pd
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = pd.DataFrame({"budget_usd": [1e5, 2e5, 3e5], "status": ["optimal"] * 3,
    ...                    "bw_node_gbps": [100.0, 200.0, 200.0],
    ...                    "bw_pod_gbps": [50.0, 100.0, 100.0],
    ...                    "network_cost_usd": [5e4, 1e5, 1e5]})
    >>> print(identical_rows_note(df, toy_scenario()))  # doctest: +NORMALIZE_WHITESPACE
    2 of 3 rows give the same design (network budget $200k to $300k): the network budget
    does not bind there (the design costs $100,000), the bandwidth is pinned by
    sum(bw) == 300.
    """
    cols = [c for c in df.columns if str(c).startswith("bw_") and str(c).endswith("_gbps")]
    ok = df[df["status"] == "optimal"].sort_values(x)
    if len(ok) < 2 or not cols:
        return None
    bws = ok[cols].to_numpy(dtype=float)
    repeats = [i for i in range(1, len(ok)) if same(bws[i], bws[i - 1])]
    if not repeats:
        return None
    rows = sorted({*repeats, *(i - 1 for i in repeats)})
    first, last = ok.iloc[rows[0]], ok.iloc[rows[-1]]
    binding = binding_constraints(scen, bws[rows[-1]])
    what = ", ".join(binding) if binding else "the per-dimension bounds"
    cost = (f" (the design costs ${float(last['network_cost_usd']):,.0f})"
            if "network_cost_usd" in ok else "")
    label, kind = quantity(x)
    lo, hi = format_value(float(first[x]), kind), format_value(float(last[x]), kind)
    return (f"{len(rows)} of {len(df)} rows give the same design ({label} {lo} to {hi}): "
            f"the {label} does not bind there{cost}, the bandwidth is pinned by {what}.")


RAIL_HIERARCHICAL_NOTE = (
    "traffic model hierarchical: the rail_only rows do not charge the forwarding of "
    "cross-rail traffic through the HB domain (the native traffic model does; the "
    "topology_aware collective model has only the hierarchical one), so their step times "
    "are optimistic where a workload sends across rails (all-to-all, groups spanning rails)")


def family_notes(df: pd.DataFrame, scen: Scenario | None = None) -> list[str]:
    """Notes on a fabric comparison (:func:`libra_opt.explore.compare.compare_fabrics`).

    The ``multi_dim`` row (:data:`MULTI_DIM_NOTE`); two fabrics of one cost and number of
    scale-out tiers; budget rows that repeat the equal-bandwidth rows (their binding
    constraints, with ``scen``); Rail-only rows timed with hierarchical traffic.
    """
    out = []
    fabrics = [str(f) for f in df["fabric"]]
    if any(f == "multi_dim" or "(multi_dim)" in f for f in fabrics):
        out.append(MULTI_DIM_NOTE)
    same_tiers: dict[tuple[str, str, int], list[str]] = {}
    for mode, g in df.groupby("mode", sort=False):
        for a, b in combinations(g.itertuples(index=False), 2):
            if ("scaleout_tiers" in g and a.scaleout_tiers == b.scaleout_tiers
                    and same(float(a.network_cost_usd), float(b.network_cost_usd))):
                key = (str(a.fabric), str(b.fabric), int(a.scaleout_tiers))
                same_tiers.setdefault(key, []).append(str(mode))
    for (a_fab, b_fab, tiers), modes in same_tiers.items():
        out.append(f"{', '.join(modes)}: {a_fab} and {b_fab} cost the same because both need "
                   f"{tiers} scale-out tier{'s' if tiers != 1 else ''} at this size and radix: "
                   "a rail-only network saves only where its per-rail Clos needs fewer tiers "
                   "than the full one.")
    if scen is not None and "bw_gbps" in df:
        repeats: dict[str, list[str]] = {}
        base = df[df["mode"] == "equal_bw"]
        for mode, g in df.groupby("mode", sort=False):
            if mode == "equal_bw" or len(g) != len(base):
                continue
            if all(same(a, b) for a, b in zip(g["bw_gbps"], base["bw_gbps"], strict=True)):
                binding = binding_constraints(scen, list(g["bw_gbps"].iloc[0]))
                why = (f"the bandwidth is pinned by {', '.join(binding)}" if binding else
                       "the per-dimension bounds hold the bandwidth")
                repeats.setdefault(why, []).append(str(mode))
        for why, modes in repeats.items():
            out.append(f"{' and '.join(modes)} rows repeat the equal_bw rows: {why}, so a "
                       "budget changes nothing.")
    traffic = df.attrs.get("traffic_model")
    if (traffic is not None and TimingModel(traffic_model=traffic).hierarchical_traffic
            and "family" in df and (df["family"] == "rail_only").any()):
        out.append(RAIL_HIERARCHICAL_NOTE)
    return list(dict.fromkeys(out))
