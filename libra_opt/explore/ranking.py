"""Validation statistics across tables: per software stack, and the ranking of published
parallelization variants of one model.

:func:`stack_summaries` pools the out-of-sample rows of every table by software stack.
:func:`variant_rankings` compares, within each ``variant_set``, the predicted and measured
order of the variants' cost (GPU-seconds per sample) by Spearman's rank correlation and by
the regret of the model's pick (its measured cost over the measured cheapest, minus 1).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import spearmanr

from libra_opt.explore.validation import RowResult, TableResult, abs_errors

__all__ = [
    "StackSummary",
    "VariantRanking",
    "stack_summaries",
    "variant_rankings",
    "spearman",
    "SPEARMAN_TARGET",
    "REGRET_TARGET",
]

#: Rank correlation of predicted and measured cost a variant set must reach.
SPEARMAN_TARGET = 0.9
#: Largest regret of the model's pick (measured cost over the measured best, minus 1).
REGRET_TARGET = 0.03


@dataclass(frozen=True)
class StackSummary:
    """The rows of one software stack and their out-of-sample error statistics."""

    stack: str
    rows: tuple[RowResult, ...]

    @property
    def judged(self) -> tuple[RowResult, ...]:
        """Out-of-sample rows: not used for calibration, not convention-dependent."""
        return tuple(r for r in self.rows if r.role == "validation")

    @property
    def mean_abs_error(self) -> float:
        """Average absolute relative error over :attr:`judged` (NaN if none)."""
        return abs_errors(r.error for r in self.judged)[0]

    @property
    def worst_abs_error(self) -> float:
        """Largest absolute relative error over :attr:`judged` (NaN if none)."""
        return abs_errors(r.error for r in self.judged)[1]


def stack_summaries(results: Sequence[TableResult]) -> tuple[StackSummary, ...]:
    """Rows of all ``results`` grouped by software stack, in order of first appearance."""
    groups: dict[str, list[RowResult]] = {}
    for t in results:
        for r in t.rows:
            groups.setdefault(r.stack or "(none)", []).append(r)
    return tuple(StackSummary(k, tuple(v)) for k, v in groups.items())


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (ties averaged; NaN for a constant sequence or fewer than two
    values): without ties :math:`1 - 6 \\sum_i d_i^2 / (n (n^2 - 1))` with :math:`d_i` the
    difference of the ranks of item ``i`` [1]_ (:func:`scipy.stats.spearmanr`).

    References
    ----------
    .. [1] Spearman, "The proof and measurement of association between two things", Am. J.
       Psychol. 15(1), 1904.

    Examples
    --------
    >>> spearman([1, 2, 3, 4], [10, 20, 30, 40]), spearman([1, 2, 3], [3, 2, 1])
    (1.0, -1.0)
    >>> round(spearman([1, 2, 3, 4], [1, 3, 2, 4]), 6)   # 1 - 6 * 2 / (4 * 15)
    0.8
    """
    if len(a) != len(b) or len(a) < 2:
        return math.nan
    if min(a) == max(a) or min(b) == max(b):  # constant: no ranking to correlate
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rho = spearmanr(a, b).statistic
    return float(rho)


@dataclass(frozen=True)
class VariantRanking:
    """Predicted vs measured cost (GPU-seconds per sample) of the variants of one set."""

    name: str
    rows: tuple[RowResult, ...]
    measured_cost: tuple[float, ...]
    predicted_cost: tuple[float, ...]

    @property
    def spearman(self) -> float:
        """Rank correlation between predicted and measured cost."""
        return spearman(self.predicted_cost, self.measured_cost)

    @property
    def regret(self) -> float:
        """Measured cost of the predicted cheapest variant / measured cheapest - 1."""
        pick = min(range(len(self.rows)), key=lambda i: self.predicted_cost[i])
        return self.measured_cost[pick] / min(self.measured_cost) - 1.0

    @property
    def pick(self) -> str:
        """Name of the variant the model predicts cheapest."""
        return self.rows[min(range(len(self.rows)), key=lambda i: self.predicted_cost[i])].name

    @property
    def best(self) -> str:
        """Name of the measured cheapest variant."""
        return self.rows[min(range(len(self.rows)), key=lambda i: self.measured_cost[i])].name

    @property
    def judged_by(self) -> str:
        """``rank`` (Spearman and regret) or ``regret`` (regret alone), as the set's table judges it."""
        return "regret" if all(r.variant_judge == "regret" for r in self.rows) else "rank"

    @property
    def meets_target(self) -> bool:
        """Regret at most :data:`REGRET_TARGET` and, judged by rank, Spearman at least
        :data:`SPEARMAN_TARGET`.
        """
        if not self.regret <= REGRET_TARGET + 1e-12:
            return False
        return self.judged_by == "regret" or self.spearman >= SPEARMAN_TARGET - 1e-12

    @property
    def mean_abs_error(self) -> float:
        """Average absolute error of the set's judged rows (NaN if none)."""
        return abs_errors(r.error for r in self.rows if r.role == "validation")[0]


def _cost(r: RowResult, t_s: float) -> float:
    return r.n_npus * t_s / r.samples_per_step


def variant_rankings(results: Sequence[TableResult]) -> tuple[VariantRanking, ...]:
    """One :class:`VariantRanking` per ``variant_set`` of at least two rows.

    Examples
    --------
    Two variants, the model ordering them right but overestimating the faster one by 10 %:

    >>> a = RowResult("a", "s", "d", "step_time_s", 1.0, 1.1, 1.1, False, variant_set="v",
    ...               n_npus=8, samples_per_step=8.0)
    >>> b = RowResult("b", "s", "d", "step_time_s", 2.0, 2.0, 2.0, False, variant_set="v",
    ...               n_npus=8, samples_per_step=8.0)
    >>> (v,) = variant_rankings([TableResult("t", "t", (a, b))])
    >>> round(v.spearman, 12), v.regret, v.pick
    (1.0, 0.0, 'a')
    """
    groups: dict[str, list[RowResult]] = {}
    for t in results:
        for r in t.rows:
            if r.variant_set:
                groups.setdefault(r.variant_set, []).append(r)
    out = []
    for name, rows in groups.items():
        if len(rows) < 2:
            continue
        out.append(VariantRanking(
            name, tuple(rows),
            tuple(_cost(r, r.measured_step_time_s) for r in rows),
            tuple(_cost(r, r.step_time_s) for r in rows),
        ))
    return tuple(out)
