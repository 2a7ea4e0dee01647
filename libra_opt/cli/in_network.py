"""``libra-opt in-network``: which switch dimensions should reduce in the network
(:func:`libra_opt.explore.in_network.choose_in_network`)?"""

from __future__ import annotations

import argparse

from libra_opt.cli.args import add_set_argument, load_with_sets
from libra_opt.errors import InputError, option_context

__all__ = ["register", "run"]


def register(subparsers) -> argparse.ArgumentParser:
    """Add the ``in-network`` sub-command to ``subparsers`` and return its parser."""
    p = subparsers.add_parser(
        "in-network",
        help="decide per switch dimension whether to buy in-network reduction (SHARP class)",
        description="Solve the scenario for every choice of switch dimensions that reduce in "
        "the network (each exactly) and print them, best first.")
    p.add_argument("scenario", help="scenario YAML file or example name")
    p.add_argument("--dims", help="comma-separated candidate dimensions (default: every "
                   "switch dimension)")
    add_set_argument(p)
    p.add_argument("--backend", choices=("clarabel", "cvxpy"), default="clarabel")
    p.add_argument("--csv", help="write the choices as CSV (.csv)")
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Run the sub-command; returns the exit code."""
    from libra_opt.explore.in_network import choose_in_network
    from libra_opt.io.output import check_writable_output, write_text_atomic

    path = check_writable_output(args.csv, "--csv", (".csv",)) if args.csv else None
    scen = load_with_sets(args.scenario, args.set)
    dims = None if not args.dims else [d.strip() for d in args.dims.split(",") if d.strip()]
    if dims is not None:
        bad = [d for d in dims if d not in scen.fabric.names]
        if bad:
            raise InputError(f"no dimension named {', '.join(bad)}; names: "
                             f"{', '.join(scen.fabric.names)}", source="<cli>", field="--dims")
    res = choose_in_network(scen, dims, backend=args.backend)
    print(repr(res))
    if path is not None:
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(["in_network_dims", "feasible", "objective", "step_time_s",
                    "network_cost_usd", *(f"bw_{n}_gbps" for n in scen.fabric.names)])
        for c in res.choices:
            bw = list(c.bw_gbps) if c.feasible else [float("nan")] * scen.fabric.n_dims
            w.writerow([";".join(c.dims), c.feasible, c.objective_value, c.step_time_s,
                        c.network_cost_usd, *bw])
        with option_context("--csv"):
            write_text_atomic(path, buf.getvalue())
    return 0
