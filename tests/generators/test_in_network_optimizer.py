"""In-network optimizer (LuWu-style model-in-network DP): hand-derived per-NPU traffic and
memory of a tiny model, brute force over bandwidths, both backends, YAML errors."""

from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.in_network_optimizer import dp_sync_bytes_per_npu
from libra_opt.generators.parallelism import Precision
from libra_opt.io.model_entry import workload_from_entry
from libra_opt.io.presets import load_device
from libra_opt.optimize.problem import solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from tests.fixtures import cost_2d
from tests.optimize.test_problem import brute_2d, brute_line, check

#: tiny model, parameters by hand (h = 16, f = 64, V = 32, 2 layers, RMSNorm, no bias):
#: per layer Q K V O 4 h^2 = 1024, MLP 2 h f = 2048, two norms 2 h = 32.
#: With tp = 2 one NPU holds per layer 1024/2 + 2048/2 + 32 = 1568 (x 2 layers = 3136),
#: the embedding V h / 2 = 256 and the head h + V h / 2 = 272: PSI = 3664 parameters.
PSI = 3664.0


def tiny():
    return TransformerSpec(name="tiny", n_layers=2, hidden_size=16, ffn_hidden_size=64,
                           n_heads=2, vocab_size=32, seq_len=8, norm="rmsnorm")


def fabric(lat=0.0):
    return Fabric((Dim("node", "ring", 2, "A", lat), Dim("pod", "switch", 4, "B", lat)))


def gen(mode="in_network_optimizer", zero=0, lat=0.0):
    par = {"tp": 2, "dp": 4, "global_batch_size": 8, "zero": zero, "dp_mode": mode}
    return generate_workload(tiny(), par, load_device("h100_sxm"), fabric(lat), efficiency=0.5)


def dp_traffic(g):
    """Per-NPU bytes on (node, pod) of the dp_grad_sync and optimizer_step layers."""
    wl = g.workload
    out = np.zeros(2)
    for layer in wl.layers:
        if layer.name in ("dp_grad_sync", "optimizer_step"):
            for _, phase in layer.phases():
                for c in phase.collectives:
                    out += layer.count * hierarchical_traffic_bytes(
                        c.kind, c.size_bytes, wl.groups[c.group])
    return out


def test_traffic_by_hand():
    g_bytes = 2 * PSI  # bf16 gradients and parameters
    inopt = dp_traffic(gen())
    assert_allclose(inopt, [0.0, g_bytes + g_bytes], rtol=1e-12)  # push G + pull P on pod
    ring = dp_traffic(gen("collective"))
    assert_allclose(ring, [0.0, 2 * g_bytes * 3 / 4], rtol=1e-12)  # 2 G (k-1)/k, k = 4
    zero1 = dp_traffic(gen("collective", zero=1))
    assert_allclose(zero1, [0.0, 2 * g_bytes * 3 / 4], rtol=1e-12)
    assert dp_sync_bytes_per_npu(PSI, Precision(), 4, "in_network_optimizer") == 4 * PSI
    assert dp_sync_bytes_per_npu(PSI, Precision(), 4, "collective") == 3 * PSI


def test_push_pull_layers_and_no_gpu_optimizer_time():
    g = gen()
    layers = {layer.name: layer for layer in g.workload.layers}
    push = layers["dp_grad_sync"].weight_grad.collectives
    pull = layers["optimizer_step"].forward.collectives
    assert [(c.kind, c.size_bytes, c.group) for c in push] == [("p2p", 2 * PSI, "dp")]
    assert [(c.kind, c.size_bytes, c.group) for c in pull] == [("p2p", 2 * PSI, "dp")]
    assert layers["optimizer_step"].forward.compute_s == 0.0
    assert gen("collective").workload.layers[-1].forward.compute_s > 0.0
    assert g.workload.groups["dp"] == (1, 4)


def test_memory_by_hand():
    m = gen().memory
    assert (m.weights_bytes, m.grads_bytes, m.optimizer_bytes) == (2 * PSI, 2 * PSI, 0.0)
    m0 = gen("collective").memory
    assert (m0.weights_bytes, m0.grads_bytes, m0.optimizer_bytes) == (2 * PSI, 2 * PSI, 12 * PSI)
    assert m0.activations_bytes == m.activations_bytes
    m3 = gen("collective", zero=3).memory
    assert_allclose(m3.weights_bytes + m3.grads_bytes + m3.optimizer_bytes, 16 * PSI / 4)


def scen(cons, objective="perf", lat=0.0, **kw):
    f = fabric(lat)
    return Scenario(f, cost_2d(), (gen(lat=lat).workload,),
                    constraints=tuple(parse_constraint(c, f) for c in cons),
                    objective=objective, **kw)


def step_fn(lat=0.0):
    """Vectorized step time of the generated workload, pipelined, no overlap, by an
    independent walk: compute + sum of max_d(t_d / B_d + alpha steps_d)."""
    wl = gen(lat=lat).workload
    const = 0.0
    terms = []
    for layer in wl.layers:
        for _, phase in layer.phases():
            const += layer.count * phase.compute_s
            for c in phase.collectives:
                span = wl.groups[c.group]
                t = hierarchical_traffic_bytes(c.kind, c.size_bytes, span) / 1e9
                steps = np.array([0.0 if k == 1 else (1.0 if c.kind == "p2p" else
                                  (2.0 * (k - 1) if d == 0 else 2.0)) for d, k in enumerate(span)])
                terms.append((layer.count, t, lat * steps))

    def f(b0, b1):
        s = const
        for n, t, a in terms:
            s = s + n * np.maximum(np.where(t[0] > 0, t[0] / b0 + a[0], 0.0),
                                   np.where(t[1] > 0, t[1] / b1 + a[1], 0.0))
        return s
    return f


@pytest.mark.parametrize("lat", [0.0, 1e-6])
def test_evaluator_matches_independent_walk(lat):
    s = scen([], lat=lat)
    for bw in ([10.0, 30.0], [123.0, 7.5]):
        assert_allclose(evaluate(s, bw).weighted_step_time_s, step_fn(lat)(*bw), rtol=1e-12)


def test_perf_brute_force_line():
    sol = solve(scen(["sum(bw) == 300"]))
    best, arg = brute_line(300.0, step_fn())
    check(sol, best, 1e-6)
    assert_allclose(sol.bw_gbps, arg, rtol=1e-3)


def test_perf_per_cost_budget_brute_force():
    budget = 2e4
    k = np.array([8 * 2.0, 8 * 34.0])  # tests.fixtures.cost_2d per NPU (2, 34) $ per GB/s
    s = scen(["sum(bw) >= 50"], "perf_per_cost", budget_usd=budget)
    assert_allclose(s.coefficients.usd_per_gbps, k)
    sol = solve(s)
    f = step_fn()
    best, _ = brute_2d(lambda a, b: (a + b >= 50) & (k[0] * a + k[1] * b <= budget),
                       lambda a, b: f(a, b) * (k[0] * a + k[1] * b), hi=2000.0)
    check(sol, best)


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_backends_agree(objective):
    s = scen(["sum(bw) >= 50", "bw.node >= bw.pod"], objective, lat=1e-6, budget_usd=2e4)
    a = solve(s)
    b = solve(s, backend="cvxpy")
    assert_allclose(a.objective_value, b.objective_value, rtol=1e-7)


def entry(**par):
    return {"name": "l8", "model": "llama3_8b", "device": "h100_sxm",
            "parallelism": {"tp": 8, "dp": 2, "global_batch_size": 16, **par}}


def test_yaml_bad_values_name_file_and_field():
    f = Fabric((Dim("node", "switch", 8, "NVLink"), Dim("pod", "switch", 2, "IB")))
    ok = workload_from_entry(entry(dp_mode="in_network_optimizer"), f, Path("."), "s.yaml")
    assert [c.kind for c in ok.layers[-1].forward.collectives] == ["p2p"]
    with pytest.raises(InputError) as e:
        workload_from_entry(entry(dp_mode="luwu"), f, Path("."), "s.yaml")
    assert e.value.source == "s.yaml" and e.value.field == "workloads[l8].parallelism.dp_mode"
    with pytest.raises(InputError, match="needs zero 0") as e:
        workload_from_entry(entry(dp_mode="in_network_optimizer", zero=3), f, Path("."),
                            "s.yaml")
    assert e.value.source == "s.yaml" and e.value.field == "workloads[l8].parallelism"
    with pytest.raises(InputError) as e:
        workload_from_entry(entry(dp_mode=1), f, Path("."), "s.yaml")
    assert e.value.field == "workloads[l8].parallelism.dp_mode"


def test_non_transformer_rejected():
    f = Fabric((Dim("node", "switch", 8, "T"),))
    e50 = {"name": "r50", "model": "resnet50", "device": "a100_80gb",
           "parallelism": {"dp": 8, "global_batch_size": 64, "dp_mode": "in_network_optimizer"}}
    with pytest.raises(InputError, match="only modelled for transformer") as e:
        workload_from_entry(e50, f, Path("."), "r.yaml")
    assert e.value.source == "r.yaml" and e.value.field == "workloads[r50].parallelism.dp_mode"


def test_default_unchanged():
    assert gen("collective").workload == generate_workload(
        tiny(), {"tp": 2, "dp": 4, "global_batch_size": 8}, load_device("h100_sxm"), fabric(),
        efficiency=0.5).workload


def test_set_override_and_sweep_axis_path():
    from libra_opt import apply_overrides
    from libra_opt.io import load_scenario

    s = load_scenario("gpt3_175b_a100_cluster")
    s2 = apply_overrides(s, {"workloads.gpt3_175b.parallelism.dp_mode": "in_network_optimizer"})
    layers = {layer.name: layer for layer in s2.workloads[0].layers}
    assert [c.kind for c in layers["optimizer_step"].forward.collectives] == ["p2p"]
    with pytest.raises(InputError, match="dp_mode"):
        apply_overrides(s, {"workloads.gpt3_175b.parallelism.dp_mode": "x"})
