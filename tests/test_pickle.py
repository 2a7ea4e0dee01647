"""Scenarios and solutions pickle by value in a fresh interpreter, with nothing registered
process-wide (processes and Dask workers receive them this way)."""

import subprocess
import sys

SCRIPT = r"""
import pickle, sys
import numpy as np
import libra_opt as lo
from libra_opt.io import examples
from libra_opt.optimize.problem import solve

for name in examples.names():
    s = examples.load(name)
    s2 = pickle.loads(pickle.dumps(s))
    bw = np.full(s.fabric.n_dims, 100.0)
    a, b = lo.evaluate(s, bw), lo.evaluate(s2, bw)
    assert a.objective_value == b.objective_value, name
    assert dict(a.residuals) == dict(b.residuals), name
    assert dict(s2.workloads[0].groups) == dict(s.workloads[0].groups), name
sol = solve(examples.load("gpt3_175b_4d"))
sol2 = pickle.loads(pickle.dumps(sol))
assert sol2.bw_gbps.tolist() == sol.bw_gbps.tolist()
assert sol2.evaluation.objective_value == sol.evaluation.objective_value
assert dict(sol2.evaluation.workloads[0].comm_by_group_s) == dict(
    sol.evaluation.workloads[0].comm_by_group_s)
assert "libra_opt.explore.grid" not in sys.modules
assert not any(m.startswith("libra_opt.explore") for m in sys.modules)
print("ok")
"""


def test_examples_and_solution_pickle_without_explore():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"
