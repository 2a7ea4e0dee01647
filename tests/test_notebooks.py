"""The notebooks in notebooks/ run top to bottom (nbclient), on this interpreter's kernel.

The kernel is started from a kernel spec written to a temporary directory whose command is
``sys.executable -m ipykernel_launcher``, so the test needs no kernel installed anywhere
(a fresh virtual environment with the ``dev`` extra is enough) and never picks up another
Python's kernel.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NAMES = ["01_first_design.ipynb", "02_budget_sweep_and_pareto.ipynb",
         "03_communication_options.ipynb"]
BUDGET_S = 60.0   # all notebooks together


def run_notebook(path: Path, kernel_dir: Path, timeout_s: float = 120.0, *,
                 check_figures: bool = False):
    """Execute the notebook at ``path`` in memory; returns it with its fresh outputs.

    With ``check_figures``, a last cell prints ``FIGURE-PROBLEMS {figure number: problems}``
    (:func:`tests.figure_check.figure_problems` of every figure drawn)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    spec = kernel_dir / "libra-opt-test"
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "libra_opt test", "language": "python"}))
    km = KernelManager(kernel_name="libra-opt-test",
                       kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)]))
    nb = nbformat.read(path, as_version=4)
    if check_figures:
        # keep every figure open, then list what figure_problems finds in each
        nb.cells.insert(0, nbformat.v4.new_code_cell(
            "%config InlineBackend.close_figures = False"))
        nb.cells.append(nbformat.v4.new_code_cell(
            f"import sys; sys.path.insert(0, {str(NOTEBOOKS.parent)!r})\n"
            "import matplotlib.pyplot as _plt\n"
            "from tests.figure_check import figure_problems as _fp\n"
            "print('FIGURE-PROBLEMS', repr({n: _fp(_plt.figure(n)) for n in _plt.get_fignums()}))"))
    client = nbclient.NotebookClient(nb, km=km, timeout=timeout_s, allow_errors=False,
                                     resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    kdir = tmp_path_factory.mktemp("kernels")
    out, times = {}, {}
    for name in NAMES:
        t0 = time.perf_counter()
        out[name] = run_notebook(NOTEBOOKS / name, kdir, check_figures=True)
        times[name] = time.perf_counter() - t0
    return out, times


def test_notebooks_run_top_to_bottom_within_a_minute(executed):
    nbs, times = executed
    for name, nb in nbs.items():
        codes = [c for c in nb.cells if c.cell_type == "code"]
        assert codes and all(c.execution_count for c in codes), name
        errors = [o for c in codes for o in c.outputs if o.output_type == "error"]
        assert not errors, name
    assert sum(times.values()) < BUDGET_S, times


def test_every_notebook_figure_passes_the_figure_check(executed):
    """Axis labels with units, legends, bars from zero, nothing cut off (figure_check)."""
    import ast

    for name, nb in executed[0].items():
        text = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
        assert text.startswith("FIGURE-PROBLEMS "), name
        found = ast.literal_eval(text.removeprefix("FIGURE-PROBLEMS ").strip())
        assert found and not any(found.values()), (name, found)


@pytest.mark.parametrize("name", NAMES)
def test_saved_with_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    codes = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in codes)
    images = [o for c in codes for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 2


def test_first_notebook_shows_the_solution_numbers(executed):
    """The printed optimum is the one a fresh solve gives (not stale saved output)."""
    import libra_opt as lo

    nb = executed[0]["01_first_design.ipynb"]
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    sol = lo.solve(lo.examples.load("gpt3_175b_4d"))
    assert f"{sol.bw_gbps[0]:.1f}" in text


def test_communication_notebook_shows_the_in_network_choice(executed):
    """The printed best and runner-up are those of a fresh enumeration."""
    import libra_opt as lo
    from libra_opt.explore.in_network import choose_in_network

    nb = executed[0]["03_communication_options.ipynb"]
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs)
    r = choose_in_network(lo.examples.load("gpt3_175b_a100_cluster"))
    assert f"step time {r.best.step_time_s:.4f} s" in text
    assert r.runner_up is not None and f"step time {r.runner_up.step_time_s:.4f} s" in text
