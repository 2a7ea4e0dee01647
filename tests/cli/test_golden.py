"""``libra-opt solve EXAMPLE --json`` for every shipped example, against recorded output.

The files in ``golden/`` were written by ``libra-opt solve <scenario> --json``. A change of
solver backend or of scaling moves an interior-point answer within the solver's accuracy,
not more, so numbers are compared at that accuracy: objective values to 1e-7 relative (both backends reach the optimum to about 1e-9), every other number to 1e-4
relative (a bandwidth at a flat optimum of ``perf_per_cost`` is fixed only to about the
square root of the objective's tolerance). Solver timings and the solver's internal gap are
run-to-run noise; slacks and violations of binding rows are round-off around zero (their
rows' values are compared), so they are left out too.
"""

import json
import math
from pathlib import Path

import pytest

from libra_opt.cli import main
from libra_opt.io.examples import names

GOLDEN = Path(__file__).with_name("golden")
NOISE = {"compile_s", "solve_s", "objective_rel_gap", "slack", "constraint_violation"}
TIGHT = {"objective_value"}
ABS = {"value": 1e-6}  # a row's left side, near zero for orderings: GB/s, $ or W
TIGHT_REL, LOOSE_REL = 1e-7, 1e-4


def _diff(a, b, path="$", rel=LOOSE_REL, abs_tol=1e-12):
    """First difference between two JSON values (None when equal to ``rel``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - NOISE
        for k in sorted(keys):
            if k not in a or k not in b:
                return f"{path}.{k}: present in only one"
            d = _diff(a[k], b[k], f"{path}.{k}", TIGHT_REL if k in TIGHT else rel, ABS.get(k, 1e-12))
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _diff(x, y, f"{path}[{i}]", rel)
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
            return None if a == b else f"{path}: {a!r} vs {b!r}"
        ok = math.isclose(float(a), float(b), rel_tol=rel, abs_tol=abs_tol)
        return None if ok else f"{path}: {a!r} vs {b!r}"
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def test_every_example_has_a_golden_file():
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(names())


@pytest.mark.parametrize("name", names())
def test_solve_json_matches_golden(name, capsys):
    assert main(["solve", name, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    want = json.loads((GOLDEN / f"{name}.json").read_text())
    assert _diff(want, got) is None, _diff(want, got)


def test_diff_detects_a_changed_number():
    want = {"a": [1.0, {"b": 2.0}], "solver": {"solve_s": 1.0}}
    assert _diff(want, {"a": [1.0, {"b": 2.0}], "solver": {"solve_s": 9.0}}) is None
    assert _diff(want, {"a": [1.0, {"b": 2.0 * (1 + 1e-5)}], "solver": {}}) is None
    assert _diff(want, {"a": [1.0, {"b": 2.0 * (1 + 1e-3)}], "solver": {}}) == "$.a[1].b: 2.0 vs 2.002"
    tight = {"objective_value": 1.0}
    assert _diff(tight, {"objective_value": 1.0 + 1e-8}) is None
    assert _diff(tight, {"objective_value": 1.0 + 1e-6}) == "$.objective_value: 1.0 vs 1.000001"
