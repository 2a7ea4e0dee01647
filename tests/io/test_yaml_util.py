"""The strict YAML loader (libyaml, or PyYAML's pure-Python parser) and the per-load cache.

Both parsers give the same data under the same rules; the limits are checked on the event
stream before anything is composed; a syntax error is worded by the pure-Python parser;
each file a scenario names is read and parsed once per load.
"""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.io import _yaml as yu
from libra_opt.io._yaml import MAX_YAML_DEPTH, read_yaml
from libra_opt.io.files import ParseCache
from libra_opt.io.scenario_file import load_scenario
from tests.fixtures import same

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "libra_opt" / "data" / "examples"
SHIPPED = sorted(
    [*(ROOT / "libra_opt" / "data").rglob("*.yaml"), *(ROOT / "libra_opt" / "data").rglob("*.yml"),
     *(ROOT / "tests").rglob("*.yaml"), *(ROOT / "tests").rglob("*.yml")]
)
LIMITS = (MAX_YAML_DEPTH, yu.MAX_YAML_NODES)


def parse(text: str, limits: tuple[int, int] = LIMITS, loader: Any = None) -> Any:
    """The data read_yaml gives for ``text`` (``loader``: the parser, libyaml by default)."""
    return yu._construct(yu._compose_with(loader or yu._LOADER, text, *limits))


def pure(text: str) -> Any:
    """PyYAML's pure-Python safe loader with the same rules, without the limits."""
    return yaml.load(text, Loader=yu._PURE)


def read_text_as_file(tmp_path: Path, text: str, **kw: Any) -> Any:
    p = tmp_path / "d.yaml"
    p.write_text(text, encoding="utf-8", newline="")
    return read_yaml(p, **kw)


def refusal(tmp_path: Path, text: str, **kw: Any) -> InputError:
    with pytest.raises(InputError) as info:
        read_text_as_file(tmp_path, text, **kw)
    assert info.value.source == str(tmp_path / "d.yaml")
    return info.value


# --- shipped files and well-formed documents: the same data from both parsers ------------------


def test_shipped_files_are_found():
    names = {p.name for p in SHIPPED}
    assert {"devices.yaml", "current_2025.yaml", "gpt3_175b_4d.yaml", "fabric_4d.yml"} <= names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_file_same_from_both_parsers(path):
    assert same(read_yaml(path), pure(path.read_text(encoding="utf-8")))


def test_libyaml_reads_when_pyyaml_has_it():
    assert (yu._LOADER is not yu._PURE) == bool(getattr(yaml, "__with_libyaml__", False))
    assert issubclass(yu._LOADER, yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)


# (text, value written out by hand): every decimal spelling with a dot or an exponent is a
# number (the exponent sign optional); integers by YAML 1.2's core schema (leading zeros
# decimal, no sexagesimal); what is not a number stays a string
NUMBERS = [
    ("1e7", 1e7), ("1.0e7", 1e7), ("19.5e12", 19.5e12), ("-3.5E-2", -0.035), (".5", 0.5),
    ("-.5", -0.5), ("+.5e3", 500.0), ("1.e3", 1000.0), ("7.", 7.0), ("1e+7", 1e7),
    ("1.0e+7", 1e7), ("2.5E10", 2.5e10), ("1_000.5e1", 10005.0), ("-0.0", -0.0),
    ("1_000", 1000), ("0x1F", 31), ("017", 17), ("1:30", "1:30"), (".inf", math.inf),
    ("09", 9), ("1e", "1e"), ("e7", "e7"), ("1.2.3", "1.2.3"), ("'1e7'", "1e7"),
    ('"1.0e7"', "1.0e7"), (".", "."), ("+", "+"), ("1e7x", "1e7x"), ("._5", "._5"),
]


@pytest.mark.parametrize(("text", "want"), NUMBERS, ids=[t for t, _ in NUMBERS])
def test_number_spellings(text, want):
    for loader in (yu._LOADER, yu._PURE):
        got = parse(f"v: {text}\n", loader=loader)["v"]
        assert type(got) is type(want) and got == want, (text, got)
        assert parse(f"[{text}]\n", loader=loader) == [want]


SMALL_CASES = [
    "a: &x {Link: 1.0}\nb: *x\nc: 1e7\n",
    "n: [1e9, 2.5E+10, -3e-2, +4e4, 1_000, 0x1F, 0o17, 017, 1.5, .inf, -.Inf, .nan, 1.5e3]\n",
    "b: [yes, No, on, OFF, true, ~, null, '', '1e9', 2001-12-14, 2001-12-14t21:59:43.10-05:00]\n",
    "? complex key\n: 1\n",
    "a: &s scalar\nb: *s\nc: [*s, *s]\n",
    "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  z: 3\n",
    "a: |\n  literal\n   text\nb: >\n  folded\n  text\n\nc: 'it''s'\nd: \"esc\\n\\u00e9\"\n",
    "- - - deep\n    - x\n- {a: [1, {b: 2}]}\n",
    "\ufeffa: 1\r\nb: 2\r\n",
    "",
    "# only a comment\n",
    "--- 5\n...\n",
    "!!str 12\n",
    "a: !!float 3\nb: !!int '7'\nc: !!binary aGVsbG8=\nd: !!set {x, y}\ne: !!omap [{k: 1}]\n",
]


@pytest.mark.parametrize("text", SMALL_CASES)
def test_small_documents_same_from_both_parsers(text):
    assert same(parse(text), pure(text))
    assert same(parse(text, loader=yu._PURE), pure(text))


_scalars = (
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=True)
    | st.sampled_from(["1e9", "1.0e7", "-.5", "2.5E+10", "yes", "Off", "~", "0x1F", "1_000",
                       "2001-12-14", ".inf", "-", ":", "#", "a: b", "'q'", '"', "*x", "&y"])
)
_data = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_scalars, kids, max_size=4),
    max_leaves=25,
)


@given(data=_data, flow=st.sampled_from([None, True, False]), width=st.sampled_from([20, 10_000]),
       style=st.sampled_from([None, "'", '"', "|"]))
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_dumped_data_reads_back(data, flow, width, style):
    """What :func:`dump_yaml` writes reads back as the same data (a string spelled like a
    number is quoted), by both parsers."""
    text = yu.dump_yaml(data, default_flow_style=flow, width=width, default_style=style,
                        sort_keys=False)
    assert same(parse(text), data), text
    assert same(parse(text, loader=yu._PURE), data), text


# --- refusals: one InputError naming the file, the line and column, and what was expected ------

REFUSED = [
    # (text, message after "malformed YAML: ", line and column), the message written by hand
    ("a: 1\na: 2\n", "duplicate key 'a' (line 2)", "line 2, column 1"),
    ("{[1]: 2}\n", "a mapping key must be a scalar, not a list or mapping", "line 1, column 2"),
    ("base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n", "duplicate key 'y' (line 4)",
     "line 4, column 3"),  # a merge is no way round it
    ("x: " + "9" * 5000 + "\n", "an integer of 5000 digits is too long", "line 1, column 4"),
    ("a: !!python/object:os.system x\n", "could not determine a constructor for the tag "
     "'tag:yaml.org,2002:python/object:os.system'", "line 1, column 4"),
    ("a: &x [1, *x]\n", "alias *x refers to a node that contains it", "line 1, column 11"),
    ("a: *nowhere\n", "found undefined alias 'nowhere'", "line 1, column 4"),
    # syntax errors: the pure-Python parser's wording, which names what was expected
    ("a: [unclosed\n", "expected ',' or ']', but got '<stream end>'", "line 2, column 1"),
    ("a: b\n c: d\n", "mapping values are not allowed here", "line 2, column 3"),
    ("--- 1\n--- 2\n", "but found another document", "line 2, column 1"),
    ("a: &x 1\nb: &x 2\n", "second occurrence", "line 2, column 4"),
    ("!!int ", "malformed integer", "line 1, column 1"),
    ("!!bool maybe", "malformed boolean 'maybe'", "line 1, column 1"),
    ("a: 2020-13-45", "malformed timestamp '2020-13-45'", "line 1, column 4"),
    ("!!map x", "expected a mapping node, but found scalar", "line 1, column 1"),
    # libyaml refuses what the pure-Python parser takes: libyaml's wording
    ('a: "\\ud800"\n', "found invalid Unicode character escape code", "line 1, column 7"),
]


@pytest.mark.parametrize(("text", "message", "where"), REFUSED, ids=range(len(REFUSED)))
def test_refused_with_the_line_and_what_was_expected(tmp_path, text, message, where):
    err = refusal(tmp_path, text)
    assert (err.message, err.field) == (f"malformed YAML: {message}", where)
    assert "\n" not in err.one_line()


def test_control_characters_are_refused(tmp_path):
    err = refusal(tmp_path, "a: \x01\n")
    assert err.message.startswith("malformed YAML: unacceptable character #x0001")


def test_syntax_errors_are_worded_by_the_pure_parser(monkeypatch):
    """libyaml finds the error; the pure-Python parser, run on the same text, words it."""
    calls: list[Any] = []
    compose_with = yu._compose_with
    monkeypatch.setattr(yu, "_compose_with", lambda cls, *a: calls.append(cls) or compose_with(cls, *a))
    with pytest.raises(yaml.YAMLError, match="expected ',' or ']'"):
        yu._compose("a: [1, 2\nb: 3\n", *LIMITS)
    assert calls == ([yu._LOADER, yu._PURE] if yu._LOADER is not yu._PURE else [yu._PURE])


# --- the limits: checked on the events, before anything is composed ------------------------------


def _flow(levels: int) -> str:
    return "[" * (levels - 1) + "x" + "]" * (levels - 1) + "\n"


def _block(levels: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(levels - 1)) + " " * (levels - 1) + "v\n"


@pytest.mark.parametrize("make", [_flow, _block], ids=["flow", "block"])
@pytest.mark.parametrize("levels", [MAX_YAML_DEPTH - 1, MAX_YAML_DEPTH, MAX_YAML_DEPTH + 1])
@pytest.mark.parametrize("loader", ["libyaml", "pure"])
def test_depth_limit_at_the_edge(make, levels, loader):
    """A scalar nested in ``levels - 1`` collections sits at level ``levels``: allowed up
    to MAX_YAML_DEPTH."""
    cls = yu._LOADER if loader == "libyaml" else yu._PURE
    if levels <= MAX_YAML_DEPTH:
        assert same(parse(make(levels), loader=cls), pure(make(levels)))
    else:
        with pytest.raises(yu._Limit, match=f"nested more than {MAX_YAML_DEPTH} levels"):
            parse(make(levels), loader=cls)


def test_alias_depth_counts_where_the_anchor_is_written():
    """An alias adds no nesting: a deep anchor used one level further in is accepted."""
    inner = "[" * (MAX_YAML_DEPTH - 2) + "x" + "]" * (MAX_YAML_DEPTH - 2)
    data = parse(f"a: &d {inner}\nb: [*d]\n")
    assert data["b"][0] is data["a"]


@pytest.mark.parametrize("levels", [5000, 200_000])
def test_very_deep_flow_is_refused_without_a_crash(tmp_path, levels):
    """libyaml's composer recurses in C: this deep it would overflow the stack. The events
    are counted first and the document refused at its first node past the limit."""
    t0 = time.perf_counter()
    err = refusal(tmp_path, "x: " + _flow(levels))
    assert time.perf_counter() - t0 < 2.0
    assert err.message == f"malformed YAML: nested more than {MAX_YAML_DEPTH} levels deep (limit)"
    assert err.field == f"line 1, column {3 + MAX_YAML_DEPTH}"  # the 100th '[', at level 101


def test_deeper_than_the_composer_takes_is_one_input_error(tmp_path):
    """With the depth limit raised past what the composer is given, the failure is still
    one InputError."""
    err = refusal(tmp_path, "x: " + _flow(3000), max_depth=10_000)
    assert err.message == "malformed YAML: nested too deep"


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("loader", ["libyaml", "pure"])
def test_a_bomb_is_refused_without_expanding_it(loader):
    cls = yu._LOADER if loader == "libyaml" else yu._PURE
    t0 = time.perf_counter()
    with pytest.raises(yu._Limit, match="with its aliases expanded") as info:
        parse(_bomb(30), loader=cls)  # 10**30 nodes expanded
    assert time.perf_counter() - t0 < 0.5
    # a0 expands to 11 nodes, a1 to 111, ..., a5 to 1,111,111: the count passes 10**6 in
    # the list of a5 (line 6)
    assert info.value.problem_mark.line == 5


@pytest.mark.parametrize("extra", [-1, 0, 1])
@pytest.mark.parametrize("loader", ["libyaml", "pure"])
def test_node_limit_at_the_edge(extra, loader):
    """``x: [1, ..., 1]`` with n items has n + 3 nodes (mapping, key, list, n items); an
    alias to the list counts its n + 1 nodes again."""
    n = 50
    text = "x: &l [" + ", ".join(["1"] * n) + "]\ny: *l\n"
    total = 1 + 1 + (n + 1) + 1 + (n + 1)
    cls = yu._LOADER if loader == "libyaml" else yu._PURE
    if extra >= 0:
        assert parse(text, (MAX_YAML_DEPTH, total + extra), loader=cls)["y"] == [1] * n
    else:
        with pytest.raises(yu._Limit, match=f"more than {total - 1} nodes"):
            parse(text, (MAX_YAML_DEPTH, total + extra), loader=cls)


_TOKENS = list("abxyz019eE.+-_ :,[]{}&*!#?|>'\"\n\r\t%@`~\\") + [
    "  ", "- ", ": ", "\n  ", "\n- ", "&a ", "*a", "&b ", "*b", "!!str ", "!!int ", "!!float ",
    "<<: ", "---\n", "...\n", "\ufeff", "\x85", "\u2028", "é", "1e9", "0x", "null", "true",
]


@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join))
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_any_text_reads_or_is_one_input_error(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("y") / "d.yaml"
    p.write_text(text, encoding="utf-8", newline="")
    try:
        read_yaml(p, max_depth=5, max_nodes=40)
    except InputError as exc:
        assert exc.source == str(p) and "\n" not in exc.one_line()


# --- the per-load cache: no file parsed twice --------------------------------------------------


@pytest.fixture
def shared_dir(tmp_path: Path) -> Path:
    """A scenario naming one communicator, one workload file and one price file twice."""
    shutil.copy(EXAMPLES / "fabric_4d.yml", tmp_path / "net.yml")
    shutil.copy(EXAMPLES / "cost_ispass24.yml", tmp_path / "cost.yml")
    shutil.copytree(EXAMPLES / "gpt3_175b", tmp_path / "w")
    (tmp_path / "s.yaml").write_text(
        "fabric: {libra_network: net.yml}\n"
        "cost_model: cost.yml\n"
        "power_model: ./cost.yml\n"  # the same file by another path
        "workloads:\n"
        "  - {name: a, astra_sim: w/workload.txt, communicator: w/communicator.yml}\n"
        "  - {name: b, astra_sim: w/../w/workload.txt, communicator: w/communicator.yml}\n"
        "constraints: {linear: ['sum(bw) <= 1000']}\n"
    )
    return tmp_path


def _count(monkeypatch) -> tuple[dict[str, int], dict[str, int]]:
    reads: dict[str, int] = {}
    parses = {"yaml": 0, "astra_sim": 0}
    import libra_opt.io.files as files

    read_bytes, parse = files.read_bytes, yu._compose

    def counting_read(path, **kw):
        name = str(Path(path).resolve())
        reads[name] = reads.get(name, 0) + 1
        return read_bytes(path, **kw)

    def counting_parse(*args):
        parses["yaml"] += 1
        return parse(*args)

    import libra_opt.io.astra_sim as astra

    parse_astra = astra.parse_astra_sim

    def counting_astra(*args, **kw):
        parses["astra_sim"] += 1
        return parse_astra(*args, **kw)

    monkeypatch.setattr(files, "read_bytes", counting_read)
    monkeypatch.setattr(yu, "_compose", counting_parse)
    monkeypatch.setattr(astra, "parse_astra_sim", counting_astra)
    return reads, parses


def test_each_file_is_read_and_parsed_once_per_load(shared_dir, monkeypatch):
    reads, parses = _count(monkeypatch)
    scen = load_scenario(shared_dir / "s.yaml")
    assert [w.name for w in scen.workloads] == ["a", "b"]
    assert scen.workloads[0].layers == scen.workloads[1].layers
    assert scen.cost_model.has_power
    d = shared_dir.resolve()
    assert reads == {str(d / f): 1 for f in ("s.yaml", "net.yml", "cost.yml",
                                             "w/communicator.yml", "w/workload.txt")}
    # scenario, network, prices (cost and power), communicator
    assert parses == {"yaml": 4, "astra_sim": 1}
    load_scenario(shared_dir / "s.yaml")  # a new load reads afresh: no state between loads
    assert reads[str(d / "cost.yml")] == 2 and parses == {"yaml": 8, "astra_sim": 2}


def test_a_changed_file_is_read_again_by_the_next_load(shared_dir):
    first = load_scenario(shared_dir / "s.yaml")
    cost = shared_dir / "cost.yml"
    text = cost.read_text()
    assert "  Link: 7.8\n" in text
    cost.write_text(text.replace("  Link: 7.8\n", "  Link: 9.9\n"))
    second = load_scenario(shared_dir / "s.yaml")
    assert first.cost_model.tiers["InterPod"].usd_per_gbps["link"] == 7.8
    assert second.cost_model.tiers["InterPod"].usd_per_gbps["link"] == 9.9


@pytest.mark.parametrize("name", ["gpt3_175b_4d", "multi_4d", "llama3_405b_h100_tco"])
def test_shipped_examples_parse_each_file_once(name, monkeypatch):
    reads, parses = _count(monkeypatch)
    load_scenario(name)
    assert reads and set(reads.values()) == {1}, reads


def test_cache_hands_out_copies_of_yaml(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("k: [1, 2]\n")
    cache = ParseCache()
    first = read_yaml(p, cache=cache)
    first["k"].append(3)
    assert read_yaml(p, cache=cache) == {"k": [1, 2]}


def test_cache_keeps_errors_out(tmp_path):
    p = tmp_path / "a.yaml"
    p.write_text("a: 1\na: 2\n")
    cache = ParseCache()
    for _ in range(2):
        with pytest.raises(InputError, match="duplicate key 'a'"):
            read_yaml(p, cache=cache)
    with pytest.raises(InputError, match="not found"):
        read_yaml(tmp_path / "missing.yaml", cache=cache)


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure"])
def test_cache_rebuilds_what_the_first_read_gave(tmp_path, monkeypatch, libyaml):
    # anchors and aliases (one object reached twice), a merge key, a timestamp, a set,
    # numbers in other notations: the data built again from the kept nodes equals the
    # reference loader's, alias sharing included
    text = ("base: &b {x: 1_000, y: 0x1F, z: .inf}\n"
            "copy: *b\n"
            "merged: {<<: *b, w: 2}\n"
            "when: 2020-01-02\n"
            "tags: !!set {a, b}\n"
            "n: ~\n"
            "flags: [yes, Off, 1e3, -0.0, '7']\n")
    p = tmp_path / "a.yaml"
    p.write_text(text)
    if not libyaml:
        monkeypatch.setattr(yu, "_LOADER", yu._PURE)
    cache = ParseCache()
    first, again = read_yaml(p, cache=cache), read_yaml(p, cache=cache)
    want = pure(text)
    for got in (first, again):
        assert same(got, want)
        assert got["base"] is got["copy"]  # an alias is one object, as PyYAML gives
        assert got["merged"] == {"x": 1000, "y": 31, "z": float("inf"), "w": 2}
    assert again is not first and again["base"] is not first["base"]


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure"])
def test_merged_collections_are_shared_as_pyyaml_shares_them(tmp_path, monkeypatch, libyaml):
    # a list reached through an alias and through a merge key is one object in PyYAML's
    # data; the first read and the cache's later reads give the same sharing
    p = tmp_path / "a.yaml"
    p.write_text("base: &b {x: [1]}\nm: {<<: *b, y: 2}\n")
    if not libyaml:
        monkeypatch.setattr(yu, "_LOADER", yu._PURE)
    want = yaml.load(p.read_text(), Loader=yaml.SafeLoader)
    assert want["m"]["x"] is want["base"]["x"]
    cache = ParseCache()
    for got in (read_yaml(p, cache=cache), read_yaml(p, cache=cache), read_yaml(p)):
        assert same(got, want)
        assert got["m"]["x"] is got["base"]["x"]


@pytest.mark.parametrize(("text", "value"), [
    ("012", 12),  # YAML 1.1: octal 10
    ("1:20", "1:20"),  # YAML 1.1: sexagesimal 80
    ("1:20.5", "1:20.5"),  # YAML 1.1: sexagesimal 80.5
    ("0o17", 15),
    ("0x1F", 31),
    ("-0x1F", "-0x1F"),  # the core schema has no signed hexadecimal
    ("0b11", "0b11"),  # YAML 1.1: binary 3; not in YAML 1.2's core schema
    ("1_000", 1000),
    ("+5", 5),
    ("-.inf", -math.inf),
    ("1_", "1_"), ("1__0", "1__0"), ("0x_1F", "0x_1F"),  # one "_" between digits only
])
def test_integers_follow_yaml_1_2_core_schema_with_digit_separators(tmp_path, text, value):
    p = tmp_path / "n.yaml"
    p.write_text(f"v: {text}\n")
    got = read_yaml(p)["v"]
    assert type(got) is type(value) and got == value
    p.write_text(yu.dump_yaml({"v": text}))
    assert read_yaml(p)["v"] == text  # text written stays text ...
    assert yaml.safe_load(p.read_text())["v"] == text  # ... for a YAML 1.1 reader too
