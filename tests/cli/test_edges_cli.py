"""The command line at its edges: ``python -m libra_opt``, a reader that goes away, and an
ASTRA-sim export the format cannot hold (refused before anything is printed or created)."""

import importlib
import subprocess
import sys

import pytest

from libra_opt.cli.main import main
from libra_opt.io import examples
from libra_opt.io.scenario_file import load_scenario_with_models


def test_python_dash_m_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "libra_opt", "solve", "--help"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "usage: libra-opt solve" in out.stdout


def test_a_closed_pipe_ends_quietly_like_a_unix_tool():
    """The reader closes its end before anything is written (``| head -1`` after its
    line): no message, the status of a process ended by SIGPIPE (128 + 13)."""
    proc = subprocess.Popen([sys.executable, "-m", "libra_opt", "solve", "gpt3_175b_4d"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert err == ""


MODEL_BASED = [n for n in examples.names() if load_scenario_with_models(n)[1]]


def test_model_based_examples_exist():
    assert set(MODEL_BASED) >= {"gpt3_175b_a100_cluster", "deepseek_v3_rail_only",
                                "llama3_405b_h100_tco"}


@pytest.mark.parametrize("name", MODEL_BASED)
def test_unexportable_workload_is_refused_before_any_output(name, tmp_path, capsys):
    target = tmp_path / "astra"
    assert main(["workload", name, "--export", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "ASTRA-sim 1.0" in err
    # the format's limit, blamed on the flag: the scenario's parallelism is valid
    assert "--export: workload " in err and ".parallelism" not in err
    assert not target.exists()


def test_a_dead_worker_is_one_line_and_exit_1(monkeypatch, capsys):
    """A worker process killed under a run (the pool is broken): no traceback."""
    from concurrent.futures.process import BrokenProcessPool

    cli_main = importlib.import_module("libra_opt.cli.main")  # the module, not its main

    def dead(args):
        raise BrokenProcessPool("A process in the process pool was terminated abruptly")

    monkeypatch.setattr(cli_main, "_cmd_solve", dead)
    assert cli_main.main(["solve", "gpt3_175b_4d"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "a worker process died" in err and "Traceback" not in err
