"""ScenarioSpec: YAML -> spec -> YAML -> spec round trips, compile against the golden
answers, typed dotted-path edits, and structural sweeps that read no file."""

import builtins
import json
import pathlib
import textwrap

import numpy as np
import pytest
import yaml
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.cli import main
from libra_opt.cli.main import _json
from libra_opt.errors import InputError
from libra_opt.io.examples import names
from libra_opt.io.scenario_file import load_spec, spec_from_dict, spec_to_yaml
from libra_opt.optimize.problem import solve
from libra_opt.report.text import solution_to_dict
from libra_opt.scenario.compile import compile
from libra_opt.scenario.spec import ScenarioSpec
from tests.cli.test_golden import GOLDEN, _diff
from tests.io.test_scenario_file import (
    BASE,
    COMM,
    COST,
    NETWORK,
    SCEN_BUILDER,
    WORKLOAD,
    write_scenario,
)

EXTRA = """\
name: every_section
fabric:
  dims:
    - {name: hb, topology: switch, size: 8, tier: ScaleUp}
    - {name: so, topology: switch, size: 16, tier: ScaleOut, latency_s: 1.0e-6,
       members: {fraction: [1.0, 0.5], share: [0.75, 0.25]}}
    - {name: site, topology: switch, size: 2, tier: DCI}
cost_model:
  ScaleUp: {link: 1.0, switch: 0.5, nic: 0.5}
  ScaleOut: {link: 2.0, switch: 1.5, nic: 3.0}
  DCI: {link: 40.0, switch: 5.0, nic: 5.0}
workloads:
  - name: gpt
    model: llama3_8b
    device: {preset: h100_sxm, default_efficiency: 0.5}
    parallelism: {tp: 8, pp: 2, dp: 16, global_batch_size: 256}
    mapping: {tp: [hb], pp: {so: 2}, dp: {so: 8, site: 2}}
    weight: 2.0
constraints:
  linear: ["sum(bw) == 1200", "bw.hb >= bw.so"]
  bounds: {so: [10, null]}
  budget_usd: 1.0e9
  rhs: {"sum(bw) == 1200": 1300.0}
objective: perf_per_cost
collective_model: topology_aware
collectives: {chunks: 4, algorithm: {hb: direct}}
compression: {baseline: bf16, groups: {dp: fp8}}
diloco: {site_dim: site, params_per_npu: 1.0e9, sync_every_steps: 50, delta_bits: 4}
"""


@pytest.fixture
def libra_files(tmp_path):
    """The LIBRA network, cost, communicator and ASTRA-sim files of ``BASE``."""
    for name, text in (("network.yml", NETWORK), ("cost.yml", COST), ("comm.yml", COMM),
                       ("workload.txt", WORKLOAD)):
        (tmp_path / name).write_text(text)
    return tmp_path


def _round_trip(spec):
    """YAML -> spec (given) -> YAML -> spec, read against the spec's own directory."""
    text = spec_to_yaml(spec)
    again = spec_from_dict(yaml.safe_load(text), spec.source, spec.base_dir)
    return text, again


@pytest.mark.parametrize("name", names())
def test_every_example_round_trips_and_compiles_to_the_golden_answer(name):
    spec = load_spec(name)
    text, again = _round_trip(spec)
    assert again == spec, text
    assert spec_to_yaml(again) == text  # the second serialisation is the first
    got = json.loads(_json(solution_to_dict(solve(compile(again)))))
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    want.pop("error_band", None)   # the command's addition from the error model, not the solve's
    assert _diff(want, got) is None, _diff(want, got)


@pytest.mark.parametrize("body", [BASE, SCEN_BUILDER, EXTRA], ids=["libra", "builder", "every"])
def test_scenarios_the_tests_write_round_trip(libra_files, body):
    path = write_scenario(libra_files, body)
    spec = load_spec(path)
    _, again = _round_trip(spec)
    assert again == spec
    scen, fresh = compile(again), lo.load_scenario(path)
    assert scen == fresh and scen.spec == spec and fresh.spec == spec
    if body is EXTRA:  # the rhs replaced by label: 1300, the row's label kept
        assert scen.constraints[0].label == "sum(bw) == 1200" and scen.constraints[0].rhs == 1300


def test_save_spec_rewrites_file_paths_for_its_new_directory(tmp_path, libra_files):
    spec = load_spec(write_scenario(libra_files, BASE))
    out = lo.save_spec(spec.replace("constraints.linear[0]", "sum(bw) == 2000"),
                       tmp_path / "elsewhere" / "s.yaml")
    moved = load_spec(out)
    assert compile(moved).constraints[0].rhs == 2000
    assert moved.fabric.libra_network.value == spec.fabric.libra_network.value


def test_replace_checks_types_and_names_the_path():
    spec = load_spec("gpt3_175b_a100_cluster")
    w = spec.workloads[0].name
    tp = f"workloads.{w}.parallelism.tp"
    assert spec.replace(tp, np.int64(4)).workloads[0].parallelism["tp"] == 4
    assert isinstance(spec.replace(tp, 4.0).workloads[0].parallelism["tp"], int)
    dims = load_spec("gpt3_175b_4d")
    assert dims.replace("fabric.dims[0].size", np.float64(8.0)).fabric.dims[0].size == 8
    assert spec.replace("objective", "perf_per_cost") != spec  # a new value ...
    assert spec.objective == "perf"  # ... the old one unchanged
    for base, path, value, needle in [
        (spec, tp, 2.5, "expected a number"),
        (dims, "fabric.dims[0].size", 2.5, "expected a number (an integer)"),
        (dims, "fabric.dims[0].size", "x", "expected a number"),
        (dims, "fabric.dims[0].topology", "torus", "is not one of ring"),
        (dims, "fabric.dimz", 3, "no field 'dimz'"),
        (spec, "workloads.nosuch.weight", 1.0, "no item named 'nosuch'"),
        (spec, "workloads[0].weight", -1.0, "weight -1.0 is out of range: expected a number > 0"),
        (spec, "diloco.site_dim", "x", "params_per_npu: required field is missing"),
    ]:
        with pytest.raises(InputError) as exc:
            base.replace(path, value)
        assert exc.value.field == path and needle in exc.value.message, exc.value.one_line()


def test_a_structural_sweep_reads_no_file(monkeypatch):
    """Parallelism and fabric-size points are compiled from the spec in memory."""
    import libra_opt.io._yaml as yaml_util
    import libra_opt.io.files as files

    scen = lo.load_scenario("gpt3_175b_a100_cluster")
    w = scen.workloads[0].name
    axes = {f"workloads.{w}.parallelism.global_batch_size": [768, 1536],
            f"workloads.{w}.parallelism.micro_batch_size": [1, 2], "fabric.hb_domain": [8]}
    want = lo.sweep(scen, axes, progress=False)  # reference, files allowed

    def forbidden(*args, **kwargs):
        raise AssertionError(f"file access during a structural sweep: {args[:1]}")

    real_open = builtins.open

    def no_open(file, *args, **kwargs):
        if isinstance(file, int):  # descriptors of pipes (pandas, logging) are not files
            return real_open(file, *args, **kwargs)
        forbidden(file)

    monkeypatch.setattr(builtins, "open", no_open)
    monkeypatch.setattr(pathlib.Path, "read_text", forbidden)
    monkeypatch.setattr(pathlib.Path, "read_bytes", forbidden)
    monkeypatch.setattr(yaml_util, "read_yaml", forbidden)
    monkeypatch.setattr(files, "read_text", forbidden, raising=False)
    got = lo.sweep(scen, axes, progress=False)
    assert list(got["status"]) == ["optimal"] * 4
    assert_allclose(got["objective"], want["objective"], rtol=1e-9)


def test_set_errors_blame_the_flag_not_the_example(capsys):
    w = load_spec("gpt3_175b_a100_cluster").workloads[0].name
    code = main(["solve", "gpt3_175b_a100_cluster", "--set",
                 f"workloads.{w}.parallelism.tp=3"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "<cli>: --set: " in err and err.count("\n") == 0, err
    assert f"workloads.{w}.parallelism.tp" in err and ".yaml" not in err, err


def test_spec_from_python_equals_the_file():
    """The same scenario built with keyword arguments and read from YAML."""
    from libra_opt.scenario.spec import ConstraintsSpec, DimSpec, FabricSpec, Ref, WorkloadSpec

    body = textwrap.dedent("""\
        name: l8
        fabric:
          dims:
            - {name: node, topology: switch, size: 8, tier: ScaleUp}
            - {name: pod, topology: switch, size: 4, tier: ScaleOut}
        cost_model: {ScaleUp: {link: 1.0, switch: 0.5, nic: 0.5}, ScaleOut: {link: 2.0, switch: 1.0, nic: 1.0}}
        workloads:
          - {name: l8, model: llama3_8b, device: h100_sxm,
             parallelism: {tp: 8, dp: 4, global_batch_size: 32}}
        constraints: {linear: ["sum(bw) == 900"]}
        """)
    from_file = spec_from_dict(yaml.safe_load(body), "<test>", ".")
    built = ScenarioSpec(
        name="l8",
        fabric=FabricSpec(dims=(DimSpec("node", "switch", 8, "ScaleUp"),
                                DimSpec("pod", "switch", 4, "ScaleOut"))),
        cost_model={"ScaleUp": {"link": 1.0, "switch": 0.5, "nic": 0.5},
                    "ScaleOut": {"link": 2.0, "switch": 1.0, "nic": 1.0}},
        workloads=(WorkloadSpec("l8", model="llama3_8b", device="h100_sxm",
                                parallelism={"tp": 8, "dp": 4, "global_batch_size": 32}),),
        constraints=ConstraintsSpec(linear=["sum(bw) == 900"]))
    assert built.unresolved == ("workloads[0].model", "workloads[0].device")
    with pytest.raises(InputError, match="not read yet"):
        compile(built)
    assert lo.compile(built) == compile(from_file)
    assert isinstance(built.workloads[0].model, Ref)


@pytest.mark.parametrize("path,value", [
    ("workloads.gpt3_175b.parallelism.global_batch_size", 768),  # the workload again
    ("objective", "perf_per_cost"),  # nothing regenerated
    ("fabric.hb_domain", 4),  # everything again
    ("cost_model.overrides", {"parts.ib_ndr_switch_64x400g.price_usd": 32000}),
])
def test_compile_from_a_previous_scenario_equals_a_fresh_compile(path, value):
    base = lo.load_scenario("gpt3_175b_a100_cluster")
    edited = base.spec.replace(path, value)
    if path == "fabric.hb_domain":  # tp 8 no longer fits a domain of 4
        edited = edited.replace("workloads.gpt3_175b.parallelism.tp", 4).replace(
            "workloads.gpt3_175b.parallelism.pp", 32).replace(
            "workloads.gpt3_175b.mapping", None)
    again = compile(edited, previous=base)
    assert again == compile(edited) and again.spec == edited
    same = [a is b for a, b in zip(again.workloads, base.workloads, strict=True)]
    # a workload is reused where nothing it depends on changed (not the prices)
    assert all(same) == (path in ("objective", "cost_model.overrides"))


def test_no_objective_name_is_compared_outside_its_resolving_modules():
    """Code asks the objective (``scenario.objective_model``: label, unit, evaluation,
    flags) instead of comparing its name; only the vocabulary (``options``), the objective
    types and the file schema spell the names."""
    import re

    root = pathlib.Path(lo.__file__).parent
    allowed = {"options.py", "scenario/objective.py"}
    pattern = re.compile(r"""(==|!=)\s*["'](perf|perf_per_cost|tco)["']|"""
                         r"""["'](perf|perf_per_cost|tco)["']\s*(==|!=)""")
    found = [f"{p.relative_to(root)}:{i}" for p in root.rglob("*.py")
             if str(p.relative_to(root)) not in allowed
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if pattern.search(line.split("#")[0])]
    assert found == []
    # the pattern sees one
    assert pattern.search('if scen.objective == "tco":') and pattern.search("'perf' != x")


@pytest.mark.parametrize("name,unit", [("perf", "s"), ("perf_per_cost", "s*$"), ("tco", "$")])
def test_each_objective_owns_its_label_unit_and_value(name, unit):
    from libra_opt.scenario.objective import objective_of

    scen = lo.load_scenario("llama3_405b_h100_tco")  # has a tco section
    scen = lo.compile(scen.spec.replace("objective", name))
    obj = scen.objective_model
    assert (obj.name, obj.unit) == (name, unit) and obj is objective_of(name)
    bw = np.array([400.0, 50.0])[: scen.fabric.n_dims]
    ev = lo.evaluate(scen, bw)
    # hand formulas of the module table, from the evaluation's own parts
    from libra_opt.cost.tco import cluster_rate_coefficients

    T, C = ev.weighted_step_time_s, ev.cost.network_cost_usd
    r0, r = cluster_rate_coefficients(scen.tco, scen.fabric, scen.coefficients)
    want = {"perf": T, "perf_per_cost": T * C, "tco": scen.tco.n_steps * T * (r0 + r @ bw)}
    assert_allclose(ev.objective_value, want[name], rtol=1e-12)


def test_a_field_has_one_check_for_files_python_and_edits():
    """A spec field's type and range (``bounded``) are checked where the value comes in: a
    file (strict: its integers are integers), a spec built in Python, an edit by path."""
    from libra_opt.scenario.spec import CollectivesSpec

    example = lo.load_spec("gpt3_175b_4d")
    doc = yaml.safe_load(pathlib.Path(example.source).read_text())
    base = example.base_dir

    def file_error(collectives):
        with pytest.raises(InputError) as exc:
            spec_from_dict({**doc, "collectives": collectives}, "s.yaml", base, resolve=False)
        return exc.value.source, exc.value.field, exc.value.message

    assert file_error({"chunks": 0}) == ("s.yaml", "collectives.chunks",
                                         "chunks 0 is out of range: expected a number >= 1")
    assert file_error({"chunks": 2.0}) == ("s.yaml", "collectives.chunks",
                                           "expected a number (an integer), got 2.0")
    source, field, message = file_error({"chunk": 2})
    assert (source, field) == ("s.yaml", "collectives")
    assert message.startswith("unknown key(s) chunk; expected algorithm, chunks,")
    with pytest.raises(InputError, match="chunks 0 is out of range: expected a number >= 1") as exc:
        CollectivesSpec(chunks=0)
    assert exc.value.field == "chunks"
    with pytest.raises(InputError, match="chunks 0 is out of range: expected a number >= 1") as exc:
        example.replace("collectives.chunks", 0)
    assert exc.value.field == "collectives.chunks"
    # an edit takes an integral number (a sweep's 2.0, the command line's "2") for an integer
    assert example.replace("collectives.chunks", 2.0).collectives.chunks == 2
    assert example.replace("collectives.chunks", "2").collectives.chunks == 2
    with_file = spec_from_dict({**doc, "collectives": {"chunks": 2}}, "s.yaml", base,
                               resolve=False)
    assert with_file.collectives == example.replace("collectives.chunks", 2).collectives
