"""Co-design search over multi-dimensional fabric shapes: dimension sizes and topologies."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.search import SearchBase, run_search, search_base
from libra_opt.explore.search.fabrics import dim_shapes, ordered_factorizations
from libra_opt.explore.search.space import SearchSpace
from libra_opt.fabric.builders import multi_dim
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.io.presets import load_device
from libra_opt.io.scenario_file import load_scenario, load_spec
from libra_opt.scenario.compile import compile
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.spec import (
    ConstraintsSpec,
    DimSpec,
    FabricSpec,
    Ref,
    ScenarioSpec,
    WorkloadSpec,
)

#: The knobs held fixed so the family of shapes is what varies (the search's own exactness
#: over the knobs is tested in test_search.py).
KNOBS = dict(micro_batch_sizes=(1,), zero=(1,), recompute=("full",), interleave=(1,),
             sequence_parallel=(True,), max_cp=1, tp=(4,), pp=(1, 2))


def _brute_count(n: int, k: int, low: int) -> int:
    """Ordered factorizations of ``n`` into ``k`` factors >= ``low``: every (k-1)-tuple of
    integers in [low, n] whose product leaves a whole last factor >= low, by a plain loop."""
    return sum(1 for t in itertools.product(range(low, n + 1), repeat=k - 1)
               if n % math.prod(t) == 0 and n // math.prod(t) >= low)


@pytest.mark.parametrize(("n", "k", "low"), [(64, 3, 2), (64, 3, 1), (72, 3, 2), (48, 4, 2),
                                             (36, 2, 1), (30, 3, 2), (32, 4, 1)])
def test_factorization_count_equals_a_brute_force_loop(n, k, low) -> None:
    got = ordered_factorizations(n, k, low)
    assert len(got) == len(set(got)) == _brute_count(n, k, low)
    assert all(math.prod(t) == n and min(t) >= low for t in got)
    assert got == sorted(got)


def test_shape_counts_of_the_4d_example() -> None:
    # gpt3_175b_4d: 4 x 8 x 4 x 32 = 4,096 = 2^12 NPUs. Ordered factorizations into 4
    # factors >= 2: 12 twos cut into 4 non-empty parts, C(11, 3) = 165 (stars and bars),
    # also counted by the loop below (exponents a, b, c >= 1 of the first three factors,
    # the last one 12 - a - b - c >= 1)
    spec = load_spec("gpt3_175b_4d")
    fabric = compile(spec).fabric
    loop = sum(1 for a, b, c in itertools.product(range(1, 12), repeat=3) if a + b + c < 12)
    assert loop == math.comb(11, 3) == 165
    shapes = dim_shapes(fabric, spec, "factorizations")
    assert len(shapes) == 165
    assert len({s.label for s in shapes}) == len(shapes)
    assert all(s.fabric is not None and s.fabric.n_npus == 4096 for s in shapes)
    # each dimension keeps its name, topology and cost tier by position
    assert {(d.name, d.topology, d.tier) for s in shapes for d in s.fabric.dims} == {
        (d.name, d.topology, d.tier) for d in fabric.dims}
    # a topology family: 3 topologies on each of 4 dimensions, 3^4 = 81 shapes per tuple
    topo = dim_shapes(fabric, spec, ((4, 8, 4, 32), (8, 8, 2, 32)),
                      ("ring", "fully_connected", "switch"))
    assert len(topo) == 2 * 81 and all(s.fabric is not None for s in topo)
    assert {s.fabric.dims[3].topology for s in topo} == {"ring", "fully_connected", "switch"}
    # the base shape is one of them, with no edit; explicit tuples keep each dimension's
    # topology when no topology family is given
    base = [s for s in shapes if s.fabric == fabric]
    assert len(base) == 1 and base[0].edits == ()
    two = dim_shapes(fabric, spec, ((4, 8, 4, 32), (8, 8, 2, 32)))
    assert [s.label for s in two] == ["4x8x4x32 R,FC,R,SW", "8x8x2x32 R,FC,R,SW"]
    assert two[1].edits == (("fabric.dims[0].size", 8), ("fabric.dims[2].size", 2))
    assert two[1].fabric == Fabric(tuple(dataclasses.replace(d, size=s) for d, s in
                                         zip(fabric.dims, (8, 8, 2, 32), strict=True)))
    # with size-1 dimensions (fewer dimensions): 2^12 over 4 parts, empty ones allowed,
    # C(15, 3) = 455 size tuples
    assert len(ordered_factorizations(4096, 4, 1)) == math.comb(15, 3) == 455


def test_multi_dim_builder_shapes_and_refusals() -> None:
    spec = _spec(_model(), (4, 4, 4), "perf")
    built = dataclasses.replace(spec, fabric=FabricSpec(
        builder="multi_dim", args={"shape": [4, 4, 4],
                                   "topologies": ["ring", "fully_connected", "switch"]}))
    f = compile(built).fabric
    shapes = dim_shapes(f, built, ((2, 4, 8), (4, 8, 2)), ("ring", "switch"))
    assert len(shapes) == 2 * 2**3
    assert shapes[0].edits == (("fabric.shape", [2, 4, 8]),
                               ("fabric.topologies", ["ring", "ring", "ring"]))
    assert shapes[0].fabric == multi_dim((2, 4, 8), ("ring", "ring", "ring"))
    # a size tuple of the wrong product or length is a shape with a reason
    bad = dim_shapes(f, built, ((4, 4, 2), (2, 2, 2, 8)))
    assert bad[0].fabric is None and "multiplying to 64" in bad[0].reason
    assert bad[1].fabric is None and "3 dimensions" in bad[1].reason
    with pytest.raises(InputError, match="dims"):  # a two-level builder is no dim family
        dim_shapes(f, load_spec("llama3_405b_h100_tco"), "factorizations")
    with pytest.raises(InputError, match="spec"):
        dim_shapes(f, None, "factorizations")
    with pytest.raises(InputError, match="dim_topologies"):
        SearchSpace(dim_topologies=("hypercube",))
    with pytest.raises(InputError, match="one fabric family"):
        SearchSpace(hb_domains=(8,), dim_sizes="factorizations")
    with pytest.raises(InputError, match="unit_dims"):
        SearchSpace(unit_dims=True)


def test_a_shape_removing_a_named_dimension_is_a_reason_row() -> None:
    # unit_dims: 64 = a x b x c with factors >= 1, C(8, 2) = 28 tuples, C(5, 2) = 10 of
    # them with every factor >= 2. 'sum(bw) >= 300' would be met by bandwidth on a removed
    # dimension: the 18 tuples with a 1 are refused, naming it
    spec = _spec(_model(), (4, 4, 4), "perf")
    f = compile(spec).fabric
    shapes = dim_shapes(f, spec, "factorizations", None, unit_dims=True)
    assert len(shapes) == math.comb(8, 2) == _brute_count(64, 3, 1)
    gone = [s for s in shapes if s.fabric is None]
    assert len(gone) == math.comb(8, 2) - math.comb(5, 2) == 18
    assert all("(size 1)" in s.reason and "sum(bw) >= 300" in s.reason
               for s in gone)
    # a maximum alone names no dimension a shape could fake: only the minimum on 'node'
    # refuses, for the 7 tuples (a, b, 1) with a x b = 64
    capped = dataclasses.replace(spec, constraints=ConstraintsSpec(
        linear=("sum(bw) <= 900",), bounds={"node": (10.0, None), "chiplet": (None, 500.0)}))
    shapes = dim_shapes(f, capped, "factorizations", None, unit_dims=True)
    gone = [s for s in shapes if s.fabric is None]
    assert len(gone) == 7
    assert all("removes dimension 'node'" in s.reason and "bw.node >= 10.0" in s.reason
               for s in gone)
    base = search_base(compile(capped))
    space = SearchSpace(**KNOBS, dim_sizes=((4, 16, 1), (16, 4, 1), (1, 4, 16), (4, 4, 4)))
    res = run_search(base, space, top=1, solutions=False)
    t = res.table
    refused = t[t["status"] == "invalid_shape"]
    assert sorted(refused["fabric"]) == ["16x4x1 R,FC,SW", "4x16x1 R,FC,SW"]
    assert refused["reason"].str.contains("bw.node >= 10.0").all()
    # the shape without a chiplet dimension is searched (a maximum on it is harmless)
    assert (t.loc[t["fabric"] == "1x4x16 R,FC,SW", "status"] == "optimal").any()
    assert (t["status"] == "optimal").sum() >= 2


def _model() -> TransformerSpec:
    return TransformerSpec(name="tiny", n_layers=4, hidden_size=512, ffn_hidden_size=2048,
                           n_heads=8, n_kv_heads=8, vocab_size=32000, seq_len=2048,
                           gated_mlp=True, norm="rmsnorm")


def _spec(model: TransformerSpec, sizes: tuple[int, ...], objective: str) -> ScenarioSpec:
    """A 3-D fabric (ring, fully connected, switch) given inline, every tier priced for
    every topology, a total-bandwidth window, a minimum on 'node' and the TCO parameters
    of the Llama 3 example; built in memory (no file)."""
    dev = load_device("h100_sxm")
    tco = load_scenario("llama3_405b_h100_tco").spec.tco
    names, topos = ("chiplet", "package", "node"), ("ring", "fully_connected", "switch")
    tiers = ("InterChiplet", "InterPackage", "InterNode")
    return ScenarioSpec(
        fabric=FabricSpec(dims=tuple(DimSpec(n, t, s, tier) for n, t, s, tier in
                                     zip(names, topos, sizes, tiers, strict=True))),
        cost_model={"InterChiplet": {"link": 1.0, "switch": 0.5, "nic": 0.5},
                    "InterPackage": {"link": 3.0, "switch": 2.0, "nic": 1.0},
                    "InterNode": {"link": 8.0, "switch": 4.0, "nic": 2.0}},
        power_model={"InterChiplet": {"link": 0.01, "switch": 0.01, "nic": 0.01},
                     "InterPackage": {"link": 0.02, "switch": 0.05, "nic": 0.1},
                     "InterNode": {"link": 0.04, "switch": 0.1, "nic": 0.2}},
        workloads=(WorkloadSpec("tiny", model=Ref("tiny", model), device=Ref("h100_sxm", dev),
                                parallelism={"tp": 4, "dp": math.prod(sizes) // 4,
                                             "global_batch_size": 32}),),
        constraints=ConstraintsSpec(linear=("sum(bw) >= 300", "sum(bw) <= 900"),
                                    bounds={"node": (10.0, None)}),
        objective=objective, tco=tco)


@pytest.fixture(scope="module")
def base64() -> SearchBase:
    return search_base(compile(_spec(_model(), (4, 4, 4), "perf")))


def _best(res) -> tuple[str, float]:
    row = res.table[res.table["rank"] == 1].iloc[0]
    return str(row["fabric"]), float(row["objective"])


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost", "tco"])
def test_pruned_search_over_shapes_equals_exhaustive_enumeration(base64, objective) -> None:
    # 64 NPUs, 3 dimensions, dense: every ordered factorization (10 = C(5, 2) size
    # tuples, each dimension's own topology) x parallelizations x placements
    space = SearchSpace(**KNOBS, dim_sizes="factorizations")
    pruned = run_search(base64, space, top=1, objective=objective, solutions=True)
    full = run_search(base64, space, top=1, objective=objective, prune=False, solutions=False)
    assert set(full.table["fabric"]) == {
        "x".join(map(str, t)) + " R,FC,SW" for t in ordered_factorizations(64, 3)}
    assert len(set(full.table["fabric"])) == math.comb(5, 2) == _brute_count(64, 3, 2)
    assert pruned.stats["enumerated"] == full.stats["enumerated"]
    assert (full.table["status"] == "optimal").sum() == full.stats["enumerated"]
    label, value = _best(full)
    assert_allclose(_best(pruned)[1], value, rtol=1e-6)
    assert (pruned.table["status"] == "pruned").sum() > 0
    # the optimum's spec is the shape's edit of the base spec, and re-checks with the
    # numpy evaluator after a compile from that spec
    sol = pruned.solutions[0]
    assert_allclose(sol.objective_value, value, rtol=1e-6)
    sizes = tuple(d.size for d in sol.scenario.spec.fabric.dims)
    assert "x".join(map(str, sizes)) == _best(pruned)[0].split()[0]
    again = compile(sol.scenario.spec)
    assert again.fabric == sol.scenario.fabric
    assert_allclose(evaluate(again, sol.bw_gbps).objective_value, sol.objective_value,
                    rtol=1e-9)


def test_topology_family_search_is_exact(base64) -> None:
    # one size tuple x {ring, switch}^3 = 8 shapes; each dimension keeps its tier
    space = SearchSpace(**{**KNOBS, "pp": (1,)}, dim_sizes=((8, 4, 2),),
                        dim_topologies=("ring", "switch"))
    pruned = run_search(base64, space, top=1, objective="perf_per_cost", solutions=True)
    full = run_search(base64, space, top=1, objective="perf_per_cost", prune=False,
                      solutions=False)
    assert len(set(full.table["fabric"])) == 2**3
    assert_allclose(_best(pruned)[1], _best(full)[1], rtol=1e-6)
    sol = pruned.solutions[0]
    topos = _best(pruned)[0].split()[1].split(",")
    assert [{"R": "ring", "SW": "switch"}[t] for t in topos] == [
        d.topology for d in sol.scenario.fabric.dims]
    assert [d.tier for d in sol.scenario.fabric.dims] == [
        "InterChiplet", "InterPackage", "InterNode"]
    assert isinstance(sol.scenario.fabric.dims[0], Dim)
