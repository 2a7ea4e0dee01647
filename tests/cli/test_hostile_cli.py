"""Hostile command lines: nothing is written outside the place asked for, outputs are checked
before any work, and every bad flag is named in one ``libra-opt: error:`` line with exit 2."""

import importlib
import os
import shutil
from pathlib import Path

import pytest

from libra_opt.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "libra_opt" / "data" / "examples"
DEEPSEEK = str(EXAMPLES / "deepseek_v3_rail_only.yaml")


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working directory three levels below ``tmp_path``, so ``../../x`` stays in tmp_path."""
    wd = tmp_path / "a" / "b" / "work"
    wd.mkdir(parents=True)
    monkeypatch.chdir(wd)
    return wd


def files_under(root: Path) -> set[Path]:
    return {Path(d) / f for d, _, fs in os.walk(root) for f in fs}


def gpt3_named(wd: Path, name: str) -> Path:
    """A copy of the GPT-3 example (with its inputs) whose scenario is called ``name``."""
    for f in ("gpt3_175b_4d.yaml", "cost_ispass24.yml"):
        shutil.copy(EXAMPLES / f, wd / f)
    shutil.copytree(EXAMPLES / "gpt3_175b", wd / "gpt3_175b")
    scen = wd / "gpt3_175b_4d.yaml"
    text = scen.read_text()
    assert "\nname: gpt3_175b_4d\n" in text
    scen.write_text(text.replace("\nname: gpt3_175b_4d\n", f"\nname: {name!r}\n"))
    return scen


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("libra-opt: error: "), err
    return lines[0]


def assert_confined(rc, capsys, before, after, inside: Path):
    """Either a clean exit 2 (the name was refused) or every new file lies in ``inside``."""
    new = after - before
    assert all(p.resolve().is_relative_to(inside.resolve()) for p in new), sorted(new)
    if rc == 2:
        one_error_line(capsys)
    else:
        assert rc == 0
        assert new, "nothing written"


@pytest.mark.parametrize("name", ["../../escaped", "../../../escaped", "..", "a/../../b"])
def test_solve_plot_dir_stays_inside(work, tmp_path, capsys, name):
    scen = gpt3_named(work, name)
    before = files_under(tmp_path)
    rc = main(["solve", str(scen), "--plot-dir", "plots"])
    after = files_under(tmp_path)
    assert_confined(rc, capsys, before, after, work / "plots")
    if rc == 0:
        assert {p.parent for p in after - before} == {work / "plots"}
        assert not any(p.name.startswith(".") for p in (work / "plots").iterdir())


def test_solve_absolute_name_stays_inside(work, tmp_path, capsys):
    target = tmp_path / "abs_target" / "owned"
    scen = gpt3_named(work, str(target))
    before = files_under(tmp_path)
    rc = main(["solve", str(scen), "--plot-dir", "plots"])
    after = files_under(tmp_path)
    assert_confined(rc, capsys, before, after, work / "plots")
    assert not (tmp_path / "abs_target").exists()


def exportable_cluster(wd: Path, name: str) -> Path:
    """The model-based A100 cluster example, renamed, as a workload ASTRA-sim 1.0 text can
    hold (no pipeline stages: one collective and one group per phase)."""
    text = (EXAMPLES / "gpt3_175b_a100_cluster.yaml").read_text()
    edits = {
        "  - name: gpt3_175b\n": f"  - name: {name}\n",
        "model: gpt3_175b": "model: llama3_8b",
        "{tp: 8, pp: 16, interleave: 1, dp: 8,": "{tp: 8, pp: 1, dp: 128,",
        "mapping: {tp: [hb], pp: {scaleout: 16}, dp: {scaleout: 8}}":
            "mapping: {tp: [hb], dp: {scaleout: 128}}",
    }
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    scen = wd / "cluster.yaml"
    scen.write_text(text)
    return scen


def test_workload_export_stays_inside(work, tmp_path, capsys):
    scen = exportable_cluster(work, "../../x")
    before = files_under(tmp_path)
    rc = main(["workload", str(scen), "--export", "exp"])
    after = files_under(tmp_path)
    assert rc == 0, capsys.readouterr().err
    assert_confined(rc, capsys, before, after, work / "exp")
    assert sorted(p.name for p in after - before) == ["x.txt", "x_communicator.yml"]
    assert "HYBRID" in (work / "exp" / "x.txt").read_text()


def test_workload_export_into_a_file_fails_before_work(work, capsys, monkeypatch):
    import libra_opt.io.scenario_file as scenario_file

    (work / "exp").write_text("not a directory")
    monkeypatch.setattr(scenario_file, "load_scenario_with_models", _boom)
    monkeypatch.setattr("libra_opt.io.load_scenario", _boom)
    assert main(["workload", "gpt3_175b_a100_cluster", "--export", "exp/sub"]) == 2
    line = one_error_line(capsys)
    assert "--export" in line and "not a directory" in line


def _boom(*args, **kwargs):
    raise AssertionError("work ran before the outputs were checked")


@pytest.fixture
def no_work(monkeypatch):
    """Loading, solving and sweeping all fail the test if reached."""
    import libra_opt.explore.compare as explore_compare
    import libra_opt.io.scenario_file as scenario_file
    import libra_opt.optimize.problem as problem

    # the module, not the package's function of the same name
    monkeypatch.setattr(importlib.import_module("libra_opt.explore.sweep"), "sweep", _boom)
    monkeypatch.setattr(problem, "solve", _boom)
    monkeypatch.setattr(problem, "build_problem", _boom)
    monkeypatch.setattr(explore_compare, "compare_fabrics", _boom)
    monkeypatch.setattr(scenario_file, "load_scenario", _boom)
    monkeypatch.setattr(scenario_file, "load_scenario_with_models", _boom)
    monkeypatch.setattr("libra_opt.io.load_scenario", _boom)


COMPARE = ["compare", DEEPSEEK, "--fabrics", "fat_tree,rail_only"]


@pytest.mark.parametrize("command", [COMPARE], ids=["compare"])
@pytest.mark.parametrize(
    ("args", "flag", "needle"),
    [
        (["--plot", "x.xyz"], "--plot", "unsupported file type '.xyz'"),
        (["--plot", "x"], "--plot", "unsupported file type no file type"),
        (["--csv", "out.txt"], "--csv", "unsupported file type '.txt'"),
        (["--csv", "DIR"], "--csv", "is a directory"),
        (["--csv", "DIR/"], "--csv", "is a directory"),
        (["--plot", "DIR"], "--plot", "is a directory"),
        (["--csv", "FILE/t.csv"], "--csv", "is not a directory"),
        (["--plot", "FILE/deeper/p.png"], "--plot", "is not a directory"),
        (["--csv", ""], "--csv", "empty path"),
    ],
)
def test_bad_output_fails_before_work(work, capsys, no_work, command, args, flag, needle):
    (work / "adir").mkdir()
    (work / "afile").write_text("x")
    args = [a.replace("DIR", "adir").replace("FILE", "afile") for a in args]
    before = files_under(work)
    assert main([*command, *args]) == 2
    line = one_error_line(capsys)
    assert f"<cli>: {flag}: " in line and needle in line, line
    assert files_under(work) == before


def test_plot_dir_that_is_a_file_fails_before_work(work, capsys, no_work):
    (work / "plots").write_text("x")
    assert main(["solve", "gpt3_175b_4d", "--plot-dir", "plots"]) == 2
    line = one_error_line(capsys)
    assert "<cli>: --plot-dir: " in line and "is not a directory" in line


@pytest.mark.parametrize(
    ("args", "flag", "needle"),
    [
        (["--radix", "0"], "--radix", "must be an even integer >= 4"),
        (["--radix=-8"], "--radix", "must be an even integer >= 4"),
        (["--radix", "2"], "--radix", "must be an even integer >= 4"),
        (["--budget-usd=-5e7"], "--budget-usd", "must be a finite number > 0"),
        (["--budget-usd", "nan"], "--budget-usd", "must be a finite number > 0"),
        (["--budget-usd", "inf"], "--budget-usd", "must be a finite number > 0"),
        (["--budget-usd", "0"], "--budget-usd", "must be a finite number > 0"),
        (["--bw", "450,50,3"], "--bw", "expected 2 bandwidths"),
        (["--bw", "450"], "--bw", "expected 2 bandwidths"),
        (["--bw=-450,50"], "--bw", "must be finite and >= 0"),
        (["--bw", "nan,50"], "--bw", "must be finite and >= 0"),
        (["--bw", ","], "--bw", "expected comma-separated numbers"),
    ],
)
def test_compare_names_the_flag(capsys, args, flag, needle):
    assert main([*COMPARE, *args]) == 2
    line = one_error_line(capsys)
    assert f"<cli>: {flag}: " in line and needle in line, line


def test_compare_radix_checked_before_loading(capsys, no_work):
    assert main([*COMPARE, "--radix", "0"]) == 2
    assert "--radix" in one_error_line(capsys)


@pytest.mark.parametrize(
    ("axis", "needle"),
    [
        ("budget_usd=-3e7,-1e7", "budget_usd values must be > 0"),
        ("budget_usd=0:1e7:3", "budget_usd values must be > 0"),
        ("power_w=-1", "power_w values must be > 0"),
        ("budget_usd=500:1000:1000000000000", "at most 100,000 points"),
        ("budget_usd=1e7:2e7:100001", "at most 100,000 points"),
        ("budget_usd=1:2:3:lin", "expected start:stop:count[:log]"),
        ("budget_usd=1:2:1e12", "expected start:stop:count[:log]"),
        ("budget_usd=nan:1e7:3", "must be finite"),
        ("budget_usd=1e7,inf", "expected finite numbers"),
        ("budget_usd=" + "1e7," * 100_000 + "1e7", "at most 100,000 points"),
        ("=1e7", "expected NAME=start:stop:count[:log] or NAME=v1,v2,..."),
    ],
)
def test_sweep_values_checked_before_loading(capsys, no_work, axis, needle):
    assert main(["sweep", "resnet50_4d_budget", f"--axis={axis}"]) == 2
    line = one_error_line(capsys)
    assert "<cli>: --axis: " in line and needle in line, line


def test_sweep_axis_naming_no_field_solves_nothing(capsys, monkeypatch):
    import libra_opt.optimize.problem as problem

    monkeypatch.setattr(problem, "solve", _boom)
    assert main(["sweep", "resnet50_4d_budget", "--axis", "nope=1,2"]) == 2
    line = one_error_line(capsys)
    assert "<cli>: --axis: nope: no field 'nope'" in line, line


def test_argument_errors_are_one_libra_opt_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main([*COMPARE, "--radix", "abc"])
    assert exc.value.code == 2
    line = one_error_line(capsys)
    assert "--radix" in line
