"""Compare fabrics on the same workloads: step time, network cost, power and TCO.

:func:`compare_fabrics` evaluates every fabric twice:

* ``equal_bw`` — at the same per-NPU bandwidth vector (the design question "what does the
  same bandwidth cost on each fabric, and does it run as fast?");
* ``equal_budget`` — each fabric gets its optimal allocation under the same network budget
  (default: the baseline's cost at equal bandwidth), so a cheaper fabric turns its savings
  into bandwidth.

Step times use the routing-aware traffic of :mod:`libra_opt.traffic.rail` by default (a fat-tree
serves all-to-all directly, a Rail-only fabric forwards cross-rail bytes through the HB
domain); ``traffic_model="hierarchical"`` uses LIBRA's model for every fabric. The
equal-budget optimum is the global one of the convex program of
:func:`libra_opt.optimize.problem.solve`, re-checked layer by layer.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients
from libra_opt.errors import InputError
from libra_opt.fabric.builders import fabric_family
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.optimize.problem import solve
from libra_opt.optimize.terms import aggregate_terms, native_terms
from libra_opt.options import COMPARE_MODES as MODES
from libra_opt.options import TRAFFIC_MODELS, CollectiveModel, TrafficModel, TrainingLoop
from libra_opt.scenario.constraints import LinearConstraint
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.step_time import check_bandwidth, step_time
from libra_opt.traffic.workload import Workload, check_on_fabric

__all__ = ["compare_fabrics", "budget_optimum"]

logger = logging.getLogger(__name__)



def _step_time(workloads, weights, fabric, bw, mode, loop, traffic_model) -> float:
    return sum(
        wt * step_time(w, fabric, bw, mode, loop, traffic_model).step_time_s
        for w, wt in zip(workloads, weights, strict=True)
    )


def budget_optimum(
    workloads: Sequence[Workload],
    fabric: Fabric,
    usd_per_gbps: npt.ArrayLike,
    budget_usd: float,
    *,
    weights: Sequence[float] | None = None,
    collective_model: CollectiveModel = "pipelined",
    training_loop: TrainingLoop = "no_overlap",
    traffic_model: TrafficModel = "native",
) -> np.ndarray:
    """Bandwidth minimizing the weighted step time under ``usd_per_gbps . B <= budget_usd``.

    Returns
    -------
    numpy.ndarray
        ``B`` in GB/s per NPU (0 on dimensions that carry no traffic).

    Raises
    ------
    InputError
        If a dimension that carries traffic has no price (the problem would be unbounded).
    VerificationError
        If the layer-by-layer re-evaluation disagrees with the solver (relative 1e-6); the
        solve is :func:`libra_opt.optimize.problem.solve`.

    Examples
    --------
    One all-reduce over 2 x 2 on a ring-in-switch fabric, $1 per GB/s on each dimension: the
    pipelined optimum equalises ``1 GB / B_0 = 0.5 GB / B_1`` on a $300 budget.

    >>> from libra_opt.fabric.builders import multi_dim
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1e9, "g"),))),),
    ...              {"g": (2, 2)})
    >>> f = multi_dim((4, 8), ("ring", "switch"))
    >>> budget_optimum([w], f, np.array([1.0, 1.0]), 300.0).round(3).tolist()
    [200.0, 100.0]
    """
    if traffic_model not in TRAFFIC_MODELS:
        raise InputError(f"traffic_model {traffic_model!r} is not one of "
                         f"{', '.join(TRAFFIC_MODELS)}", field="traffic_model")
    wls = tuple(workloads)
    kappa = np.asarray(usd_per_gbps, dtype=float)
    n = fabric.n_dims
    used = (native_terms(wls, fabric) if traffic_model == "native"
            else aggregate_terms(wls, fabric)).used_dims
    if used.size == 0:
        return np.zeros(n)
    free = [fabric.names[d] for d in used if kappa[d] <= 0]
    if free:
        raise InputError(
            f"dimension(s) {', '.join(free)} carry traffic but cost nothing, so a budget does "
            "not bound them; give them a price",
            field="cost_model",
        )
    # The budget row carries the prices; the scenario's own cost model prices nothing.
    free_prices = CostModel.from_tables(
        {d.tier: dict.fromkeys(("link", "switch", "nic"), 0.0) for d in fabric.dims}
    )
    scen = Scenario(
        fabric, free_prices, wls,
        weights=None if weights is None else tuple(weights),
        constraints=(LinearConstraint(label="budget_usd", bw_coef=tuple(kappa), cost_coef=0.0,
                                      power_coef=0.0, sense="<=", rhs=float(budget_usd)),),
        collective_model=collective_model,
        training_loop=training_loop,
        traffic_model=traffic_model,
    )
    return np.array(solve(scen, with_baselines=False).bw_gbps)


def _inputs(scenario_or_workloads, cost_model, weights, collective_model, training_loop):
    if isinstance(scenario_or_workloads, Scenario):
        s = scenario_or_workloads
        return (s.workloads, cost_model or s.cost_model, weights or s.weights,
                collective_model or s.collective_model, training_loop or s.training_loop, s)
    if isinstance(scenario_or_workloads, Workload):
        wls: tuple[Workload, ...] = (scenario_or_workloads,)
    else:
        wls = tuple(scenario_or_workloads)
    if not wls or not all(isinstance(w, Workload) for w in wls):
        raise InputError("expected a Scenario, a Workload or a sequence of Workloads",
                         field="scenario_or_workloads")
    if cost_model is None:
        raise InputError("cost_model is required when no scenario is given", field="cost_model")
    return (wls, cost_model, weights or (1.0,) * len(wls), collective_model or "pipelined",
            training_loop or "no_overlap", None)


def compare_fabrics(
    scenario_or_workloads: Scenario | Workload | Sequence[Workload],
    fabrics: Mapping[str, Fabric],
    *,
    cost_model: CostModel | None = None,
    bw_gbps: npt.ArrayLike | Mapping[str, npt.ArrayLike] | None = None,
    budget_usd: float | None = None,
    tco: TcoModel | None = None,
    baseline: str | None = None,
    weights: Sequence[float] | None = None,
    collective_model: CollectiveModel | None = None,
    training_loop: TrainingLoop | None = None,
    traffic_model: TrafficModel = "native",
    modes: Sequence[str] = MODES,
):
    """Step time, network cost and power, TCO and reductions of several fabrics.

    Parameters
    ----------
    scenario_or_workloads : Scenario, Workload or sequence of Workload
        A scenario supplies workloads, weights, cost model, collective model and training
        loop (each overridable by the keyword arguments).
    fabrics : mapping of str to Fabric
        Name -> fabric. Every workload's group spans must fit every fabric (same number of
        dimensions, divisors of the sizes): compare fabrics of the same shape, e.g. from
        :func:`libra_opt.fabric.builders.as_family`.
    cost_model : CostModel, optional
        Must price every tier the fabrics use.
    bw_gbps : sequence or mapping, optional
        Equal-bandwidth allocation: one vector for all fabrics, or name -> vector. Default
        with a scenario: the scenario's own optimum (:func:`libra_opt.optimize.problem.solve`).
    budget_usd : float, optional
        Network budget of the equal-budget rows; default the baseline's cost at equal
        bandwidth.
    tco : TcoModel, optional
        Adds ``usd_per_hour`` and ``run_cost_usd`` (needs a power model).
    baseline : str, optional
        Reference fabric of the reduction columns: default the first ``fat_tree`` fabric,
        else the first.
    traffic_model : {'native', 'hierarchical'}
        See the module notes.
    modes : sequence of str
        Any of ``equal_bw`` and ``equal_budget``.

    Returns
    -------
    pandas.DataFrame
        One row per mode and fabric: ``mode``, ``fabric``, ``family``, ``bw_gbps``,
        ``step_time_s``, ``network_cost_usd``, ``network_power_w``, ``scaleout_tiers``,
        ``switches``, ``usd_per_hour``, ``run_cost_usd``, and ``cost_reduction_pct``,
        ``power_reduction_pct``, ``run_cost_reduction_pct`` (``100 (1 - x / x_baseline)``)
        and ``step_time_change_pct`` (``100 (t / t_baseline - 1)``).

    Examples
    --------
    >>> from libra_opt.io.presets import catalog_cost_model
    >>> from libra_opt.fabric.builders import rail_only, rail_optimized_fat_tree
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> ar = Collective("all_reduce", 1e9, "dp")
    >>> w = Workload("dp", (Layer("l", Phase(0.1, (ar,))),), {"dp": (8, 512)})
    >>> fabrics = {"fat_tree": rail_optimized_fat_tree(4096, 8, 64),
    ...            "rail_only": rail_only(4096, 8, 64)}
    >>> df = compare_fabrics(w, fabrics, cost_model=catalog_cost_model(), bw_gbps=[450, 50],
    ...                      modes=["equal_bw"])
    >>> df[["fabric", "scaleout_tiers"]].values.tolist()
    [['fat_tree', 3], ['rail_only', 2]]
    >>> bool(df.step_time_s.nunique() == 1), bool(df.cost_reduction_pct.iloc[1] > 20)
    (True, True)
    """
    import pandas as pd

    wls, cm, wts, mode, loop, scen = _inputs(scenario_or_workloads, cost_model, weights,
                                             collective_model, training_loop)
    if traffic_model not in TRAFFIC_MODELS:
        raise InputError(f"traffic_model {traffic_model!r} is not one of "
                         f"{', '.join(TRAFFIC_MODELS)}", field="traffic_model")
    if not fabrics:
        raise InputError("give at least one fabric", field="fabrics")
    bad_modes = [m for m in modes if m not in MODES]
    if bad_modes or not modes:
        raise InputError(f"modes {list(modes)!r}: expected some of {', '.join(MODES)}",
                         field="modes")
    names = list(fabrics)
    if baseline is None:
        baseline = next((n for n in names if fabric_family(fabrics[n]) == "fat_tree"), names[0])
    if baseline not in fabrics:
        raise InputError(f"baseline {baseline!r} is not one of {', '.join(names)}",
                         field="baseline")
    for name, f in fabrics.items():
        for w in wls:
            try:
                check_on_fabric(w, f)
            except InputError as exc:
                raise InputError(f"fabric {name!r}: {exc.message}", field=exc.field) from None
    coeffs = {n: cost_coefficients(f, cm) for n, f in fabrics.items()}
    # Equal-bandwidth vectors.
    given: dict[str, npt.ArrayLike]
    if bw_gbps is None:
        if scen is None:
            raise InputError("bw_gbps is required when no scenario is given", field="bw_gbps")
        common = solve(scen, with_baselines=False).bw_gbps
        given = {n: common for n in names}
    elif isinstance(bw_gbps, Mapping):
        missing = [n for n in names if n not in bw_gbps]
        if missing:
            raise InputError(f"no bandwidth for fabric(s) {', '.join(missing)}",
                             field="bw_gbps")
        given = dict(bw_gbps)
    else:
        given = {n: bw_gbps for n in names}
    bws = {n: check_bandwidth(fabrics[n], given[n], field=f"bw_gbps[{n}]") for n in names}
    if budget_usd is None:
        budget_usd = float(coeffs[baseline].usd_per_gbps @ bws[baseline])
    elif not math.isfinite(float(budget_usd)) or float(budget_usd) <= 0:
        raise InputError(f"budget_usd {budget_usd!r} must be a finite number > 0",
                         field="budget_usd")
    rows = []
    for m in modes:
        for n in names:
            f, k = fabrics[n], coeffs[n]
            if m == "equal_bw":
                bw = bws[n]
            else:
                bw = budget_optimum(wls, f, k.usd_per_gbps, float(budget_usd), weights=wts,
                                    collective_model=mode, training_loop=loop,
                                    traffic_model=traffic_model)
            st = _step_time(wls, wts, f, bw, mode, loop, traffic_model)
            power = None if k.w_per_gbps is None else float(k.w_per_gbps @ bw)
            switch_dims = [d for d, dim in enumerate(f.dims) if dim.topology == "switch"]
            invs = [dimension_inventory(f, d) for d in range(f.n_dims)]
            row = {
                "mode": m, "fabric": n, "family": fabric_family(f),
                "bw_gbps": tuple(round(float(x), 6) for x in bw),
                "step_time_s": st,
                "network_cost_usd": float(k.usd_per_gbps @ bw),
                "network_power_w": power,
                "scaleout_tiers": invs[switch_dims[-1]].tiers if switch_dims else 0,
                "switches": int(sum(i.switches for i in invs)),
                "usd_per_hour": None, "run_cost_usd": None,
            }
            if tco is not None:
                r0, r = cluster_rate_coefficients(tco, f, k)
                rate = r0 + float(r @ bw)
                row["usd_per_hour"] = 3600.0 * rate
                row["run_cost_usd"] = tco.n_steps * st * rate
            rows.append(row)
    df = pd.DataFrame(rows)
    for m in modes:
        sel = df["mode"] == m
        base = df[sel & (df["fabric"] == baseline)].iloc[0]
        for col, out in (("network_cost_usd", "cost_reduction_pct"),
                         ("network_power_w", "power_reduction_pct"),
                         ("run_cost_usd", "run_cost_reduction_pct")):
            if base[col] is not None and pd.notna(base[col]) and base[col] > 0:
                df.loc[sel, out] = 100.0 * (1.0 - df.loc[sel, col].astype(float) / base[col])
        df.loc[sel, "step_time_change_pct"] = 100.0 * (
            df.loc[sel, "step_time_s"] / base["step_time_s"] - 1.0)
    df.attrs.update(baseline=baseline, budget_usd=float(budget_usd),
                    traffic_model=traffic_model)
    return df
