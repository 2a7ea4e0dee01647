"""Sensitivities of an optimum: what one more $, W or GB/s is worth, per dimension,
**re-optimized** (the duals: the budget row's shadow price, the change per GB/s of moving a
row that bounds one dimension alone; the sign convention of
:class:`~libra_opt.optimize.solution.ConstraintReport`) or on the **model** (the one-sided
derivative of the weighted step time when dimension ``d`` alone gets more bandwidth, a
forward step of ``1e-7 B_d``: often 0 at a pipelined optimum, where another dimension ties).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from libra_opt.optimize.solution import Solution
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import scenario_rows

if TYPE_CHECKING:  # pandas is imported on first use: a fifth of a second
    import pandas as pd

__all__ = ["sensitivity", "FORWARD_STEP"]

#: Relative forward step of the model derivative.
FORWARD_STEP = 1e-7


def sensitivity(solution: Solution) -> pd.DataFrame:
    """Marginal value of budget and bandwidth per dimension at an optimum.

    One row per dimension: ``dim``, ``bw_gbps``, ``usd_per_gbps``, ``step_s_per_gbps`` (d
    weighted step time / d ``B_d`` on the model, <= 0), ``step_s_per_usd`` (NaN when free),
    ``bound_objective_per_gbps`` and ``budget_objective_per_usd`` (the duals of the dimension's
    bound rows and of the budget row); ``attrs`` add ``objective``, ``power_objective_per_w``
    and ``total_bw_objective_per_gbps`` (by label).

    Examples
    --------
    One 1 GB all-reduce over 2 x 2, sequential collectives: the step is
    ``0.01 + 1 / B_node + 0.5 / B_pod`` (GB, GB/s), so ``d / d B_node = -1 / B_node^2``.

    >>> import dataclasses
    >>> from libra_opt.optimize.problem import solve
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> sol = solve(dataclasses.replace(toy_scenario(), collective_model="sequential"))
    >>> df = sensitivity(sol)
    >>> b = sol.bw_gbps
    >>> np.allclose(df.step_s_per_gbps, [-1 / b[0] ** 2, -0.5 / b[1] ** 2], rtol=1e-5)
    True
    """
    scen, ev = solution.scenario, solution.evaluation
    bw = np.asarray(solution.bw_gbps, dtype=float)
    n = scen.fabric.n_dims
    kappa = np.asarray(scen.coefficients.usd_per_gbps, dtype=float)
    base = ev.weighted_step_time_s
    d_step = np.zeros(n)
    for i in range(n):
        h = FORWARD_STEP * max(bw[i], 1e-3)
        probe = bw.copy()
        probe[i] += h
        d_step[i] = (evaluate(scen, probe).weighted_step_time_s - base) / h
    with np.errstate(divide="ignore", invalid="ignore"):
        per_usd = np.where(kappa > 0, d_step / kappa, np.nan)
    reports = {c.label: c for c in solution.constraints}
    bound = np.zeros(n)
    for row in scenario_rows(scen):  # the rows that bound one dimension alone
        nz = np.flatnonzero(np.asarray(row.a) != 0)
        rep = reports.get(row.label)
        if nz.size != 1 or rep is None or not rep.active:
            continue
        bound[nz[0]] += rep.shadow_price * float(np.asarray(row.a)[nz[0]])
    budget = reports["budget_usd"].shadow_price if "budget_usd" in reports else np.nan
    power = reports["power_w"].shadow_price if "power_w" in reports else np.nan
    totals = {
        c.label: reports[c.label].shadow_price
        for c in scen.constraints
        if c.label in reports and all(x == 1 for x in c.bw_coef)
        and not c.cost_coef and not c.power_coef
    }
    import pandas as pd

    df = pd.DataFrame({
        "dim": list(scen.fabric.names),
        "bw_gbps": bw,
        "usd_per_gbps": kappa,
        "step_s_per_gbps": d_step,
        "step_s_per_usd": per_usd,
        "bound_objective_per_gbps": bound,
        "budget_objective_per_usd": np.full(n, budget, dtype=float),
    })
    df.attrs.update(objective=solution.objective, budget_objective_per_usd=float(budget),
                    power_objective_per_w=float(power), total_bw_objective_per_gbps=totals)
    return df
