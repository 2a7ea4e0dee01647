"""File formats: LIBRA YAML and ASTRA-sim round trips, and precise errors on bad input."""

import textwrap

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.io import (
    load_scenario,
    read_astra_sim,
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
    write_astra_sim,
    write_libra_communicator,
    write_libra_cost_model,
    write_libra_network,
)
from libra_opt.io.astra_sim import parse_astra_sim

NETWORK = """\
Topology: [ Ring, FullyConnected, Ring, Switch ]
NpusCount: [ 4, 8, 4, 32 ]
CostDimension: [ InterChiplet, InterPackage, InterNode, InterPod ]
"""
COST = """\
InterChiplet: {Link: 2.0}
InterPackage: {Link: 4.0, Switch: 13.0}
InterNode: {Link: 4.0, Switch: 13.0}
InterPod: {Link: 7.8, Switch: 18.0, Nic: 31.6}
"""
COMM = """\
Forward: [ 4, 4, -1, -1 ]
InputGrad: [ 4, 4, -1, -1 ]
WeightGrad: [ -1, 2, 4, 32 ]
"""
WORKLOAD = """\
attn -1 1000000 ALLREDUCE 50331648 1200000 ALLREDUCE 50331648 900000 ALLREDUCE 75497472 50
mlp -1 2000000 ALLGATHER 1048576 2000000 NONE 0 2000000 REDUCESCATTER 150994944 10
emb -1 500000 ALLTOALL 4194304 500000 ALLTOALL 4194304 0 NONE 0 0
"""


@pytest.fixture
def libra_dir(tmp_path):
    (tmp_path / "network.yml").write_text(NETWORK)
    (tmp_path / "cost.yml").write_text(COST)
    (tmp_path / "comm.yml").write_text(COMM)
    (tmp_path / "workload.txt").write_text(WORKLOAD)
    return tmp_path


def write_scenario(d, body):
    p = d / "scenario.yaml"
    p.write_text(textwrap.dedent(body))
    return p


BASE = """\
fabric: {libra_network: network.yml}
cost_model: cost.yml
workloads:
  - {name: w, astra_sim: workload.txt, communicator: comm.yml}
constraints:
  linear: ["sum(bw) == 1000"]
"""


def test_libra_readers(libra_dir):
    f = read_libra_network(libra_dir / "network.yml")
    assert f.names == ("chiplet", "package", "node", "pod")
    assert [d.topology for d in f.dims] == ["ring", "fully_connected", "ring", "switch"]
    assert f.n_npus == 4096
    prices = read_libra_cost_model(libra_dir / "cost.yml")
    assert prices["InterPod"] == {"link": 7.8, "switch": 18.0, "nic": 31.6}
    groups = read_libra_communicator(libra_dir / "comm.yml")
    assert groups == {"forward": (4, 4, 1, 1), "input_grad": (4, 4, 1, 1), "weight_grad": (1, 2, 4, 32)}
    wl = read_astra_sim(libra_dir / "workload.txt", groups)
    assert [layer.name for layer in wl.layers] == ["attn", "mlp", "emb"]
    attn = wl.layers[0]
    assert_allclose(
        [attn.forward.compute_s, attn.input_grad.compute_s, attn.weight_grad.compute_s, attn.update_s],
        [1e-3, 1.2e-3, 0.9e-3, 50e-9],
    )
    assert attn.weight_grad.collectives[0].kind == "all_reduce"
    assert attn.weight_grad.collectives[0].size_bytes == 75497472
    assert attn.weight_grad.collectives[0].group == "weight_grad"
    assert wl.layers[1].input_grad.collectives == ()
    assert wl.layers[2].forward.collectives[0].kind == "all_to_all"


def test_round_trip(libra_dir, tmp_path):
    f = read_libra_network(libra_dir / "network.yml")
    groups = read_libra_communicator(libra_dir / "comm.yml")
    wl = read_astra_sim(libra_dir / "workload.txt", groups)
    out = tmp_path / "out"
    out.mkdir()
    write_libra_network(f, out / "network.yml")
    write_libra_cost_model(read_libra_cost_model(libra_dir / "cost.yml"), out / "cost.yml")
    spans = write_astra_sim(wl, out / "workload.txt")
    write_libra_communicator(spans, out / "comm.yml")
    assert (out / "workload.txt").read_text() == WORKLOAD
    assert read_libra_network(out / "network.yml") == f
    assert read_libra_cost_model(out / "cost.yml") == read_libra_cost_model(libra_dir / "cost.yml")
    assert read_libra_communicator(out / "comm.yml") == groups
    # With the optional ASTRA-sim header lines.
    write_astra_sim(wl, out / "with_header.txt", header=True)
    assert read_astra_sim(out / "with_header.txt", groups, name="w") == read_astra_sim(
        out / "workload.txt", groups, name="w"
    )


def test_astra_sim_header_variants():
    groups = {"forward": (2,), "input_grad": (2,), "weight_grad": (2,)}
    text = "DATA\n1\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n"
    assert parse_astra_sim(text, "w", groups).n_layers == 1
    with pytest.raises(InputError, match="declares 2 layers"):
        parse_astra_sim("DATA\n2\nl -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "w", groups)
    with pytest.raises(InputError, match="12 fields"):
        parse_astra_sim("l -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8\nm -1 1 NONE 0 1 NONE 0 1 ALLREDUCE\n", "w", groups)
    # A first layer line with 11 or 13 fields is an error, not a header to skip.
    good = "m -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n"
    for bad in ("l -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8\n", "l -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0 7\n"):
        with pytest.raises(InputError, match="line 1"):
            parse_astra_sim(bad + good, "w", groups)
    header = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8\n1\n"
    assert parse_astra_sim(header + good, "w", groups).n_layers == 1
    with pytest.raises(InputError, match="BROADCAST"):
        parse_astra_sim("l -1 1 BROADCAST 0 1 NONE 0 1 ALLREDUCE 8 0\n", "w", groups)
    with pytest.raises(InputError, match="line 1"):
        parse_astra_sim("l -1 -5 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "w", groups)


def test_scenario_loads_and_solves(libra_dir):
    from libra_opt.optimize.problem import solve

    scen = load_scenario(write_scenario(libra_dir, BASE))
    assert scen.name == "scenario" and scen.fabric.n_dims == 4
    sol = solve(scen)
    assert_allclose(sol.bw_gbps.sum(), 1000, rtol=1e-7)


BAD = [
    # (replacement of BASE text or full text, expected fragments of the one-line message)
    ("cost_model: cost.yml\n", "cost_model: cost.yml\nfoo: 1\n", ["scenario.yaml", "unknown key(s) foo"]),
    ("objective: perf\n", None, None),
    ('linear: ["sum(bw) == 1000"]', 'linear: ["sum(bw) == 1000", "bw[7] <= 3"]',
     ["constraints.linear[1]", "no dimension 7"]),
    ('linear: ["sum(bw) == 1000"]', 'linear: ["sum(bw) == 1000"]\n  budget_usd: .nan',
     ["constraints.budget_usd", "finite"]),
    ('linear: ["sum(bw) == 1000"]', 'linear: ["sum(bw) == 1000"]\n  budget_usd: -5',
     ["constraints.budget_usd", "expected a number > 0"]),
    ("workloads:\n", "workloads:\n  - {name: w, astra_sim: workload.txt, communicator: comm.yml, weight: 0}\n",
     ["workloads[0].weight"]),
    ("cost_model: cost.yml\n", "cost_model: cost.yml\ncost_model: cost.yml\n", ["duplicate key 'cost_model'"]),
    ("cost_model: cost.yml\n", "cost_model: [unclosed\n", ["malformed YAML", "line"]),
    ("cost_model: cost.yml\n", "cost_model: nothere.yml\n", ["nothere.yml", "file not found"]),
    # the spec's field for a builder's parameters is not a key of the file
    ("fabric: {libra_network: network.yml}", "fabric: {libra_network: network.yml, args: {}}",
     ["fabric", "unknown key(s) args"]),
]


@pytest.mark.parametrize(("old", "new", "fragments"), [b for b in BAD if b[1] is not None])
def test_scenario_errors(libra_dir, old, new, fragments):
    body = BASE.replace(old, new, 1) if old in BASE else BASE + new
    with pytest.raises(InputError) as info:
        load_scenario(write_scenario(libra_dir, body))
    msg = info.value.one_line()
    assert "\n" not in msg
    for frag in fragments:
        assert frag in msg, msg


def test_inline_fabric_errors(libra_dir):
    body = BASE.replace(
        "fabric: {libra_network: network.yml}",
        "fabric:\n  dims:\n    - {name: a, topology: ring, size: -4, tier: InterChiplet}",
    )
    with pytest.raises(InputError, match=r"fabric\.dims\[0\]\.size"):
        load_scenario(write_scenario(libra_dir, body))
    body = BASE.replace(
        "fabric: {libra_network: network.yml}",
        "fabric:\n  dims:\n    - {name: a, topology: torus, size: 4, tier: InterChiplet}",
    )
    with pytest.raises(InputError, match="topology"):
        load_scenario(write_scenario(libra_dir, body))


def test_non_dividing_group(libra_dir):
    (libra_dir / "comm.yml").write_text(COMM.replace("[ 4, 4, -1, -1 ]", "[ 3, 4, -1, -1 ]", 1))
    with pytest.raises(InputError) as info:
        load_scenario(write_scenario(libra_dir, BASE))
    assert "divisor of 4" in str(info.value) and "forward" in str(info.value)


def test_communicator_and_network_errors(tmp_path):
    p = tmp_path / "c.yml"
    p.write_text("Forward: [4, 0]\nInputGrad: [4, 1]\nWeightGrad: [1, 4]\n")
    with pytest.raises(InputError, match=r"Forward\[1\]"):
        read_libra_communicator(p)
    p.write_text("Topology: [Ring, Torus]\nNpusCount: [4, 4]\nCostDimension: [A, B]\n")
    with pytest.raises(InputError, match=r"Topology\[1\]"):
        read_libra_network(p)
    p.write_text("Topology: [Ring]\nNpusCount: [4, 4]\nCostDimension: [A]\n")
    with pytest.raises(InputError, match="NpusCount"):
        read_libra_network(p)


SCEN_BUILDER = """\
fabric: {builder: fat_tree, n_npus: 64, hb_domain: 8, switch_radix: 8}
cost_model: {catalog: current_2025}
workloads:
  - name: l8
    model: llama3_8b
    device: h100_sxm
    parallelism: {tp: 8, dp: 8, global_batch_size: 64, recompute: full}
constraints:
  bounds: {hb: [null, 900], scaleout: [null, 100]}
objective: tco
traffic_model: native
tco: {accelerator_usd: 30000, host_usd_per_npu: 5000, npu_power_w: 700,
      host_power_w_per_npu: 300, pue: 1.2, electricity_usd_per_kwh: 0.1,
      lifetime_years: 4, steps: 1000}
"""


def test_builder_catalog_model_and_tco(tmp_path):
    from libra_opt.io.presets import catalog_cost_model

    scen = load_scenario(write_scenario(tmp_path, SCEN_BUILDER))
    assert scen.fabric.names == ("hb", "scaleout") and scen.fabric.sizes == (8, 8)
    assert scen.fabric.dims[1].switch_radix == 8
    assert scen.cost_model == catalog_cost_model("current_2025")
    assert scen.objective == "tco" and scen.tco.steps == 1000 and scen.traffic_model == "native"
    m = scen.workloads[0].metrics
    # Llama 3 8B: 64 sequences of 8192 tokens per step
    assert m.tokens_per_step == 64 * 8192 and m.n_npus == 64
    assert scen.workloads[0].groups["tp"] == (8, 1)


def test_libra_catalog_matches_libra_prices(tmp_path):
    body = BASE.replace("cost_model: cost.yml", "cost_model: {catalog: libra_ispass24}")
    (tmp_path / "network.yml").write_text(NETWORK)
    (tmp_path / "comm.yml").write_text(COMM)
    (tmp_path / "workload.txt").write_text(WORKLOAD)
    (tmp_path / "cost.yml").write_text(COST)
    a = load_scenario(write_scenario(tmp_path, body))
    b = load_scenario(write_scenario(tmp_path, BASE))
    assert_allclose(a.coefficients.usd_per_gbps, b.coefficients.usd_per_gbps)


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("hb_domain: 8,", "hb_domain: 8, spine: 3,", "unknown key(s) spine"),
        ("{catalog: current_2025}", "{catalog: current_2025, extra: 1}", "unknown key(s) extra"),
        ("steps: 1000}", "}", "run length is missing"),
        ("pue: 1.2,", "pue: 0.9,", "tco.pue"),
        ("    device: h100_sxm\n", "    device: h100_sxm\n    astra_sim: w.txt\n", "takes no astra_sim"),
        ("tp: 8, dp: 8", "tp: 8, dp: 4", "workloads"),
    ],
)
def test_builder_scenario_errors(tmp_path, old, new, fragment):
    assert old in SCEN_BUILDER
    with pytest.raises(InputError) as info:
        load_scenario(write_scenario(tmp_path, SCEN_BUILDER.replace(old, new)))
    msg = info.value.one_line()
    assert fragment in msg and "scenario.yaml" in msg and "\n" not in msg


def test_exponent_numbers_without_decimal_point(tmp_path):
    """YAML 1.1 would read 2e0 or 1e7 as strings; they are numbers everywhere here."""
    (tmp_path / "cost.yml").write_text(COST.replace("{Link: 2.0}", "{Link: 2e0}"))
    assert read_libra_cost_model(tmp_path / "cost.yml")["InterChiplet"]["link"] == 2.0
    (tmp_path / "network.yml").write_text(NETWORK)
    (tmp_path / "comm.yml").write_text(COMM)
    (tmp_path / "workload.txt").write_text(WORKLOAD)
    scen = load_scenario(write_scenario(tmp_path, BASE + "  budget_usd: 1e9\n"))
    assert scen.budget_usd == 1e9


def test_example_names_and_files(tmp_path, monkeypatch):
    """A shipped example loads by name; a file of the same name in the working directory
    wins; an unknown name is reported as a missing file."""
    import shutil

    from libra_opt.io.examples import path

    assert load_scenario("resnet50_4d_budget").name == "resnet50_4d_budget"
    src = path("resnet50_4d_budget")
    for name in ("fabric_4d.yml", "cost_ispass24.yml"):
        shutil.copy(src.parent / name, tmp_path / name)
    shutil.copytree(src.parent / "resnet50", tmp_path / "resnet50")
    (tmp_path / "resnet50_4d_budget").write_text(
        src.read_text().replace("name: resnet50_4d_budget", "name: local_copy"))
    monkeypatch.chdir(tmp_path)
    assert load_scenario("resnet50_4d_budget").name == "local_copy"
    with pytest.raises(InputError, match="no_such_example"):
        load_scenario("no_such_example")


def test_scenario_reference_errors(tmp_path, monkeypatch):
    """A directory named like an example does not hide it; a bare unknown name lists the
    examples; an empty or over-long name is one InputError."""
    (tmp_path / "gpt3_175b_4d").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_scenario("gpt3_175b_4d").name == "gpt3_175b_4d"
    with pytest.raises(InputError, match="shipped example named 'gpt3_175b_4e'.*dlrm_4d"):
        load_scenario("gpt3_175b_4e")
    with pytest.raises(InputError, match="empty path"):
        load_scenario("")
    with pytest.raises(InputError):
        load_scenario("a" * 5000)


def test_a_folder_named_like_a_catalog_preset_does_not_hide_it(tmp_path):
    (tmp_path / "current_2025").mkdir()  # e.g. an output folder beside the scenario
    from libra_opt.io.presets import catalog_document

    doc, path = catalog_document("current_2025", tmp_path)
    assert path is None and doc == catalog_document("current_2025")[0]
