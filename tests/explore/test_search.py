"""Co-design search: the space, the bounds and exactness against exhaustive enumeration."""

from __future__ import annotations

import dataclasses
import itertools
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.search import search_base
from libra_opt.explore.search.bounds import shape_bounds, step_times_s
from libra_opt.explore.search.candidates import ModelEntry, SearchBase, candidate_scenario, generate
from libra_opt.explore.search.engine import run_search
from libra_opt.explore.search.fabrics import fabric_shapes
from libra_opt.explore.search.space import (
    LayerTimeCache,
    MemoryModel,
    SearchSpace,
    compute_lower_bound_s,
    parallelisms,
    placement_key,
    placement_of,
    span_matrices,
)
from libra_opt.fabric.builders import multi_dim, rail_optimized_fat_tree
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import Parallelism
from libra_opt.io.presets import load_device
from libra_opt.io.scenario_file import load_scenario
from libra_opt.optimize.problem import solve
from libra_opt.scenario.compile import compile
from libra_opt.scenario.evaluate import evaluate, scenario_walks
from libra_opt.scenario.spec import Ref, WorkloadSpec
from libra_opt.traffic.step_time import step_time_from_walk

SMALL_SPACE = SearchSpace(micro_batch_sizes=(1, 2), interleave=(1, 2),
                          recompute=("none", "full"), sequence_parallel=(False, True),
                          zero=(0, 1), max_cp=2)


@pytest.fixture(scope="module")
def template() -> SearchBase:
    """Prices, TCO and bounds of the Llama 3 example (two-level fat-tree dims hb, scaleout)."""
    return search_base(load_scenario("llama3_405b_h100_tco"))


def _model(layers: int, heads: int, kv: int, moe: bool) -> TransformerSpec:
    extra = {"moe": {"n_experts": 4, "top_k": 2, "expert_ffn_hidden_size": 256}} if moe else {}
    return TransformerSpec(name="tiny", n_layers=layers, hidden_size=64 * heads,
                           ffn_hidden_size=256 * heads, n_heads=heads, n_kv_heads=kv,
                           vocab_size=32000, seq_len=2048, gated_mlp=True, norm="rmsnorm",
                           **extra)


def _base(template: SearchBase, model: TransformerSpec, n_npus: int, hb: int, objective: str,
          gbs: int = 32, budget: float | None = None, stack: str | None = None) -> SearchBase:
    """The template's spec (prices, TCO, bounds) with a tiny model on a smaller fabric,
    built in memory and compiled (no file)."""
    assert template.spec is not None
    device = load_device("h100_sxm")
    par = {"tp": hb, "dp": n_npus // hb, "global_batch_size": gbs}
    if stack is not None:
        par["software_stack"] = stack
    w = WorkloadSpec("tiny", model=Ref("tiny", model), device=Ref("h100_sxm", device),
                     parallelism=par)
    spec = dataclasses.replace(template.spec, workloads=(w,), objective=objective,
                               constraints=dataclasses.replace(template.spec.constraints,
                                                               budget_usd=budget))
    spec = spec.replace("fabric.n_npus", n_npus).replace("fabric.hb_domain", hb)
    base = search_base(compile(spec))
    assert base.scenario.fabric == rail_optimized_fat_tree(n_npus, hb, 64)
    # the requested compute model, before any software stack's constant
    assert base.entry.efficiency == ComputeEfficiency("roofline", device.default_efficiency,
                                                      from_device=True)
    return base


def _best(res) -> float:
    return float(res.table.loc[res.table["rank"] == 1, "objective"].iloc[0])


def placements(f, degrees) -> list:
    return [placement_of(f, m) for m in span_matrices(f.sizes, degrees)]


def test_placements_are_every_distinct_span_matrix() -> None:
    # brute force: every assignment of a divisor of each dimension to each axis, filtered
    f = multi_dim((4, 2, 4), ("ring", "switch", "switch"))
    deg = {"tp": 4, "cp": 2, "ep": 1, "edp": 2, "pp": 2}
    axes = ("tp", "cp", "ep", "edp", "pp")
    divs = [[k for k in range(1, n + 1) if n % k == 0] for n in f.sizes]
    rows = {ax: [r for r in itertools.product(*divs) if math.prod(r) == deg[ax]] for ax in axes}
    brute = set()
    for m in itertools.product(*(rows[ax] for ax in axes)):
        if all(math.prod(m[a][d] for a in range(5)) == f.sizes[d] for d in range(3)):
            brute.add(m)
    got = [placement_key(p) for p in placements(f, deg)]
    assert len(got) == len(set(got)) == len(brute) > 10
    assert set(got) == brute


def test_placements_include_the_automatic_one() -> None:
    f = rail_optimized_fat_tree(256, 8, 64)
    deg = Parallelism(tp=4, cp=2, pp=4, dp=8, ep=2, global_batch_size=8).degrees()
    keys = {placement_key(p) for p in placements(f, deg)}
    assert placement_key(place_groups(f, deg)) in keys


def test_parallelisms_respect_the_model() -> None:
    m = _model(4, 8, 2, moe=True)
    base = Parallelism(global_batch_size=16)
    pars = list(parallelisms(m, 64, base, SMALL_SPACE))
    assert pars and len({p.model_dump_json() for p in pars}) == len(pars)
    for p in pars:
        assert p.n_npus == 64
        assert m.n_heads % p.tp == 0 and (2 % p.tp == 0 or p.tp % 2 == 0)
        assert 16 % (p.dp * p.micro_batch_size) == 0
        assert p.pp * p.interleave <= m.n_layers + 2
        assert 4 % p.ep == 0 and p.dp % p.ep == 0
        assert p.cp <= 2
        if p.ep > 1 and p.tp > 1:
            assert p.sequence_parallel
    # independent count for one degree tuple: tp 2, cp 1, pp 2, dp 16 -> ep in {1, 2, 4};
    # mb 1 only (16 / (16 * 2) is not whole); v in {1, 2}; 2 recompute; sp True, False
    # (only sp True with ep > 1); 2 ZeRO stages -> (2 + 1 + 1) x 2 x 2 x 2 = 32
    sel = [p for p in pars if (p.tp, p.cp, p.pp, p.dp) == (2, 1, 2, 16)]
    assert len(sel) == 32


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(layers=st.integers(2, 9), heads=st.sampled_from([4, 8]), moe=st.booleans(),
       seed=st.integers(0, 10_000))
def test_memory_model_and_compute_bound_match_the_generator(layers, heads, moe, seed) -> None:
    m = _model(layers, heads, 2, moe)
    dev = load_device("h100_sxm")
    eff = ComputeEfficiency("roofline", dev.default_efficiency)
    pars = list(parallelisms(m, 64, Parallelism(global_batch_size=32), SMALL_SPACE))
    rng = np.random.default_rng(seed)
    f = rail_optimized_fat_tree(64, 8, 64)
    mem, cache = MemoryModel(m), LayerTimeCache(m, dev, eff)
    entry = ModelEntry("tiny", m, dev, eff, pars[0])
    for i in rng.choice(len(pars), size=min(6, len(pars)), replace=False):
        par = pars[int(i)]
        g = generate(entry, par, f)
        assert_allclose(mem.bytes_per_npu(par), g.memory.total_bytes, rtol=1e-12)
        assert MemoryModel(m, dev.hbm_bytes).breakdown(par) == g.memory
        compute = g.workload.compute_s
        assert compute_lower_bound_s(m, par, cache) <= compute * (1 + 1e-12)


def test_bounds_never_exceed_the_optimum(template) -> None:
    base = _base(template, _model(4, 8, 2, False), 64, 8, "tco")
    entry = base.entry
    f = base.scenario.fabric
    bounds = shape_bounds(base.scenario)
    assert bounds.level_bw_gbps is not None
    for par in list(parallelisms(entry.model, 64, entry.parallelism, SMALL_SPACE))[:40:7]:
        g = generate(entry, par, f)
        for pl in list(placements(f, par.degrees()))[:3]:
            scen = candidate_scenario(base, f, g, pl)
            sol = solve(scen, with_baselines=False)
            walk = scenario_walks(scen)[0]
            lb1 = bounds.objective_lower_bound(bounds.step_time_lower_bound_s(walk, scen))
            lb2 = bounds.level_lower_bound(walk, scen)
            assert lb1 <= sol.objective_value * (1 + 1e-7)
            assert lb1 * (1 - 1e-9) <= lb2 <= sol.objective_value * (1 + 1e-7)
            # the vectorized step times are step_time_from_walk's, row by row
            bws = np.array([[100.0, 12.5], [900.0, 200.0], [333.0, 50.0]])
            want = [step_time_from_walk(walk, b, scen.timing).step_time_s for b in bws]
            assert_allclose(step_times_s(walk, bws, scen.timing), want, rtol=1e-12)


@pytest.mark.parametrize("traffic_model", ["hierarchical", "native"])
def test_collective_traffic_is_linear_in_size(traffic_model) -> None:
    # GroupTimes and SyncFloor scale one-byte traffic by the size
    from libra_opt.fabric.builders import rail_only
    from libra_opt.traffic.routing import collective_traffic

    for f in (rail_optimized_fat_tree(256, 8, 64), rail_only(256, 8, 64),
              multi_dim((4, 4, 4), ("ring", "fully_connected", "switch"))):
        for kind in ("all_reduce", "reduce_scatter", "all_gather", "all_to_all", "p2p"):
            for span in [(2,) + (1,) * (f.n_dims - 1), tuple(min(4, n) for n in f.sizes)]:
                t1, l1 = collective_traffic(kind, 1.0, span, f, traffic_model)
                t7, l7 = collective_traffic(kind, 7.3e8, span, f, traffic_model)
                assert_allclose(t7, 7.3e8 * t1, rtol=1e-12)
                assert_allclose(l7, l1, rtol=0, atol=0)


def test_zero_1_and_2_share_one_generation(template) -> None:
    from libra_opt.explore.search.engine import _generate_shared

    base = _base(template, _model(4, 8, 2, True), 64, 8, "tco")
    f = base.scenario.fabric
    ctx = SimpleNamespace(base=base)
    shared: dict = {}
    p1 = Parallelism(tp=2, cp=2, pp=2, dp=8, ep=2, sequence_parallel=True, zero=1,
                     global_batch_size=32, interleave=2)
    p2 = p1.model_copy(update={"zero": 2})
    g1 = _generate_shared(ctx, p1, f, shared)
    g2 = _generate_shared(ctx, p2, f, shared)
    assert len(shared) == 1
    fresh = generate(base.entry, p2, f)
    assert g2 == fresh and g1 != fresh  # the memory differs, everything else is shared
    assert g2.workload == g1.workload


def test_group_times_are_the_walks_step_times(template) -> None:
    # bound 3's table look-ups reproduce step_time_from_walk exactly (no_overlap loop)
    from libra_opt.explore.search.bounds import GroupTimes
    from libra_opt.explore.search.space import group_spans, groups_of, placement_of, span_matrices

    base = _base(template, _model(4, 8, 2, True), 128, 8, "tco")
    f = base.scenario.fabric
    par = Parallelism(tp=2, cp=2, pp=2, dp=16, ep=4, sequence_parallel=True,
                      global_batch_size=32)
    g = generate(base.entry, par, f)
    flat = g.workload.flat
    bws = np.array([[900.0, 200.0], [150.0, 20.0], [np.inf, 50.0]])
    gt = GroupTimes(flat, float(flat.phase_count @ flat.phase_compute_s), bws, f,
                    base.scenario.timing)
    mats = span_matrices(f.sizes, par.degrees())
    steps = []
    for m in mats[::3]:
        scen = candidate_scenario(base, f, g, placement_of(f, m))
        assert dict(scen.workloads[0].groups) == groups_of(m)
        walk = scenario_walks(scen)[0]
        want = [step_time_from_walk(walk, b, scen.timing).step_time_s
                for b in bws]
        got = gt.step_times_s(groups_of(m))
        assert_allclose(got, want, rtol=1e-12)
        steps.append(got)
    floor = gt.floor_s(group_spans(f.sizes, par.degrees()))
    assert (floor <= np.min(steps, axis=0) * (1 + 1e-12)).all()


def test_group_times_with_an_efficiency_are_the_walks_step_times(template) -> None:
    # a per-dimension efficiency (a fraction on hb, a measured curve on scaleout): the table
    # look-ups read it per collective and span, as the walk does, flat rings included
    from libra_opt.explore.search.bounds import GroupTimes
    from libra_opt.explore.search.space import groups_of, placement_of, span_matrices

    base = _base(template, _model(4, 16, 4, False), 128, 8, "perf")
    assert base.spec is not None
    eff = {"hb": 0.7, "scaleout": "ndr400_ib_nccl"}
    curved = search_base(compile(base.spec.replace("collectives", {"efficiency": eff})))
    f = curved.scenario.fabric
    par = Parallelism(tp=16, pp=2, dp=4, sequence_parallel=True, global_batch_size=32)
    g = generate(curved.entry, par, f)
    flat = g.workload.flat
    bws = np.array([[900.0, 200.0], [150.0, 20.0]])
    timing = curved.scenario.timing
    gt = GroupTimes(flat, float(flat.phase_count @ flat.phase_compute_s), bws, f,
                    timing, {}, g.workload.flat_ring_groups)
    plain = GroupTimes(flat, float(flat.phase_count @ flat.phase_compute_s), bws, f,
                       base.scenario.timing, {},
                       g.workload.flat_ring_groups)
    for m in span_matrices(f.sizes, par.degrees())[::2]:
        scen = candidate_scenario(curved, f, g, placement_of(f, m))
        walk = scenario_walks(scen)[0]
        assert walk.efficiency is not None
        want = [step_time_from_walk(walk, b, timing).step_time_s for b in bws]
        assert_allclose(gt.step_times_s(groups_of(m)), want, rtol=1e-12)
        assert (plain.step_times_s(groups_of(m)) < np.array(want)).all()


def test_group_times_price_flat_ring_groups_as_the_walk(template) -> None:
    # tp 16 on an hb-8 fabric spans (8, 2): the generated workload runs it as one flat ring
    # (Workload.flat_ring_groups), whose all-reduce puts 2 (16 - 1) / 16 of the bytes on the
    # ring's links, 14/16 of them on the inner dimension; a hierarchical pricing splits it
    # differently, so with the inner dimension the slowest ([100, 400] GB/s) the table
    # look-ups must follow the flat ring to equal step_time_from_walk
    from libra_opt.explore.search.bounds import GroupTimes
    from libra_opt.explore.search.space import group_spans, groups_of, span_matrices

    base = _base(template, _model(4, 16, 4, False), 128, 8, "perf")
    f = base.scenario.fabric
    par = Parallelism(tp=16, pp=2, dp=4, sequence_parallel=True, global_batch_size=32)
    g = generate(base.entry, par, f)
    assert "tp" in g.workload.flat_ring_groups
    flat = g.workload.flat
    bws = np.array([[100.0, 400.0], [900.0, 200.0], [50.0, 800.0]])
    gt = GroupTimes(flat, float(flat.phase_count @ flat.phase_compute_s), bws, f,
                    base.scenario.timing, {},
                    g.workload.flat_ring_groups)
    mats = [m for m in span_matrices(f.sizes, par.degrees()) if groups_of(m)["tp"] == (8, 2)]
    assert mats
    for m in mats:
        from libra_opt.explore.search.space import placement_of

        scen = candidate_scenario(base, f, g, placement_of(f, m))
        walk = scenario_walks(scen)[0]
        want = [step_time_from_walk(walk, b, scen.timing).step_time_s
                for b in bws]
        assert_allclose(gt.step_times_s(groups_of(m)), want, rtol=1e-12)
        # bound 3 never exceeds a placement's step time
        floor = gt.floor_s(group_spans(f.sizes, par.degrees()))
        assert (floor <= np.array(want) * (1 + 1e-12)).all()


def test_exhaustive_bounds_stay_below_objectives_with_flat_rings(template) -> None:
    # tp 8 and 16 on a 128-GPU hb-8 fat-tree: tp 16 spans both dimensions as a flat ring;
    # every solved candidate's lower bound is at most its solved objective
    base = _base(template, _model(2, 16, 4, False), 128, 8, "perf", budget=6.0e6)
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), interleave=(1,), tp=(8, 16), pp=(1, 2),
                                sequence_parallel=(True,), max_cp=1)
    full = run_search(base, space, top=1, prune=False, solutions=False)
    t = full.table[full.table["status"] == "optimal"]
    assert len(t) > 5
    assert (t["lower_bound"] <= t["objective"] * (1 + 1e-9)).all()


def test_search_with_collective_efficiency_equals_exhaustive_enumeration(template) -> None:
    # collectives.efficiency under the pipelined model, a line-rate preset on hb and a
    # measured nccl-tests curve on scaleout: pruning keeps the optimum, every bound stays
    # below its objective, and the optimum is slower than without them
    base = _base(template, _model(2, 16, 4, False), 128, 8, "perf", budget=6.0e6)
    assert base.spec is not None
    curves = {"hb": "h100_nvlink", "scaleout": "ndr400_ib_nccl"}
    curved = search_base(compile(base.spec.replace("collectives", {"efficiency": curves})))
    assert dict(curved.scenario.timing.efficiency)["scaleout"] == "ndr400_ib_nccl"
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1, 2), zero=(1,),
                                recompute=("full",), interleave=(1,), tp=(4, 8, 16), pp=(1, 2),
                                sequence_parallel=(True,), max_cp=1)
    pruned = run_search(curved, space, top=2, solutions=False)
    full = run_search(curved, space, top=2, prune=False, solutions=False)
    assert pruned.stats["enumerated"] == full.stats["enumerated"] > 5
    assert_allclose(_best(pruned), _best(full), rtol=1e-6)
    solved = full.table[full.table["status"] == "optimal"]
    assert len(solved) > 5
    assert (solved["lower_bound"] <= solved["objective"] * (1 + 1e-9)).all()
    plain = run_search(base, space, top=1, prune=False, solutions=False)
    assert _best(full) > _best(plain)


def test_search_with_a_software_stack_equals_exhaustive_enumeration(template) -> None:
    # nemo_megatron_core on the H100 (eta_s = 1.05463 in devices.yaml): the base regenerates
    # the scenario's own workload (stack applied once), and pruning keeps the optimum
    base = _base(template, _model(3, 8, 2, False), 64, 8, "perf", budget=3.0e6,
                 stack="nemo_megatron_core")
    assert base.entry.parallelism.software_stack == "nemo_megatron_core"
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), interleave=(1,), tp=(2, 4, 8), pp=(1, 2))
    pruned = run_search(base, space, top=2, solutions=False)
    full = run_search(base, space, top=2, prune=False, solutions=False)
    assert pruned.stats["enumerated"] == full.stats["enumerated"] > 2
    assert_allclose(_best(pruned), _best(full), rtol=1e-6)
    solved = full.table[full.table["status"] == "optimal"]
    assert (solved["lower_bound"] <= solved["objective"] * (1 + 1e-9)).all()
    # the candidates are priced with the stack: the same parallelization is faster with it
    plain = _base(template, _model(3, 8, 2, False), 64, 8, "perf", budget=3.0e6)
    par = Parallelism(tp=8, dp=8, global_batch_size=32, software_stack="nemo_megatron_core")
    f = base.scenario.fabric
    t_stack = generate(base.entry, par, f).workload.flat.phase_compute_s.sum()
    t_plain = generate(plain.entry, par.model_copy(update={"software_stack": None}),
                       f).workload.flat.phase_compute_s.sum()
    assert_allclose(t_plain / t_stack, 1.05463, rtol=1e-9)


def test_compute_bound_applies_the_software_stack() -> None:
    # bound 2 (compute + bubble at infinite bandwidth) <= the generated step's compute with
    # a stack constant above 1 (nemo_megatron_core, 1.05463 on the H100): every roofline
    # term is 1 / 1.05463 times the calibration stack's, so the bound scales the same way
    from libra_opt.generators.generator import generate_workload
    from libra_opt.io.presets import load_model

    # Llama 3 405B, TP 8 x PP 16 x DP 128, 16 micro-batches: the layers dominate, so the
    # bound is within 1 % of the compute, and a bound priced without the stack (1.05463
    # times longer) would exceed it
    m, d = load_model("llama3_405b"), load_device("h100_sxm")
    f = rail_optimized_fat_tree(16384, 8, 64)
    req = ComputeEfficiency("roofline", d.default_efficiency, from_device=True)
    par = Parallelism(tp=8, pp=16, dp=128, global_batch_size=2048, sequence_parallel=True,
                      software_stack="nemo_megatron_core")
    g = generate_workload(m, par, d, f, efficiency=req, check_memory=False)
    flat = g.workload.flat
    compute_s = float(flat.phase_count @ flat.phase_compute_s)
    lb = compute_lower_bound_s(m, par, LayerTimeCache(m, d, req))
    assert 0.99 * compute_s < lb <= compute_s * (1 + 1e-12)
    plain = par.model_copy(update={"software_stack": None})
    lb_plain = compute_lower_bound_s(m, plain, LayerTimeCache(m, d, req))
    assert_allclose(lb_plain / lb, 1.05463, rtol=1e-9)


def test_candidate_workload_is_the_generators(template) -> None:
    # the layers are generated once per parallelization; a placement only changes the groups
    base = _base(template, _model(4, 8, 8, False), 64, 8, "perf")
    f = base.scenario.fabric
    par = Parallelism(tp=2, cp=2, pp=2, dp=8, global_batch_size=32, sequence_parallel=True)
    g = generate(base.entry, par, f)
    from libra_opt.generators.transformer_workload import transformer_workload

    for pl in list(placements(f, par.degrees()))[::5]:
        direct = transformer_workload(base.entry.model, par, base.entry.device, f, pl,
                                      base.entry.efficiency, name="tiny", check_memory=False)
        scen = candidate_scenario(base, f, g, pl)
        assert scen.workloads[0].layers == direct.workload.layers
        assert dict(scen.workloads[0].groups) == dict(direct.workload.groups)
        ev = evaluate(scen, [300.0, 50.0])
        assert ev.workloads[0].step_time_s > 0


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(objective=st.sampled_from(["perf", "perf_per_cost", "tco"]), moe=st.booleans(),
       layers=st.integers(2, 6), hb=st.sampled_from([4, 8]),
       n_npus=st.sampled_from([64, 128, 256, 512]))
@example(objective="perf", moe=False, layers=3, hb=8, n_npus=64)
@example(objective="perf", moe=True, layers=4, hb=4, n_npus=128)
@example(objective="perf_per_cost", moe=False, layers=4, hb=8, n_npus=256)
@example(objective="perf_per_cost", moe=True, layers=2, hb=8, n_npus=64)
@example(objective="tco", moe=False, layers=5, hb=4, n_npus=64)
@example(objective="tco", moe=True, layers=3, hb=8, n_npus=512)
def test_pruned_search_equals_exhaustive_enumeration(template, objective, moe, layers, hb,
                                                     n_npus) -> None:
    m = _model(layers, 8, 2, moe)
    budget = 3.0e6 * n_npus / 64 if objective == "perf" else None
    base = _base(template, m, n_npus, hb, objective, gbs=max(32, n_npus // 4), budget=budget)
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(1, 2, 4), pp=(1, 2))
    pruned = run_search(base, space, top=2, solutions=False)
    full = run_search(base, space, top=2, prune=False, solutions=False)
    assert full.stats["pruned"] == 0
    assert pruned.stats["enumerated"] == full.stats["enumerated"]
    assert pruned.stats["solved"] < full.stats["solved"] or full.stats["solved"] <= 2
    a = pruned.table[pruned.table["rank"].between(1, 2)].sort_values("rank")
    b = full.table[full.table["rank"].between(1, 2)].sort_values("rank")
    assert_allclose(a["objective"].to_numpy(), b["objective"].to_numpy(), rtol=1e-6)
    # every pruned candidate's bound is above the exhaustive optimum's second value
    lbs = pruned.table.loc[pruned.table["status"] == "pruned", "lower_bound"]
    assert (lbs >= b["objective"].iloc[-1] * (1 - 1e-6)).all()
    # every solved candidate's bound is at most its objective
    solved = full.table[full.table["status"] == "optimal"]
    assert (solved["lower_bound"] <= solved["objective"] * (1 + 1e-9)).all()


def test_three_dimensional_fabric_search_is_exact(template) -> None:
    # a 4 x 4 x 4 fabric (ring, switch, switch) with a budget: perf objective, a spec
    # built in Python
    from libra_opt.scenario.spec import ConstraintsSpec, FabricSpec, ScenarioSpec

    m = _model(4, 8, 8, False)
    dev = load_device("h100_sxm")
    spec = ScenarioSpec(
        fabric=FabricSpec(builder="multi_dim", args={"shape": [4, 4, 4],
                                                     "topologies": ["ring", "switch", "switch"]}),
        cost_model={"InterChiplet": {"link": 1.0},
                    "InterPackage": {"link": 3.0, "switch": 2.0, "nic": 1.0},
                    "InterNode": {"link": 8.0, "switch": 4.0, "nic": 2.0}},
        workloads=(WorkloadSpec("tiny", model=Ref("tiny", m), device=Ref("h100_sxm", dev),
                                parallelism={"tp": 4, "dp": 16, "global_batch_size": 32}),),
        constraints=ConstraintsSpec(budget_usd=64 * 2000.0))
    base = search_base(compile(spec))
    assert base.scenario.fabric == multi_dim((4, 4, 4), ("ring", "switch", "switch"))
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), interleave=(1,), pp=(1, 2))
    pruned = run_search(base, space, top=1, solutions=True)
    full = run_search(base, space, top=1, prune=False, solutions=False)
    assert_allclose(_best(pruned), _best(full), rtol=1e-6)
    sol = pruned.solutions[0]
    assert_allclose(sol.objective_value, _best(full), rtol=1e-6)
    # the returned optimum re-checks with the numpy evaluator
    assert_allclose(evaluate(sol.scenario, sol.bw_gbps).objective_value, sol.objective_value,
                    rtol=1e-9)


def test_executors_give_identical_rows(template) -> None:
    base = _base(template, _model(4, 8, 2, False), 64, 8, "tco")
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(2, 4), pp=(1, 2))
    ticks: list[tuple[int, int]] = []
    a = run_search(base, space, top=2, solutions=False, progress=lambda d, n: ticks.append((d, n)))
    # the bar moves per candidate: serially after every parallelization, each step the
    # candidates it stands for, up to the enumerated count
    total = int(a.stats["enumerated"])
    done = [d for d, _ in ticks]
    assert all(n == total for _, n in ticks) and done[-1] == total
    assert done == sorted(done) and len(set(done)) > 2
    b = run_search(base, space, top=2, solutions=False, executor="processes", max_workers=2)
    cols = [c for c in a.table.columns if c != "solve_s"]  # all but the measured time
    assert a.table[cols].equals(b.table[cols])
    assert (a.table["status"] == "optimal").sum() >= 2
    with pytest.raises(InputError, match="threads"):
        run_search(base, space, executor="threads")
    with pytest.raises(InputError, match="max_workers"):
        run_search(base, space, executor="processes", max_workers=0)
    pytest.importorskip("distributed")
    c = run_search(base, space, top=2, solutions=False, executor="dask", max_workers=1)
    assert a.table[cols].equals(c.table[cols])


def test_fabric_shapes_and_refusals(template) -> None:
    shapes = fabric_shapes(template.scenario.fabric, (8, 16, 72), template.spec)
    assert [s.hb_domain for s in shapes] == [8, 16, 72]
    assert shapes[1].fabric == rail_optimized_fat_tree(16384, 16, 64)
    assert shapes[2].fabric is None and "does not divide" in shapes[2].reason
    with pytest.raises(InputError, match="spec"):  # a family is rebuilt from the spec
        fabric_shapes(template.scenario.fabric, (8, 16))
    assert template.spec is not None
    flat = dataclasses.replace(template.spec, fabric=dataclasses.replace(
        template.spec.fabric, builder="multi_dim", args={"shape": [4, 4],
                                                          "topologies": ["ring", "switch"]}))
    with pytest.raises(InputError, match="two-level"):
        fabric_shapes(multi_dim((4, 4), ("ring", "switch")), (4,), flat)
    with pytest.raises(InputError, match="top"):
        run_search(template, top=0)
    with pytest.raises(InputError, match="recompute"):
        SearchSpace(recompute=("sometimes",))


def test_memory_rows_and_invalid_shapes_are_rows_not_crashes(template) -> None:
    base = _base(template, _model(4, 8, 2, False), 64, 8, "tco")
    tiny = dataclasses.replace(base.entry.device, hbm_bytes=0.3e9)
    base = dataclasses.replace(base, entry=dataclasses.replace(base.entry, device=tiny))
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(1, 8), pp=(1,), hb_domains=(8, 48))
    res = run_search(base, space, top=1, solutions=False)
    t = res.table
    assert (t["status"] == "invalid_shape").sum() == 1
    assert "memory" in set(t["status"])
    assert res.stats["enumerated"] == t["n_candidates"].sum()


def test_run_cost_is_one_training_run_not_the_lifetime_tco(template) -> None:
    from libra_opt.cost.tco import tco_breakdown

    base = _base(template, _model(4, 8, 2, False), 64, 8, "tco")
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), tp=(2, 8), pp=(1, 2))
    res = run_search(base, space, top=2)
    t = res.table
    assert "tco_usd" not in t and "tco_usd_per_mtoken" not in t
    for (_, r), sol in zip(res.best(2).iterrows(), res.solutions, strict=True):
        scen = sol.scenario
        assert scen.tco is not None
        # the breakdown `libra-opt solve` prints: lifetime TCO, and one training run at the
        # amortized $/hour (a separate path from the search's cluster rate)
        b = tco_breakdown(scen.tco, scen.fabric, scen.coefficients, sol.bw_gbps,
                          sol.evaluation.weighted_step_time_s)
        assert b.run_usd is not None and b.total_usd > 10 * b.run_usd
        assert_allclose(r["run_cost_usd"], b.run_usd, rtol=1e-9)
        assert_allclose(r["run_cost_usd"], r["objective"], rtol=1e-9)  # objective tco
        tokens = scen.tco.n_steps * scen.workloads[0].metrics.tokens_per_step
        assert_allclose(r["run_cost_usd_per_mtoken"], b.run_usd / tokens * 1e6, rtol=1e-9)
    # rank: 1.. on the solved rows, NA (nullable Int64) on every other row
    assert str(t["rank"].dtype) == "Int64"
    solved = t["status"] == "optimal"
    assert sorted(t.loc[solved, "rank"]) == list(range(1, int(solved.sum()) + 1))
    assert (~solved).any() and t.loc[~solved, "rank"].isna().all()


def test_placements_name_dp_without_experts_and_edp_with_them(template) -> None:
    space = dataclasses.replace(SMALL_SPACE, micro_batch_sizes=(1,), zero=(1,),
                                recompute=("full",), sequence_parallel=(True,), pp=(1,),
                                cp=(1,))
    dense = run_search(_base(template, _model(2, 8, 2, False), 64, 8, "perf"),
                       dataclasses.replace(space, tp=(8,)), prune=False, solutions=False).table
    # TP 8 x DP 8 on hb 8 x scaleout 8: TP takes 8, 4 x 2, 2 x 4 or 1 x 8 of the two
    # dimensions, DP the rest; the data-parallel group is dp, as `libra-opt solve` says
    assert sorted(dense["placement"]) == sorted([
        "tp: hb 8 | dp: scaleout 8", "tp: hb 4, scaleout 2 | dp: hb 2, scaleout 4",
        "tp: hb 2, scaleout 4 | dp: hb 4, scaleout 2", "tp: scaleout 8 | dp: hb 8"])
    moe = run_search(_base(template, _model(2, 8, 2, True), 64, 8, "perf"),
                     dataclasses.replace(space, tp=(4,)), prune=False,
                     solutions=False).table
    # TP 4 x DP 16 with EP 2 or 4: the expert-parallel axis and the expert-data-parallel
    # one (dp / ep) beside it; with EP 1 the experts are replicated over the whole dp
    experts = moe[moe["ep"] > 1]
    assert set(experts["ep"]) == {2, 4} and len(experts) == 13
    assert experts["placement"].str.contains(r"(?:^| )ep: .* \| edp: ").all()
    assert "tp: hb 4 | ep: hb 2 | edp: scaleout 8" in set(experts["placement"])
    assert sorted(moe.loc[moe["ep"] == 1, "placement"]) == sorted([
        "tp: hb 4 | dp: hb 2, scaleout 8", "tp: hb 2, scaleout 2 | dp: hb 4, scaleout 4",
        "tp: scaleout 4 | dp: hb 8, scaleout 2"])
