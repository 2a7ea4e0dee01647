"""No module compares a timing option's or an objective's name outside the modules that
resolve them: the option vocabularies (``options.py``), the :class:`TimingModel`
(``traffic/timing.py``), the objective types (``scenario/objective.py``), and the two functions that define what a name means at
the bottom of the step-time model — ``collective_time_s`` (``traffic/collectives.py``: max
or sum over the dimensions) and ``collective_traffic`` (``traffic/routing.py``: which bytes
cross which dimension), to which a ``TimingModel`` hands its names.

Everything else asks ``scenario.timing`` (``is_pipelined``, ``uses_topology_aware``,
``overlapped``, ``native_traffic``, ...) or ``scenario.objective_model``.

Nor is a topology's name (or alias, ``torus``) compared anywhere but in the topology classes
(``fabric/topology.py``): everything else asks a dimension's
:class:`~libra_opt.fabric.topology.Topology` (``switched``, ``forwards``, ``hops``,
``links_per_npu``, ...), so a new topology is one new class. ``ring`` is also a collective
algorithm and ``switch`` a component (a graph node's, a part's or a failure's ``kind``):
a comparison on a line that speaks of an ``algorithm`` or a ``kind`` is that.
"""

from __future__ import annotations

import re
from pathlib import Path

from libra_opt.fabric.topology import topology_names
from libra_opt.options import COLLECTIVE_MODELS, OBJECTIVES, TRAFFIC_MODELS, TRAINING_LOOPS

ROOT = Path(__file__).resolve().parents[1] / "libra_opt"

RESOLVERS = {
    "options.py",
    "traffic/timing.py",
    "scenario/objective.py",
    "traffic/collectives.py",
    "traffic/routing.py",
}

NAMES = sorted(set(COLLECTIVE_MODELS) | set(TRAINING_LOOPS) | set(TRAFFIC_MODELS)
               | set(OBJECTIVES))
TOPOLOGY_RESOLVERS = {"fabric/topology.py"}
TOPOLOGY_NAMES = sorted(topology_names(aliases=True))
# names another vocabulary shares, and the word a line comparing that vocabulary names
SHARED = {"ring": ("algorithm",), "switch": ("kind",)}


def _pattern(names: list[str]) -> re.Pattern[str]:
    lit = r"""["'](?:{})["']""".format("|".join(map(re.escape, names)))
    return re.compile(
        rf"(?:==|!=)\s*{lit}"                    # x == "pipelined"
        rf"|{lit}\s*(?:==|!=)"                   # "pipelined" == x
        rf"|\bin\s*[(\[{{][^)\]}}]*{lit}"        # x in ("overlap", ...), x not in {...}
        rf"|\bcase\s+{lit}"                      # match x: case "tco":
    )


COMPARISON = _pattern(NAMES)
TOPOLOGY = {name: _pattern([name]) for name in TOPOLOGY_NAMES}


def comparisons(text: str, pattern: re.Pattern[str] = COMPARISON) -> list[tuple[int, str]]:
    """``(line number, line)`` of every comparison with an option's name, doctests and
    comments aside."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        code = line.strip()
        if code.startswith(("#", ">>>", "...")):
            continue
        if pattern.search(code.split("  #")[0]):
            out.append((i, code))
    return out


def topology_comparisons(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every comparison with a topology's name (a shared name
    on a line that names its other vocabulary aside)."""
    out = set()
    for name, pattern in TOPOLOGY.items():
        out |= {(i, code) for i, code in comparisons(text, pattern)
                if not any(w in code for w in SHARED.get(name, ()))}
    return sorted(out)


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


def test_the_topology_pattern_finds_comparisons_and_nothing_else():
    found = topology_comparisons(
        'if dim.topology == "ring":\n'
        "if t != 'switch' and d.switch_radix:\n"
        'if topo in ("ring", "fully_connected"):\n'
        'topos = tuple("ring" if t == "torus" else t for t in topologies)\n'
        '    case "mesh":\n'
        'if algorithm == "ring":\n'                      # a collective algorithm
        'if a["kind"] == "switch":\n'                    # a graph node's kind
        'kinds = {"ring": 1, "switch": 2}\n'             # not a comparison
        '>>> d.topology == "switch"\n'                   # a doctest
    )
    assert [n for n, _ in found] == [1, 2, 3, 4, 5]


def test_no_topology_name_is_compared_outside_the_topology_classes():
    hits = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel in TOPOLOGY_RESOLVERS:
            continue
        hits += [f"{rel}:{n}: {code}" for n, code in topology_comparisons(path.read_text("utf-8"))]
    assert hits == [], "\n".join(hits)


def test_the_topology_resolvers_exist():
    assert all((ROOT / rel).is_file() for rel in TOPOLOGY_RESOLVERS)
    assert {"ring", "fully_connected", "switch", "mesh", "torus"} <= set(TOPOLOGY_NAMES)
