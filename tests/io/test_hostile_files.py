"""Hostile inputs: every bad file fails fast in one clear line naming the file and the field.

Regression guards for alias bombs, deep nesting, devices, FIFOs, huge files, empty paths,
overlong values and communicator groups that do not fit the fabric. Time bounds are
generous (they guard against hangs and blow-ups, not speed).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from libra_opt.cli import main
from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io._yaml import read_yaml
from libra_opt.io.astra_sim import read_astra_sim
from libra_opt.io.files import MAX_INPUT_BYTES, read_text
from libra_opt.io.scenario_file import load_scenario
from libra_opt.scenario.constraints import parse_constraint

EXAMPLES = Path(__file__).resolve().parents[2] / "libra_opt" / "data" / "examples"
FAST = 1.0  # seconds: a bomb must be refused long before this


@pytest.fixture
def scen_dir(tmp_path: Path) -> Path:
    """A copy of the gpt3_175b_4d example (scenario, cost model, workload, communicator)."""
    shutil.copy(EXAMPLES / "gpt3_175b_4d.yaml", tmp_path / "s.yaml")
    shutil.copy(EXAMPLES / "cost_ispass24.yml", tmp_path / "cost_ispass24.yml")
    shutil.copytree(EXAMPLES / "gpt3_175b", tmp_path / "gpt3_175b")
    return tmp_path


def _fails(fn, *args, **kwargs) -> tuple[InputError, float]:
    t0 = time.perf_counter()
    with pytest.raises(InputError) as info:
        fn(*args, **kwargs)
    elapsed = time.perf_counter() - t0
    line = info.value.one_line()
    assert "\n" not in line and len(line) < 500, line
    assert str(info.value) == line
    return info.value, elapsed


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _indent(text: str, n: int) -> str:
    return "".join(" " * n + ln + "\n" for ln in text.splitlines())


# --- YAML bombs and deep nesting -------------------------------------------------------------


def test_billion_laughs_file(tmp_path):
    p = tmp_path / "bomb.yaml"
    p.write_text(_bomb())
    err, dt = _fails(read_yaml, p)
    assert err.source == str(p)
    assert "1000000 nodes" in err.message and "aliases" in err.message
    assert err.field and err.field.startswith("line ")
    assert dt < FAST


@pytest.mark.parametrize("where", ["cost_model", "tco", "parallelism"])
def test_billion_laughs_anywhere_in_a_scenario(scen_dir, where):
    """The bomb is refused while composing, whatever key it sits under."""
    text = (scen_dir / "s.yaml").read_text()
    bomb = "bomb:\n" + _indent(_bomb(), 2)
    if where == "cost_model":
        text = text.replace("cost_model: cost_ispass24.yml", "cost_model:\n  InterPod:\n"
                            + _indent(bomb.replace("bomb:", "Link:"), 4))
    elif where == "tco":
        text += "tco:\n" + _indent(bomb, 2)
    else:
        text = text.replace("communicator: gpt3_175b/communicator.yml",
                            "communicator: gpt3_175b/communicator.yml\n    parallelism:\n"
                            + _indent(bomb, 6))
    p = scen_dir / "s.yaml"
    p.write_text(text)
    err, dt = _fails(load_scenario, p)
    assert err.source == str(p)
    assert "nodes" in err.message
    assert dt < FAST


def test_small_aliases_still_work(tmp_path):
    p = tmp_path / "ok.yaml"
    p.write_text("a: &x {Link: 1.0}\nb: *x\nc: 1e7\n")
    assert read_yaml(p) == {"a": {"Link": 1.0}, "b": {"Link": 1.0}, "c": 1e7}


def test_recursive_alias(tmp_path):
    p = tmp_path / "rec.yaml"
    p.write_text("a: &x [1, *x]\n")
    err, _ = _fails(read_yaml, p)
    assert err.source == str(p) and "*x" in err.message


@pytest.mark.parametrize(
    "body",
    [
        "x: " + "[" * 5000 + "]" * 5000 + "\n",
        "x: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n",
        "".join(" " * (2 * i) + f"k{i}:\n" for i in range(1500)) + " " * 3000 + "v: 1\n",
        "".join(" " * i + "-\n" for i in range(1500)),
        # deeper than libyaml's recursive (C) composer could take: measured, never composed
        "x: " + "[" * 1_000_000 + "]" * 1_000_000 + "\n",
        "- " * 200_000 + "x\n",
    ],
    ids=["flow_lists", "flow_mappings", "block_mappings", "block_lists", "flow_1e6",
         "compact_block_lists_2e5"],
)
def test_deep_nesting(tmp_path, body):
    p = tmp_path / "deep.yaml"
    p.write_text(body)
    err, dt = _fails(read_yaml, p)
    assert err.source == str(p) and "levels deep" in err.message
    assert dt < FAST


def test_too_many_nodes(tmp_path):
    p = tmp_path / "wide.yaml"
    p.write_text("x: [" + ", ".join(["1"] * 1000) + "]\n")
    assert len(read_yaml(p)["x"]) == 1000
    err, _ = _fails(read_yaml, p, max_nodes=500)
    assert err.source == str(p) and "500 nodes" in err.message


def test_yaml_corner_cases(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("x: " + "9" * 5000 + "\n")  # beyond Python's int-from-text limit
    err, _ = _fails(read_yaml, p)
    assert "digits" in err.message and err.source == str(p)
    p.write_text("{[1]: 2}\n")
    err, _ = _fails(read_yaml, p)
    assert "mapping key" in err.message
    p.write_text("a: 1\na: 2\n")
    err, _ = _fails(read_yaml, p)
    assert "duplicate key 'a'" in err.message
    p.write_text("a: !!python/object:os.system x\n")
    err, _ = _fails(read_yaml, p)
    assert err.source == str(p)
    p.write_bytes(b"a: 1\nb: \xff\n")
    err, _ = _fails(read_yaml, p)
    assert "UTF-8" in err.message and err.field == "line 2"


# --- what a path may name ---------------------------------------------------------------------


def test_symlink_to_dev_zero(tmp_path):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    p = tmp_path / "zero.yaml"
    p.symlink_to("/dev/zero")
    err, dt = _fails(read_yaml, p)
    assert err.source == str(p) and "character device" in err.message
    assert dt < FAST


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_fifo(tmp_path):
    p = tmp_path / "pipe.txt"
    os.mkfifo(p)
    err, dt = _fails(read_text, p)  # would block forever if opened for reading
    assert err.source == str(p) and "FIFO" in err.message
    assert dt < FAST


def test_directory_and_missing(tmp_path):
    err, _ = _fails(read_yaml, tmp_path)
    assert err.source == str(tmp_path) and "directory" in err.message
    err, _ = _fails(read_yaml, tmp_path / "nope.yaml")
    assert "not found" in err.message


def test_huge_sparse_file(tmp_path):
    p = tmp_path / "huge.yaml"
    with open(p, "wb") as f:
        f.truncate(70 * 2**20)
    err, dt = _fails(read_text, p)
    assert err.source == str(p) and "70.0 MiB" in err.message and "64.0 MiB" in err.message
    assert dt < FAST
    assert MAX_INPUT_BYTES == 64 * 2**20
    err, dt = _fails(read_yaml, p)   # YAML has a tighter bound (pure-Python parser)
    assert err.source == str(p) and "70.0 MiB" in err.message and "4.0 MiB" in err.message
    assert dt < FAST
    small = tmp_path / "small.yaml"
    small.write_text("a: 1\n" * 100)
    err, _ = _fails(read_yaml, small, max_bytes=100)
    assert "limit" in err.message


def test_empty_path():
    err, _ = _fails(read_yaml, "")
    assert "empty path" in err.message


def test_empty_astra_sim_path(scen_dir):
    p = scen_dir / "s.yaml"
    p.write_text(p.read_text().replace("astra_sim: gpt3_175b/workload.txt", "astra_sim: ''"))
    err, _ = _fails(load_scenario, p)
    assert err.source == str(p)
    assert err.field == "workloads[0].astra_sim" and "empty path" in err.message


def test_empty_cost_model_path(scen_dir):
    p = scen_dir / "s.yaml"
    p.write_text(p.read_text().replace("cost_model: cost_ispass24.yml", "cost_model: ''"))
    err, _ = _fails(load_scenario, p)
    assert err.source == str(p) and err.field == "cost_model" and "empty path" in err.message


# --- overlong values are quoted, cut ----------------------------------------------------------


def test_huge_value_is_quoted_short(scen_dir):
    p = scen_dir / "s.yaml"
    blob = "x" * 2_000_000
    p.write_text(p.read_text().replace("objective: perf", f"objective: {blob}"))
    err, dt = _fails(load_scenario, p)
    assert err.source == str(p) and err.field == "objective"
    assert len(err.message) <= 400
    assert dt < 5 * FAST


def test_huge_key_is_quoted_short(scen_dir):
    p = scen_dir / "s.yaml"
    p.write_text(p.read_text() + "? " + "y" * 100_000 + "\n: 1\n")  # explicit (long) key
    err, _ = _fails(load_scenario, p)
    assert err.source == str(p) and "unknown key" in err.message


def test_huge_price_in_cost_model(scen_dir):
    cost = scen_dir / "cost_ispass24.yml"
    cost.write_text("InterPod:\n  Link: '" + "7" * 100_000 + "'\n")
    err, _ = _fails(load_scenario, scen_dir / "s.yaml")
    assert err.source == str(cost) and err.field == "cost_model.InterPod.Link"


def test_huge_tco_value(scen_dir):
    p = scen_dir / "s.yaml"
    p.write_text(p.read_text() + "tco: {accelerator_usd: [" + ", ".join(["1"] * 5000)
                 + "], host_usd_per_npu: 0, npu_power_w: 1, host_power_w_per_npu: 0, pue: 1,"
                 " electricity_usd_per_kwh: 0.1, lifetime_years: 1, steps: 10}\n")
    err, _ = _fails(load_scenario, p)
    assert err.source == str(p) and err.field == "tco.accelerator_usd"
    assert "not a number" in err.message


def test_one_line_is_bounded():
    err = InputError("bad " + "v" * 10**6 + "\n" * 5, source="/x/" * 500 + "f.yaml",
                     field="a." * 5000 + "z")
    line = err.one_line()
    assert len(line) <= 500 and "\n" not in line
    assert line.startswith("...") and "f.yaml" in line  # the file name's tail is kept
    assert len(err.message) <= 400


# --- constraints ------------------------------------------------------------------------------

FABRIC = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B")))


@pytest.mark.parametrize(
    "text, what",
    [
        ("(" * 20_000 + "bw[0]" + ")" * 20_000 + " <= 1", "limit is 10000"),
        ("-" * 20_000 + "bw[0] <= 1", "limit is 10000"),
        ("(" * 2000 + "bw[0]" + ")" * 2000 + " <= 1", "levels deep"),
        ("-" * 5000 + "bw[0] <= 1", "levels deep"),
        ("bw[" + "9" * 5000 + "] <= 1", "dimension index"),
    ],
    ids=["parens_20k", "minus_20k", "parens_2k", "minus_5k", "huge_index"],
)
def test_hostile_constraints(text, what):
    def parse_in_file() -> object:
        with input_context("s.yaml"):
            return parse_constraint(text, FABRIC, field="constraints.linear[0]")

    err, dt = _fails(parse_in_file)
    assert err.source == "s.yaml" and err.field == "constraints.linear[0]"
    assert what in err.message
    assert dt < FAST


def test_moderate_nesting_still_parses():
    c = parse_constraint("(" * 50 + "bw[0]" + ")" * 50 + " + --bw.pod <= 10", FABRIC)
    assert c.bw_coef == (1.0, 1.0)


# --- the culprit is the communicator / workload file ------------------------------------------


def test_non_dividing_communicator_blames_the_file(scen_dir):
    comm = scen_dir / "gpt3_175b" / "communicator.yml"
    comm.write_text(comm.read_text().replace("WeightGrad: [ -1, 2, 4, 32 ]",
                                             "WeightGrad: [ -1, 3, 4, 32 ]"))
    err, _ = _fails(load_scenario, scen_dir / "s.yaml")
    assert err.source == str(comm)
    assert err.field == "WeightGrad[1]" and "divisor of 8" in err.message


def test_oversized_communicator_blames_the_file(scen_dir):
    comm = scen_dir / "gpt3_175b" / "communicator.yml"
    comm.write_text(comm.read_text().replace("Forward: [ 4, 4, -1, -1 ]",
                                             "Forward: [ 4, 16, -1, -1 ]"))
    err, _ = _fails(load_scenario, scen_dir / "s.yaml")
    assert err.source == str(comm) and err.field == "Forward[1]"


def test_communicator_dimension_count_blames_the_file(scen_dir):
    comm = scen_dir / "gpt3_175b" / "communicator.yml"
    comm.write_text("Forward: [4, 4]\nInputGrad: [4, 4]\nWeightGrad: [1, 2]\n")
    err, _ = _fails(load_scenario, scen_dir / "s.yaml")
    assert err.source == str(comm) and err.field == "Forward"
    assert "the fabric has 4" in err.message


def test_astra_sim_errors_name_file_and_line(tmp_path):
    p = tmp_path / "w.txt"
    groups = {"forward": (1,), "input_grad": (1,), "weight_grad": (1,)}
    p.write_text("DATA\n1\nl0 -1 5 NONE 0 5 NONE 0 5 ALLREDUCE " + "1" * 1000 + "x 0\n")
    err, _ = _fails(read_astra_sim, p, groups)
    assert err.source == str(p) and err.field == "line 3" and "weight_grad size" in err.message
    p.write_text("DATA\n" + "9" * 5000 + "\nl0 -1 5 NONE 0 5 NONE 0 5 NONE 0 0\n")
    err, _ = _fails(read_astra_sim, p, groups)
    assert err.source == str(p) and err.field == "line 1"
    p.write_text("l0 -1 5 NONE 0 5 NONE 0 5 BROADCAST 1 0\n")
    err, _ = _fails(read_astra_sim, p, groups)
    assert err.field == "line 1" and "BROADCAST" in err.message


# --- the command line: exit code 2 and one line -----------------------------------------------


def _cli(capsys, path: Path) -> str:
    t0 = time.perf_counter()
    code = main(["solve", str(path)])
    assert time.perf_counter() - t0 < 5 * FAST
    err = capsys.readouterr().err
    assert code == 2
    lines = err.strip("\n").splitlines()
    assert len(lines) == 1 and len(lines[0]) < 500, err
    return lines[0]


def test_cli_billion_laughs(scen_dir, capsys):
    p = scen_dir / "s.yaml"
    p.write_text(p.read_text() + "tco:\n" + _indent("bomb:\n" + _indent(_bomb(), 2), 2))
    assert str(p) in _cli(capsys, p)


def test_cli_symlink_to_dev_zero(tmp_path, capsys):
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    p = tmp_path / "zero.yaml"
    p.symlink_to("/dev/zero")
    assert "character device" in _cli(capsys, p)


def test_cli_non_dividing_communicator(scen_dir, capsys):
    comm = scen_dir / "gpt3_175b" / "communicator.yml"
    comm.write_text(comm.read_text().replace("[ -1, 2, 4, 32 ]", "[ -1, 2, 4, 5 ]"))
    line = _cli(capsys, scen_dir / "s.yaml")
    assert str(comm) in line and "WeightGrad[3]" in line


def test_nul_byte_in_a_path_field(tmp_path, capsys):
    """Regression: a NUL byte in a file reference escaped as ValueError with a traceback."""
    from libra_opt.cli import main

    p = tmp_path / "s.yaml"
    p.write_text('name: s\nfabric: {libra_network: "net\\0.yml"}\ncost_model: c.yml\n'
                 "workloads: [{name: w, astra_sim: w.txt, communicator: c.yml}]\n")
    with pytest.raises(InputError, match="NUL byte"):
        read_yaml(str(tmp_path / "net\0.yml"))
    assert main(["solve", str(p)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "NUL byte" in err[0]


def test_alias_bomb_still_rejected_with_the_larger_node_limit(tmp_path):
    from libra_opt.io._yaml import MAX_YAML_NODES

    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    p = tmp_path / "bomb.yaml"
    p.write_text("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=f"more than {MAX_YAML_NODES} nodes"):
        read_yaml(p)
    assert time.perf_counter() - t0 < 1.0
