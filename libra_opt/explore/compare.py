"""Compare fabrics on the same workloads: step time, network cost, power and TCO, at equal
bandwidth, at an equal scale-out budget (the HB domain held, the scale-out given the most
bandwidth the budget buys: the optimum, as step time never grows with bandwidth) and at an
equal total budget (every dimension re-optimized). Budget modes keep the scenario's
constraints and power cap.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from libra_opt.cost.prices import CostModel, cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients
from libra_opt.errors import InfeasibleDesignError, InputError, short_repr
from libra_opt.fabric.builders import fabric_family
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.optimize.feasibility import lp_extreme
from libra_opt.optimize.problem import solve
from libra_opt.optimize.terms import aggregate_terms, native_terms
from libra_opt.options import COMPARE_MODES as MODES
from libra_opt.options import TrafficModel
from libra_opt.scenario.accuracy import same
from libra_opt.scenario.constraints import LinearConstraint, Row
from libra_opt.scenario.scenario import Scenario, scenario_rows
from libra_opt.traffic.step_time import check_bandwidth, step_time
from libra_opt.traffic.timing import TimingModel, as_timing
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import Layer, Workload, check_on_fabric

__all__ = ["compare_fabrics", "budget_optimum"]

logger = logging.getLogger(__name__)


def _used_dims(workloads: Sequence[Workload], fabric: Fabric, timing: TimingModel) -> np.ndarray:
    """The dimensions carrying traffic under ``timing``'s traffic model."""
    terms = native_terms if timing.native_traffic else aggregate_terms
    return terms(tuple(workloads), fabric).used_dims


def budget_optimum(
    workloads: Sequence[Workload],
    fabric: Fabric,
    usd_per_gbps: npt.ArrayLike,
    budget_usd: float,
    *,
    weights: Sequence[float] | None = None,
    timing: TimingModel | None = None,
    cost_model: CostModel | None = None,
    constraints: Sequence[LinearConstraint] = (),
    power_w: float | None = None,
) -> np.ndarray:
    """Bandwidth (GB/s per NPU) minimizing the weighted step time under ``usd_per_gbps . B <=
    budget_usd`` ($ per GB/s; 0 leaves a dimension out), the ``constraints`` and ``power_w``
    (``cost_model`` pricing what they need; default one that prices nothing); ``timing``
    defaults to pipelined, no_overlap, ``native``. A dimension carrying traffic without a price
    is an :class:`~libra_opt.errors.InputError`; no design, an ``InfeasibleDesignError``.

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
    timing = _checked_timing(timing)
    wls = tuple(workloads)
    kappa = np.asarray(usd_per_gbps, dtype=float)
    n = fabric.n_dims
    used = _used_dims(wls, fabric, timing)
    free = [fabric.names[d] for d in used if kappa[d] <= 0]
    if free:
        raise InputError(
            f"dimension(s) {', '.join(free)} carry traffic but cost nothing, so a budget does "
            "not bound them; give them a price",
            field="cost_model",
        )
    if cost_model is None:  # the budget row carries the prices
        cost_model = CostModel.from_tables(
            {d.tier: dict.fromkeys(("link", "switch", "nic"), 0.0) for d in fabric.dims}
        )
    if used.size == 0 and not constraints and power_w is None:
        return np.zeros(n)
    rows = (_row("compare_budget_usd", kappa, "<=", budget_usd),)
    scen = Scenario(
        fabric, cost_model, wls,
        weights=None if weights is None else tuple(weights),
        constraints=(*constraints, *rows),
        power_w=power_w,
        collective_model=timing.collective_model,
        training_loop=timing.training_loop,
        traffic_model=timing.traffic_model,
        collectives=_settings(timing, fabric),
        in_network_reduction=timing.in_network_dims,
    )
    return np.array(solve(scen, with_baselines=False).bw_gbps)


def _settings(timing: TimingModel, fabric: Fabric, label: str = "") -> CollectiveSettings | None:
    """``timing``'s collective settings (or per-dimension efficiency) as a scenario's on
    ``fabric``; refused when they name a dimension ``fabric`` lacks."""
    settings = timing.collectives
    if settings is None and timing.efficiency:
        settings = CollectiveSettings(efficiency=timing.efficiency)
    named = set(timing.in_network_dims)
    if settings is not None:
        named |= {n for key in ("algorithm", "efficiency", "link_latency_s")
                  for n, _ in getattr(settings, key)}
        named |= {n for (_, n), _ in settings.collective_algorithm}
        named |= set(settings.in_network_reduction)
    missing = sorted(named - set(fabric.names))
    if missing:
        raise InputError(
            f"fabric {label or 'compared'!r} has no dimension {', '.join(missing)} that the "
            f"scenario's collective settings name (its dimensions: {', '.join(fabric.names)}); "
            "compare fabrics with the same dimension names, or drop those settings",
            field="fabrics")
    return settings


def _row(label: str, coef: npt.ArrayLike, sense, rhs: float) -> LinearConstraint:
    return LinearConstraint(label=label, bw_coef=tuple(float(x) for x in np.ravel(coef)),
                            cost_coef=0.0, power_coef=0.0, sense=sense, rhs=float(rhs))


def _scaleout_at_budget(
    workloads: Sequence[Workload], fabric: Fabric, cost_model: CostModel, so_price: float,
    budget_usd: float, hb_gbps: npt.ArrayLike, constraints: Sequence[LinearConstraint],
    power_w: float | None, timing: TimingModel, label: str,
) -> np.ndarray:
    """The equal-budget optimum: the HB held at ``hb_gbps``, the scale-out at the most bandwidth
    its budget, ``constraints`` and ``power_w`` allow (the least if it carries no traffic)."""
    n = fabric.n_dims
    so = n - 1
    hb = np.asarray(hb_gbps, dtype=float)
    carries = so in set(int(d) for d in _used_dims(workloads, fabric, timing))
    if carries and so_price <= 0:
        raise InputError(
            f"fabric {label!r}: scale-out dimension {fabric.names[so]} carries traffic but costs "
            "nothing, so a budget does not bound it; give it a price", field="cost_model")
    eye = np.eye(n)
    hb = _nearest_hold(fabric, cost_model, constraints, power_w, timing, hb, label)
    rows = (_row("scaleout_budget_usd", so_price * eye[so], "<=", budget_usd),
            *(_row(f"{fabric.names[d]} held", eye[d], "==", hb[d]) for d in range(so)))
    scen = Scenario(fabric, cost_model, tuple(workloads), constraints=(*constraints, *rows),
                    power_w=power_w, traffic_model=timing.traffic_model)
    status, _, bw = lp_extreme(scenario_rows(scen), n, -eye[so] if carries else eye[so])
    if status != "optimal" or bw is None:
        raise InfeasibleDesignError(
            f"fabric {label!r}, equal_budget: the HB domain held at "
            f"{', '.join(f'{b:.6g}' for b in hb[:so])} GB/s, a scale-out budget of "
            f"{budget_usd:.6g} $ and the scenario's constraints leave no design ({status})")
    out = np.array(bw, dtype=float)
    out[:so] = hb[:so]
    return out


def _nearest_hold(
    fabric: Fabric, cost_model: CostModel, constraints: Sequence[LinearConstraint],
    power_w: float | None, timing: TimingModel, hb_gbps: np.ndarray, label: str,
) -> np.ndarray:
    """The HB bandwidth to hold in ``equal_budget``: ``hb_gbps`` when the constraints allow it,
    else the allowed one nearest to it (least sum of absolute differences, an LP)."""
    n, so = fabric.n_dims, fabric.n_dims - 1
    if so == 0:
        return hb_gbps
    idle = Workload("idle", (Layer("l"),), {})  # no traffic: the constraint rows only
    scen = Scenario(fabric, cost_model, (idle,), constraints=tuple(constraints),
                    power_w=power_w, traffic_model=timing.traffic_model)
    rows = scenario_rows(scen)
    # variables: B (n), then t (so) with t_d >= |B_d - hb_d|; minimise sum t
    pad = np.zeros(so)
    aug = [Row(r.label, np.concatenate([r.a, pad]), r.sense, r.rhs) for r in rows]
    for d in range(so):
        e_b, e_t = np.eye(n)[d], np.eye(so)[d]
        aug.append(Row(f"t{d} >= +", np.concatenate([-e_b, e_t]), ">=", -float(hb_gbps[d])))
        aug.append(Row(f"t{d} >= -", np.concatenate([e_b, e_t]), ">=", float(hb_gbps[d])))
    c = np.concatenate([np.zeros(n), np.ones(so)])
    status, dist, x = lp_extreme(aug, n + so, c)
    if status != "optimal" or x is None:
        raise InfeasibleDesignError(
            f"fabric {label!r}, equal_budget: the scenario's constraints leave no design "
            f"({status})")
    if same(dist, 0.0, scale=max(1.0, float(np.abs(hb_gbps[:so]).sum()))):
        return hb_gbps
    held = np.array(hb_gbps, dtype=float)
    held[:so] = x[:so]
    logger.info("fabric %s: equal_budget holds the HB at %s GB/s (the nearest the constraints "
                "allow to %s)", label, held[:so], hb_gbps[:so])
    return held


def _checked_timing(timing: TimingModel | None, scenario: Scenario | None = None
                    ) -> TimingModel:
    """``timing``, checked; by default the scenario's (or the defaults) with the ``native``
    traffic model, ``hierarchical`` under ``topology_aware`` (which refuses ``native``)."""
    if timing is None:
        base = TimingModel() if scenario is None else scenario.timing
        traffic: TrafficModel = "hierarchical" if base.uses_topology_aware else "native"
        return replace(base, traffic_model=traffic)
    timing = as_timing(timing)
    refusal = timing.native_traffic_refusal()
    if refusal is not None:
        raise InputError(refusal, field="traffic_model")
    return timing


def _inputs(scenario_or_workloads, cost_model, weights, timing):
    """Workloads, cost model, weights, timing and the scenario (``None`` without one)."""
    if isinstance(scenario_or_workloads, Scenario):
        s = scenario_or_workloads
        return (s.workloads, cost_model or s.cost_model, weights or s.weights,
                _checked_timing(timing, s), s)
    if isinstance(scenario_or_workloads, Workload):
        wls: tuple[Workload, ...] = (scenario_or_workloads,)
    else:
        wls = tuple(scenario_or_workloads)
    if not wls or not all(isinstance(w, Workload) for w in wls):
        raise InputError("expected a Scenario, a Workload or a sequence of Workloads",
                         field="scenario_or_workloads")
    if cost_model is None:
        raise InputError("cost_model is required when no scenario is given", field="cost_model")
    return (wls, cost_model, weights or (1.0,) * len(wls), _checked_timing(timing), None)


def _positive(value: object) -> bool:
    """A finite real number > 0 (Python, numpy or pandas scalar; not a bool nor a string)."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        return False
    try:
        return math.isfinite(float(value)) and float(value) > 0  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def compare_fabrics(
    scenario_or_workloads: Scenario | Workload | Sequence[Workload],
    fabrics: Mapping[str, Fabric],
    *,
    cost_model: CostModel | None = None,
    bw_gbps: npt.ArrayLike | Mapping[str, npt.ArrayLike] | None = None,
    budget_usd: float | None = None,
    scaleout_budget_usd: float | None = None,
    tco: TcoModel | None = None,
    baseline: str | None = None,
    weights: Sequence[float] | None = None,
    timing: TimingModel | None = None,
    modes: Sequence[str] = MODES,
    constraints: Sequence[LinearConstraint] | None = None,
    power_w: float | None = None,
):
    """Step time, network cost and power, TCO and reductions of several fabrics.

    ``scenario_or_workloads`` is a scenario (supplying workloads, weights, cost model, timing,
    constraints and power cap, each overridable by the keywords) or workloads. ``fabrics`` maps
    labels to fabrics of one shape (e.g. :func:`libra_opt.fabric.builders.as_family`), the
    outermost dimension the scale-out. ``bw_gbps`` is the equal-bandwidth allocation, for all or
    by label (default the scenario's optimum); ``budget_usd`` the total budget of the
    ``equal_budget_joint`` rows and ``scaleout_budget_usd`` the scale-out budget of the
    ``equal_budget`` rows (default the baseline's costs at equal bandwidth, the scale-out's
    ``budget_usd`` minus the baseline's HB cost when given); ``tco`` adds ``usd_per_hour`` and
    ``run_cost_usd``; ``baseline`` (default the first ``fat_tree``, else the first) is the
    reference of the reductions; ``timing`` defaults to the scenario's with the routing-aware
    ``native`` traffic (:mod:`libra_opt.traffic.rail`; ``hierarchical`` under ``topology_aware``).

    Returns
    -------
    pandas.DataFrame
        One row per mode and fabric: ``mode``, ``fabric``, ``family``, ``bw_gbps``,
        ``step_time_s``, ``network_cost_usd``, ``scaleout_cost_usd``, ``network_power_w``,
        ``scaleout_tiers``, ``hb_switches``, ``scaleout_switches``, ``usd_per_hour``,
        ``run_cost_usd``, the reductions ``cost_reduction_pct``, ``power_reduction_pct``,
        ``run_cost_reduction_pct`` (``100 (1 - x / x_baseline)``) and ``step_time_change_pct``
        (0 within solver round-off). ``attrs`` hold ``baseline``, ``budget_usd``,
        ``scaleout_budget_usd``, ``hb_gbps`` (held in ``equal_budget``) and ``traffic_model``.

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

    wls, cm, wts, timing, scen = _inputs(scenario_or_workloads, cost_model, weights, timing)
    if not isinstance(fabrics, Mapping) or not all(
            isinstance(k, str) and isinstance(f, Fabric) for k, f in fabrics.items()):
        raise InputError(
            f"fabrics must map a label to a Fabric, e.g. {{'fat_tree': "
            f"rail_optimized_fat_tree(4096, 8, 64), 'rail_only': rail_only(4096, 8, 64)}}; "
            f"got {short_repr(fabrics)}", field="fabrics")
    if not fabrics:
        raise InputError("give at least one fabric", field="fabrics")
    bad_modes = [m for m in modes if m not in MODES]
    if bad_modes or not modes:
        raise InputError(f"modes {list(modes)!r}: expected some of {', '.join(MODES)}",
                         field="modes")
    if constraints is None:
        constraints = scen.constraints if scen is not None else ()
    if power_w is None and scen is not None:
        power_w = scen.power_w
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
        _settings(timing, f, name)  # the scenario's collective settings fit every fabric
    coeffs = {n: cost_coefficients(f, cm) for n, f in fabrics.items()}
    if bw_gbps is None:
        if scen is None:
            raise InputError("bw_gbps is required when no scenario is given", field="bw_gbps")
        bw_gbps = solve(scen, with_baselines=False).bw_gbps
    given = bw_gbps if isinstance(bw_gbps, Mapping) else dict.fromkeys(names, bw_gbps)
    missing = [n for n in names if n not in given]
    if missing:
        raise InputError(f"no bandwidth for fabric(s) {', '.join(missing)}", field="bw_gbps")
    bws = {n: check_bandwidth(fabrics[n], given[n], field=f"bw_gbps[{n}]") for n in names}
    for what, value in (("budget_usd", budget_usd), ("scaleout_budget_usd", scaleout_budget_usd)):
        if value is not None and not _positive(value):
            raise InputError(f"{what} {short_repr(value)} must be a finite number > 0",
                             field=what)
    k_base, bw_base = coeffs[baseline].usd_per_gbps, bws[baseline]
    so_base = fabrics[baseline].n_dims - 1
    base_so_cost = float(k_base[so_base] * bw_base[so_base])
    base_hb_cost = float(k_base @ bw_base) - base_so_cost
    if scaleout_budget_usd is None:
        if budget_usd is None:
            scaleout_budget_usd = base_so_cost
        else:
            scaleout_budget_usd = float(budget_usd) - base_hb_cost
            if "equal_budget" in modes and scaleout_budget_usd <= 0:
                raise InputError(
                    f"budget_usd {float(budget_usd):.6g} $ does not cover the HB domain of "
                    f"{baseline!r} at equal bandwidth ({base_hb_cost:.6g} $), so nothing is "
                    "left for the scale-out", field="budget_usd")
    if budget_usd is None:
        budget_usd = float(k_base @ bw_base)
    budget_kw = dict(weights=wts, timing=timing, cost_model=cm, constraints=tuple(constraints),
                     power_w=power_w)
    rows = []
    for m in modes:
        for n in names:
            f, k = fabrics[n], coeffs[n]
            so = f.n_dims - 1
            if m == "equal_bw":
                bw = bws[n]
            elif m == "equal_budget":
                bw = _scaleout_at_budget(wls, f, cm, float(k.usd_per_gbps[so]),
                                         float(scaleout_budget_usd), bws[n], constraints,
                                         power_w, timing, n)
            else:
                # the fixed part (aggregators' state memory) comes off the total budget
                bw = budget_optimum(wls, f, k.usd_per_gbps, float(budget_usd) - k.fixed_usd,
                                    **budget_kw)  # type: ignore[arg-type]
            st = sum(wt * step_time(w, f, bw, timing).step_time_s
                     for w, wt in zip(wls, wts, strict=True))
            power = None if k.w_per_gbps is None else float(k.w_per_gbps @ bw) + k.fixed_w
            invs = [dimension_inventory(f, d) for d in range(f.n_dims)]
            row = {
                "mode": m, "fabric": n, "family": fabric_family(f),
                "bw_gbps": tuple(round(float(x), 6) for x in bw),
                "step_time_s": st,
                "network_cost_usd": float(k.usd_per_gbps @ bw) + k.fixed_usd,
                "scaleout_cost_usd": float(k.usd_per_gbps[so] * bw[so]),
                "network_power_w": power,
                "scaleout_tiers": invs[so].tiers,  # 0 without switches
                "hb_switches": int(sum(i.switches for i in invs[:so])),
                "scaleout_switches": int(invs[so].switches),
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
        t = df.loc[sel, "step_time_s"].astype(float)
        change = 100.0 * (t / base["step_time_s"] - 1.0)
        # a change within the solves' round-off is no change
        unchanged = [same(x, float(base["step_time_s"])) for x in t]
        df.loc[sel, "step_time_change_pct"] = change.where(~np.array(unchanged), 0.0)
    held = df[(df["mode"] == "equal_budget") & (df["fabric"] == baseline)]["bw_gbps"]
    hb = held.iloc[0][:so_base] if len(held) else bw_base[:so_base]
    df.attrs.update(baseline=baseline, budget_usd=float(budget_usd),
                    scaleout_budget_usd=float(scaleout_budget_usd),
                    hb_gbps=tuple(float(x) for x in hb), traffic_model=timing.traffic_model)
    return df
