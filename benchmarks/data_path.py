"""The way a sweep's scenario takes through the code: moves between rooms, io entries, climbs.

One structural sweep — ``libra_opt.sweep(EXAMPLE, {AXIS: two values})``, the shipped
``gpt3_175b_a100_cluster`` example loaded by name and swept over its workload's global batch
size, each point regenerating the workload and solving it — is followed with
``sys.setprofile`` (Python calls and returns only; C functions are not rooms). Every frame
whose code lives under ``libra_opt/`` is mapped to its **room**, the package holding it
(``fabric``, ``traffic``, ``cost``, ``generators``, ``scenario``, ``optimize``, ``io``,
``explore``, ``report``, ``cli``; ``libra_opt/__init__.py`` is the face ``lo``; ``errors``,
``options`` and ``schema`` are the ``base``). Frames of other packages (numpy, pandas,
PyYAML, the solver) belong to the room that called them. Modules are imported before the
trace starts, so import-time code is not followed.

Definitions
-----------
*room path*
    The room the running code is in, after every call and every return of a ``libra_opt``
    frame, with repeats collapsed: a **move** is one step of it, ``(from room, to room,
    function, call or return)`` where the function is the one called or the one returning.
*stage path*
    The room path with the model rooms (``base``, ``fabric``, ``traffic``, ``cost``,
    ``generators``) folded into the stage room that called them: the way of the scenario
    between the stages (``scenario``, ``optimize``, ``io``, ``explore``, ``report``, ``cli``,
    ``lo``).
*level*
    A room's stage in the data path, lowest first, as the import layers have them:
    base 0, fabric 1, traffic and cost 2, generators 3, scenario 4, optimize and io 5,
    explore 6, report 7, cli and the face ``lo`` 8 (the caller outside ``libra_opt``: 9).
*entering io*
    A call into ``io`` from another room (a return into ``io`` is not an entry).
*climb back*
    A move to a room of a higher level (a return, or a call up) made after the path first
    entered ``io`` and before it last enters ``io``: the data came back up from ``io`` or
    below and is then sent into ``io`` again (re-read, re-parsed). A path entering ``io``
    once has none.
*bounce*
    Any move to a higher level after which the path goes down below that level again before
    the sweep returns (every valley of the path, ``io`` or not: a function calling two
    lower ones in turn makes one). Shown for information.
*call up*
    A call into a room of a higher level (imports forbid it unless made through a lazy
    import or a callback).

Each figure is given twice: **total** (every occurrence, which grows with the number of
points, workloads and collectives) and **distinct** (distinct ``(from, to, function)``
moves: the route's shape, independent of how often it is repeated).

Usage::

    python benchmarks/data_path.py [--main /tmp/main_wt]

It measures this checkout and, when ``--main`` names a checkout of ``main`` (make one with
``git worktree add --detach /tmp/main_wt main``), the same sweep there (run with
``PYTHONPATH`` set to it, in a subprocess), and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

EXAMPLE = "gpt3_175b_a100_cluster"
AXIS = "workloads.gpt3_175b.parallelism.global_batch_size"
VALUES = (768, 1536)

LEVEL = {"base": 0, "fabric": 1, "traffic": 2, "cost": 2, "generators": 3, "scenario": 4,
         "optimize": 5, "io": 5, "explore": 6, "report": 7, "cli": 8, "lo": 8, "user": 9}
_BASE = {"errors", "options", "schema"}


def _room_of(filename: str, root: str) -> str | None:
    """The room of a code file under ``root`` (the ``libra_opt`` directory), else ``None``."""
    if not filename.startswith(root):
        return None
    rel = filename[len(root):].lstrip(os.sep).split(os.sep)
    if len(rel) == 1:
        name = rel[0].removesuffix(".py")
        if name == "__init__":
            return "lo"
        return "base" if name in _BASE else name
    return rel[0]


def _import_everything() -> None:
    import importlib
    import pkgutil

    import libra_opt

    for mod in pkgutil.walk_packages(libra_opt.__path__, "libra_opt."):
        if ".cli" in mod.name or mod.name.endswith("__main__"):
            continue
        importlib.import_module(mod.name)


def measure() -> dict:
    """Trace the sweep once and return the figures of both paths (see the module notes)."""
    _import_everything()
    import libra_opt as lo

    root = os.path.dirname(os.path.abspath(lo.__file__))
    every, stages = _trace(lo, root)
    return {"libra_opt": root, "all_rooms": _figures(every), "stages": _figures(stages)}


Move = tuple[str, str, str, str]   # (from room, to room, function, "call" or "return")


def _trace(lo, root: str) -> tuple[list[Move], list[Move]]:
    """The moves of the room path and of the stage path of one traced sweep."""
    sweep = lo.sweep   # resolved before the trace (a lazy attribute)
    floor = LEVEL["scenario"]
    rooms_stack: list[str] = []   # the room of every libra_opt frame on the stack
    stage_stack: list[str] = []   # the same frames' stage rooms (model rooms folded)
    every: list[Move] = []
    stages: list[Move] = []
    rooms: dict[object, str | None] = {}

    def room(code) -> str | None:
        r = rooms.get(code, "?")
        if r == "?":
            r = rooms[code] = (None if code.co_name == "<module>"
                               else _room_of(code.co_filename, root))
        return r

    def prof(frame, event, _arg):
        if event not in ("call", "return"):
            return
        code = frame.f_code
        r = room(code)
        if r is None:
            return
        fn = f"{r}:{getattr(code, 'co_qualname', code.co_name)}"
        if event == "call":
            here = rooms_stack[-1] if rooms_stack else "user"
            here_s = stage_stack[-1] if stage_stack else "user"
            st = r if LEVEL[r] >= floor else here_s
            rooms_stack.append(r)
            stage_stack.append(st)
            if r != here:
                every.append((here, r, fn, "call"))
            if st != here_s:
                stages.append((here_s, st, fn, "call"))
        elif rooms_stack:
            rooms_stack.pop()
            st = stage_stack.pop()
            back = rooms_stack[-1] if rooms_stack else "user"
            back_s = stage_stack[-1] if stage_stack else "user"
            if back != r:
                every.append((r, back, fn, "return"))
            if back_s != st:
                stages.append((st, back_s, fn, "return"))

    sys.setprofile(prof)
    try:
        df = sweep(EXAMPLE, {AXIS: list(VALUES)}, progress=False)
    finally:
        sys.setprofile(None)
    assert list(df["status"]) == ["optimal"] * len(VALUES), df["status"].tolist()
    return every, stages


def _figures(moves: list[Move]) -> dict:
    """Moves, io entries, climbs back, bounces and upward calls of one path."""
    into_io = [i for i, m in enumerate(moves) if m[1] == "io" and m[3] == "call"]
    first_io, last_io = (into_io[0], into_io[-1]) if into_io else (0, -1)
    climbs, bounces, upcalls = [], [], []
    lowest_after = [LEVEL["user"]] * (len(moves) + 1)   # lowest level entered after move i
    for i in range(len(moves) - 1, -1, -1):
        lowest_after[i] = min(lowest_after[i + 1], LEVEL[moves[i][1]])
    for i, (a, b, _fn, kind) in enumerate(moves):
        if LEVEL[b] <= LEVEL[a]:
            continue
        if kind == "call":
            upcalls.append(moves[i])
        if first_io < i < last_io:
            climbs.append(moves[i])
        if lowest_after[i + 1] < LEVEL[b]:
            bounces.append(moves[i])

    def distinct(ms):
        return len({m[:3] for m in ms})

    return {
        "moves_total": len(moves), "moves_distinct": distinct(moves),
        "io_entries_total": len(into_io),
        "io_entries_distinct": distinct([moves[i] for i in into_io]),
        "climbs_back_total": len(climbs), "climbs_back_distinct": distinct(climbs),
        "bounces_total": len(bounces), "bounces_distinct": distinct(bounces),
        "upward_calls_total": len(upcalls), "upward_calls_distinct": distinct(upcalls),
        "climb_edges": dict(sorted(Counter(f"{a}->{b}" for a, b, _f, _k in climbs).items())),
        "io_entry_functions": sorted({f"{moves[i][0]}->{moves[i][2]}" for i in into_io}),
        "upward_call_functions": sorted({f"{a}->{fn}" for a, _b, fn, _k in upcalls}),
    }


def _run_in(checkout: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure"], env=env,
                         capture_output=True, text=True, check=True, cwd=str(checkout))
    return json.loads(out.stdout.strip().splitlines()[-1])


def _print(label: str, path: str, r: dict) -> None:
    def row(name: str, key: str) -> str:
        return (f"  {name:<24}{r[key + '_total']:>7} total, {r[key + '_distinct']:>4} distinct")

    print(f"{label}, {path}")
    print(row("moves between rooms", "moves"))
    print(row("entering io (calls)", "io_entries"))
    print(row("climbs back", "climbs_back"))
    print(row("bounces", "bounces"))
    print(row("calls up", "upward_calls"))
    if r["climb_edges"]:
        print("    climbs back by rooms: "
              + ", ".join(f"{k} {v}" for k, v in r["climb_edges"].items()))
    print("    io entered by: " + (", ".join(r["io_entry_functions"]) or "nothing"))
    for f in r["upward_call_functions"]:
        print(f"    call up: {f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--main", default="/tmp/main_wt",
                    help="a checkout of main to measure beside this one (default /tmp/main_wt)")
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure()))
        return
    here = Path(__file__).resolve().parents[1]
    print(f"sweep: libra_opt.sweep({EXAMPLE!r}, {{{AXIS!r}: {list(VALUES)}}})")
    main_dir = Path(args.main)
    if (main_dir / "libra_opt" / "__init__.py").is_file():
        got = _run_in(main_dir)
        print(f"main: {got['libra_opt']}")
        _print("main", "stage path", got["stages"])
        _print("main", "room path", got["all_rooms"])
    else:
        print(f"main: no checkout at {main_dir} "
              "(git worktree add --detach /tmp/main_wt main)")
    got = _run_in(here)
    print(f"this checkout: {got['libra_opt']}")
    _print("this checkout", "stage path", got["stages"])
    _print("this checkout", "room path", got["all_rooms"])


if __name__ == "__main__":
    main()
