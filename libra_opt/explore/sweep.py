"""Parameter sweeps: re-solve one built problem over a range of budgets or bounds (DPP)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from libra_opt.errors import (
    InfeasibleDesignError,
    InputError,
    LibraOptError,
    UnboundedDesignError,
)
from libra_opt.optimize.problem import BandwidthProblem, build_problem, solve
from libra_opt.scenario.scenario import Scenario

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
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: label: no constraint labelled 'budget_usd' in this problem (labels: sum(bw) == 300)
    """
    labels = sweep_labels(problem)
    if label not in labels:
        raise InputError(
            f"no constraint labelled {label!r} in this problem (labels: "
            f"{', '.join(labels) or 'none'})",
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
    problem: Scenario | BandwidthProblem,
    label: str,
    values: Sequence[float],
    progress: Callable[[int, int, float], None] | None = None,
) -> pd.DataFrame:
    """Solve the same problem for every right-hand side ``values`` of constraint ``label``.

    The program is compiled once; each value only updates a ``cvxpy.Parameter``.

    Parameters
    ----------
    problem : Scenario or BandwidthProblem
    label : str
        ``budget_usd``, ``power_w`` or the label of a linear constraint (its text).
    values : sequence of float
        Right-hand sides to solve for (checked first by :func:`check_sweep`).
    progress : callable, optional
        Called as ``progress(i, n, value)`` after each solve.

    Returns
    -------
    pandas.DataFrame
        One row per value: ``value``, ``status`` (``optimal``/``infeasible``/``unbounded``/
        ``error``, with ``message``),
        ``objective``, ``weighted_step_time_s``, ``network_cost_usd``, ``network_power_w``,
        ``bw_<dim>_gbps`` per dimension, ``shadow_price`` of the swept constraint,
        ``solve_s`` and ``compile_s``.

    Examples
    --------
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> df = sweep(toy_scenario(), "sum(bw) == 300", [150, 300, 600])
    >>> df["weighted_step_time_s"].round(6).tolist()   # 0.01 + 1.5 GB / total
    [0.02, 0.015, 0.0125]
    """
    if isinstance(problem, Scenario):
        problem = build_problem(problem)
    values = check_sweep(problem, label, values)
    names = problem.scenario.fabric.names
    records = []
    for i, v in enumerate(values):
        t0 = time.perf_counter()
        rec: dict[str, object] = {"value": float(v)}
        try:
            sol = solve(problem, rhs={label: float(v)}, with_baselines=False)
        except InfeasibleDesignError as exc:
            rec.update(status="infeasible", message=str(exc))
        except UnboundedDesignError as exc:
            rec.update(status="unbounded", message=str(exc))
        except InputError:
            raise  # a wrong label or value is the caller's mistake, not a point of the sweep
        except LibraOptError as exc:  # a solver failure at one point does not end the sweep
            logger.warning("sweep %s=%g: %s", label, v, exc)
            rec.update(status="error", message=str(exc))
        else:
            ev = sol.evaluation
            shadow = next((c.shadow_price for c in sol.constraints if c.label == label), np.nan)
            rec.update(
                status="optimal",
                objective=sol.objective_value,
                weighted_step_time_s=ev.weighted_step_time_s,
                network_cost_usd=ev.cost.network_cost_usd,
                network_power_w=ev.cost.network_power_w,
                shadow_price=shadow,
                compile_s=sol.solver.compile_s,
                solve_s=sol.solver.solve_s,
                **{f"bw_{n}_gbps": float(b) for n, b in zip(names, sol.bw_gbps, strict=True)},
            )
        rec["wall_s"] = time.perf_counter() - t0
        records.append(rec)
        logger.info("sweep %s: %d/%d value=%g status=%s", label, i + 1, len(values), v, rec["status"])
        if progress is not None:
            progress(i + 1, len(values), float(v))
    return pd.DataFrame.from_records(records)
