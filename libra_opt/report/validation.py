"""Text table and predicted-vs-published plot of a validation run (``libra-opt validate``)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib.pyplot as plt

from libra_opt.generators.validation import TableResult

__all__ = ["validation_report", "plot_validation"]


def validation_report(results: Sequence[TableResult], in_sample: bool = False) -> str:
    """Per row: published, predicted and error; then the average and worst per table.

    Calibration rows are marked ``cal`` and left out of the statistics; with ``in_sample``
    (every row was fitted, ``libra-opt validate --calibrate-rows all``) the statistics are
    labelled as fitted rows, not validation rows.

    Examples
    --------
    >>> from libra_opt.generators.validation import RowResult, TableResult
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
            mark = "  cal" if r.calibrate else ""
            lines.append(f"  {r.name[:41]:<42}{r.source[:9]:<10}{r.metric:<24}"
                         f"{r.published:>11.4g}{r.predicted:>11.4g}{100 * r.error:>+8.1f}%{mark}")
        n = len(res.validation_rows)
        if n:
            lines.append(f"  {res.name}: {n} {kind}, average |error| "
                         f"{100 * res.mean_abs_error:.2f} %, worst {100 * res.worst_abs_error:.2f} %")
        else:
            lines.append(f"  {res.name}: no validation rows (all rows calibrate)")
    pooled = [abs(r.error) for res in results for r in res.validation_rows]
    if len(results) > 1 and pooled:
        lines.append(f"all {len(results)} tables: {len(pooled)} {kind}, average |error| "
                     f"{100 * sum(pooled) / len(pooled):.2f} %, worst {100 * max(pooled):.2f} %")
    return "\n".join(lines)


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
    >>> from libra_opt.generators.validation import RowResult, TableResult
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
                    markeredgecolor="C0")
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
