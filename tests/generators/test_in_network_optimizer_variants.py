"""In-network optimizer variants: the out-of-core host-paging variant (traffic, paging time,
memory) and the aggregators' price in network cost, power and TCO, all derived by hand
for the tiny model of ``test_in_network_optimizer`` (PSI = 3664 parameters per NPU,
7,248 in the whole model)."""

import dataclasses

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose

from libra_opt import apply_overrides, sweep
from libra_opt.cost.aggregators import Aggregators
from libra_opt.cost.prices import cost_coefficients
from libra_opt.cost.tco import TcoModel, cluster_rate_coefficients, tco_breakdown
from libra_opt.errors import InputError
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.in_network_optimizer import (
    aggregator_state_bytes,
    dp_sync_bytes_per_npu,
    host_paging_bytes,
)
from libra_opt.generators.parallelism import Precision
from libra_opt.generators.transformer_counts import total_params
from libra_opt.io import load_scenario
from libra_opt.io.presets import load_device
from libra_opt.optimize.problem import solve
from libra_opt.scenario.evaluate import evaluate
from tests.generators.test_in_network_optimizer import PSI, dp_traffic, fabric, tiny

#: whole model: 2 layers x (4 h^2 + 2 h f + 2 h) = 2 x 3104 = 6208, embedding V h = 512,
#: head h + V h = 528 (untied): 7248 parameters
TOTAL = 7248.0


def gen(state="aggregator", grad_bytes=2.0, host_link_gbps=64.0, mode="in_network_optimizer"):
    par = {"tp": 2, "dp": 4, "global_batch_size": 8, "dp_mode": mode,
           "precision": {"grad_bytes": grad_bytes}}
    if mode == "in_network_optimizer":
        par |= {"optimizer_state": state, "host_link_gbps": host_link_gbps}
    return generate_workload(tiny(), par, load_device("h100_sxm"), fabric(), efficiency=0.5)


def test_total_params_by_hand():
    assert total_params(tiny()) == TOTAL


def test_host_paging_traffic_by_hand():
    # fp32 gradients (4 bytes) make the pull visible: the aggregator variant pulls bf16
    # parameters, P = 2 PSI; host paging pulls the summed gradient, G = 4 PSI
    assert_allclose(dp_traffic(gen("aggregator", 4.0)), [0.0, 4 * PSI + 2 * PSI], rtol=1e-12)
    assert_allclose(dp_traffic(gen("host_paging", 4.0)), [0.0, 4 * PSI + 4 * PSI], rtol=1e-12)
    assert dp_sync_bytes_per_npu(PSI, Precision(grad_bytes=4.0), 4, "in_network_optimizer",
                                 optimizer_state="host_paging") == 8 * PSI
    # the host link: Adam's 12 bytes per parameter read and written back every step
    assert host_paging_bytes(PSI, Precision()) == (12 * PSI, 12 * PSI)


def test_host_paging_memory_by_hand():
    m, a = gen("host_paging").memory, gen("aggregator").memory
    assert (m.weights_bytes, m.grads_bytes, m.optimizer_bytes) == (2 * PSI, 2 * PSI, 0.0)
    assert m.host_bytes == 12 * PSI and a.host_bytes == 0.0
    # HBM is the same as with the state on the aggregators: 12 PSI freed vs ZeRO-0
    assert m.total_bytes == a.total_bytes
    z0 = gen(mode="collective").memory
    assert z0.total_bytes - m.total_bytes == 12 * PSI


def test_paging_time_is_the_slower_of_update_and_link():
    step = {s: gen("host_paging", host_link_gbps=s).workload.layers[-1].forward.compute_s
            for s in (1e-3, 1e9)}
    # a 1 MB/s link: 12 x 3664 bytes / 1e6 bytes/s = 43.968 ms, far above the update
    assert step[1e-3] == pytest.approx(12 * PSI / 1e6, rel=1e-12)
    # an unlimited link: the GPU's own update, as in the collective mode
    update = gen(mode="collective").workload.layers[-1].forward.compute_s
    assert update > 0 and step[1e9] == update
    assert gen("aggregator").workload.layers[-1].forward.compute_s == 0.0


def test_variant_needs_in_network_optimizer():
    with pytest.raises(InputError, match="variant of dp_mode in_network_optimizer"):
        generate_workload(tiny(), {"tp": 2, "dp": 4, "global_batch_size": 8,
                                   "optimizer_state": "host_paging"},
                          load_device("h100_sxm"), fabric(), efficiency=0.5)


def test_aggregator_state_bytes_by_hand():
    assert aggregator_state_bytes(TOTAL, Precision()) == 12 * TOTAL
    assert aggregator_state_bytes(TOTAL, Precision(), "host_paging") == 0.0


# ---- pricing -------------------------------------------------------------------------

def test_aggregator_coefficients_and_tco_by_hand():
    from tests.fixtures import cost_2d

    f = fabric()  # node ring 2 x pod switch 4: N = 8
    plain = cost_coefficients(f, cost_2d())
    cm = dataclasses.replace(cost_2d(), aggregators=Aggregators(
        ("pod",), state_bytes=2e9, usd_per_port_gbps=100.0, w_per_port_gbps=2.0,
        usd_per_state_gb=5.0, w_per_state_gb=0.5))
    k = cost_coefficients(f, cm)
    # ports: 8 NPUs x 100 $ (x 2 W) per GB/s of B_pod, in the nic column
    assert_allclose(k.usd_per_gbps - plain.usd_per_gbps, [0.0, 800.0])
    assert_allclose(k.w_per_gbps - plain.w_per_gbps, [0.0, 16.0])
    assert_allclose(k.usd_by_component[1, 2] - plain.usd_by_component[1, 2], 800.0)
    # state: 2 GB x 5 $ and x 0.5 W
    assert (k.fixed_usd, k.fixed_w) == (10.0, 1.0)
    # TCO: one year, PUE 1, 0.1 $/kWh, no maintenance, 1 $ NPUs drawing nothing:
    # r0 = (8 x 1 $ + 10 $) / 8760 h + 1 W x 8760 h / 1000 x 0.1 $/kWh / 8760 h
    tco = TcoModel(1.0, 0.0, 0.0, 0.0, 1.0, 0.1, 1.0)
    r0, _ = cluster_rate_coefficients(tco, f, k)
    assert r0 * 3600 * 8760 == pytest.approx(8 + 10 + 0.876, rel=1e-12)
    b = tco_breakdown(tco, f, k, [10.0, 20.0])
    assert b.network_usd == pytest.approx(float(k.usd_per_gbps @ [10, 20]) + 10.0, rel=1e-12)
    assert b.it_power_w == pytest.approx(float(k.w_per_gbps @ [10, 20]) + 1.0, rel=1e-12)


def test_unknown_dimension_named():
    from tests.fixtures import cost_2d

    cm = dataclasses.replace(cost_2d(), aggregators=Aggregators(("nope",)))
    with pytest.raises(InputError, match="no dimension named 'nope'"):
        cost_coefficients(fabric(), cm)
    with pytest.raises(InputError, match="must be a finite number >= 0"):
        Aggregators(("pod",), usd_per_port_gbps=-1.0)


SCENARIO = {
    "name": "inopt",
    "fabric": {"dims": [{"name": "node", "topology": "ring", "size": 2, "tier": "A"},
                        {"name": "pod", "topology": "switch", "size": 4, "tier": "B"}]},
    "cost_model": {"A": {"Link": 2.0}, "B": {"Link": 4.0, "Switch": 10.0, "NIC": 20.0}},
    "power_model": {"A": {"Link": 0.01}, "B": {"Link": 0.02, "Switch": 0.05, "NIC": 0.1}},
    "workloads": [{"name": "w", "model": "tiny.yaml", "device": "h100_sxm",
                   "efficiency": 0.5,
                   "parallelism": {"tp": 2, "dp": 4, "global_batch_size": 8,
                                   "dp_mode": "in_network_optimizer"}}],
    "constraints": {"budget_usd": 5000.0},
    "in_network_optimizer": {"usd_per_port_gbps": 100.0, "w_per_port_gbps": 2.0,
                             "usd_per_state_gb": 1e6, "w_per_state_gb": 1e3},
}


def write(tmp_path, doc):
    t = tiny()
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(
        {"kind": "transformer", "name": t.name, "n_layers": t.n_layers,
         "hidden_size": t.hidden_size, "ffn_hidden_size": t.ffn_hidden_size,
         "n_heads": t.n_heads, "vocab_size": t.vocab_size, "seq_len": t.seq_len,
         "norm": t.norm}))
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(doc))
    return p


def test_scenario_prices_the_aggregators(tmp_path):
    s = load_scenario(write(tmp_path, SCENARIO))
    agg = s.cost_model.aggregators
    # DP spans pod (1, 4): the ports attach there; state 12 x 7248 bytes
    assert agg.dims == ("pod",) and agg.state_bytes == 12 * TOTAL
    # LIBRA-format prices: kappa = 8 x 2 = 16 on node, 8 x (4 + 10 + 20) = 272 on pod;
    # + 8 NPUs x 100 $ of aggregator port per GB/s of B_pod
    assert_allclose(s.coefficients.usd_per_gbps, [16.0, 272.0 + 800.0])
    assert s.coefficients.fixed_usd == pytest.approx(12 * TOTAL / 1e9 * 1e6, rel=1e-12)
    fixed = 12 * TOTAL / 1e9 * 1e6  # the state memory: 12 B x 7,248 parameters at 1e6 $/GB
    sol = solve(s, with_baselines=False)
    # the budget binds on kappa . B (ports included) plus the state memory
    assert float(s.coefficients.usd_per_gbps @ sol.bw_gbps) + fixed == pytest.approx(5000.0, rel=1e-6)
    assert sol.network_cost_usd == pytest.approx(5000.0, rel=1e-6)
    ev = evaluate(s, sol.bw_gbps)
    no_opt = {k: v for k, v in SCENARIO.items() if k != "in_network_optimizer"}
    plain = load_scenario(write(tmp_path, {**no_opt, "workloads": [
        {**SCENARIO["workloads"][0], "parallelism": {"tp": 2, "dp": 4,
                                                     "global_batch_size": 8}}]}))
    assert plain.cost_model.aggregators is None
    assert plain.coefficients.fixed_usd == 0.0
    # same bandwidth, no aggregators: the difference is 800 $ per GB/s of B_pod and the
    # state memory
    diff = ev.cost.network_cost_usd - evaluate(plain, sol.bw_gbps).cost.network_cost_usd
    assert diff == pytest.approx(800.0 * sol.bw_gbps[1] + fixed, rel=1e-12)


def test_host_paging_scenario_buys_no_state_memory(tmp_path):
    doc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    doc["workloads"][0]["parallelism"]["optimizer_state"] = "host_paging"
    s = load_scenario(write(tmp_path, doc))
    assert s.cost_model.aggregators.state_bytes == 0.0 and s.coefficients.fixed_usd == 0.0
    assert_allclose(s.coefficients.usd_per_gbps, [16.0, 1072.0])


def test_set_and_sweep_axes(tmp_path):
    p = write(tmp_path, SCENARIO)
    s = apply_overrides(load_scenario(p), {"in_network_optimizer.usd_per_port_gbps": 50.0,
                                           "in_network_optimizer.dims": "[node]"})
    assert_allclose(s.coefficients.usd_per_gbps, [16.0 + 400.0, 272.0])
    df = sweep(p, {"workloads.w.parallelism.optimizer_state": ["aggregator", "host_paging"],
                        "in_network_optimizer.usd_per_port_gbps": [0.0, 100.0]},
                    progress=False)
    assert list(df["status"]) == ["optimal"] * 4
    # the ports share the binding budget: a dearer port buys less pod bandwidth, a slower step
    for state in ("aggregator", "host_paging"):
        rows = df[df["workloads.w.parallelism.optimizer_state"] == state]
        assert np.all(np.diff(rows["weighted_step_time_s"].to_numpy()) > 0)
        assert np.all(np.diff(rows["bw_pod_gbps"].to_numpy()) < 0)


def test_bad_section_names_file_and_field(tmp_path):
    doc = {**SCENARIO, "in_network_optimizer": {"dims": ["nope"]}}
    with pytest.raises(InputError, match="no dimension named 'nope'") as e:
        load_scenario(write(tmp_path, doc))
    assert e.value.field == "in_network_optimizer.dims" and e.value.source.endswith("s.yaml")
    doc = {**SCENARIO, "in_network_optimizer": {"usd_per_port_gbps": -1}}
    with pytest.raises(InputError) as e:
        load_scenario(write(tmp_path, doc))
    assert "in_network_optimizer.usd_per_port_gbps" in e.value.field


def test_an_unused_aggregator_section_is_an_error(tmp_path):
    # prices for aggregators no workload has: never dropped in silence
    doc = {**SCENARIO, "workloads": [
        {**SCENARIO["workloads"][0], "parallelism": {"tp": 2, "dp": 4, "global_batch_size": 8}}]}
    with pytest.raises(InputError, match="no model-based workload uses") as info:
        load_scenario(write(tmp_path, doc))
    assert info.value.field == "in_network_optimizer"


def test_one_replica_keeps_the_section_without_aggregators(tmp_path):
    # dp_mode named but DP 1: nothing is pushed, no aggregator is priced, and the section
    # (a sweep over dp may pass through 1) is not an error
    doc = {**SCENARIO, "workloads": [
        {**SCENARIO["workloads"][0], "parallelism": {**SCENARIO["workloads"][0]["parallelism"],
                                                     "dp": 1, "pp": 4}}]}
    doc = {**doc, "constraints": {"linear": ["sum(bw) <= 100"]}}
    s = load_scenario(write(tmp_path, doc))
    assert s.cost_model.aggregators is None and s.coefficients.fixed_usd == 0.0
