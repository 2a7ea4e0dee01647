"""apply_overrides: the dotted-path grammar on files, examples and in-memory scenarios."""

import dataclasses

import pytest

from libra_opt import apply_overrides
from libra_opt.errors import InputError
from libra_opt.explore.overrides import ScenarioBase, parse_assignment, parse_value
from libra_opt.io import load_scenario
from libra_opt.scenario.examples import toy_scenario


def test_right_hand_sides_and_caps():
    s = apply_overrides("gpt3_175b_4d", {"sum(bw) == 1000": "1200",
                                         "constraints.budget_usd": 3e7})
    assert s.constraints[0].rhs == 1200.0 and s.budget_usd == 3e7
    assert s.constraints[0].label == "sum(bw) == 1000"  # the label names the original row
    assert apply_overrides(s, {"budget_usd": None}).budget_usd is None


def test_builder_and_model_paths_rebuild_the_workload():
    base = load_scenario("deepseek_v3_rail_only")
    s = apply_overrides("deepseek_v3_rail_only", {"fabric.hb_domain": 16})
    assert s.fabric.sizes == (16, 256) and s.fabric.dims[1].switch_scope == "rail"
    assert s.workloads[0].groups != base.workloads[0].groups  # regenerated on the new fabric
    ep = apply_overrides(base, {"workloads.deepseek_v3.parallelism.ep": 32,
                                "workloads[deepseek_v3].parallelism.dp": 256})
    assert ep.workloads[0].groups["ep"] != base.workloads[0].groups["ep"]
    assert apply_overrides(base, {"constraints.bounds.scaleout[1]": 400}).constraints[-1].rhs == 400


def test_document_dims_by_name_and_index():
    s = apply_overrides("gpt3_175b_4d", {"fabric.dims[0].latency_s": 1e-6,
                                         "fabric.dims.pod.latency_s": "2e-6"})
    assert s.fabric.dims[0].latency_s == 1e-6 and s.fabric.dims[3].latency_s == 2e-6


def test_scenario_fields_and_weights():
    s = apply_overrides(toy_scenario(), {"objective": "perf_per_cost",
                                         "workloads.toy.weight": "2.5",
                                         "training_loop": "overlap"})
    assert (s.objective, s.weights, s.training_loop) == ("perf_per_cost", (2.5,), "overlap")


def test_in_place_dims_without_a_file():
    s = apply_overrides(toy_scenario(), {"fabric.dims.pod.size": "4", "fabric.dims[0].latency_s": 1e-6})
    assert s.fabric.sizes == (4, 4) and s.fabric.dims[0].latency_s == 1e-6
    with pytest.raises(InputError) as exc:  # the 2 x 2 group no longer fits a pod of 3
        apply_overrides(toy_scenario(), {"fabric.dims.pod.size": 3})
    assert exc.value.field == "fabric.dims.pod.size"


@pytest.mark.parametrize(
    ("scenario", "path", "value", "needle"),
    [
        ("gpt3_175b_4d", "fabric.dims.pdo.size", 8, "no item named 'pdo'"),
        ("gpt3_175b_4d", "fabric.dims[9].size", 8, "index 9 is out of range"),
        ("gpt3_175b_4d", "fabric.dims.pod.size", "many", "expected a number"),
        ("gpt3_175b_4d", "fabric.dims.pod.size", 0, "fabric.dims[3].size"),
        ("gpt3_175b_4d", "objective", "fast", "is not one of perf"),
        ("gpt3_175b_4d", "budget_usd", -5, "out of range"),
        ("gpt3_175b_4d", "power_w", 1e6, "no power model"),
        ("gpt3_175b_4d", "fabric..size", 1, "malformed path"),
        ("deepseek_v3_rail_only", "fabric.hb_domain", 3, "not a multiple of hb_domain 3"),
        ("deepseek_v3_rail_only", "workloads.deepseek_v3.parallelism.zero", "x",
         "is not one of 0, 1, 2, 3"),  # the parallelism's own types
        ("deepseek_v3_rail_only", "workloads.deepseek_v3.parallelism.tp", 2.5,
         "expected a number (an integer)"),
    ],
)
def test_errors_name_the_path(scenario, path, value, needle):
    with pytest.raises(InputError) as exc:
        apply_overrides(scenario, {path: value})
    assert exc.value.field == path and needle in exc.value.one_line(), exc.value.one_line()


def test_a_changed_scenario_has_no_spec():
    # a copy made by dataclasses.replace no longer follows its recipe: it has none, so
    # spec paths are refused (edit the spec instead), scenario fields still apply
    scen = dataclasses.replace(load_scenario("deepseek_v3_rail_only"), objective="perf_per_cost",
                               budget_usd=None)
    assert scen.spec is None
    with pytest.raises(InputError) as exc:
        apply_overrides(scen, {"fabric.hb_domain": 16})
    assert exc.value.field == "fabric.hb_domain" and "needs the scenario's spec" in exc.value.message
    assert apply_overrides(scen, {"training_loop": "overlap"}).training_loop == "overlap"
    # the same change made on the spec carries through any edit
    spec = load_scenario("deepseek_v3_rail_only").spec.edit(
        {"objective": "perf_per_cost", "budget_usd": None})
    s = apply_overrides(spec, {"fabric.hb_domain": 16})
    assert s.objective == "perf_per_cost" and s.budget_usd is None and s.fabric.sizes == (16, 256)
    # without a spec, only in-place paths
    with pytest.raises(InputError, match="needs the scenario's spec"):
        apply_overrides(toy_scenario(), {"tco.pue": 1.2})


def test_check_parses_and_adjusts_values():
    base = ScenarioBase.of(load_scenario("deepseek_v3_rail_only"))
    assert base.check("fabric.hb_domain", 16.0) == 16 and isinstance(base.check("fabric.hb_domain", 16.0), int)
    assert base.check("fabric.hb_domain", "16") == 16
    assert base.classify("budget_usd") == "rhs" and base.classify("bw.hb >= 100.0") == "rhs"
    assert base.classify("objective") == "field" and base.classify("fabric.n_npus") == "structural"


def test_parsers():
    assert parse_value(" 1e7 ") == 1e7 and parse_value("{tp: 8}") == {"tp": 8}
    assert parse_assignment("bw.hb >= 100.0=150") == ("bw.hb >= 100.0", "150")
    for bad in ("novalue", "x=", "=3", "sum(bw) =="):
        with pytest.raises(InputError):
            parse_assignment(bad)


def test_a_missing_block_is_created_and_checked():
    """``collectives.chunks`` on an example without a ``collectives:`` block creates it; the
    strict schema still refuses a key it does not know."""
    scen = apply_overrides("gpt3_175b_4d", {"collective_model": "topology_aware",
                                            "collectives.chunks": 4})
    assert scen.collective_settings is not None and scen.collective_settings.chunks == 4
    with pytest.raises(InputError) as exc:
        apply_overrides("gpt3_175b_4d", {"collectives.chunkz": 4})
    assert "chunkz" in exc.value.message
