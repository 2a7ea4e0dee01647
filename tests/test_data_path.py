"""The data-path benchmark's counts on hand-made paths (benchmarks/data_path.py)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location(
    "data_path", Path(__file__).resolve().parents[1] / "benchmarks" / "data_path.py")
data_path = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(data_path)


def test_rooms_of_files():
    root = os.sep.join(("", "x", "libra_opt"))
    assert data_path._room_of(os.sep.join((root, "io", "files.py")), root) == "io"
    assert data_path._room_of(os.sep.join((root, "__init__.py")), root) == "lo"
    assert data_path._room_of(os.sep.join((root, "options.py")), root) == "base"
    assert data_path._room_of("/usr/lib/python3/json/__init__.py", root) is None


def test_counts_of_a_path_that_reads_twice():
    # lo -> explore -> io (read) -> scenario -> io -> explore -> io (read again) -> explore
    # -> optimize -> fabric -> optimize -> explore -> lo -> user
    path = ["user", "lo", "explore", "io", "scenario", "io", "explore", "io", "explore",
            "optimize", "fabric", "optimize", "explore", "lo", "user"]
    moves = []
    for a, b in zip(path, path[1:], strict=False):
        up = data_path.LEVEL[b] > data_path.LEVEL[a]
        moves.append((a, b, f"{b}:f", "return" if up else "call"))
    got = data_path._figures(moves)
    assert got["moves_total"] == 14
    # calls into io: explore->io twice (same function: one distinct); scenario->io is a return
    assert (got["io_entries_total"], got["io_entries_distinct"]) == (2, 1)
    # between the first and the last io entry (moves 2 and 6) the upward moves are
    # scenario->io (4) and io->explore (5): two climbs back
    assert got["climbs_back_total"] == 2
    assert got["climb_edges"] == {"io->explore": 1, "scenario->io": 1}
    # valleys (an upward move with a lower room later): scenario->io (fabric later),
    # io->explore (io later), io->explore (optimize later); fabric->optimize has nothing
    # below optimize after it: 3
    assert got["bounces_total"] == 3
    assert got["upward_calls_total"] == 0


def test_one_read_has_no_climb_back():
    moves = [("user", "lo", "lo:f", "call"), ("lo", "io", "io:load", "call"),
             ("io", "scenario", "scenario:g", "call"), ("scenario", "io", "scenario:g", "return"),
             ("io", "lo", "io:load", "return"), ("lo", "explore", "explore:s", "call"),
             ("explore", "lo", "explore:s", "return"), ("lo", "user", "lo:f", "return")]
    got = data_path._figures(moves)
    assert (got["io_entries_total"], got["climbs_back_total"]) == (1, 0)
