"""The model against every packaged validation table: the figures the README quotes.

Runs :func:`libra_opt.explore.validation.validate` on each packaged table (as ``libra-opt
validate`` does) and records, per software stack, the out-of-sample rows, their average and
worst absolute error; the pooled figures; and, per set of published parallelization
variants, the Spearman rank correlation and the regret of the model's pick
(:mod:`libra_opt.explore.ranking`). Writes ``validation_figures.csv`` (one row per stack and
per set) and the figures to ``benchmarks/RESULTS.md``; the tests re-run it and require the
same figures, so the README cannot quote an older model.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_results as results  # noqa: E402

from libra_opt.explore.ranking import stack_summaries, variant_rankings  # noqa: E402
from libra_opt.explore.validation import abs_errors, validate  # noqa: E402
from libra_opt.io.validation import load_validation_table, validation_table_names  # noqa: E402


def figures() -> tuple[dict[str, str], pd.DataFrame]:
    """The recorded figures and their table."""
    res = [validate(load_validation_table(n)) for n in validation_table_names()]
    rows, out = [], {}
    for s in stack_summaries(res):
        n = len(s.judged)
        rows.append({"kind": "stack", "name": s.stack, "rows": n,
                     "avg_pct": 100 * s.mean_abs_error, "worst_pct": 100 * s.worst_abs_error})
        out[f"validation_figures.{s.stack}_rows"] = f"{n}"
        out[f"validation_figures.{s.stack}_avg_pct"] = f"{100 * s.mean_abs_error:.2f}"
        out[f"validation_figures.{s.stack}_worst_pct"] = f"{100 * s.worst_abs_error:.2f}"
    judged = [r.error for t in res for r in t.rows if r.role == "validation"]
    avg, worst = abs_errors(judged)
    out["validation_figures.pooled_rows"] = f"{len(judged)}"
    out["validation_figures.pooled_avg_pct"] = f"{100 * avg:.2f}"
    out["validation_figures.pooled_worst_pct"] = f"{100 * worst:.2f}"
    for v in variant_rankings(res):
        rows.append({"kind": "variant_set", "name": v.name, "rows": len(v.rows),
                     "spearman": v.spearman, "regret_pct": 100 * v.regret})
        out[f"validation_figures.{v.name}_spearman"] = f"{v.spearman:.2f}"
        out[f"validation_figures.{v.name}_regret_pct"] = f"{100 * v.regret:.2f}"
    return out, pd.DataFrame(rows)


def main(argv=None) -> int:
    args, out = results.parse_out_args(__doc__, argv)
    values, df = figures()
    df.to_csv(out / "validation_figures.csv", index=False)
    with pd.option_context("display.width", 200, "display.float_format", "{:.3f}".format):
        print(df.to_string(index=False))
    results.record_from_args(args, "validation_figures", values)
    print(f"\nwrote {out / 'validation_figures.csv'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
