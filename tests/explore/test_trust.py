"""Error bands on answers (libra_opt.explore.trust) and designs with alternatives in the
search's table (libra_opt.explore.search.results), against values derived from the
validated runs directly and from the candidates' own rows."""

import math

import pytest

import libra_opt as lo
from libra_opt.explore.trust import scenario_bands
from libra_opt.io.error_model import load_error_model
from libra_opt.io.scenario_file import load_scenario

MODEL = load_error_model()


def _worst(device, stack):
    return max(abs(r.error) for r in MODEL.runs
               if r.device == device and r.stack == stack and r.role == "validation")


def _rank_band(device, stack):
    sets = {}
    for r in MODEL.runs:
        if r.variant_set and r.device == device and r.stack == stack:
            sets.setdefault(r.variant_set, []).append(r.error)
    return max(abs((1 + a) / (1 + b) - 1) for e in sets.values() for a in e for b in e)


def test_the_a100_example_is_inside_the_envelope_with_its_stacks_worst_error():
    (band,) = scenario_bands(MODEL, load_scenario("gpt3_175b_a100_cluster")).values()
    assert band.inside
    assert band.rel_error == pytest.approx(_worst("a100_80gb", "megatron_lm_2022"))


def test_a_knob_never_validated_widens_the_band_to_the_worst_anywhere():
    # Llama 3 405B with full recomputation: no H100 run recomputes fully
    (band,) = scenario_bands(MODEL, load_scenario("llama3_405b_h100_tco")).values()
    assert any(o.startswith("recompute full") for o in band.outside)
    worst = max(abs(r.error) for r in MODEL.runs if r.role == "validation")
    assert band.rel_error == pytest.approx(worst)


def test_scenarios_without_model_based_workloads_have_no_band():
    assert scenario_bands(MODEL, load_scenario("gpt3_175b_4d")) == {}


SPACE = dict(tp=(4,), cp=(1,), pp=(8,), micro_batch_sizes=(1, 2), interleave=(1, 8),
             recompute=("selective",), sequence_parallel=(True,), zero=(1, 2))


@pytest.fixture(scope="module")
def found():
    return lo.search("gpt3_175b_a100_cluster", top=4, space=lo.SearchSpace(**SPACE))


def test_search_rows_carry_the_band_and_the_flags(found):
    t = found.table
    solved = t[t["status"] == "optimal"]
    assert len(solved) >= 4
    best_obj = solved["objective"].min()
    rank_band = _rank_band("a100_80gb", "megatron_lm_2022")
    inside = _worst("a100_80gb", "megatron_lm_2022")
    worst = max(abs(r.error) for r in MODEL.runs if r.role == "validation")
    best_mfu = max(r.mfu_measured for r in MODEL.runs
                   if r.device == "a100_80gb" and r.mfu_measured is not None)
    for _, r in solved.iterrows():
        # interleave 8 lies outside the A100 runs' 1-3
        assert bool(r["outside_envelope"]) == (r["interleave"] == 8)
        assert r["band_pct"] == pytest.approx(100 * (worst if r["interleave"] == 8 else inside))
        assert r["step_time_lo_s"] == pytest.approx(r["step_time_s"] / (1 + r["band_pct"] / 100))
        assert r["mfu_above_measured"] == (r["mfu"] > best_mfu)
        assert r["indistinguishable"] == (r["objective"] <= best_obj * (1 + rank_band))
    assert found.device == "a100_80gb" and found.stack == "megatron_lm_2022"


def test_a_memory_only_knob_makes_alternatives_of_one_design(found):
    t = found.table[found.table["status"] == "optimal"]
    knobs = ["tp", "cp", "pp", "dp", "micro_batch_size", "interleave", "placement"]
    pairs = 0
    for _, g in t.groupby(knobs):
        if len(g) != 2:
            continue
        a, b = (r for _, r in g.sort_values("zero").iterrows())
        if not math.isclose(a["step_time_s"], b["step_time_s"], rel_tol=1e-9):
            assert not lo_na(a["rank"]) and not lo_na(b["rank"])   # two designs
            continue
        pairs += 1
        # one design: the one needing less memory keeps the rank, the other names it
        keep, alt = (a, b) if a["memory_per_npu_gb"] <= b["memory_per_npu_gb"] else (b, a)
        assert not lo_na(keep["rank"]) and lo_na(alt["rank"])
        assert alt["alternative_of"] == keep["rank"]
        assert f"zero {alt['zero']}" in keep["alternatives"]
    assert pairs >= 1
    ranks = t["rank"].dropna().astype(int).tolist()
    assert sorted(ranks) == list(range(1, len(ranks) + 1))   # ranks count designs


def lo_na(v):
    import pandas as pd

    return v is pd.NA or (isinstance(v, float) and math.isnan(v))


def test_the_api_takes_no_error_model():
    res = lo.search("gpt3_175b_a100_cluster", top=1, space=lo.SearchSpace(**{
        **SPACE, "micro_batch_sizes": (1,), "interleave": (1,), "zero": (1,)}),
        error_model=None)
    assert "band_pct" not in res.table


def test_the_best_under_failures_is_the_row_ranked_first():
    """Ranked by the objective under failures, rank 1 is the one whose flag reads ``=``:
    A is cheaper without failures (100 vs 112) but dearer with them (130 vs 120)."""
    import pandas as pd

    from libra_opt.explore.trust import search_columns
    from libra_opt.generators.error_model import ErrorModel, ValidatedRun

    runs = tuple(ValidatedRun(n, "t", "g", "s", "validation", e, variant_set="v")
                 for n, e in (("a", 0.05), ("b", 0.0)))    # ranking band 1.05 / 1 - 1 = 5 %
    t = pd.DataFrame({"status": ["optimal"] * 2, "rank": pd.array([2, 1], dtype="Int64"),
                      "objective": [100.0, 112.0], "effective_objective": [130.0, 120.0],
                      "step_time_s": [1.0, 1.1], "mfu": [0.4, 0.4], "tp": [8, 8], "cp": [1, 1],
                      "pp": [1, 1], "ep": [1, 1], "micro_batch_size": [1, 1],
                      "interleave": [1, 1], "recompute": ["none", "none"]})
    cols = search_columns(ErrorModel(runs), t, "g", "s", 2048, 8, "effective_objective")
    # 120 x 1.05 = 126: B (rank 1) is the best; A at 130 lies outside the band
    assert cols["indistinguishable"] == [False, True]


def test_top_values_count_one_design_once():
    from libra_opt.explore.search.engine import _kth, _top_values

    assert _top_values([3.0, 1.0, 1.0 * (1 + 1e-7), 2.0, 1.0], 2) == [1.0, 2.0]
    assert _kth([1.0, 1.0, 1.0], 2) == math.inf      # one value: no second design yet
    assert _kth([1.0, 1.0, 2.0, 3.0], 2) == 2.0


def test_pruning_keeps_the_best_designs_when_alternatives_fill_the_top():
    """ZeRO 1 and 2 make alternatives of one design; the 3 best designs of a pruned search
    are those of exhaustive enumeration."""
    import pandas as pd

    from libra_opt.explore.search import run_search, search_base

    space = lo.SearchSpace(**SPACE)
    base = search_base(load_scenario("gpt3_175b_a100_cluster"))
    pruned = run_search(base, space, top=3, solutions=False)
    every = run_search(base, space, top=3, prune=False, solutions=False)
    assert pruned.stats["pruned"] > 0 and every.stats["pruned"] == 0
    assert pruned.table["alternative_of"].notna().any()   # alternatives exist here
    cols = ["tp", "cp", "pp", "dp", "micro_batch_size", "interleave", "zero", "placement",
            "objective"]
    pd.testing.assert_frame_equal(pruned.best(3)[cols].reset_index(drop=True),
                                  every.best(3)[cols].reset_index(drop=True),
                                  check_exact=False, rtol=1e-9)
