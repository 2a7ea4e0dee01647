"""The plain block YAML reader: the same data as the reference loader wherever it reads a
document, and a refusal (the loaders take over) everywhere else."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libra_opt.io._yaml import strict as yu
from libra_opt.io._yaml.simple import NOT_SIMPLE, parse_simple
from libra_opt.io._yaml.strict import MAX_YAML_DEPTH, read_yaml
from tests.fixtures import same

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "libra_opt" / "data"
SHIPPED = sorted([*DATA.rglob("*.yaml"), *DATA.rglob("*.yml")])
LIMITS = (MAX_YAML_DEPTH, yu.MAX_YAML_NODES)


def simple(text: str, limits: tuple[int, int] = LIMITS) -> Any:
    return parse_simple(text, yu._IMPLICIT, yu._StrictLoader.bool_values, *limits)


def reference(text: str, limits: tuple[int, int] = LIMITS) -> tuple[str, Any]:
    try:
        return "ok", yu._parse_pure(text, *limits)
    except (yaml.YAMLError, RecursionError):
        return "error", None


def check(text: str, limits: tuple[int, int] = LIMITS) -> Any:
    """The simple reader either declines or gives exactly the reference loader's data."""
    got = simple(text, limits)
    if got is not NOT_SIMPLE:
        status, want = reference(text, limits)
        assert status == "ok", (text, got)
        assert same(got, want), (text, got, want)
    return got


# --- by hand ------------------------------------------------------------------------------------

READ = [
    # (document, data written out by hand)
    ("a: 1\nb: -2.5\nc: x y\n", {"a": 1, "b": -2.5, "c": "x y"}),
    ("k: [ 2, 4, 2, -1, -1 ]\n", {"k": [2, 4, 2, -1, -1]}),
    ("dims:\n  - {name: pod, size: 32, on: yes}\n", {"dims": [{"name": "pod", "size": 32, True: True}]}),
    ("w:\n- name: a\n  n: 1e3\n- name: b\n", {"w": [{"name": "a", "n": 1000.0}, {"name": "b"}]}),
    ("# c\nx:   # why\n  y: 'q #' \n  z: \"2\"\n", {"x": {"y": "q #", "z": "2"}}),
    ("l:\n  - sum(bw) == 1000\n  - bw[0] <= 2*bw.pod # cap\n",
     {"l": ["sum(bw) == 1000", "bw[0] <= 2*bw.pod"]}),
    ("a:\nb: ~\nc: null\nd: []\ne: {}\n", {"a": None, "b": None, "c": None, "d": [], "e": {}}),
    ("- 1.5E+3\n- .5\n- 7.\n- 1.5e3\n- -0.0\n", [1500.0, 0.5, 7.0, "1.5e3", -0.0]),
    ("a:\n  -\n    b: 1\n", {"a": [{"b": 1}]}),
    ("k" * 1024 + ": 1\n", {"k" * 1024: 1}),  # the longest simple key YAML allows
    ('l: ["sum(bw) <= 1000", \'x: y\', ""]\nm: {n: "p q"}  # c\n',
     {"l": ["sum(bw) <= 1000", "x: y", ""], "m": {"n": "p q"}}),
]


@pytest.mark.parametrize(("text", "want"), READ)
def test_reads_the_subset(text, want):
    got = check(text)
    assert got is not NOT_SIMPLE, text
    assert same(got, want)


DECLINED = [
    "a: &x 1\nb: *x\n",          # anchor and alias
    "a: !!str 1\n",              # tag
    "a: |\n  text\n",            # block scalar
    "a: b\n  c\n",               # multi-line plain scalar
    "a: 1\na: 2\n",              # duplicate key (the loaders word the error)
    "a: [1, [2]]\n",             # nested flow
    'a: "x\\ty"\n',              # escape
    "a: 1_000\n",                # another notation of an int
    "a: 0x1F\n",
    "a: .inf\n",
    "a: 2020-01-02\n",           # timestamp
    "---\na: 1\n",               # document marker
    "a:\tb\n",                   # tab
    "a: 1\r\nb: 2\r\n",          # carriage return
    "  a: 1\n",                  # indented top level
    "a:\n    b: 1\n  c: 2\n",     # dedent to an unknown column
    "? a\n: b\n",                # complex key
    "'a': 1\n",                  # quoted key
    "a: b: c\n",                 # a mapping in a plain scalar
    "- - x\n",                   # a sequence in a sequence on one line
    "just text\n",
    "",
    "<<: {a: 1}\n",
    "k" * 1025 + ": 1\n",        # a simple key longer than YAML's 1024 characters
    "- " + "k" * 1025 + ": 1\n",
    "a: {" + "k" * 1025 + ": 1}\n",
    "a: [1,\n  2]\n",           # a flow collection over two lines
    "a: ['x, y']\n",            # a comma inside a quoted flow item
    "a: [\"x\\\"y\"]\n",          # an escape in a flow item
]


@pytest.mark.parametrize("text", DECLINED)
def test_declines_the_rest(text):
    assert simple(text) is NOT_SIMPLE


def test_declines_near_the_limits():
    deep = "".join(f"{' ' * (2 * i)}k{i}:\n" for i in range(MAX_YAML_DEPTH + 5))
    assert simple(deep) is NOT_SIMPLE
    with pytest.raises(Exception, match="deep"):
        load_yaml_text(deep)
    wide = "a: [" + ", ".join(["1"] * 50) + "]\n"
    assert simple(wide, (10, 40)) is NOT_SIMPLE
    assert simple(wide, (10, 200)) == {"a": [1] * 50}


def load_yaml_text(text: str) -> Any:
    return yu._parse(text, *LIMITS)


def test_shipped_files_read_the_same():
    for path in SHIPPED:
        check(path.read_text(encoding="utf-8"))
    # every shipped LIBRA network, price and communicator file and the plain example
    # scenarios are read by it; these three write flow collections over several lines,
    # which the loaders read
    examples = [p for p in SHIPPED if "examples" in p.parts]
    declined = {p.name for p in examples if simple(p.read_text(encoding="utf-8")) is NOT_SIMPLE}
    assert declined == {"deepseek_v3_rail_only.yaml", "gpt3_175b_a100_cluster.yaml",
                        "llama3_405b_h100_tco.yaml"}
    assert len(examples) - len(declined) == 11


def test_load_yaml_uses_it(monkeypatch, tmp_path):
    p = tmp_path / "a.yml"
    p.write_text("Forward: [ 2, 4, 2, -1, -1 ]\n")

    def refuse(*args):
        raise AssertionError("a loader ran")

    monkeypatch.setattr(yu, "_compose_pure", refuse)
    monkeypatch.setattr(yu, "_compose_c", refuse)
    assert read_yaml(p) == {"Forward": [2, 4, 2, -1, -1]}


# --- generated: block documents in (and near) the subset ----------------------------------------

_WORDS = ["a", "name", "size", "on", "off", "yes", "null", "true", "x_1", "bw.pod", "k-2", "e5"]
_PLAIN = ["1", "-1", "0", "007", "1.5", "-0.5", "1e3", "1E-3", "2.5e+10", ".5", "7.", "yes", "No",
          "~", "null", "Null", "text", "two words", "sum(bw) <= 10", "a#b", "x:y", "-", "-x",
          "0x1F", "1_000", ".inf", "2020-01-02", "1:30", "=", "<<", "'q'", '"q"', "'it''s'",
          '"a\\tb"', "a #c", "[1, 2]", "{a: 1}", "&x 1", "*x", "!!str s", "|", ">", "%x", "@x",
          "`x", "?x", "?", ":", "é", "a: b", "[]", "{}", "[ a, -2, 3.5 ]", "{n: p, s: 4}", "",
          '["sum(bw) <= 1", \'b c\']', "['a, b']", '["a": b]', "['x:y', '']", '{n: "p q"}',
          "[1, 2", "{a: 1 # c", "[a] # c", "['it''s']", '["q\\"x"]', "[ 'a' b ]"]


def _render(node: Any, indent: int, step: int, draw: Any) -> list[str]:
    """Block lines of ``node`` at ``indent``; lists of scalars sometimes as one flow line."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if isinstance(value, dict | list) and value:
                out.append(f"{pad}{key}:{draw(st.sampled_from(['', ' ', '  # c']))}")
                inner = indent + (0 if isinstance(value, list) and draw(st.booleans()) else step)
                out += _render(value, inner, step, draw)
            else:
                out.append(f"{pad}{key}: {value if not isinstance(value, dict | list) else '[]'}")
    else:
        for item in node:
            if isinstance(item, dict) and item and draw(st.booleans()):
                lines = _render(item, indent + 2, step, draw)
                out.append(f"{pad}- {lines[0].lstrip(' ')}")
                out += lines[1:]
            elif isinstance(item, dict | list) and item:
                out.append(f"{pad}-")
                out += _render(item, indent + step, step, draw)
            else:
                out.append(f"{pad}- {item if not isinstance(item, dict | list) else '[]'}")
    if draw(st.booleans()):
        out.insert(draw(st.integers(0, len(out))), pad + draw(st.sampled_from(["# note", "", "   "])))
    return out


_SAFE = {"1", "-1", "0", "1.5", "-0.5", "1e3", "1E-3", "2.5e+10", ".5", "7.", "yes", "No", "~",
         "null", "Null", "text", "two words", "sum(bw) <= 10", "a#b", "x:y", "'q'", '"q"', "é",
         "[]", "{}", "[ a, -2, 3.5 ]", "{n: p, s: 4}", '["sum(bw) <= 1", \'b c\']',
         "['x:y', '']", '{n: "p q"}', "[a] # c", "a #c", ""}
_SAFE_KEYS = {"a", "name", "size", "x_1", "bw.pod", "k-2", "e5"}


def _leaves(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set().union(*(_leaves(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_leaves(v) for v in node))
    return {node}


def _keys(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node).union(*(_keys(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_keys(v) for v in node))
    return set()


_tree = st.recursive(
    st.sampled_from(_PLAIN),
    lambda kids: st.lists(kids, min_size=1, max_size=3)
    | st.dictionaries(st.sampled_from(_WORDS), kids, min_size=1, max_size=3),
    max_leaves=12,
)


@given(st.data())
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_block_documents_agree(data):
    tree = data.draw(st.dictionaries(st.sampled_from(_WORDS), _tree, min_size=1, max_size=4))
    step = data.draw(st.sampled_from([2, 3, 4]))
    text = "\n".join(_render(tree, 0, step, data.draw)) + "\n"
    got = check(text)
    # the generator must reach the subset, or the agreement would prove nothing: a
    # document of safe words and keys that resolve apart is always read
    if _leaves(tree) <= _SAFE and _keys(tree) <= _SAFE_KEYS:
        assert got is not NOT_SIMPLE, text
    for limits in [(3, 10), (5, 40)]:
        check(text, limits)


def test_a_document_of_safe_words_is_read():
    text = "a: 1\nname:\n- size: -2\n  on: sum(bw) <= 10\n-\n  - 1.5\n  - two words\nx_1: ~\n"
    assert check(text) == {"a": 1, "name": [{"size": -2, True: "sum(bw) <= 10"}, [1.5, "two words"]],
                           "x_1": None}
