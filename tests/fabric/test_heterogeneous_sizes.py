"""Heterogeneous dimensions with asymmetric block sizes (``members.size``), and ``members``
attached to fabrics that are not written inline (builders, LIBRA network files).

The reference is a brute force: every block of the uneven dimension is timed on its own
(the hierarchical traffic of the group with that block's size, at that block's bandwidth)
and the lock-step collective takes the slowest block on every dimension.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from libra_opt import apply_overrides, sweep
from libra_opt.errors import InputError
from libra_opt.fabric.builders import fabric_from_spec
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.heterogeneous import DimMembers, check_uneven_sizes, slowest_fractions
from libra_opt.io.scenario_file import load_scenario, scenario_from_dict
from libra_opt.optimize.problem import solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
from tests.fixtures import cost_2d, fabric_2d

# pod (switch, n = 8) in three kinds of blocks: 8 NPUs at full speed, 5 at 0.7 B, 2 at 0.4 B
SIZES, FRACTIONS, SHARES = (8, 5, 2), (1.0, 0.7, 0.4), (0.6, 0.3, 0.1)
MEMBERS = DimMembers(FRACTIONS, SHARES, size=SIZES)
COMPUTE_S = 1e-3


def uneven_fabric():
    f = fabric_2d()
    return Fabric((f.dims[0], dataclasses.replace(f.dims[1], members=MEMBERS)))


def scenario(kind, size_bytes, span, constraints=(), **kw):
    f = uneven_fabric()
    wl = Workload("w", (Layer("l", Phase(COMPUTE_S, (Collective(kind, size_bytes, "g"),))),),
                  {"g": span})
    cons = tuple(parse_constraint(c, f) for c in constraints)
    return Scenario(f, cost_2d(), (wl,), constraints=cons, **kw)


def brute_force_step_s(kind, size_bytes, span, bw):
    """Pipelined step time: compute + max_d max_g traffic_{g,d} / (fraction_{g,d} B_d)."""
    t = np.zeros(2)
    for s_g, f_g in zip(SIZES, FRACTIONS, strict=True):
        if s_g == 1:
            continue
        g_span = (span[0], s_g)
        # an all-gather's input is the shard of the gathered buffer: a block of s_g NPUs
        # holds 1/s_g of it (the gathered buffer is the same in every block)
        size = size_bytes * span[1] / s_g if kind == "all_gather" else size_bytes
        traffic = hierarchical_traffic_bytes(kind, size, g_span)
        t = np.maximum(t, traffic / 1e9 / (np.asarray(bw, dtype=float) * [1.0, f_g]))
    return COMPUTE_S + t.max()


def test_hand_derived_effective_fraction():
    # r(k) = (k-1)/k: r(8) = 7/8, r(5) = 4/5, r(2) = 1/2
    # f_eff = min(1 x 1, 0.7 x (7/8)/(4/5), 0.4 x (7/8)/(1/2)) = min(1, 0.765625, 0.7)
    assert slowest_fractions(uneven_fabric()).tolist() == pytest.approx([1.0, 0.7], rel=1e-12)
    # without sizes the slowest member (0.4) bounds it
    plain = DimMembers(FRACTIONS, SHARES)
    assert plain.effective_fraction(8) == 0.4
    # all-reduce of 1 GB over pod alone at B_pod = 100 GB/s: the 2-NPU blocks send
    # 2 x 1 GB x 1/2 = 1 GB at 40 GB/s = 25 ms; the 8-NPU blocks 1.75 GB at 100 = 17.5 ms;
    # the 5-NPU blocks 1.6 GB at 70 = 22.86 ms -> 25 ms
    s = scenario("all_reduce", 1e9, (1, 8))
    assert evaluate(s, [50.0, 100.0]).weighted_step_time_s == pytest.approx(COMPUTE_S + 0.025,
                                                                            rel=1e-12)


@pytest.mark.parametrize(("kind", "span"), [
    ("all_reduce", (1, 8)), ("all_reduce", (4, 8)), ("all_reduce", (2, 8)),
    ("reduce_scatter", (4, 8)), ("all_gather", (4, 8)), ("all_gather", (1, 8)),
    ("all_to_all", (4, 8)), ("all_to_all", (1, 8)),
])
def test_evaluator_equals_brute_force_over_blocks(kind, span):
    s = scenario(kind, 3e8, span)
    for bw in itertools.product((20.0, 80.0, 300.0), (10.0, 55.0, 400.0)):
        assert evaluate(s, list(bw)).weighted_step_time_s == pytest.approx(
            brute_force_step_s(kind, 3e8, span, bw), rel=1e-12)


@pytest.mark.parametrize("kind", ["all_reduce", "all_to_all"])
def test_optimum_equals_brute_force_search(kind):
    """Budget 30,000 $ (kappa = (64, 1088) $/GB/s): the optimum on the budget line against
    a dense search of the brute-force step time along it."""
    s = scenario(kind, 1e9, (4, 8), constraints=("64*bw.node + 1088*bw.pod <= 30000",))
    sol = solve(s, with_baselines=False)
    b_node = np.linspace(1e-3, 30000 / 64 - 1e-3, 200_001)
    b_pod = (30000 - 64 * b_node) / 1088
    t = np.array([brute_force_step_s(kind, 1e9, (4, 8), (a, b)) for a, b in
                  zip(b_node[::100], b_pod[::100], strict=True)])
    i = int(t.argmin()) * 100
    lo, hi = max(i - 100, 0), min(i + 100, len(b_node) - 1)
    fine = [brute_force_step_s(kind, 1e9, (4, 8), (a, b))
            for a, b in zip(b_node[lo:hi + 1], b_pod[lo:hi + 1], strict=True)]
    best = min(fine)
    assert sol.objective_value <= best * (1 + 1e-9)
    assert sol.objective_value == pytest.approx(best, rel=1e-5)
    assert brute_force_step_s(kind, 1e9, (4, 8), sol.bw_gbps) == pytest.approx(
        sol.objective_value, rel=1e-6)


@pytest.mark.parametrize(("kind", "span", "kw", "needle"), [
    ("p2p", (1, 8), {}, "moves the same bytes in every block"),
    ("all_reduce", (1, 4), {}, "spans 4 of the dimension's 8 NPUs"),
    ("all_to_all", (4, 4), {}, "spans 4 of the dimension's 8 NPUs"),
    ("all_reduce", (4, 8), {"collective_model": "topology_aware"}, "hierarchical traffic"),
    ("all_reduce", (4, 8), {"traffic_model": "native"}, "not traffic_model 'native'"),
    ("all_reduce", (4, 8), {"in_network_reduction": ("pod",)}, "in-network reduction"),
])
def test_what_is_not_exact_is_refused(kind, span, kw, needle):
    with pytest.raises(InputError, match=needle) as err:
        scenario(kind, 1e9, span, **kw)
    assert err.value.field == "fabric.dims.pod.members.size"


def test_uneven_inner_dimension_with_outer_span_refused():
    f = fabric_2d()
    node = dataclasses.replace(f.dims[0], members=DimMembers((1.0, 1.0), (0.5, 0.5),
                                                             size=(4, 3)))
    wl = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1e9, "dp"),))),),
                  {"dp": (4, 8)})
    with pytest.raises(InputError, match="also spans 'pod' outside it"):
        Scenario(Fabric((node, f.dims[1])), cost_2d(), (wl,))
    # an all-to-all does not shrink its buffer: accepted
    a2a = Workload("w", (Layer("l", Phase(0.0, (Collective("all_to_all", 1e9, "ep"),))),),
                   {"ep": (4, 8)})
    Scenario(Fabric((node, f.dims[1])), cost_2d(), (a2a,))


def test_largest_block_must_be_the_dimension():
    f = fabric_2d()
    bad = dataclasses.replace(f.dims[1], members=DimMembers((1.0, 1.0), (0.5, 0.5),
                                                            size=(6, 4)))
    with pytest.raises(InputError, match=r"largest block \(6 NPUs\) must equal"):
        check_uneven_sizes(Fabric((f.dims[0], bad)), [])
    with pytest.raises(InputError, match="whole number"):
        DimMembers((1.0,), (1.0,), size=(2.5,))


# ---- members beside a builder or a LIBRA network file ------------------------------------

BUILDER_DOC = {
    "name": "b",
    "fabric": {"builder": "fat_tree", "n_npus": 64, "hb_domain": 8,
               "members": {"scaleout": {"fraction": [1.0, 0.5], "share": [0.75, 0.25],
                                        "price_factor": [1.0, 0.6]}}},
    "cost_model": {"catalog": "current_2025"},
    "workloads": [{"name": "w", "astra_sim": "w.txt", "communicator": "comm.yml"}],
    "constraints": {"budget_usd": 2.0e6},
}
# one 1 GB all-reduce over hb 8 x scaleout 8: hb 2 x 1 GB x 7/8 = 1.75 GB,
# scaleout 2 x 125 MB x 7/8 = 218.75 MB
WORKLOAD = "DATA\n1\nl -1 0 NONE 0 0 NONE 0 1000000 ALLREDUCE 1000000000 1\n"
COMM = "Forward: [1, 1]\nInputGrad: [1, 1]\nWeightGrad: [8, 8]\n"


def write_builder(tmp_path, doc=BUILDER_DOC):
    import yaml

    (tmp_path / "w.txt").write_text(WORKLOAD)
    (tmp_path / "comm.yml").write_text(COMM)
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_members_beside_a_builder(tmp_path):
    s = load_scenario(write_builder(tmp_path))
    plain = scenario_from_dict({**BUILDER_DOC, "fabric": {k: v for k, v in
                                                          BUILDER_DOC["fabric"].items()
                                                          if k != "members"}},
                               str(tmp_path / "s.yaml"), tmp_path)
    assert s.fabric.dims[1].members.slowest_fraction == 0.5
    # scaleout at B = 50: 218.75 MB at 0.5 x 50 GB/s = 8.75 ms > hb 1.75 GB / 400 = 4.375 ms
    ev = evaluate(s, [400.0, 50.0])
    assert ev.weighted_step_time_s == pytest.approx(1e-3 + 0.21875 / 25, rel=1e-12)
    # $ factor of scaleout: 0.75 x 1 x 1 + 0.25 x 0.5 x 0.6 = 0.825
    ratio = s.coefficients.usd_per_gbps / plain.coefficients.usd_per_gbps
    assert ratio.tolist() == pytest.approx([1.0, 0.825], rel=1e-12)
    # the same blocks through fabric_from_spec (the Python API of builders)
    assert fabric_from_spec(BUILDER_DOC["fabric"]) == s.fabric


def test_members_beside_a_libra_network_file(tmp_path):
    import shutil

    from libra_opt.io.example_files import example_path

    src = example_path("gpt3_175b_4d")
    for name in ("fabric_4d.yml", "cost_ispass24.yml"):
        shutil.copy(src.parent / name, tmp_path / name)
    shutil.copytree(src.parent / "gpt3_175b", tmp_path / "gpt3_175b")
    doc = {"name": "n",
           "fabric": {"libra_network": "fabric_4d.yml",
                      "members": {"dim3": {"fraction": [1.0, 0.25], "share": [0.5, 0.5]}}},
           "cost_model": "cost_ispass24.yml",
           "workloads": [{"name": "g", "astra_sim": "gpt3_175b/workload.txt",
                          "communicator": "gpt3_175b/communicator.yml"}],
           "constraints": {"linear": ["sum(bw) == 1000"]}}
    import yaml

    path = tmp_path / "n.yaml"
    names = load_scenario_fabric_names(tmp_path, doc)
    doc["fabric"]["members"] = {names[3]: doc["fabric"]["members"]["dim3"]}
    path.write_text(yaml.safe_dump(doc))
    s = load_scenario(path)
    base_doc = {**doc, "fabric": {"libra_network": "fabric_4d.yml"}}
    base = scenario_from_dict(base_doc, str(path), tmp_path)
    assert slowest_fractions(s.fabric).tolist() == [1.0, 1.0, 1.0, 0.25]
    # the outermost dimension at a quarter of B is the homogeneous fabric at B x (1,1,1,1/4)
    bw = np.array([400.0, 300.0, 200.0, 100.0])
    assert evaluate(s, bw).weighted_step_time_s == pytest.approx(
        evaluate(base, bw * [1, 1, 1, 0.25]).weighted_step_time_s, rel=1e-12)


def load_scenario_fabric_names(tmp_path, doc):
    from libra_opt.io.libra import read_libra_network

    return read_libra_network(tmp_path / doc["fabric"]["libra_network"]).names


def test_members_errors_name_the_field(tmp_path):
    bad_name = {**BUILDER_DOC, "fabric": {**BUILDER_DOC["fabric"],
                                          "members": {"nope": {"fraction": [1], "share": [1]}}}}
    with pytest.raises(InputError, match="no dimension named 'nope'") as err:
        load_scenario(write_builder(tmp_path, bad_name))
    assert err.value.field == "fabric.members" and err.value.source.endswith("s.yaml")
    bad_value = {**BUILDER_DOC, "fabric": {**BUILDER_DOC["fabric"], "members": {
        "scaleout": {"fraction": [1, 0], "share": [0.5, 0.5]}}}}
    with pytest.raises(InputError, match="must be in") as err:
        load_scenario(write_builder(tmp_path, bad_value))
    assert err.value.field == "fabric.members.scaleout.fraction"
    twice = {"name": "t", "fabric": {"dims": [
        {"name": "a", "topology": "switch", "size": 8, "tier": "ScaleOut",
         "members": {"fraction": [1], "share": [1]}}],
        "members": {"a": {"fraction": [1], "share": [1]}}},
        "cost_model": {"catalog": "current_2025"},
        "workloads": [{"name": "w", "astra_sim": "w.txt", "communicator": "comm.yml"}]}
    with pytest.raises(InputError, match="already has members"):
        load_scenario(write_builder(tmp_path, twice))


def test_set_and_sweep_axis_on_fabric_members(tmp_path):
    path = write_builder(tmp_path)
    s = apply_overrides(load_scenario(path), {"fabric.members.scaleout.fraction[1]": 0.25})
    assert s.fabric.dims[1].members.fraction == (1.0, 0.25)
    df = sweep(path, {"fabric.members.scaleout.fraction[1]": [1.0, 0.5, 0.25]},
                    progress=False)
    assert list(df["status"]) == ["optimal"] * 3
    # a slower member never makes the optimum faster
    assert df["weighted_step_time_s"].is_monotonic_increasing


def test_inline_yaml_size(tmp_path):
    doc = {"name": "i", "fabric": {"dims": [
        {"name": "hb", "topology": "switch", "size": 8, "tier": "ScaleUp"},
        {"name": "scaleout", "topology": "switch", "size": 8, "tier": "ScaleOut",
         "members": {"fraction": [1.0, 0.6], "share": [0.5, 0.5], "size": [8, 4]}}]},
        "cost_model": {"catalog": "current_2025"},
        "workloads": [{"name": "w", "astra_sim": "w.txt", "communicator": "comm.yml"}]}
    s = load_scenario(write_builder(tmp_path, doc))
    # f_eff = min(1, 0.6 x (7/8) / (3/4)) = 0.7
    assert slowest_fractions(s.fabric).tolist() == pytest.approx([1.0, 0.7], rel=1e-12)
    doc["fabric"]["dims"][1]["members"]["size"] = [8, 2.5]
    with pytest.raises(InputError) as err:
        load_scenario(write_builder(tmp_path, doc))
    assert err.value.field.startswith("fabric.dims[1].members.size")


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_reference_formulation_is_dcp_and_agrees(objective):
    from libra_opt.optimize.problem import build_problem

    s = scenario("all_reduce", 1e9, (4, 8), constraints=("sum(bw) >= 50",),
                 objective=objective, budget_usd=3e4)
    p = build_problem(s, backend="cvxpy")
    assert p.program.problem.is_dcp(dpp=True)
    ref = solve(p)
    fast = solve(s)
    assert fast.objective_value == pytest.approx(ref.objective_value, rel=1e-6)
    # and the answer is the brute force's step time at the returned bandwidths
    t = brute_force_step_s("all_reduce", 1e9, (4, 8), fast.bw_gbps)
    if objective == "perf":
        assert fast.objective_value == pytest.approx(t, rel=1e-9)


def test_latency_on_an_uneven_switch_is_exact():
    """With 1 us per step the brute force adds alpha x steps per block: on a switch every
    block with more than one NPU takes the same 2 steps for an all-reduce, on the ring
    node (k = 4) 2 x 3 = 6 steps."""
    alpha = 1e-6
    f = fabric_2d(alpha)
    fab = Fabric((f.dims[0], dataclasses.replace(f.dims[1], members=MEMBERS)))
    wl = Workload("w", (Layer("l", Phase(COMPUTE_S, (Collective("all_reduce", 3e8, "g"),))),),
                  {"g": (4, 8)})
    s = Scenario(fab, cost_2d(), (wl,))
    for bw in ([20.0, 10.0], [300.0, 400.0], [80.0, 55.0]):
        t = np.zeros(2)
        for s_g, f_g in zip(SIZES, FRACTIONS, strict=True):
            traffic = hierarchical_traffic_bytes("all_reduce", 3e8, (4, s_g)) / 1e9
            t = np.maximum(t, traffic / (np.array(bw) * [1.0, f_g]) + alpha * np.array([6, 2]))
        assert evaluate(s, bw).weighted_step_time_s == pytest.approx(COMPUTE_S + t.max(),
                                                                    rel=1e-12)


def test_latency_on_an_uneven_ring_refused_unless_the_largest_block_binds():
    f = fabric_2d(1e-6)
    wl = Workload("w", (Layer("l", Phase(0.0, (Collective("all_to_all", 1e9, "g"),))),),
                  {"g": (4, 1)})
    # blocks of 4 at full speed, 2 at 0.4 B: f_eff = 0.4 x (3/4) / (1/2) = 0.6 < 1
    slow_small = DimMembers((1.0, 0.4), (0.5, 0.5), size=(4, 2))
    with pytest.raises(InputError, match="latency_s > 0"):
        Scenario(Fabric((dataclasses.replace(f.dims[0], members=slow_small), f.dims[1])),
                 cost_2d(), (wl,))
    # the largest block is the slowest (0.5 x 1 < 1 x (3/4)/(1/2)): accepted, and exact
    slow_large = DimMembers((0.5, 1.0), (0.5, 0.5), size=(4, 2))
    s = Scenario(Fabric((dataclasses.replace(f.dims[0], members=slow_large), f.dims[1])),
                 cost_2d(), (wl,))
    # block of 4: 1 GB x 3/4 / (0.5 x 100) + 3 steps; block of 2: 0.5 GB / 100 + 1 step
    expected = max(0.75 / 50 + 3e-6, 0.5 / 100 + 1e-6)
    assert evaluate(s, [100.0, 100.0]).weighted_step_time_s == pytest.approx(expected,
                                                                             rel=1e-12)
