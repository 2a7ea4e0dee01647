"""freeze_arrays: every array reachable from a result is read-only, whatever its field's
annotation says, and FrozenMap's fast lookups agree with a dict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from libra_opt.fabric.frozen import FrozenMap, _dataclass_field_names, freeze_arrays


@dataclass(frozen=True)
class _Holder:
    name: str
    sizes: tuple[tuple[str, float], ...]
    table: Mapping[str, float]
    values: np.ndarray
    nested: tuple[Any, ...]
    anything: Any
    maybe: np.ndarray | None = None


def test_arrays_in_every_kind_of_field_are_frozen():
    arrays = [np.zeros(2) for _ in range(4)]
    h = _Holder("h", (("a", 1.0),), {"x": 2.0}, arrays[0], ({"k": arrays[1]},),
                [arrays[2]], arrays[3])
    freeze_arrays(h)
    assert [a.flags.writeable for a in arrays] == [False] * 4


def test_plain_data_fields_are_skipped():
    # name, sizes and table can hold no array (by annotation); the rest may
    assert _dataclass_field_names(_Holder) == ("values", "nested", "anything", "maybe")
    assert _dataclass_field_names(int) is None


def test_frozen_map_views_match_a_dict():
    d = {"b": 2, "a": 1}
    m = FrozenMap(d)
    assert list(m.items()) == list(d.items()) and list(m.keys()) == ["b", "a"]
    assert list(m.values()) == [2, 1] and m.get("a") == 1 and m.get("z", 5) == 5
    assert m == d and m == FrozenMap(m) and m != {"a": 1}
    d["c"] = 3  # a private copy: the map does not change
    assert len(m) == 2 and "c" not in m


def test_results_hand_out_read_only_arrays_everywhere():
    # every array reachable from a solution is read-only, though classes frozen at
    # construction are not walked again inside it
    from libra_opt.optimize.problem import solve
    from libra_opt.scenario.examples import toy_scenario

    sol = solve(toy_scenario())
    seen = []

    def walk(obj, depth=0):
        if isinstance(obj, np.ndarray):
            seen.append(obj.flags.writeable)
        elif depth < 8 and hasattr(obj, "__dataclass_fields__"):
            for name in obj.__dataclass_fields__:
                walk(getattr(obj, name, None), depth + 1)
        elif depth < 8 and isinstance(obj, tuple | list):
            for v in obj:
                walk(v, depth + 1)

    walk((sol.evaluation, sol.walks, sol.bw_gbps))
    assert len(seen) >= 10 and not any(seen)
