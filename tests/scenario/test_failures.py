"""A design under failures: the degraded step time by hand, the Llama 3 405B run against
the paper's Table 5, recovery with spares, and the errors of a bad failure model."""

from __future__ import annotations

import math

import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.cost.failures import DEFAULT_RATES_PER_H
from libra_opt.cost.goodput import ReliabilityModel, daly_interval_s, expected_goodput
from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.fabric.builders import multi_dim
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.failures import failure_report
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload


@pytest.fixture(scope="module")
def llama():
    return lo.solve("llama3_405b_h100_tco")


def test_degraded_step_time_by_hand() -> None:
    # two rings of 4 (every cable outside a host: one NPU per host); an all-reduce of 1 GB
    # over the outer ring after 0.1 s of compute, at 100 GB/s per NPU:
    #   T = 0.1 + 2 (3/4) 1e9 / 100e9 = 0.115 s
    # a failed outer-ring cable folds the ring into a line at half its bandwidth:
    #   T_j = 0.1 + 0.015 / 0.5 = 0.13 s; an inner-ring cable leaves T (nothing on it)
    # each ring dimension has 16 cables at 1e-3 per hour, repaired in 10 h: 0.16 down,
    #   E[T] = 0.115 + 0.16 (0.13 - 0.115) = 0.1174 s
    f = multi_dim((4, 4), ("ring", "ring"), tiers=("A", "B"))
    w = Workload("w", (Layer("l", Phase(0.1, (Collective("all_reduce", 1e9, "g"),))),),
                 {"g": (1, 4)})
    rel = ReliabilityModel(60, 300, gpus_per_host=1, rates_per_h={"link": 1e-3}, repair_h=10,
                           checkpoint_bytes=1e12)
    s = Scenario(f, CostModel.from_tables({"A": {"link": 1.0}, "B": {"link": 1.0}}), (w,),
                 reliability=rel)
    rep = failure_report(s, evaluate(s, [100.0, 100.0]))
    rings = {m.where: (m.count, m.bw_factor, d, t[0]) for m, d, t in
             zip(rep.modes, rep.down_parts, rep.degraded_step_time_s, strict=True)
             if "ring" in m.where}
    assert_allclose(rings["dim1 ring cable"], (16, 0.5, 0.16, 0.13), rtol=1e-12)
    assert_allclose(rings["dim0 ring cable"], (16, 0.5, 0.16, 0.115), rtol=1e-12)
    (wg,) = rep.workloads
    assert_allclose(wg.expected_step_time_s, 0.1174, rtol=1e-12)
    # stops: GPU, HBM, software per NPU and 16 one-NPU hosts at the Table 5 rates
    r = DEFAULT_RATES_PER_H
    mtbf_s = 3600 / (16 * (r["gpu"] + r["hbm"] + r["software"] + r["host"]))
    assert_allclose(rep.job_mttf_h, mtbf_s / 3600, rtol=1e-12)
    delta = 1e12 / 2000e9
    g = expected_goodput(daly_interval_s(delta, mtbf_s), delta, mtbf_s, 360.0)
    assert_allclose((wg.checkpoint_s, wg.goodput), (0.5, g), rtol=1e-12)
    assert_allclose(wg.effective_step_time_s, 0.1174 / g, rtol=1e-12)


def test_llama3_405b_against_the_paper(llama) -> None:
    # Dubey et al. 2024, Table 5: 419 unexpected interruptions in 54 days on 16,384 H100s;
    # "more than 90 % effective training time"
    rep = llama.failures
    assert rep.run_h == 54 * 24
    assert abs(rep.interruptions / 419 - 1) < 0.15
    assert rep.goodput > 0.90
    # by hand: the example's Clos routes around its 512 + 256 upper switches and 2 x 16,384
    # upper cables (33,536 of 50,432 network parts), so that share of the table's 35
    # switch/cable interruptions only slows the job
    assert_allclose(rep.interruptions, 419 - 35 * 33536 / 50432, rtol=1e-12)
    assert_allclose(rep.degradations, 35 * 33536 / 50432, rtol=1e-12)
    # the checkpoint: 405,853,388,800 parameters (126 layers of 3,187,703,808, embedding and
    # output 128,256 x 16,384 each, the final norm) x 14 bytes (bf16 + fp32 Adam)
    layer = 2 * 16384**2 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    params = 126 * layer + 2 * 128256 * 16384 + 16384
    assert params == 405_853_388_800
    assert llama.failures.workloads[0].checkpoint_bytes == params * 14


def test_recovery_with_spares_by_hand() -> None:
    # one spare NPU per 8-GPU domain, an hour to bring in a replacement without one: a GPU,
    # HBM or NIC failure finds the domain's spare taken with probability 1 - exp(-mu),
    # mu = 8 (gpu + hbm + nic) x 48 h; hosts and network parts always wait the hour,
    # software failures never do
    s = lo.apply_overrides("llama3_405b_h100_tco", {"reliability.spares_per_domain": 1,
                                                    "reliability.replace_s": 3600})
    sol = lo.solve(s)
    rep = sol.failures
    r = DEFAULT_RATES_PER_H
    q = -math.expm1(-8 * (r["gpu"] + r["hbm"] + r["nic"]) * 48)
    stops = 419 - 35 * 33536 / 50432
    waits = 46 + 35 * (512 + 16384) / 50432 + (196 + 72 + 7) * q
    assert_allclose(rep.spare_shortfall, q, rtol=1e-12)
    assert_allclose(rep.recovery_s, 600 + 3600 * waits / stops, rtol=1e-9)
    assert rep.n_spares == 2048 and rep.spares_usd == 2048 * (30000 + 6000)
    # the spares' capex and energy raise the run's cost with failures
    assert rep.run_cost_usd > rep.failure_free_run_cost_usd / rep.goodput


def test_errors_of_a_bad_failure_model() -> None:
    with pytest.raises(InputError, match="no failure model") as exc:
        failure_report(toy_scenario(), evaluate(toy_scenario(), [200.0, 100.0]))
    assert exc.value.field == "reliability"
    # an ASTRA-sim workload has no model to size its checkpoint from
    with pytest.raises(InputError, match="reliability.checkpoint_bytes"):
        lo.apply_overrides("gpt3_175b_4d", {"reliability": {"detection_s": 60,
                                                            "restart_s": 300}})
    s = lo.apply_overrides("gpt3_175b_4d", {"reliability": {
        "detection_s": 60, "restart_s": 300, "checkpoint_bytes": 2.45e12, "gpus_per_host": 4}})
    assert s.reliability.checkpoint_bytes == 2.45e12
    for path, value, match in (
            ("reliability.spares_per_domain", 9, "more than the 8 NPUs"),
            ("reliability.gpus_per_host", 3, "does not divide"),
            ("reliability.checkpoint_write_gbps", 0, "must be a finite number > 0")):
        with pytest.raises(InputError, match=match) as exc:
            lo.apply_overrides("llama3_405b_h100_tco", {path: value})
        assert exc.value.field == path
