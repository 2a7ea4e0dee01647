"""``libra-opt solve EXAMPLE --json`` for every shipped example, against recorded output.

The files in ``golden/`` were written by ``libra-opt solve <scenario> --json`` before the
package was reorganized into one package per stage of the data path; the reorganization
changed no behaviour, so every field must come out the same. Solver timings and the
solver's internal relative gap are run-to-run noise and are left out; numbers are compared
to 1e-9 relative (the same machine gives identical output; another CPU's BLAS may differ in
the last bits).
"""

import json
import math
from pathlib import Path

import pytest

from libra_opt.cli import main
from libra_opt.io.examples import names

GOLDEN = Path(__file__).with_name("golden")
NOISE = {"compile_s", "solve_s", "objective_rel_gap"}


def _diff(a, b, path="$"):
    """First difference between two JSON values (None when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - NOISE
        for k in sorted(keys):
            if k not in a or k not in b:
                return f"{path}.{k}: present in only one"
            d = _diff(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            d = _diff(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
            return None if a == b else f"{path}: {a!r} vs {b!r}"
        ok = math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
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
    assert _diff(want, {"a": [1.0, {"b": 2.0 * (1 + 1e-6)}], "solver": {}}) == "$.a[1].b: 2.0 vs 2.000002"
