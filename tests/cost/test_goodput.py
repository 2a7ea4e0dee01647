"""Checkpoint/restart: Young's and Daly's intervals, goodput against a seeded discrete-event
simulation of failures and restarts, hot spares, and the ``reliability:`` section's checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.goodput import (
    ReliabilityModel,
    daly_interval_s,
    expected_goodput,
    spare_shortfall_probability,
    young_interval_s,
)
from libra_opt.errors import InputError
from libra_opt.fabric.builders import rail_optimized_fat_tree


def _wall_s(rng: np.random.Generator, n: int, work_s: float, mtbf_s: float,
            recovery_s: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Wall seconds of each of ``n`` independent checkpoint segments of ``work_s`` seconds
    (compute + checkpoint write), simulated failure by failure: an exponential failure
    before the end loses the segment and costs a recovery (drawn by kind), which a failure
    during it starts again."""
    total = np.zeros(n)
    live = np.arange(n)
    while live.size:
        x = rng.exponential(mtbf_s, live.size)
        done = x >= work_s
        total[live[done]] += work_s
        failed = live[~done]
        total[failed] += x[~done]
        r = recovery_s[rng.choice(recovery_s.size, failed.size, p=weights)]
        todo = np.arange(failed.size)
        while todo.size:   # recoveries, each restarted by a failure during it
            y = rng.exponential(mtbf_s, todo.size)
            ok = y >= r[todo]
            total[failed[todo[ok]]] += r[todo[ok]]
            total[failed[todo[~ok]]] += y[~ok]
            todo = todo[~ok]
        live = failed
    return total


@pytest.mark.parametrize(("mtbf_s", "tau_s", "delta_s", "recovery_s", "weights"), [
    (3600.0, 600.0, 50.0, [300.0], [1.0]),
    (11790.0, 257.0, 2.84, [600.0, 4200.0], [0.8, 0.2]),     # the Llama 3 example's scale
    (1000.0, 1500.0, 200.0, [100.0, 900.0, 2000.0], [0.5, 0.3, 0.2]),  # failure-dominated
])
def test_goodput_matches_a_discrete_event_simulation(mtbf_s, tau_s, delta_s, recovery_s,
                                                     weights) -> None:
    rng = np.random.default_rng(20240723)
    r, p = np.array(recovery_s), np.array(weights)
    wall = _wall_s(rng, 200_000, tau_s + delta_s, mtbf_s, r, p)
    sim = tau_s / wall.mean()
    # 99.9 % confidence interval of the mean wall time per segment (i.i.d. segments)
    half = 3.29 * wall.std(ddof=1) / math.sqrt(wall.size)
    lo, hi = tau_s / (wall.mean() + half), tau_s / (wall.mean() - half)
    got = expected_goodput(tau_s, delta_s, mtbf_s, r, p)
    assert lo <= got <= hi, (got, sim, lo, hi)


def test_young_and_daly_closed_forms() -> None:
    # Young 1974: tau = sqrt(2 delta M); Daly 2006, eq. for delta < 2M
    assert young_interval_s(2.0, 10_000.0) == 200.0
    d, m = 2.0, 10_000.0
    x = d / (2 * m)
    assert_allclose(daly_interval_s(d, m), 200.0 * (1 + math.sqrt(x) / 3 + x / 9) - d,
                    rtol=1e-15)
    assert daly_interval_s(30_000.0, 10_000.0) == 10_000.0


@pytest.mark.parametrize("ratio", [1e-4, 1e-3, 1e-2, 5e-2])
def test_daly_interval_is_near_the_goodput_optimum(ratio) -> None:
    # the true optimum of the exact goodput (no recovery), by a fine grid search: Daly's
    # estimate is within 0.5 % of it and no worse than Young's
    m = 3600.0
    d = ratio * m
    taus = np.geomspace(young_interval_s(d, m) / 3, young_interval_s(d, m) * 3, 20001)
    g = np.array([expected_goodput(t, d, m, 0.0) for t in taus])
    best = taus[int(np.argmax(g))]
    daly, young = daly_interval_s(d, m), young_interval_s(d, m)
    assert abs(daly / best - 1) < 5e-3
    assert abs(daly / best - 1) <= abs(young / best - 1) + 1e-4
    assert expected_goodput(daly, d, m, 0.0) >= g.max() * (1 - 1e-6)


def test_spare_shortfall_matches_a_simulated_repair_queue() -> None:
    # NPU failures of one domain (Poisson), each holding a spare for an exponential repair:
    # the share of failures that find all s spares taken
    rng = np.random.default_rng(7)
    rate_h, repair_h, spares = 0.05, 24.0, 2
    n = 200_000
    arrivals = np.cumsum(rng.exponential(1 / rate_h, n))
    ends = arrivals + rng.exponential(repair_h, n)
    busy = np.array([np.count_nonzero(ends[max(0, i - 200):i] > t)
                     for i, t in enumerate(arrivals)])
    sim = np.mean(busy >= spares)
    half = 3.29 * math.sqrt(sim * (1 - sim) / n) * 3   # correlated arrivals: a wide band
    assert abs(spare_shortfall_probability(rate_h, repair_h, spares) - sim) < half
    assert spare_shortfall_probability(rate_h, repair_h, 0) == 1.0


@pytest.mark.parametrize(("changes", "field"), [
    ({"checkpoint_write_gbps": 0}, "reliability.checkpoint_write_gbps"),
    ({"detection_s": -1}, "reliability.detection_s"),
    ({"restart_s": float("inf")}, "reliability.restart_s"),
    ({"repair_h": 0}, "reliability.repair_h"),
    ({"spares_per_domain": -1}, "reliability.spares_per_domain"),
    ({"spares_per_domain": 1.5}, "reliability.spares_per_domain"),
    ({"gpus_per_host": 0}, "reliability.gpus_per_host"),
    ({"checkpoint_interval_s": 0}, "reliability.checkpoint_interval_s"),
    ({"mtbf_h": {"gpu": 0}}, "reliability.mtbf_h.gpu"),
    ({"rates_per_h": {"switch": -2e-7}}, "reliability.rates_per_h.switch"),
    ({"colour": 1}, "reliability"),
])
def test_bad_sections_name_the_field(changes, field) -> None:
    with pytest.raises(InputError) as exc:
        ReliabilityModel.from_mapping({"detection_s": 60, "restart_s": 300, **changes})
    assert exc.value.field == field


def test_recovery_times_are_required() -> None:
    with pytest.raises(InputError, match="missing restart_s"):
        ReliabilityModel.from_mapping({"detection_s": 60})


def test_the_section_must_fit_the_fabric() -> None:
    f = rail_optimized_fat_tree(64, 8, 64)
    m = ReliabilityModel(60, 300, spares_per_domain=9)
    with pytest.raises(InputError, match="9 spares per domain is more than the 8 NPUs") as e:
        m.check(f)
    assert e.value.field == "reliability.spares_per_domain"
    with pytest.raises(InputError, match="tier 'NVLink'") as e:
        ReliabilityModel(60, 300, rates_per_h={"link.NVLink": 1e-6}).check(f)
    assert e.value.field == "reliability.rates_per_h.link.NVLink"
    ReliabilityModel(60, 300, spares_per_domain=8, rates_per_h={"link.ScaleOut": 1e-6}).check(f)
