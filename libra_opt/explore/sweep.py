"""Parameter sweeps: the public :func:`sweep` (a grid of axes, or one constraint's bound)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from libra_opt.errors import InputError
from libra_opt.explore.overrides import Resolver, ScenarioBase
from libra_opt.optimize.problem import BandwidthProblem, build_problem
from libra_opt.scenario.compile import compile
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import ScenarioSpec

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["sweep", "check_sweep", "sweep_labels", "MAX_SWEEP_POINTS", "POSITIVE_LABELS"]

logger = logging.getLogger(__name__)

MAX_SWEEP_POINTS = 100_000
"""Most points one sweep solves (each point is a solve)."""
POSITIVE_LABELS = ("budget_usd", "power_w")
"""Constraints whose right-hand side must be > 0 (a budget or a power cap)."""


def sweep_labels(problem: BandwidthProblem) -> tuple[str, ...]:
    """Labels of the constraints of ``problem`` whose right-hand side can be swept."""
    return tuple(dict.fromkeys(r.label for r in problem.rows))


def check_sweep(problem: BandwidthProblem, label: str, values: Sequence[float]) -> list[float]:
    """Validate a sweep before solving anything; returns the values as floats.

    ``budget_usd`` (and ``power_w`` with a power model) may be swept on a problem without
    that cap: the sweep adds it.

    Raises
    ------
    InputError
        ``field="label"`` when ``problem`` has no constraint ``label``; ``field="values"``
        when there are no values or more than :data:`MAX_SWEEP_POINTS`, a value is not
        finite, or a ``budget_usd``/``power_w`` value is not > 0.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> from libra_opt.optimize.problem import build_problem
    >>> check_sweep(build_problem(toy_scenario()), "budget_usd", [1e6])
    [1000000.0]
    >>> check_sweep(build_problem(toy_scenario()), "bw.pod <= 3", [1])
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: label: no constraint labelled 'bw.pod <= 3' in this problem (labels: sum(bw) == 300, budget_usd, power_w)
    """
    labels = sweep_labels(problem)
    addable = ("budget_usd", *(("power_w",) if problem.scenario.cost_model.has_power else ()))
    if label not in labels and label not in addable:
        raise InputError(
            f"no constraint labelled {label!r} in this problem (labels: "
            f"{', '.join(dict.fromkeys([*labels, *addable]))})",
            field="label",
        )
    if len(values) > MAX_SWEEP_POINTS:
        raise InputError(f"{len(values)} values; a sweep solves at most {MAX_SWEEP_POINTS:,} "
                         "points", field="values")
    try:
        vals = [float(v) for v in values]
    except (TypeError, ValueError):
        raise InputError(f"values must be numbers, got {list(values)!r}", field="values") from None
    if not vals:
        raise InputError("no values to sweep", field="values")
    bad = [v for v in vals if not np.isfinite(v)]
    if bad:
        raise InputError(f"values must be finite, got {bad[0]!r}", field="values")
    if label in POSITIVE_LABELS:
        bad = [v for v in vals if v <= 0]
        if bad:
            raise InputError(f"{label} values must be > 0, got {bad[0]:g}", field="values")
    return vals


def sweep(
    problem: Scenario | BandwidthProblem | ScenarioBase | ScenarioSpec,
    axes: Mapping[str, Sequence[Any]] | str,
    values: Sequence[float] | None = None,
    progress: Any = None,
    *,
    zip: bool = False,  # noqa: A002 - the documented keyword
    executor: Any = "serial",
    max_workers: int | None = None,
    resolve: Resolver | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Solve a problem over a grid of axes (or, the older form, one constraint's bound).

    ``sweep(problem, {path: values, ...}, zip=..., executor=..., progress=...,
    max_workers=...)`` is :func:`libra_opt.explore.grid.sweep_grid`: any number of axes
    (caps, constraint labels, scenario fields by dotted path), run serially, on local
    processes or on Dask, into a DataFrame with fixed columns (see
    :mod:`libra_opt.explore.grid`).

    ``sweep(problem, label, values, progress=None)`` is the one-axis form kept from before:
    ``label`` is ``budget_usd``, ``power_w`` or a constraint's text; the axis column is
    named ``value`` and the swept row's shadow price ``shadow_price``; ``progress`` is
    called as ``progress(i, n, value)``.

    Parameters
    ----------
    problem : Scenario, BandwidthProblem, ScenarioBase or ScenarioSpec
        (:func:`libra_opt.sweep` also takes a file or example name.)
    axes : mapping of str to sequence, or str
        The grid, or (older form) one label.
    values : sequence of float, optional
        Older form only: the label's right-hand sides (checked by :func:`check_sweep`).
    progress : bool or callable, optional
    zip, executor, max_workers, resolve, **options
        See :func:`libra_opt.explore.grid.sweep_grid` (``scheduler``, ``batch_size``,
        ``out``, ``resume``, ``overwrite``).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = sweep(toy_scenario(), "sum(bw) == 300", [150, 300, 600])
    >>> df["weighted_step_time_s"].round(6).tolist()   # 0.01 + 1.5 GB / total
    [0.02, 0.015, 0.0125]
    >>> df = sweep(toy_scenario(), {"budget_usd": [2e5, 4e5], "fabric.dims.pod.size": [4, 8]},
    ...            progress=False)
    >>> df.shape[0], df.columns[:3].tolist()
    (4, ['budget_usd', 'fabric.dims.pod.size', 'status'])
    """
    from libra_opt.explore.grid import sweep_grid

    if not isinstance(axes, str):
        if values is not None:
            raise InputError("give the values inside the axes mapping", field="values")
        return sweep_grid(problem, axes, zip=zip, executor=executor, progress=progress,
                          max_workers=max_workers, resolve=resolve, **options)
    label = axes
    if isinstance(problem, BandwidthProblem):
        built = problem
    elif isinstance(problem, ScenarioBase):
        built = build_problem(problem.scenario)
    elif isinstance(problem, ScenarioSpec):
        built = build_problem(compile(resolve(problem) if resolve is not None else problem))
    elif isinstance(problem, Scenario):
        built = build_problem(problem)
    else:
        raise InputError(f"expected a Scenario, ScenarioSpec or BandwidthProblem, got "
                         f"{type(problem).__name__} (libra_opt.sweep reads a file or example "
                         "name)", field="problem")
    vals = check_sweep(built, label, values if values is not None else [])
    legacy = progress

    def relay(done: int, total: int, point: Mapping[str, Any]) -> None:
        legacy(done, total, float(point[label]))

    df = sweep_grid(built, {label: vals}, executor=executor, max_workers=max_workers,
                    progress=relay if callable(legacy) else False, **options)
    return df.rename(columns={label: "value", f"shadow_{label}": "shadow_price"})
