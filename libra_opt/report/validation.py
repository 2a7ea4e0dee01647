"""Text table and predicted-vs-published plot of a validation run (``libra-opt validate``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.lines import Line2D

from libra_opt.explore.ranking import REGRET_TARGET, SPEARMAN_TARGET, StackSummary, VariantRanking
from libra_opt.explore.validation import RowResult, TableResult, abs_errors
from libra_opt.report._style import _axes, _legend_below, series_styles
from libra_opt.report.text import format_column, format_pct, table

__all__ = ["validation_report", "plot_validation", "stack_report", "variant_report",
           "plot_variants", "error_summary"]

def _mark(r: RowResult) -> str:
    """A row's note: device- or stack-constant calibration, or convention-dependent."""
    if r.role == "convention":
        return f"conv +-{100 * r.convention_band:.0f}%"
    return {"device": "cal", "stack": "cal-stack"}.get(r.role, "")


def _count(n: int, noun: str, note: str = "") -> str:
    """``'1 validation row'``, ``'2 validation rows'``; ``note`` after the noun."""
    return f"{n} {noun}{'' if n == 1 else 's'}{note}"


def error_summary(errors: Sequence[float]) -> str:
    """``average |error| 0.80 %, worst 0.80 %`` of relative ``errors``: the one rounding of
    every figure ``libra-opt validate`` prints, and of a document quoting them.

    Examples
    --------
    >>> error_summary([0.008045882402590743]), error_summary([0.05, -0.06])
    ('average |error| 0.80 %, worst 0.80 %', 'average |error| 5.50 %, worst 6.00 %')
    """
    average, worst = abs_errors(errors)
    return f"average |error| {100 * average:.2f} %, worst {100 * worst:.2f} %"


def _judged(errors: Sequence[float], kind: tuple[str, str]) -> str:
    """``'2 validation rows, average |error| 1.00 %, worst 1.50 %'``."""
    return f"{_count(len(errors), *kind)}, {error_summary(errors)}"


def _rows_table(header: list[str], rows: list[list[str]], marks: list[str], align: str) -> list[str]:
    """``rows`` as an indented table, with a ``note`` column when a row has a mark."""
    if any(marks):
        header, align = [*header, "note"], align + "l"
        rows = [[*r, m] for r, m in zip(rows, marks, strict=True)]
    return ["  " + ln for ln in table(header, rows, align).splitlines()]


def validation_report(results: Sequence[TableResult], in_sample: bool = False) -> str:
    """Per row: published, predicted and error; then the average and worst per table.

    Calibration rows are marked ``cal`` and left out of the statistics; with ``in_sample``
    (every row was fitted) the statistics are labelled as fitted rows.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult, abs_errors
    >>> r = TableResult("t", "T", (RowResult("a", "S", "dev", "step_time_s", 2.0, 2.1, 2.1, False),))
    >>> print(validation_report([r]).splitlines()[-1])
      t: 1 validation row, average |error| 5.00 %, worst 5.00 %
    """
    kind = ("fitted row", " (in-sample)") if in_sample else ("validation row", "")
    lines: list[str] = []
    for res in results:
        lines.append(f"{res.name}: {res.title}")
        values = format_column([r.published for r in res.rows]
                               + [r.predicted for r in res.rows])   # one unit: one format
        n = len(res.rows)
        rows = [[r.name, r.source, r.metric, values[i], values[n + i],
                 format_pct(100 * r.error, 1, sign=True)] for i, r in enumerate(res.rows)]
        lines += _rows_table(["row", "source", "metric", "published", "predicted", "error"],
                             rows, [_mark(r) for r in res.rows], "lllrrr")
        judged = [r.error for r in res.validation_rows]
        lines.append(f"  {res.name}: {_judged(judged, kind)}" if judged else
                     f"  {res.name}: no validation rows (all rows calibrate)")
    pool = [r.error for res in results for r in res.validation_rows]
    if len(results) > 1 and pool:
        lines.append(f"all {len(results)} tables: {_judged(pool, kind)}")
    return "\n".join(lines)


def stack_report(summaries: Sequence[StackSummary], in_sample: bool = False) -> str:
    """One table per software stack (:func:`~libra_opt.explore.ranking.stack_summaries`):
    its rows, their out-of-sample average and worst error; then the pooled figure.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult, abs_errors
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 2.0, 2.0, 2.0, True, stack="s",
    ...                   calibrate_stack=True),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.1, 2.1, False, stack="s"))
    >>> from libra_opt.explore.ranking import stack_summaries
    >>> print(stack_report(stack_summaries([TableResult("t", "T", rows)])).splitlines()[-2])
      s: 1 out-of-sample row, average |error| 5.00 %, worst 5.00 % (calibrated on: a)
    """
    kind = ("fitted row", " (in-sample)") if in_sample else ("out-of-sample row", "")
    lines = ["per software stack (device constants fitted on every row: in-sample)" if in_sample
             else "per software stack (out-of-sample: rows neither calibrated on nor "
             "convention-dependent)"]
    for st in summaries:
        lines.append(f"stack {st.stack}")
        lines += _rows_table(["row", "device", "error"],
                             [[r.name, r.device, format_pct(100 * r.error, 1, sign=True)]
                              for r in st.rows], [_mark(r) for r in st.rows], "llr")
        cal = [r.name for r in st.rows if r.role in ("device", "stack")]
        where = f" (calibrated on: {'; '.join(cal)})" if cal else ""
        judged = [r.error for r in st.judged]
        lines.append(f"  {st.stack}: " + (_judged(judged, kind) if judged else
                                          f"no {kind[0]}s{kind[1]}") + where)
    pool = [r.error for st in summaries for r in st.judged]
    if pool:
        lines.append(f"pooled over all stacks: {_judged(pool, kind)}")
    return "\n".join(lines)


def variant_report(sets: Sequence[VariantRanking]) -> str:
    """Per variant set (:func:`~libra_opt.explore.ranking.variant_rankings`): Spearman's
    rank correlation of predicted and measured cost, the regret of the model's pick, the
    average |error|, whether it meets the ranking target and the two picks.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult, abs_errors
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 1.0, 1.1, 1.1, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.0, 2.0, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0))
    >>> from libra_opt.explore.ranking import variant_rankings
    >>> print(variant_report(variant_rankings([TableResult("t", "T", rows)])).splitlines()[-1])
      v: 2 variants, Spearman +1.00, regret 0.00 %, average |error| 5.00 %: target met (model picks a; measured best a)
    """
    if not sets:
        return "no variant sets"
    lines = ["published parallelization variants (cost = GPU-seconds per sample; target: "
             f"Spearman >= {SPEARMAN_TARGET:g} and regret <= {100 * REGRET_TARGET:g} %, or the "
             "regret alone where the table judges by regret)"]
    for v in sets:
        rho = "n/a" if v.spearman != v.spearman else f"{v.spearman:+.2f}"
        err = v.mean_abs_error
        avg = "" if err != err else f", average |error| {100 * err:.2f} %"
        judge = "judged by regret, " if v.judged_by == "regret" else ""
        verdict = "target met" if v.meets_target else "target missed"
        lines.append(f"  {v.name}: {_count(len(v.rows), 'variant')}, Spearman {rho}, regret "
                     f"{100 * v.regret:.2f} %{avg}: {judge}{verdict} (model picks {v.pick}; "
                     f"measured best {v.best})")
    return "\n".join(lines)


def plot_variants(sets: Sequence[VariantRanking], ax=None):
    """Predicted vs measured cost (GPU-seconds per sample) of the variants of each set,
    normalised by the set's measured best: one point per variant, one colour and marker
    per set, and the diagonal.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult, abs_errors
    >>> rows = (RowResult("a", "S", "d", "step_time_s", 1.0, 1.1, 1.1, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0),
    ...         RowResult("b", "S", "d", "step_time_s", 2.0, 2.0, 2.0, False, variant_set="v",
    ...                   n_npus=8, samples_per_step=8.0))
    >>> from libra_opt.explore.ranking import variant_rankings
    >>> fig = plot_variants(variant_rankings([TableResult("t", "T", rows)]))
    >>> fig.axes[0].get_xlabel()
    'measured cost / measured best'
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    fig, ax = _axes(ax, (7.5, 6.0 + 0.12 * len(sets)))
    lo, hi = 1.0, 1.0
    for v, (colour, marker) in zip(sets, series_styles(len(sets)), strict=True):
        best = min(v.measured_cost)
        xs = [c / best for c in v.measured_cost]
        ys = [c / best for c in v.predicted_cost]
        rho = "n/a" if v.spearman != v.spearman else f"{v.spearman:+.2f}"
        ax.plot(xs, ys, linestyle="none", marker=marker, color=colour, ms=5,
                label=f"{v.name} (rho {rho}, regret {100 * v.regret:.1f} %)")
        lo, hi = min(lo, *xs, *ys), max(hi, *xs, *ys)
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, label="predicted = measured")
    ax.set_xlabel("measured cost / measured best")
    ax.set_ylabel("predicted cost / measured best")
    ax.set_title("Parallelization variants: predicted vs measured GPU-seconds per sample",
                 fontsize=9)
    _legend_below(ax, ncols=2)
    return fig


#: Point of each kind of row in validation.png: legend text and marker style.
_ROW_STYLES: dict[str, tuple[str, dict[str, Any]]] = {
    "validation": ("validation row (judged)", {"marker": "o", "color": "C0"}),
    "calibration": ("calibration row (constants fitted on it; not judged)",
                    {"marker": "o", "color": "C0", "markerfacecolor": "none"}),
    "convention": ("convention-dependent row (reported, not judged)",
                   {"marker": "D", "color": "C1", "markerfacecolor": "none",
                    "markeredgewidth": 1.5}),
}


def _row_kind(r: RowResult) -> str:
    """``validation``, ``calibration`` or ``convention``: the key of :data:`_ROW_STYLES`."""
    if r.role == "convention":
        return "convention"
    return "calibration" if r.calibrate else "validation"


#: Layout of validation.png: inches per row, points of tick and table-name text, inches
#: per character per point (an upper bound), points between the levels of table names.
_SLOT_IN, _TICK_PT, _NAME_PT, _CHAR_IN, _LEVEL_PT = 0.17, 6.5, 7.5, 0.0095, 11


def _title_levels(ax, spans: Sequence[tuple[int, str]]) -> int:
    """Write each table's name above its first row (``spans``: first slot, name), on the
    lowest level where it clears the names there; returns the number of levels used."""
    names = [ax.annotate(name, xy=(x0 - 0.4, 1.0), xycoords=("data", "axes fraction"),
                         xytext=(0, 3), textcoords="offset points", ha="left", va="bottom",
                         fontsize=_NAME_PT) for x0, name in spans]
    ax.figure.draw_without_rendering()   # the layout, so that the names measure as drawn
    gap = _NAME_PT * ax.figure.dpi / 72.0
    ends: list[float] = []   # right end of the last name on each level (pixels)
    for t in names:
        box = t.get_window_extent()
        level = next((k for k, end in enumerate(ends) if box.x0 > end + gap), len(ends))
        if level == len(ends):
            ends.append(box.x1)
        ends[level] = box.x1
        t.xyann = (0, 3 + _LEVEL_PT * level)
    return len(ends)


def plot_validation(results: Sequence[TableResult], ax=None):
    """Predicted over published step time of every row (one point per row, grouped by table).

    Rows published as throughput (TFLOP/s, MFU) are converted: the step time is inversely
    proportional to them. Above 1 the model is too slow; the +-3.5 % and +-8 % bands are
    drawn. Calibration rows are hollow circles, convention-dependent rows hollow diamonds.

    Examples
    --------
    >>> from libra_opt.explore.validation import RowResult, TableResult, abs_errors
    >>> r = TableResult("t", "T", (RowResult("a", "S", "dev", "step_time_s", 2.0, 2.1, 2.1, False),))
    >>> fig = plot_validation([r])
    >>> fig.axes[0].get_ylabel()
    'predicted / published step time'
    >>> import matplotlib.pyplot as plt; plt.close(fig)
    """
    names = [r.name for res in results for r in res.rows]
    slots = len(names) + max(len(results) - 1, 0)   # a row each, a gap between tables
    label_in = _CHAR_IN * _TICK_PT * max((len(n) for n in names), default=0)
    fig, ax = _axes(ax, (max(8.0, 1.3 + _SLOT_IN * slots), 3.6 + label_in))
    i = 0
    ticks, labels, spans = [], [], []
    kinds: set[str] = set()
    for res in results:
        xs = list(range(i, i + len(res.rows)))
        for x, r in zip(xs, res.rows, strict=True):
            kind = _row_kind(r)
            kinds.add(kind)
            ax.plot([x], [r.time_ratio], linestyle="none", **_ROW_STYLES[kind][1])
            ticks.append(x)
            labels.append(r.name)   # whole, never cut
        if xs:
            spans.append((xs[0], res.name))
        if i:
            ax.axvline(i - 1, color="0.8", lw=0.6)
        i += len(res.rows) + 1
    ax.axhline(1.0, color="k", lw=0.8)
    for band, alpha in ((0.035, 0.18), (0.08, 0.08)):
        ax.axhspan(1 - band, 1 + band, color="C2", alpha=alpha, lw=0)
    ax.set_xticks(ticks, labels, rotation=90, fontsize=_TICK_PT)
    ax.set_xlim(-0.6, max(slots, 1) - 0.4)
    ax.set_ylabel("predicted / published step time")
    lo = min([0.85] + [r.time_ratio - 0.02 for res in results for r in res.rows])
    hi = max([1.12] + [r.time_ratio + 0.02 for res in results for r in res.rows])
    ax.set_ylim(lo, hi)
    levels = _title_levels(ax, spans)
    ax.set_title("Step-time model vs published runs (bands ±3.5 %, ±8 %)",
                 fontsize=9, pad=6 + _LEVEL_PT * levels)
    shown = [k for k in _ROW_STYLES if k in kinds]
    handles = [Line2D([], [], linestyle="none", **_ROW_STYLES[k][1]) for k in shown]
    _legend_below(ax, handles, [_ROW_STYLES[k][0] for k in shown], ncols=len(shown))
    return fig
