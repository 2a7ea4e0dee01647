"""``libra-opt compare``: fabric families derived from a scenario's fabric
(:func:`libra_opt.fabric.builders.as_family`) compared on its workloads; the scenario's own
fabric is one more row, ``scenario (<family>)``, unless it equals a requested family.
"""

from __future__ import annotations

import argparse
import dataclasses
import math

from libra_opt.cli.args import add_set_argument, load_with_sets, parse_floats
from libra_opt.cli.backend import pyplot, save_drawn
from libra_opt.errors import InputError, option_context
from libra_opt.options import FABRIC_FAMILIES, TRAFFIC_MODELS

__all__ = ["register", "run"]


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``compare`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "compare", help="compare fat-tree, rail-only and multi-dimensional fabrics on a scenario",
        description="Step time, network cost, power and reductions vs the fat-tree, at "
        "equal bandwidth and at equal network budget.")
    p.add_argument("scenario", help="scenario YAML file, or the name of a shipped example")
    p.add_argument("--fabrics", default="fat_tree,rail_only,multi_dim",
                   help="comma-separated subset of fat_tree, rail_only, multi_dim")
    p.add_argument("--radix", type=int, default=None,
                   help="scale-out switch radix of the fat_tree and rail_only rows (default: "
                   "the scenario's scale-out switch_radix, else 64)")
    p.add_argument("--catalog", help="price catalog name or YAML path (default: the "
                   "scenario's cost model)")
    p.add_argument("--bw", help="equal-bandwidth allocation in GB/s per dimension, e.g. "
                   "450,50 (default: the scenario's optimum)")
    p.add_argument("--budget-usd", type=float, help="total network budget in $ of the "
                   "equal_budget_joint rows (default: the baseline's cost at equal bandwidth); "
                   "the equal_budget rows get it minus the baseline's HB cost for the scale-out")
    p.add_argument("--scaleout-budget-usd", type=float, help="scale-out budget in $ of the "
                   "equal_budget rows, HB bandwidth held (default: the baseline's scale-out "
                   "cost at equal bandwidth)")
    p.add_argument("--traffic-model", choices=TRAFFIC_MODELS, default=None,
                   help="routing-aware traffic (native; the default) or LIBRA's hierarchical "
                        "model (the default under collective_model topology_aware, which has "
                        "no routing-aware form)")
    p.add_argument("--csv", help="write the table as CSV (.csv)")
    p.add_argument("--plot", help="write a bar plot (.png, .svg or .pdf)")
    add_set_argument(p)
    p.set_defaults(func=run)
    return p


def _fabric_names(text: str) -> list[str]:
    names = [x.strip() for x in text.split(",") if x.strip()]
    bad = [n for n in names if n not in FABRIC_FAMILIES]
    if not names or bad:
        raise InputError(
            f"unknown fabric(s) {', '.join(bad) or '(none given)'}; expected a comma-separated "
            f"subset of {', '.join(FABRIC_FAMILIES)}",
            source="<cli>",
            field="--fabrics",
        )
    return list(dict.fromkeys(names))


def _check_budget(budget: float | None, flag: str = "--budget-usd") -> None:
    if budget is not None and not (math.isfinite(budget) and budget > 0):
        raise InputError(f"budget {budget!r} $ must be a finite number > 0", source="<cli>",
                         field=flag)


def _table(df) -> str:
    """The comparison as a text table, columns with no value left out."""
    from libra_opt.report.notes import COMPARISON_COLUMNS, comparison_rows
    from libra_opt.report.text import table

    shown = [c for c in COMPARISON_COLUMNS if c in df and df[c].notna().any()]
    return table([COMPARISON_COLUMNS[c][0] for c in shown], comparison_rows(df, shown),
                 "".join(COMPARISON_COLUMNS[c][2] for c in shown))


def _fabrics(scen_fabric, names: list[str], radix: int) -> dict:
    """Label -> fabric: the requested families, and the scenario's own fabric once."""
    from libra_opt.fabric.builders import as_family, fabric_family

    own = f"scenario ({fabric_family(scen_fabric)})"
    fabrics = {}
    for n in names:
        try:
            f = as_family(scen_fabric, n, radix)
        except InputError as exc:
            if "switch_radix" not in (exc.field or ""):
                raise
            raise InputError(exc.message, source="<cli>", field="--radix") from None
        fabrics[own if f == scen_fabric else n] = f
    fabrics.setdefault(own, scen_fabric)
    return fabrics


def run(args: argparse.Namespace) -> int:
    """Execute ``compare`` for parsed ``args``; prints the table and returns 0."""
    from libra_opt.explore.compare import compare_fabrics
    from libra_opt.io.output import (
        CSV_SUFFIXES,
        PLOT_SUFFIXES,
        check_writable_output,
        write_csv_atomic,
    )
    from libra_opt.io.presets import catalog_cost_model
    from libra_opt.report.notes import family_notes
    from libra_opt.report.plots import plot_comparison
    from libra_opt.scenario.display import format_usd
    from libra_opt.traffic.step_time import check_bandwidth

    # the command line first (outputs, flags), then the scenario, then the work
    if args.csv is not None:
        check_writable_output(args.csv, "--csv", CSV_SUFFIXES)
    if args.plot is not None:
        check_writable_output(args.plot, "--plot", PLOT_SUFFIXES)
    names = _fabric_names(args.fabrics)
    odd_radix = args.radix is not None and (args.radix < 4 or args.radix % 2)
    if odd_radix and set(names) - {"multi_dim"}:   # the Clos needs an even radix >= 4
        raise InputError(f"switch_radix {args.radix} must be an even integer >= 4 (ports per "
                         "switch)", source="<cli>", field="--radix")
    _check_budget(args.budget_usd)
    _check_budget(getattr(args, "scaleout_budget_usd", None), "--scaleout-budget-usd")
    bw = parse_floats(args.bw, "--bw") if args.bw is not None else None
    scen = load_with_sets(args.scenario, args.set)
    if args.catalog:
        scen = dataclasses.replace(scen, cost_model=catalog_cost_model(args.catalog))
    if bw is not None:  # every family keeps the scenario's dimensions
        with option_context("--bw", fields=("--bw",)):
            bw = check_bandwidth(scen.fabric, bw, field="--bw").tolist()
    radix, radix_note = args.radix, "--radix"
    if radix is None:
        radix = scen.fabric.dims[-1].switch_radix
        radix_note = "the scenario's"
        if radix is None:
            radix, radix_note = 64, "the default: the scenario's scale-out has no switch_radix"
    fabrics = _fabrics(scen.fabric, names, radix)
    timing = None if args.traffic_model is None else scen.timing_with(
        traffic_model=args.traffic_model)
    try:
        df = compare_fabrics(scen, fabrics, bw_gbps=bw, budget_usd=args.budget_usd,
                             scaleout_budget_usd=getattr(args, "scaleout_budget_usd", None),
                             timing=timing)
    except InputError as exc:
        if exc.field == "traffic_model" and args.traffic_model is not None:
            raise InputError(f"the scenario's {exc.message}", source="<cli>",
                             field="--traffic-model") from None
        raise
    print(_table(df))
    hb = " / ".join(f"{b:.1f}" for b in df.attrs["hb_gbps"])
    print(f"baseline: {df.attrs['baseline']}; equal_budget: "
          f"{format_usd(df.attrs['scaleout_budget_usd'])} scale-out, HB held at its equal_bw "
          f"bandwidth within the scenario's bounds ({hb} GB/s for the baseline); "
          f"equal_budget_joint: {format_usd(df.attrs['budget_usd'])} total; budget rows keep "
          f"the scenario's constraints; traffic model: {df.attrs['traffic_model']}")
    print(f"scale-out switch radix {radix} ({radix_note})")
    for note in family_notes(df, scen):
        print(f"note: {note}")
    if args.csv is not None:
        with option_context("--csv"):
            write_csv_atomic(df, args.csv, index=False)
    if args.plot is not None:
        def draw():
            modes = list(dict.fromkeys(df["mode"]))
            fig, axes = pyplot().subplots(1, len(modes), figsize=(6 * len(modes), 4),
                                          squeeze=False)
            for ax, m in zip(axes[0], modes, strict=True):
                plot_comparison(df, ax, mode=m)
            fig.tight_layout()
            return fig

        with option_context("--plot"):
            save_drawn(draw, args.plot)
    return 0
