"""No module compares a timing option's or an objective's name outside the modules that
resolve them: the option vocabularies (``options.py``), the :class:`TimingModel`
(``traffic/timing.py``), the objective types (``scenario/objective.py``), the scenario file's
schema (``io/_scenario_schema.py``), and the two functions that define what a name means at
the bottom of the step-time model — ``collective_time_s`` (``traffic/collectives.py``: max
or sum over the dimensions) and ``collective_traffic`` (``traffic/routing.py``: which bytes
cross which dimension), to which a ``TimingModel`` hands its names.

Everything else asks ``scenario.timing`` (``is_pipelined``, ``uses_topology_aware``,
``overlapped``, ``native_traffic``, ...) or ``scenario.objective_model``.
"""

from __future__ import annotations

import re
from pathlib import Path

from libra_opt.options import COLLECTIVE_MODELS, OBJECTIVES, TRAFFIC_MODELS, TRAINING_LOOPS

ROOT = Path(__file__).resolve().parents[1] / "libra_opt"

RESOLVERS = {
    "options.py",
    "traffic/timing.py",
    "scenario/objective.py",
    "io/_scenario_schema.py",
    "traffic/collectives.py",
    "traffic/routing.py",
}

NAMES = sorted(set(COLLECTIVE_MODELS) | set(TRAINING_LOOPS) | set(TRAFFIC_MODELS)
               | set(OBJECTIVES))
_LIT = r"""["'](?:{})["']""".format("|".join(map(re.escape, NAMES)))
COMPARISON = re.compile(
    rf"(?:==|!=)\s*{_LIT}"                       # x == "pipelined"
    rf"|{_LIT}\s*(?:==|!=)"                      # "pipelined" == x
    rf"|\bin\s*[(\[{{][^)\]}}]*{_LIT}"           # x in ("overlap", ...), x not in {...}
    rf"|\bcase\s+{_LIT}"                         # match x: case "tco":
)


def comparisons(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every comparison with an option's name, doctests and
    comments aside."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.strip()
        if code.startswith(("#", ">>>", "...")):
            continue
        if COMPARISON.search(code.split("  #")[0]):
            out.append((i, code))
    return out


def test_the_pattern_finds_comparisons_and_nothing_else():
    found = comparisons(
        'if mode == "pipelined":\n'
        "    pass\n"
        "if 'overlap' != loop:\n"
        'if scen.objective in ("perf_per_cost", "tco"):\n'
        "if traffic_model not in {'native'}:\n"
        '    case "sequential":\n'
        'loop = "overlap" if fast else "no_overlap"\n'   # an assignment: not a comparison
        '# if mode == "pipelined"\n'                     # a comment
        '>>> t == "native"\n'                            # a doctest
        'if dim.topology == "ring":\n'                   # not a timing option
    )
    assert [n for n, _ in found] == [1, 3, 4, 5, 6]


def test_no_option_name_is_compared_outside_its_resolvers():
    hits = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in RESOLVERS:
            continue
        hits += [f"{rel}:{n}: {code}" for n, code in comparisons(path.read_text("utf-8"))]
    assert hits == [], "\n".join(hits)


def test_the_resolvers_exist():
    assert all((ROOT / rel).is_file() for rel in RESOLVERS)
