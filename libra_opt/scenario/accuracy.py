"""How accurately an answer is known, and the one rule that decides whether two are the same.

Every answer is re-checked by the numpy evaluation: the objective must agree with the
solver's to :data:`OBJECTIVE_REL_TOL`, every constraint hold to :data:`CONSTRAINT_REL_TOL` of
its scale. Two verified answers can so differ by solver round-off (which moves with the
solver build, the BLAS and the CPU), so every decision "these two results are the same" is
made by :func:`same` at :data:`SAME_REL_TOL`, ten times the verification tolerance, and by
nothing else: a printed note or table cell does not flip with round-off.

Examples
--------
>>> same(51_349_667.0, 51_349_581.0)        # $86 of $51.3M: 1.7e-6, round-off
True
>>> same(1.0266, 1.0267)                    # 1e-4: a real difference
False
>>> same([449.5, 66.9, 1e-9], [449.5000001, 66.9, 3e-9])   # relative to the design's size
True
>>> same(600.0 - 4.8e-9, 600.0, scale=600.0)   # a bound met to the solver's accuracy
True
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["OBJECTIVE_REL_TOL", "CONSTRAINT_REL_TOL", "SAME_REL_TOL", "same", "same_each"]

#: Relative agreement required between the solver's objective and the numpy evaluation's
#: before an answer is returned.
OBJECTIVE_REL_TOL = 1e-6
#: Relative violation of a constraint row (of the row's scale) tolerated in a returned answer.
CONSTRAINT_REL_TOL = 1e-6
#: Two results closer than this (relative to their size) are the same result: ten times the
#: accuracy every answer is verified to (:data:`OBJECTIVE_REL_TOL`, :data:`CONSTRAINT_REL_TOL`).
SAME_REL_TOL = 10 * max(OBJECTIVE_REL_TOL, CONSTRAINT_REL_TOL)


def same(a: float | Sequence[float] | np.ndarray, b: float | Sequence[float] | np.ndarray, *,
         scale: float | None = None) -> bool:
    """Whether ``a`` and ``b`` (two numbers, or two arrays of one result) are the same up
    to solver round-off: ``max |a - b| <= SAME_REL_TOL * scale``, ``scale`` (default: the
    largest magnitude of either) floored at the smallest normal double. Arrays of different
    shapes, or any NaN, are not the same."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or np.isnan(x).any() or np.isnan(y).any():
        return False
    if x.size == 0:
        return True
    ref = float(max(np.max(np.abs(x)), np.max(np.abs(y)))) if scale is None else float(scale)
    ref = max(ref, float(np.finfo(float).tiny))
    if not np.isfinite(ref):
        return bool(np.array_equal(x, y))
    return bool(np.max(np.abs(x - y)) <= SAME_REL_TOL * ref)


def same_each(a: np.ndarray, b: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """:func:`same` entry by entry, each pair at its own ``scale`` (a constraint row's).

    Examples
    --------
    >>> same_each(np.array([600.0 - 4.8e-9, 1.0]), np.array([600.0, 1.1]),
    ...           np.array([600.0, 1.1])).tolist()
    [True, False]
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ref = np.maximum(np.asarray(scale, dtype=float), np.finfo(float).tiny)
    with np.errstate(invalid="ignore"):
        close = np.abs(x - y) <= SAME_REL_TOL * ref
    return np.where(np.isfinite(ref), close, x == y)
