"""The ``topology_aware`` collective model through a scenario: the YAML ``collectives:``
block (strict), defaults unchanged, evaluation and the numpy re-check of solves."""

import dataclasses
import json
import textwrap

import pytest
import yaml
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.io.scenario_file import load_scenario, load_spec, spec_from_dict, spec_to_yaml
from libra_opt.optimize.problem import solve
from libra_opt.scenario.compile import compile
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.traffic.topology_aware import CollectiveSettings, collective_phases
from tests.io.test_scenario_file import COMM, COST, WORKLOAD

BODY = """\
fabric:
  dims:
    - {name: chiplet, topology: ring, size: 4, tier: InterChiplet, latency_s: 5.0e-7}
    - {name: package, topology: fully_connected, size: 8, tier: InterPackage}
    - {name: node, topology: ring, size: 4, tier: InterNode}
    - {name: pod, topology: switch, size: 32, tier: InterPod, latency_s: 1.0e-6}
cost_model: cost.yml
workloads:
  - {name: w, astra_sim: workload.txt, communicator: comm.yml}
constraints:
  linear: ["sum(bw) == 1000"]
collective_model: topology_aware
"""

BLOCK = """\
collectives:
  algorithm: {pod: ring}
  chunks: 4
  endpoint_delay_s: 1.0e-8
  local_memory_gbps: 1600
  all_reduce: hierarchical
  efficiency: {pod: nic_400g, chiplet: 0.9}
  link_latency_s: {package: 2.0e-7}
"""


@pytest.fixture
def scen_dir(tmp_path):
    (tmp_path / "cost.yml").write_text(COST)
    (tmp_path / "comm.yml").write_text(COMM)
    (tmp_path / "workload.txt").write_text(WORKLOAD)
    return tmp_path


def write(d, body, name="scenario.yaml"):
    p = d / name
    p.write_text(textwrap.dedent(body))
    return p


def test_collectives_block_loads(scen_dir):
    s = load_scenario(write(scen_dir, BODY + BLOCK))
    c = s.collective_settings
    assert c is not None
    assert c.chunks == 4 and c.local_memory_gbps == 1600.0 and c.endpoint_delay_s == 1e-8
    assert dict(c.algorithm) == {"pod": "ring"}
    assert dict(c.efficiency) == {"chiplet": 0.9, "pod": 0.94}
    assert c.latency_of(s.fabric.dims[1]) == 2e-7
    assert c.latency_of(s.fabric.dims[0]) == 5e-7  # the dim's own latency_s
    sol = solve(s)  # re-checked by the numpy evaluator inside solve
    assert sol.solver.objective_rel_gap < 1e-6


def test_default_settings_without_block(scen_dir):
    s = load_scenario(write(scen_dir, BODY))
    assert s.collectives is None and s.collective_settings == CollectiveSettings()


@pytest.mark.parametrize(
    ("block", "field"),
    [
        ("collectives: {chunks: 0}\n", "collectives.chunks"),
        ("collectives: {chunks: 2.5}\n", "collectives.chunks"),
        ("collectives: {bogus: 1}\n", "collectives"),  # the message names 'bogus'
        ("collectives: {algorithm: {pod: tree}}\n", "collectives.algorithm.pod"),
        ("collectives: {algorithm: {chiplet: halving_doubling}}\n",
         "collectives.algorithm.chiplet"),
        ("collectives: {algorithm: {nosuch: ring}}\n", "collectives.algorithm.nosuch"),
        ("collectives: {efficiency: {pod: 1.2}}\n", "collectives.efficiency.pod"),
        ("collectives: {efficiency: {pod: fast}}\n", "collectives.efficiency.pod"),
        ("collectives: {all_reduce: ring}\n", "collectives.all_reduce"),
        ("collectives: {endpoint_delay_s: -1}\n", "collectives.endpoint_delay_s"),
        # the package group spans 4 or 2 of 8 NPUs: 2 and 4 are powers of two, the pod's 32
        # too; a 4-ring cannot run halving_doubling at all
        ("collectives: {algorithm: {node: halving_doubling}}\n", "collectives.algorithm.node"),
    ],
)
def test_collectives_block_errors_name_file_and_field(scen_dir, block, field):
    p = write(scen_dir, BODY + block)
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    assert exc.value.field == field
    assert exc.value.source == str(p)


def test_native_traffic_is_rejected(scen_dir):
    p = write(scen_dir, BODY + "traffic_model: native\n")
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    assert exc.value.field == "traffic_model"


def test_astra_sim_system_in_block(scen_dir):
    system = {"preferred-dataset-splits": 8, "endpoint-delay": 10, "local-mem-bw": 1600,
              "all-reduce-implementation": ["ring", "direct", "ring", "ring"],
              "all-to-all-implementation": ["ring", "direct", "ring", "ring"]}
    (scen_dir / "sys.json").write_text(json.dumps(system))
    # the backend is not in the system file and has no default: required beside it
    p = write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json}\n")
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    assert exc.value.field == "collectives.backend" and "congestion_aware" in exc.value.message
    s = load_scenario(write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, "
                            "backend: congestion_unaware}\n"))
    c = s.collective_settings
    assert c is not None and c.chunks == 8 and dict(c.algorithm)["pod"] == "ring"
    assert c.backend == "congestion_unaware" and c.queues_per_dim == 1
    # a setting beside the file is refused, even one written at its default value
    for setting in ("chunks: 2", "chunks: 1", "all_reduce: hierarchical"):
        p = write(scen_dir, BODY + f"collectives: {{astra_sim_system: sys.json, {setting}}}\n")
        with pytest.raises(InputError, match="either astra_sim_system or the settings") as exc:
            load_scenario(p)
        assert exc.value.field == "collectives"
    # the backend and the queues are not in the system file: given beside it
    s = load_scenario(write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, "
                            "backend: congestion_aware, queues_per_dim: 2}\n"))
    c = s.collective_settings
    assert c is not None and (c.backend, c.queues_per_dim) == ("congestion_aware", 2)
    p = write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, backend: garnet}\n")
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    assert exc.value.field == "collectives.backend"


def test_astra_sim_settings_in_block(scen_dir):
    block = ("collectives: {backend: congestion_aware, queues_per_dim: 2, "
             "active_chunks_per_dim: 2, chunks: 4, "
             "collective_algorithm: {all_to_all: {pod: ring}}}\n")
    scen = load_scenario(write(scen_dir, BODY + block))
    c = scen.collective_settings
    assert c is not None and c.active_chunks_per_dim == 2
    assert dict(c.collective_algorithm) == {("all_to_all", "pod"): "ring"}
    pod = scen.fabric.dims[3]
    assert (c.algorithm_of(pod, "all_to_all"), c.algorithm_of(pod, "all_reduce")) == (
        "ring", "direct")


def test_defaults_unchanged_and_settings_ignored_by_libra_models():
    toy = toy_scenario()
    assert toy.collective_settings is None
    with_settings = dataclasses.replace(toy, collectives=CollectiveSettings(chunks=7))
    assert_allclose(evaluate(with_settings, [200.0, 100.0]).objective_value,
                    evaluate(toy, [200.0, 100.0]).objective_value, rtol=0)


def test_evaluate_under_topology_aware_sums_collective_times():
    toy = toy_scenario()
    s = CollectiveSettings(chunks=2)
    ta = dataclasses.replace(toy, collective_model="topology_aware", collectives=s)
    bw = [200.0, 100.0]
    (wl,) = ta.workloads
    expect = 0.0
    for phase, count in [(p, layer.count) for layer in wl.layers for _, p in layer.phases()]:
        t = sum(collective_phases(c.kind, c.size_bytes, wl.groups[c.group], ta.fabric, s)
                .time_s(bw) for c in phase.collectives)
        expect += count * (phase.compute_s + t)
    assert_allclose(evaluate(ta, bw).weighted_step_time_s, expect, rtol=1e-12)


def test_selectable_in_sweeps(scen_dir):
    """The model is a scenario field (``--set collective_model=topology_aware``) and every
    setting a document path (``collectives.chunks``) for the sweep axes."""
    from libra_opt import apply_overrides

    ta = apply_overrides(toy_scenario(), {"collective_model": "topology_aware"})
    assert ta.collective_settings == CollectiveSettings()
    assert solve(ta).solver.objective_rel_gap < 1e-6
    s = load_scenario(write(scen_dir, BODY + BLOCK))
    s8 = apply_overrides(s, {"collectives.chunks": 8})
    assert s8.collective_settings is not None and s8.collective_settings.chunks == 8
    assert solve(s8).objective_value != solve(s).objective_value  # the setting reaches the solve


def test_nccl_curve_efficiency_in_block(scen_dir):
    """A measured curve names the efficiency of a dimension; the solve's numpy re-check
    passes (the fraction is a constant per collective: the program stays exact)."""
    # the curves include the links' latencies: the dimensions' own are set to 0 (else refused)
    with pytest.raises(InputError, match=r"collectives\.efficiency\.pod: 'pod' is priced with "
                       "the measured curve 'ndr400_ib_nccl'"):
        load_scenario(write(scen_dir, BODY + "collectives: {efficiency: {pod: ndr400_ib_nccl}}\n"))
    block = ("collectives: {efficiency: {pod: ndr400_ib_nccl, package: h100_nvlink_nccl}, "
             "link_latency_s: {pod: 0, package: 0}}\n")
    s = load_scenario(write(scen_dir, BODY + block))
    c = s.collective_settings
    assert c is not None and dict(c.efficiency) == {"pod": "ndr400_ib_nccl",
                                                    "package": "h100_nvlink_nccl"}
    assert solve(s).solver.objective_rel_gap < 1e-6


SYSTEM = {"preferred-dataset-splits": 4, "endpoint-delay": 10, "local-mem-bw": 1600,
          "active-chunks-per-dimension": 2,
          "all-reduce-implementation": ["ring", "direct", "ring", "ring"],
          "all-to-all-implementation": ["ring", "direct", "ring", "direct"]}


def _round_trip(spec):
    text = spec_to_yaml(spec)
    return text, spec_from_dict(yaml.safe_load(text), spec.source, spec.base_dir)


@pytest.mark.parametrize("block", [
    "collectives: {astra_sim_system: sys.json, backend: congestion_aware, queues_per_dim: 2}\n",
    "collectives: {backend: congestion_aware, queues_per_dim: 2, active_chunks_per_dim: 3, "
    "chunks: 4, collective_algorithm: {all_to_all: {pod: ring}, all_gather: {package: ring}}}\n",
], ids=["system", "settings"])
def test_astra_keys_round_trip_through_the_spec(scen_dir, block):
    (scen_dir / "sys.json").write_text(json.dumps(SYSTEM))
    path = write(scen_dir, BODY + block)
    spec = load_spec(path)
    text, again = _round_trip(spec)
    assert again == spec, text
    assert spec_to_yaml(again) == text
    given = yaml.safe_load(block)["collectives"]
    assert yaml.safe_load(text)["collectives"] == given  # every key written back, no other
    assert compile(again).collective_settings == load_scenario(path).collective_settings


def test_an_edit_of_the_backend_beside_a_system_file_takes_effect(scen_dir):
    """The spec keeps the system file's settings; the backend and the queues given beside it
    are applied when compiling, so an edit of them needs no file: the edited spec equals,
    and compiles to, a scenario whose file gives them."""
    (scen_dir / "sys.json").write_text(json.dumps(SYSTEM))
    spec = load_spec(write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, "
                           "backend: congestion_unaware}\n"))
    (scen_dir / "sys.json").unlink()  # compiling the edit reads no file
    edited = spec.edit({"collectives.backend": "congestion_aware",
                        "collectives.queues_per_dim": 2})
    c = compile(edited).collective_settings
    assert c is not None and (c.backend, c.queues_per_dim) == ("congestion_aware", 2)
    assert (c.chunks, c.active_chunks_per_dim) == (4, 2)  # the file's
    assert dict(c.collective_algorithm) == {("all_to_all", "pod"): "direct"}
    (scen_dir / "sys.json").write_text(json.dumps(SYSTEM))
    direct = load_spec(write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, "
                             "backend: congestion_aware, queues_per_dim: 2}\n", "b.yaml"))
    assert direct == edited
    bw = [400.0, 300.0, 200.0, 100.0]
    # the backends give different times on this fabric (congestion-aware store-and-forward
    # on the multi-hop ring and switch dimensions), so an ignored edit would show
    before, after = evaluate(compile(spec), bw), evaluate(compile(edited), bw)
    assert before.weighted_step_time_s != after.weighted_step_time_s
    assert_allclose(after.weighted_step_time_s,
                    evaluate(compile(direct), bw).weighted_step_time_s, rtol=1e-12)
    with pytest.raises(InputError) as exc:
        compile(spec.replace("collectives.backend", "garnet"))
    assert exc.value.field == "collectives.backend"


def test_settings_the_system_file_gives_are_refused_beside_it(scen_dir):
    (scen_dir / "sys.json").write_text(json.dumps(SYSTEM))
    p = write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json, "
              "active_chunks_per_dim: 2}\n")
    with pytest.raises(InputError) as exc:
        load_scenario(p)
    assert exc.value.field == "collectives" and "active_chunks_per_dim" in exc.value.message
    spec = load_spec(write(scen_dir, BODY + "collectives: {astra_sim_system: sys.json}\n"))
    path = "collectives.collective_algorithm.all_to_all.pod"
    with pytest.raises(InputError) as exc:  # the edit itself is refused
        compile(spec.replace(path, "ring"))
    assert exc.value.field == path
    assert "collective_algorithm" in exc.value.message
