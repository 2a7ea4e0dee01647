"""ASTRA-sim workload text: line splitting, repeated lines, error positions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.io.astra_sim import _lines, parse_astra_sim

GROUPS = {"forward": (2, 4), "input_grad": (2, 4), "weight_grad": (1, 8)}
LINE = "{name} -1 1000 ALLREDUCE 2048 2000 NONE 0 3000 ALLGATHER {size} 5"


@given(st.text(alphabet="ab \n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029é#", max_size=30))
@settings(max_examples=300, deadline=None)
def test_lines_are_splitlines(text):
    assert _lines(text) == text.splitlines()


def test_repeated_lines_share_one_layer_and_count_in_order():
    # 2 x "a" (identical text, whitespace aside), then "b" (same fields but the name), then "a"
    text = "\n".join([
        "HYBRID_CUSTOMIZED", "4",
        LINE.format(name="a", size=64), "  " + LINE.format(name="a", size=64).replace(" ", "  "),
        LINE.format(name="b", size=64), LINE.format(name="a", size=64), "",
    ])
    w = parse_astra_sim(text, "w", GROUPS)
    assert [ly.name for ly in w.layers] == ["a", "a", "b", "a"]
    assert w.layers[0] is w.layers[1] is w.layers[3]  # one object per distinct line
    assert w.layers[2].forward is w.layers[0].forward  # the same phases, another name
    # by hand: forward 1000 ns compute + an all-reduce of 2048 B; weight-grad all-gather 64 B
    assert w.layers[0].forward.compute_s == pytest.approx(1e-6, rel=1e-12)
    assert w.layers[0].weight_grad.collectives[0].size_bytes == 64.0
    assert w.layers[0].update_s == pytest.approx(5e-9, rel=1e-12)


@pytest.mark.parametrize(("bad", "line", "message"), [
    (LINE.format(name="c", size="x"), 6, "weight_grad size 'x' is not a number"),
    (LINE.format(name="c", size=-1), 6, "must be finite and >= 0"),
    (LINE.format(name="c", size=1) + " 7", 6, "found 13"),
    (LINE.format(name="c", size=1).replace("ALLGATHER", "BCAST"), 6, "is not NONE"),
])
def test_an_error_names_the_first_line_holding_it(bad, line, message):
    # lines 1-2 header, 3 a comment, 4 blank, 5 a good layer, 6 and 8 the bad one
    text = "\n".join(["DATA", "4", "# note", "", LINE.format(name="a", size=8), bad,
                      LINE.format(name="a", size=8), bad])
    with pytest.raises(InputError, match=message) as info:
        parse_astra_sim(text, "w", GROUPS, source="w.txt")
    assert info.value.field == f"line {line}" and info.value.source == "w.txt"


def test_header_count_is_checked():
    text = "\n".join(["DATA", "3", LINE.format(name="a", size=8), LINE.format(name="a", size=8)])
    with pytest.raises(InputError, match="header declares 3 layers, the file has 2"):
        parse_astra_sim(text, "w", GROUPS)
