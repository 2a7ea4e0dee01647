"""Flat NCCL rings for groups that span dimensions (``Workload.flat_ring_groups``).

Every expected number is derived by hand in the comments: a ring over ``k`` ranks moves
``2 m (k - 1) / k`` bytes per rank for an all-reduce (``m (k - 1) / k`` for a reduce-scatter,
``m (k - 1)`` of shard ``m`` for an all-gather), every spanned dimension carries all of it, the
collective runs at the slowest spanned dimension's rate, and each of its ``2 (k - 1)`` (or
``k - 1``) steps waits for the largest per-step latency of the spanned dimensions.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.optimize.terms import aggregate_terms
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.collectives import (
    flat_ring_latency_s,
    flat_ring_traffic_bytes,
    hierarchical_traffic_bytes,
)
from libra_opt.traffic.routing import collective_traffic
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload

NVLINK_LAT_S, NIC_LAT_S = 1e-6, 5e-6


def two_nodes() -> Fabric:
    """Two 8-GPU nodes: an NVLink switch inside, a NIC switch between them."""
    return Fabric((Dim("node", "switch", 8, "NV", NVLINK_LAT_S),
                   Dim("net", "switch", 2, "IB", NIC_LAT_S)))


def tp16(flat: bool, kind: str = "all_reduce", size_bytes: float = 1e9) -> Workload:
    coll = Collective(kind, size_bytes, "tp")
    return Workload("tp16", (Layer("l", Phase(1e-3, (coll,)), count=10),),
                    {"tp": (8, 2), "dp": (1, 1)},
                    flat_ring_groups=frozenset({"tp"}) if flat else frozenset())


def test_traffic_by_hand():
    # k = 16, m = 1e9, ring hops: 14 inside the nodes, 2 across (8 -> 8 and back).
    # all-reduce T = 2e9 x 15/16 = 1.875e9 per hop: NVLink 1.875e9 x 14/16, NIC x 2/16
    assert_allclose(flat_ring_traffic_bytes("all_reduce", 1e9, (8, 2)),
                    [1.640625e9, 0.234375e9])
    # reduce-scatter: half of it; all-gather of a 1e9 shard: T = 15e9
    assert_allclose(flat_ring_traffic_bytes("reduce_scatter", 1e9, (8, 2)),
                    [0.8203125e9, 0.1171875e9])
    assert_allclose(flat_ring_traffic_bytes("all_gather", 1e9, (8, 2)), [13.125e9, 1.875e9])
    # all-to-all: as hierarchical (1e9 x 7/8, 1e9 x 1/2)
    assert_allclose(flat_ring_traffic_bytes("all_to_all", 1e9, (8, 2)), [0.875e9, 0.5e9])
    # (4, 1, 2), k = 8, T = 14e6: hops 3 x 2 = 6 on dim 0, (2 - 1) + 1 = 2 on dim 2
    assert_allclose(flat_ring_traffic_bytes("all_reduce", 8e6, (4, 1, 2)),
                    [10.5e6, 0.0, 3.5e6])
    # one spanned dimension: the hierarchical ring (every hop on it)
    for span in [(8, 1), (1, 8), (4, 1, 1)]:
        for kind in ("all_reduce", "reduce_scatter", "all_gather"):
            assert_allclose(flat_ring_traffic_bytes(kind, 3e6, span),
                            hierarchical_traffic_bytes(kind, 3e6, span))


def test_traffic_by_brute_force_ring_count():
    # Count the hops of the ring 0 -> 1 -> ... -> k-1 -> 0 (ranks in mixed radix, innermost
    # first) by their outermost differing coordinate; every hop carries T bytes, shared by
    # the k members.
    for span in [(8, 2), (4, 3, 2), (2, 1, 4), (3, 5)]:
        k = int(np.prod(span))
        coords = [np.unravel_index(r, span, order="F") for r in range(k)]
        hops = np.zeros(len(span))
        for r in range(k):
            a, b = coords[r], coords[(r + 1) % k]
            hops[max(d for d in range(len(span)) if a[d] != b[d])] += 1
        t = 2 * 1e6 * (k - 1) / k
        assert_allclose(flat_ring_traffic_bytes("all_reduce", 1e6, span), t * hops / k)


def test_latency_by_hand():
    # all-reduce: 2 x 15 steps x max(1 us, 5 us) = 150 us on both spanned dims
    assert_allclose(flat_ring_latency_s("all_reduce", (8, 2), (1e-6, 5e-6)), [150e-6] * 2,
                    rtol=1e-12)
    # all-gather over (4, 1, 2): 7 steps x 3 us (the middle dim is not spanned)
    assert_allclose(flat_ring_latency_s("all_gather", (4, 1, 2), (1e-6, 9e-6, 3e-6)),
                    [21e-6, 0.0, 21e-6], rtol=1e-12)
    with pytest.raises(InputError):
        flat_ring_latency_s("p2p", (8, 2), (1e-6, 5e-6))


def test_routing_within_one_dimension_changes_latency_only():
    f = two_nodes()
    # within one node the flat ring moves the hierarchical bytes (2e9 x 7/8 on NVLink) ...
    t_h, l_h = collective_traffic("all_reduce", 1e9, (8, 1), f)
    t_f, l_f = collective_traffic("all_reduce", 1e9, (8, 1), f, flat_ring=True)
    assert_allclose(t_f, t_h)
    assert_allclose(t_f, [1.75e9, 0.0])
    # ... but pays NCCL's 2 x 7 ring steps of 1 us, not the switch's 2 direct steps
    assert_allclose(l_h, [2e-6, 0.0], rtol=1e-12)
    assert_allclose(l_f, [14e-6, 0.0], rtol=1e-12)
    # all-to-all is not a ring: unchanged even when it spans both dims
    t_h, _ = collective_traffic("all_to_all", 1e9, (8, 2), f)
    t_f, _ = collective_traffic("all_to_all", 1e9, (8, 2), f, flat_ring=True)
    assert_allclose(t_f, t_h)


def test_step_time_tp_across_nodes_by_hand():
    f = two_nodes()
    bw = [300.0, 50.0]
    # flat: per layer 1 ms + max(1.640625e9 / 300e9, 0.234375e9 / 50e9) + 150 us
    #     = 1 ms + 5.46875 ms + 0.15 ms; 10 layers
    assert_allclose(step_time(tp16(True), f, bw).step_time_s,
                    10 * (1e-3 + 1.640625e9 / 300e9 + 150e-6), rtol=1e-12)
    # hierarchical: NVLink 1.75e9 / 300e9 + 2 x 1 us, NIC 2 x 1.25e8 x 1/2 / 50e9 + 2 x 5 us
    hier = 10 * (1e-3 + max(1.75e9 / 300e9 + 2e-6, 1.25e8 / 50e9 + 10e-6))
    assert_allclose(step_time(tp16(False), f, bw).step_time_s, hier, rtol=1e-12)
    # on a slow NIC the ring's 1.875x hierarchical NIC bytes set the time:
    # flat 1 ms + 0.234375e9 / 10e9 + 150 us vs hierarchical 1 ms + 1.25e8 / 10e9 + 10 us
    bw = [300.0, 10.0]
    assert_allclose(step_time(tp16(True), f, bw).step_time_s,
                    10 * (1e-3 + 0.234375e9 / 10e9 + 150e-6), rtol=1e-12)
    assert_allclose(step_time(tp16(False), f, bw).step_time_s,
                    10 * (1e-3 + 1.25e8 / 10e9 + 10e-6), rtol=1e-12)


def test_unknown_flat_ring_group_is_refused():
    with pytest.raises(InputError, match="flat_ring_groups"):
        Workload("w", (Layer("l"),), {"tp": (2,)}, flat_ring_groups=frozenset({"cp"}))


@pytest.mark.parametrize("backend", ["clarabel", "cvxpy"])
def test_optimum_closed_form_and_backends_agree(backend):
    # With bw.node + bw.net <= 400 GB/s the flat ring's time max(a / B0, b / B1), a = 1.640625
    # GB, b = 0.234375 GB, is least where both are equal: B0 = 400 a / (a + b) = 350, B1 = 50,
    # time (a + b) / 400 = 4.6875 ms; per layer 1 ms + 4.6875 ms + 150 us, x 10 layers.
    f = two_nodes()
    scen = Scenario(f, CostModel.from_tables({t: {"link": 1.0, "switch": 0.0, "nic": 0.0}
                                              for t in ("NV", "IB")}),
                    (tp16(True),), constraints=(parse_constraint("sum(bw) <= 400", f),))
    sol = solve(build_problem(scen, backend=backend))
    assert_allclose(sol.objective_value, 10 * (1e-3 + 1.875e9 / 400e9 + 150e-6), rtol=1e-6)
    assert_allclose(sol.bw_gbps, [350.0, 50.0], rtol=1e-3)
    # the independent numpy evaluator agrees at the returned bandwidths
    assert_allclose(evaluate(scen, sol.bw_gbps).objective_value, sol.objective_value,
                    rtol=1e-7)
    # and the aggregated terms hold the flat-ring rows
    terms = aggregate_terms([tp16(True)], f)
    assert_allclose(terms.traffic_gb, [[1.640625, 0.234375]])
    assert_allclose(terms.latency_s, [[150e-6, 150e-6]], rtol=1e-12)


def test_generated_tp_group_is_a_flat_ring():
    from libra_opt.generators import generate_workload
    from libra_opt.io.presets import load_device, load_model

    fabric = Fabric((Dim("node", "switch", 8, "NV", NVLINK_LAT_S),
                     Dim("net", "switch", 4, "IB", NIC_LAT_S)))
    g = generate_workload(load_model("llama3_8b"), {"tp": 16, "dp": 2, "global_batch_size": 8},
                          load_device("a100_80gb"), fabric)
    w = g.workload
    assert w.groups["tp"] == (8, 2)
    assert {"tp", "cp", "ep"} <= w.flat_ring_groups and "dp" not in w.flat_ring_groups
    hier = Workload(w.name, w.layers, w.groups)
    # NIC bytes per GPU: flat 2 m 15/16 x 2/16 = 0.234 m, hierarchical 2 (m / 8) / 2 = 0.125 m
    bw = np.array([300.0, 10.0])
    assert step_time(w, fabric, bw).step_time_s > step_time(hier, fabric, bw).step_time_s


def _random_flat_ring_scenario(seed: int) -> Scenario:
    """A random perf scenario whose workload runs a flat-ring group over several dims."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 6))
    sizes = [int(rng.choice([2, 3, 4, 6, 8])) for _ in range(n)]
    dims = tuple(Dim(f"d{d}", str(rng.choice(["ring", "switch", "fully_connected"])), s, f"T{d}",
                     float(rng.choice([0.0, 2e-6]))) for d, s in enumerate(sizes))
    fabric = Fabric(dims)
    usd = {f"T{d}": {"link": float(rng.uniform(1, 10)), "switch": float(rng.uniform(0, 5)),
                     "nic": float(rng.uniform(0, 5))} for d in range(n)}
    flat = tuple(s if rng.random() < 0.7 else 1 for s in sizes)
    other = tuple(s if rng.random() < 0.5 else 1 for s in sizes)
    kinds = ("all_reduce", "reduce_scatter", "all_gather")
    layers = tuple(
        Layer(f"l{i}", Phase(float(rng.uniform(1e-4, 1e-2)),
                             (Collective(str(rng.choice(kinds)), float(rng.uniform(1e7, 1e9)), "tp"),)),
              weight_grad=Phase(float(rng.uniform(0, 1e-3)),
                                (Collective("all_reduce", float(rng.uniform(1e7, 1e9)), "dp"),)),
              count=int(rng.integers(1, 20)))
        for i in range(3))
    w = Workload("w", layers, {"tp": flat, "dp": other}, flat_ring_groups=frozenset({"tp"}))
    total = float(rng.uniform(100, 1000)) * n
    return Scenario(fabric, CostModel.from_tables(usd), (w,),
                    constraints=(parse_constraint(f"sum(bw) <= {total!r}", fabric),),
                    training_loop=str(rng.choice(["no_overlap", "overlap"])))


@pytest.mark.parametrize("seed", range(8))
def test_backends_agree_on_random_flat_ring_scenarios(seed):
    # The hand-assembled conic program and the cvxpy reference reach the same optimum, and
    # the numpy re-check confirms each. Flat rings over many dimensions give terms of widely
    # different sizes (the outermost dimension carries few of the ring's hops); on such
    # programs the default backend can stop at a relative gap of a few 1e-7 (within the
    # 1e-6 verification tolerance), so the backends are compared at 1e-6 here.
    scen = _random_flat_ring_scenario(seed)
    fast = solve(build_problem(scen, backend="clarabel"))
    ref = solve(build_problem(scen, backend="cvxpy"))
    assert_allclose(fast.objective_value, ref.objective_value, rtol=1e-6)
    for sol in (fast, ref):
        assert_allclose(evaluate(scen, sol.bw_gbps).objective_value, sol.objective_value,
                        rtol=1e-6)
