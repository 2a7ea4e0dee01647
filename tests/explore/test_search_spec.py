"""The co-design search stands on the spec: a candidate is a spec edit, and the direct
candidate path gives what compiling that edit gives; the search reads no file."""

from __future__ import annotations

import builtins
import dataclasses
import pathlib

import numpy as np
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.errors import InputError
from libra_opt.explore.search import candidate_scenario, generate, run_search, search_base
from libra_opt.explore.search.fabrics import fabric_shapes
from libra_opt.explore.search.space import SearchSpace, parallelisms, placement_of, span_matrices
from libra_opt.explore.search.spec import candidate_spec, placement_mapping
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.mapping import place_groups
from libra_opt.io.presets import load_device
from libra_opt.scenario.compile import compile
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.spec import OverlapSpec, Ref, WorkloadSpec

SPACE = SearchSpace(micro_batch_sizes=(1, 2), interleave=(1, 2), recompute=("none", "full"),
                    sequence_parallel=(True,), zero=(1,), max_cp=2, tp=(1, 2, 4), pp=(1, 2))


@pytest.fixture(scope="module")
def moe_base():
    """A tiny mixture-of-experts model on the Llama 3 example's priced fat-tree, 128 NPUs,
    its spec built in memory."""
    template = lo.load_spec("llama3_405b_h100_tco")
    model = TransformerSpec(name="tiny", n_layers=4, hidden_size=512, ffn_hidden_size=2048,
                            n_heads=8, n_kv_heads=2, vocab_size=32000, seq_len=2048,
                            gated_mlp=True, norm="rmsnorm",
                            moe={"n_experts": 4, "top_k": 2, "expert_ffn_hidden_size": 256})
    w = WorkloadSpec("tiny", model=Ref("tiny", model), device=Ref("h100_sxm",
                                                                 load_device("h100_sxm")),
                     parallelism={"tp": 8, "dp": 16, "global_batch_size": 32, "zero": 1})
    spec = dataclasses.replace(template, workloads=(w,)).replace("fabric.n_npus", 128)
    return search_base(lo.compile(spec))


def _sample(base, rng, n):
    """``n`` random candidates (parallelism, placement, shape) over HB domains 8 and 16."""
    assert base.spec is not None
    shapes = fabric_shapes(base.scenario.fabric, (8, 16), base.spec)
    pars = list(parallelisms(base.entry.model, 128, base.entry.parallelism, SPACE))
    out = []
    while len(out) < n:
        par = pars[int(rng.integers(len(pars)))]
        shape = shapes[int(rng.integers(len(shapes)))]
        mats = span_matrices(shape.fabric.sizes, par.degrees())
        m = mats[int(rng.integers(len(mats)))]
        out.append((par, placement_of(shape.fabric, m), shape))
    return out


def test_compiling_a_candidate_spec_gives_the_direct_candidate(moe_base) -> None:
    # the second formulation: the candidate as a spec edit, compiled from scratch by the
    # pure compiler (the generator places the groups from the mapping), against the
    # search's direct path (one generation per parallelization, the placement's groups)
    base = moe_base
    rng = np.random.default_rng(7)
    bws = np.array([[300.0, 50.0], [900.0, 12.5]])
    seen_ep = seen_cp = seen_hb16 = False
    for par, pl, shape in _sample(base, rng, 12):
        spec = candidate_spec(base.spec, "tiny", base.entry.parallelism, par, pl,
                              shape.hb_domain)
        compiled = compile(spec)
        direct = candidate_scenario(base, shape.fabric,
                                    generate(base.entry, par, shape.fabric), pl)
        assert compiled.fabric == direct.fabric == shape.fabric
        assert dict(compiled.workloads[0].groups) == dict(direct.workloads[0].groups)
        assert compiled.workloads == direct.workloads
        assert compiled == direct  # fabric, prices, workload, constraints, objective, TCO
        for bw in bws:
            a, b = evaluate(compiled, bw), evaluate(direct, bw)
            assert_allclose(a.weighted_step_time_s, b.weighted_step_time_s, rtol=1e-12)
            assert_allclose(a.objective_value, b.objective_value, rtol=1e-12)
        seen_ep |= par.ep > 1
        seen_cp |= par.cp > 1
        seen_hb16 |= shape.hb_domain == 16
    assert seen_ep and seen_cp and seen_hb16  # the sample covers the knobs


def test_candidate_spec_of_the_llama_example_solves_as_the_direct_path() -> None:
    # Llama 3 405B on 16K H100 (the benchmark's scenario): a few layouts the search visits
    base = search_base(lo.load_scenario("llama3_405b_h100_tco"))
    p0 = base.entry.parallelism
    for update, hb in [({"tp": 4, "cp": 4, "pp": 8, "dp": 128, "interleave": 8,
                         "recompute": "selective", "zero": 2}, 64),
                       ({"tp": 8, "pp": 16, "dp": 128, "zero": 1}, 8)]:
        par = p0.model_copy(update=update)
        fabric = fabric_shapes(base.scenario.fabric, (hb,), base.spec)[0].fabric
        pl = place_groups(fabric, par.degrees())
        spec = candidate_spec(base.spec, base.entry.name, p0, par, pl, hb)
        assert spec.fabric.args["hb_domain"] == hb
        compiled = compile(spec)
        direct = candidate_scenario(base, fabric, generate(base.entry, par, fabric), pl)
        a = lo.solve(compiled, with_baselines=False)
        b = lo.solve(direct, with_baselines=False)
        assert_allclose(a.objective_value, b.objective_value, rtol=1e-9)
        assert_allclose(a.evaluation.weighted_step_time_s, b.evaluation.weighted_step_time_s,
                        rtol=1e-9)


def test_placement_mapping_round_trips_every_span_matrix(moe_base) -> None:
    f = moe_base.scenario.fabric
    par = moe_base.entry.parallelism.model_copy(update={"tp": 2, "cp": 2, "pp": 2, "dp": 16,
                                                        "ep": 4})
    mats = span_matrices(f.sizes, par.degrees())
    assert len(mats) > 5
    for m in mats:
        pl = placement_of(f, m)
        assert place_groups(f, par.degrees(), placement_mapping(pl)) == pl


def test_the_search_reads_no_file_and_returns_candidate_specs(moe_base, monkeypatch) -> None:
    import libra_opt.io._yaml as yaml_util

    def forbidden(*args, **kwargs):
        raise AssertionError(f"file access during the search: {args[:1]}")

    real_open = builtins.open

    def no_open(file, *args, **kwargs):
        if isinstance(file, int):  # descriptors of pipes (pandas, logging) are not files
            return real_open(file, *args, **kwargs)
        forbidden(file)

    space = dataclasses.replace(SPACE, micro_batch_sizes=(1,), recompute=("full",),
                                interleave=(1,), hb_domains=(8, 16))
    run_search(moe_base, dataclasses.replace(space, tp=(8,), pp=(1,)), top=1)  # imports
    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(pathlib.Path, "read_text", forbidden)
    monkeypatch.setattr(pathlib.Path, "read_bytes", forbidden)
    monkeypatch.setattr(yaml_util, "read_yaml", forbidden)
    res = run_search(moe_base, space, top=2)
    monkeypatch.undo()
    assert len(res.solutions) == 2
    for sol, cand, (_, row) in zip(res.solutions, res.candidates, res.best(2).iterrows(),
                                   strict=True):
        spec = sol.scenario.spec
        assert spec is not None and spec.fabric.args["hb_domain"] == cand.shape.hb_domain
        assert spec.workloads[0].parallelism["tp"] == row["tp"] == cand.parallelism.tp
        # the candidate's spec compiles to the solved scenario: same optimum re-evaluated
        ev = evaluate(compile(spec), sol.bw_gbps)
        assert_allclose(ev.objective_value, row["objective"], rtol=1e-9)


def test_search_takes_specs_and_refuses_scenarios_without_one(moe_base) -> None:
    space = dataclasses.replace(SPACE, micro_batch_sizes=(1,), recompute=("full",),
                                interleave=(1,), tp=(8,), pp=(1,))
    spec = moe_base.spec
    a = lo.search(spec, top=1, space=space)  # a spec in memory is compiled first
    b = lo.search(moe_base.scenario, top=1, space=space)
    assert_allclose(a.best(1)["objective"], b.best(1)["objective"], rtol=1e-12)
    with pytest.raises(InputError, match="compiled from a spec"):
        search_base(lo.examples.toy_scenario())
    no_spec = dataclasses.replace(moe_base, spec=None)
    with pytest.raises(InputError, match="spec"):
        run_search(no_spec, dataclasses.replace(space, hb_domains=(8, 16)), top=1)
    # a scenario that transforms its workload is refused (read from its spec)
    overlapped = dataclasses.replace(spec.replace("training_loop", "overlap"),
                                     fine_grained_overlap=OverlapSpec(groups={"tp": 0.5}))
    with pytest.raises(InputError, match="fine_grained_overlap"):
        search_base(lo.compile(overlapped))
