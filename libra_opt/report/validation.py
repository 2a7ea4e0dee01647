"""Text table and predicted-vs-published plot of a validation run (``libra-opt validate``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt

from libra_opt.explore.ranking import StackSummary, VariantRanking
from libra_opt.explore.validation import RowResult, TableResult

__all__ = ["validation_report", "plot_validation", "stack_report", "variant_report",
           "plot_variants"]

#: Row marks: device-constant calibration, stack-constant calibration, convention-dependent.
_MARKS = {"device": "  cal", "stack": "  cal-stack", "convention": "  conv"}


def _mark(r: RowResult) -> str:
    if r.role == "convention":
        return f"  conv +-{100 * r.convention_band:.0f}%"
    return _MARKS.get(r.role, "")


def validation_report(results: Sequence[TableResult], in_sample: bool = False) -> str:
    """Per row: published, predicted and error; then the average and worst per table.

    Calibration rows are marked ``cal`` and left out of the statistics; with ``in_sample``
    (every row was fitted, ``libra-opt validate --calibrate-rows all``) the statistics are
    labelled as fitted rows, not validation rows.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult
    >>> r = TableResult("t", "T", (RowResult("a", "S", "dev", "step_time_s", 2.0, 2.1, 2.1, False),))
    >>> print(validation_report([r]).splitlines()[-1])
      t: 1 validation rows, average |error| 5.00 %, worst 5.00 %
    """
    kind = "fitted rows (in-sample)" if in_sample else "validation rows"
    lines: list[str] = []
    for res in results:
        lines.append(f"{res.name}: {res.title}")
        lines.append(f"  {'row':<42}{'source':<10}{'metric':<24}{'published':>11}"
                     f"{'predicted':>11}{'error':>9}")
        for r in res.rows:
            mark = _mark(r)
            lines.append(f"  {r.name[:41]:<42}{r.source[:9]:<10}{r.metric:<24}"
                         f"{r.published:>11.4g}{r.predicted:>11.4g}{100 * r.error:>+8.1f}%{mark}")
        n = len(res.validation_rows)
        if n:
            lines.append(f"  {res.name}: {n} {kind}, average |error| "
                         f"{100 * res.mean_abs_error:.2f} %, worst {100 * res.worst_abs_error:.2f} %")
        else:
            lines.append(f"  {res.name}: no validation rows (all rows calibrate)")
    pool = [abs(r.error) for res in results for r in res.validation_rows]
    if len(results) > 1 and pool:
        lines.append(f"all {len(results)} tables: {len(pool)} {kind}, average |error| "
                     f"{100 * sum(pool) / len(pool):.2f} %, worst {100 * max(pool):.2f} %")
    return "\n".join(lines)


def stack_report(summaries: Sequence[StackSummary], in_sample: bool = False) -> str:
    """One table per software stack (``summaries`` from
    :func:`~libra_opt.explore.ranking.stack_summaries`): its rows (calibration rows marked
    ``cal`` for the device constants and ``cal-stack`` for the stack's constant,
    convention-dependent rows ``conv`` with their band), the out-of-sample average and worst
    error, then the figure pooled over the stacks' out-of-sample rows.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 2.0, 2.0, 2.0, True, stack="s",
    ...                   calibrate_stack=True),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.1, 2.1, False, stack="s"))
    >>> from libra_opt.explore.ranking import stack_summaries
    >>> print(stack_report(stack_summaries([TableResult("t", "T", rows)])).splitlines()[-2])
      s: 1 out-of-sample rows, average |error| 5.00 %, worst 5.00 % (calibrated on: a)
    """
    kind = "fitted rows (in-sample)" if in_sample else "out-of-sample rows"
    lines = ["per software stack (device constants fitted on every row: in-sample)" if in_sample
             else "per software stack (out-of-sample: rows neither calibrated on nor "
             "convention-dependent)"]
    for st in summaries:
        lines.append(f"stack {st.stack}")
        for r in st.rows:
            lines.append(f"  {r.name[:46]:<47}{r.device:<11}{100 * r.error:>+8.1f}%{_mark(r)}")
        cal = [r.name for r in st.rows if r.role in ("device", "stack")]
        n = len(st.judged)
        where = f" (calibrated on: {'; '.join(cal)})" if cal else ""
        if n:
            lines.append(f"  {st.stack}: {n} {kind}, average |error| "
                         f"{100 * st.mean_abs_error:.2f} %, worst {100 * st.worst_abs_error:.2f} %"
                         f"{where}")
        else:
            lines.append(f"  {st.stack}: no {kind}{where}")
    judged = [abs(r.error) for st in summaries for r in st.judged]
    if judged:
        lines.append(f"pooled over all stacks: {len(judged)} {kind}, average |error| "
                     f"{100 * sum(judged) / len(judged):.2f} %, worst {100 * max(judged):.2f} %")
    return "\n".join(lines)


def variant_report(sets: Sequence[VariantRanking]) -> str:
    """Per variant set (``sets`` from :func:`~libra_opt.explore.ranking.variant_rankings`):
    Spearman's rank correlation between predicted and measured cost
    (GPU-seconds per sample), the regret of the model's pick, and the two picks.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 1.0, 1.1, 1.1, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.0, 2.0, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0))
    >>> from libra_opt.explore.ranking import variant_rankings
    >>> print(variant_report(variant_rankings([TableResult("t", "T", rows)])).splitlines()[-1])
      v: 2 variants, Spearman +1.00, regret 0.00 % (model picks a; measured best a)
    """
    if not sets:
        return "no variant sets"
    lines = ["published parallelization variants (cost = GPU-seconds per sample)"]
    for v in sets:
        rho = "n/a" if v.spearman != v.spearman else f"{v.spearman:+.2f}"
        lines.append(f"  {v.name}: {len(v.rows)} variants, Spearman {rho}, regret "
                     f"{100 * v.regret:.2f} % (model picks {v.pick}; measured best {v.best})")
    return "\n".join(lines)


def plot_variants(sets: Sequence[VariantRanking], ax=None):
    """Predicted vs measured cost (GPU-seconds per sample) of the variants of each set
    (``sets`` from :func:`~libra_opt.explore.ranking.variant_rankings`), normalised by the
    set's measured best; one colour per set, the diagonal drawn.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 1.0, 1.1, 1.1, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.0, 2.0, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0))
    >>> from libra_opt.explore.ranking import variant_rankings
    >>> fig = plot_variants(variant_rankings([TableResult("t", "T", rows)]))
    >>> fig.axes[0].get_xlabel()
    'measured cost / measured best'
    >>> plt.close(fig)
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(5.5, 5.0), layout="constrained")
    else:
        fig = ax.figure
    lo, hi = 1.0, 1.0
    for i, v in enumerate(sets):
        best = min(v.measured_cost)
        xs = [c / best for c in v.measured_cost]
        ys = [c / best for c in v.predicted_cost]
        rho = "n/a" if v.spearman != v.spearman else f"{v.spearman:+.2f}"
        ax.plot(xs, ys, "o-", color=f"C{i % 10}", lw=0.6, ms=4,
                label=f"{v.name} (rho {rho}, regret {100 * v.regret:.1f} %)")
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax.set_xlabel("measured cost / measured best")
    ax.set_ylabel("predicted cost / measured best")
    ax.set_title("Parallelization variants: predicted vs measured GPU-seconds per sample",
                 fontsize=9)
    ax.legend(fontsize=6)
    return fig


def plot_validation(results: Sequence[TableResult], ax=None):
    """Predicted over published step time of every row (one point per row, grouped by table).

    Rows published as throughput (TFLOP/s, MFU) are converted: at a fixed configuration the
    step time is inversely proportional to them, so the ratio is ``published / predicted``.
    Above 1 the model is too slow, below 1 too fast; the +-3.5 % and +-8 % bands are drawn
    and calibration rows are hollow.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult
    >>> r = TableResult("t", "T", (RowResult("a", "S", "dev", "step_time_s", 2.0, 2.1, 2.1, False),))
    >>> fig = plot_validation([r])
    >>> fig.axes[0].get_ylabel()
    'predicted / published step time'
    >>> plt.close(fig)
    """
    if ax is None:
        fig, ax = plt.subplots(figsize=(8.0, 4.2), layout="constrained")
    else:
        fig = ax.figure
    i = 0
    ticks, labels = [], []
    for res in results:
        xs = list(range(i, i + len(res.rows)))
        for x, r in zip(xs, res.rows, strict=True):
            ratio = r.time_ratio
            ax.plot([x], [ratio], "o", color="C0" if not r.calibrate else "none",
                    markeredgecolor="C1" if r.role == "convention" else "C0")
            ticks.append(x)
            labels.append("\n".join(textwrap.wrap(r.name, 26)))   # whole, never cut
        if xs:
            ax.text(xs[0], 1.0, res.name, fontsize=8, va="bottom",
                    transform=ax.get_xaxis_transform())
        i += len(res.rows) + 1
    ax.axhline(1.0, color="k", lw=0.8)
    for band, alpha in ((0.035, 0.18), (0.08, 0.08)):
        ax.axhspan(1 - band, 1 + band, color="C2", alpha=alpha, lw=0)
    ax.set_xticks(ticks, labels, rotation=75, fontsize=6)
    ax.set_ylabel("predicted / published step time")
    ax.set_title("Step-time model vs published runs (hollow: calibration rows; bands ±3.5 %, ±8 %)",
                 fontsize=9, pad=14)
    lo = min([0.85] + [r.time_ratio - 0.02 for res in results for r in res.rows])
    hi = max([1.12] + [r.time_ratio + 0.02 for res in results for r in res.rows])
    ax.set_ylim(lo, hi)
    return fig
