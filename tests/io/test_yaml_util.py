"""The two YAML loaders (libyaml, pure-Python reference) and the per-load parse cache.

The libyaml path must give exactly the reference loader's data (types included) and refuse
exactly what it refuses, with the same one-line error; each file a scenario names is read
and parsed once per load.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from libra_opt.errors import InputError
from libra_opt.io._yaml import strict as yu
from libra_opt.io._yaml.simple import NOT_SIMPLE, parse_simple
from libra_opt.io._yaml.strict import MAX_YAML_DEPTH, read_yaml
from libra_opt.io.files import ParseCache
from libra_opt.io.scenario_file import load_scenario
from tests.fixtures import same

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "libra_opt" / "data" / "examples"
SHIPPED = sorted(
    [*(ROOT / "libra_opt" / "data").rglob("*.yaml"), *(ROOT / "libra_opt" / "data").rglob("*.yml"),
     *(ROOT / "tests").rglob("*.yaml"), *(ROOT / "tests").rglob("*.yml")]
)
HAVE_C = yu._C_LOADER is not None
needs_c = pytest.mark.skipif(not HAVE_C, reason="PyYAML built without libyaml")
LIMITS = (MAX_YAML_DEPTH, yu.MAX_YAML_NODES)


def outcome(fn, text: str) -> tuple[str, Any]:
    """("ok", data) or ("error", the message and position the user would see)."""
    try:
        return "ok", fn(text, *LIMITS)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = (mark.line, mark.column) if mark else None
        return "error", (type(exc).__name__, getattr(exc, "problem", None) or str(exc), where)
    except RecursionError:
        return "error", "recursion"


def agree(text: str) -> None:
    """read_yaml's parser (libyaml where it may) and the reference loader agree on ``text``."""
    got, want = outcome(yu._parse, text), outcome(yu._parse_pure, text)
    assert got[0] == want[0], (text, got, want)
    if got[0] == "ok":
        assert same(got[1], want[1]), (text, got, want)
    else:
        assert got[1] == want[1], (text, got, want)


# --- shipped files: same data from both loaders ---------------------------------------------


def test_shipped_files_are_found():
    names = {p.name for p in SHIPPED}
    assert {"devices.yaml", "current_2025.yaml", "gpt3_175b_4d.yaml", "fabric_4d.yml"} <= names


@needs_c
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_file_same_from_both_loaders(path):
    text = path.read_text(encoding="utf-8")
    if EXAMPLES in path.parents:
        assert yu._c_eligible(text)  # the fast path is the one taken for the examples
    fast = yu._parse_c(text, *LIMITS)
    assert same(fast, yu._parse_pure(text, *LIMITS))
    assert same(read_yaml(path), fast)


@needs_c
def test_load_yaml_takes_the_libyaml_path(monkeypatch):
    def refuse(*args):
        raise AssertionError("the reference loader ran")

    monkeypatch.setattr(yu, "_compose_pure", refuse)
    assert read_yaml(EXAMPLES / "cost_ispass24.yml")["InterPod"]["Nic"] == 31.6


def test_without_libyaml_the_reference_loader_reads_the_rest(monkeypatch):
    # what the plain block reader does not take goes to the reference loader
    want = {p: read_yaml(p) for p in SHIPPED}
    not_simple = [p for p in SHIPPED if parse_simple(
        p.read_text(encoding="utf-8"), yu._IMPLICIT, yu._StrictLoader.bool_values
    ) is NOT_SIMPLE]
    monkeypatch.setattr(yu, "_C_LOADER", None)
    calls = []
    pure = yu._compose_pure
    monkeypatch.setattr(yu, "_compose_pure", lambda *a: calls.append(1) or pure(*a))
    for p in SHIPPED:
        assert same(read_yaml(p), want[p])
    assert len(calls) == len(not_simple) > 0
    assert load_scenario("gpt3_175b_4d").name == "gpt3_175b_4d"


# --- the rules, on the libyaml path -----------------------------------------------------------


SMALL_CASES = [
    "a: &x {Link: 1.0}\nb: *x\nc: 1e7\n",
    "n: [1e9, 2.5E+10, -3e-2, +4e4, 1_000, 0x1F, 0o17, 017, 1.5, .inf, -.Inf, .nan]\n",
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

BAD_CASES = [
    "a: 1\na: 2\n",
    "{[1]: 2}\n",
    "base: &b {x: 1, y: 2}\nderived:\n  <<: *b\n  y: 3\n",  # a merge is no way round it
    "? [complex, key]\n: 1\n",
    "x: " + "9" * 5000 + "\n",
    "a: !!python/object:os.system x\n",
    "a: !custom x\n",
    "a: &x [1, *x]\n",
    "a: *nowhere\n",
    "a: [unclosed\n",
    "a: \x01\n",
    "a: \x7f\n",
    "a:\tb\n",  # libyaml takes the tab, the reference loader does not: neither may
    "a: b\u2028c: d\n",
    "a: \"\\ud800\"\n",  # PyYAML takes a lone surrogate escape, libyaml does not
    "--- 1\n--- 2\n",
    "a: &x 1\nb: &x 2\n",
    "%YAML 1.3\n--- a\n",
    "x: 0b12\n",
    # where libyaml reads differently, the reference loader reads (found by hypothesis)
    "!", "\ufeff!", "a: !\nb: ! 12\n", "---\n\ufeff", "|#", "a: >-#\n  x\n",
    "!!int ", "!!float ''", "!!bool maybe", "a: 2020-13-45", "!!timestamp x", "!!map x",
]


@pytest.mark.parametrize("text", BAD_CASES + [_t for _t in SMALL_CASES if "&" in _t])
def test_load_yaml_same_result_or_error_with_or_without_libyaml(tmp_path, monkeypatch, text):
    """The user-visible outcome, error line included, is the reference loader's."""
    p = tmp_path / "d.yaml"
    p.write_text(text, encoding="utf-8", newline="")

    def run() -> Any:
        try:
            return read_yaml(p)
        except InputError as exc:
            return ("InputError", exc.one_line())

    fast = run()
    monkeypatch.setattr(yu, "_C_LOADER", None)
    assert same(fast, run())


@pytest.mark.parametrize("text", SMALL_CASES + BAD_CASES)
def test_small_documents_agree(text):
    agree(text)


@needs_c
@pytest.mark.parametrize("text", SMALL_CASES)
def test_small_documents_on_the_libyaml_path(text):
    assert yu._c_eligible(text)
    assert same(yu._parse_c(text, *LIMITS), yu._parse_pure(text, *LIMITS))


def test_tab_is_refused_as_today(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("a:\tb\n")
    with pytest.raises(InputError) as info:
        read_yaml(p)
    assert info.value.source == str(p) and info.value.field == "line 1, column 3"
    assert info.value.message == "malformed YAML: found character '\\t' that cannot start any token"


def _flow(levels: int) -> str:
    return "[" * (levels - 1) + "x" + "]" * (levels - 1) + "\n"


def _block(levels: int) -> str:
    return "".join(" " * i + f"k{i}:\n" for i in range(levels - 1)) + " " * (levels - 1) + "v\n"


@pytest.mark.parametrize("make", [_flow, _block], ids=["flow", "block"])
@pytest.mark.parametrize("levels", [MAX_YAML_DEPTH - 1, MAX_YAML_DEPTH, MAX_YAML_DEPTH + 1])
def test_depth_limit_at_the_edge(make, levels):
    """A scalar nested in ``levels - 1`` collections sits at level ``levels``: allowed up
    to MAX_YAML_DEPTH, by both loaders alike."""
    text = make(levels)
    agree(text)
    assert outcome(yu._parse, text)[0] == ("ok" if levels <= MAX_YAML_DEPTH else "error")


@needs_c
def test_libyaml_refuses_depth_before_constructing():
    with pytest.raises(yu._Refused):
        yu._parse_c(_flow(MAX_YAML_DEPTH + 1), *LIMITS)
    assert yu._parse_c(_flow(MAX_YAML_DEPTH), *LIMITS) is not None


def test_alias_depth_counts_where_the_anchor_is_written():
    """An alias adds no nesting (the reference loader counts written levels): a deep anchor
    used one level further in is accepted by both."""
    inner = "[" * (MAX_YAML_DEPTH - 2) + "x" + "]" * (MAX_YAML_DEPTH - 2)
    text = f"a: &d {inner}\nb: [*d]\n"
    agree(text)
    assert outcome(yu._parse, text)[0] == "ok"


@pytest.mark.parametrize("levels", [5000, 200_000])
def test_very_deep_flow_is_refused_without_a_crash(tmp_path, levels):
    """libyaml's composer recurses in C: this deep it would overflow the stack. It is
    measured first and refused with today's message."""
    p = tmp_path / "deep.yaml"
    p.write_text("x: " + _flow(levels))
    t0 = time.perf_counter()
    with pytest.raises(InputError) as info:
        read_yaml(p)
    assert time.perf_counter() - t0 < 2.0
    assert info.value.message == f"malformed YAML: nested more than {MAX_YAML_DEPTH} levels deep (limit)"
    assert info.value.field == f"line 1, column {4 + MAX_YAML_DEPTH}"  # the 101st '['


def test_recursion_error_is_the_same_input_error(tmp_path):
    """With the depth limit raised past what Python's recursion takes, the failure is still
    one InputError, as it was with the reference loader alone."""
    p = tmp_path / "deep.yaml"
    p.write_text("x: " + _flow(3000))
    with pytest.raises(InputError) as info:
        read_yaml(p, max_depth=10_000)
    assert info.value.message == "malformed YAML: nested too deep"
    assert info.value.source == str(p)


def _bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@needs_c
def test_libyaml_refuses_a_bomb_without_expanding_it():
    text = _bomb(30)  # 10**30 nodes expanded
    t0 = time.perf_counter()
    with pytest.raises(yu._Refused):
        yu._parse_c(text, *LIMITS)
    assert time.perf_counter() - t0 < 0.5
    agree(_bomb())


@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_node_limit_at_the_edge(extra):
    """``x: [1, ..., 1]`` with n items has n + 3 nodes (mapping, key, list, n items); an
    alias to the list counts its n + 1 nodes again."""
    n = 50
    text = "x: &l [" + ", ".join(["1"] * n) + "]\ny: *l\n"
    total = 1 + 1 + (n + 1) + 1 + (n + 1)
    limits = (MAX_YAML_DEPTH, total + extra)
    want = "ok" if extra >= 0 else "error"
    for fn in ([yu._parse_c] if HAVE_C else []) + [yu._parse_pure]:
        try:
            fn(text, *limits)
            result = "ok"
        except yaml.YAMLError:
            result = "error"
        assert result == want, fn


# --- hypothesis: generated documents -----------------------------------------------------------

_scalars = (
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text(max_size=12)
    | st.floats(allow_nan=False, allow_infinity=True)
    | st.sampled_from(["1e9", "2.5E+10", "yes", "Off", "~", "0x1F", "0o17", "1_000", "2001-12-14",
                       ".inf", "-", ":", "#", "a: b", "'q'", '"', "*x", "&y", "!t", "\\", "? k"])
)
_data = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_scalars, kids, max_size=4),
    max_leaves=25,
)


@given(
    data=_data,
    flow=st.sampled_from([None, True, False]),
    unicode=st.booleans(),
    width=st.sampled_from([20, 80, 10_000]),
    style=st.sampled_from([None, "'", '"', "|", ">"]),
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_dumped_documents_agree(data, flow, unicode, width, style):
    try:
        text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=unicode, width=width,
                              default_style=style)
    except yaml.YAMLError:
        return
    agree(text)


_TOKENS = list("abxyz019eE.+-_ :,[]{}&*!#?|>'\"\n\r\t%@`~\\") + [
    "  ", "- ", ": ", "\n  ", "\n- ", "&a ", "*a", "&b ", "*b", "!!str ", "!!int ", "!!float ",
    "<<: ", "---\n", "...\n", "\ufeff", "\x85", "\u2028", "é", "1e9", "0x", "null", "true",
]


@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join))
@example("[a?]")   # libyaml read ['a?'] where the reference loader refuses it
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_text_agrees(text):
    agree(text)


@given(st.lists(st.sampled_from(["a: ", "- ", "[", "]", "{", "}", "&a ", "*a", "x", ", ", "\n",
                                 "  ", "? ", "&b ", "*b", "<<: *a\n"]), max_size=60).map("".join))
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_random_structure_agrees_under_small_limits(text):
    for limits in [(3, 10), (5, 40), LIMITS]:
        got = outcome(lambda t, *_, lim=limits: yu._parse(t, *lim), text)
        want = outcome(lambda t, *_, lim=limits: yu._parse_pure(t, *lim), text)
        assert got[0] == want[0] and (same(got[1], want[1]) if got[0] == "ok" else got == want)


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


@pytest.mark.parametrize("c_loader", [True, False], ids=["libyaml", "reference"])
def test_cache_rebuilds_what_the_first_read_gave(tmp_path, monkeypatch, c_loader):
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
    if not c_loader:
        monkeypatch.setattr(yu, "_C_LOADER", None)
    cache = ParseCache()
    first, again = read_yaml(p, cache=cache), read_yaml(p, cache=cache)
    want = yu._parse_pure(text, *LIMITS)
    for got in (first, again):
        assert same(got, want)
        assert got["base"] is got["copy"]  # an alias is one object, as PyYAML gives
        assert got["merged"] == {"x": 1000, "y": 31, "z": float("inf"), "w": 2}
    assert again is not first and again["base"] is not first["base"]


@pytest.mark.parametrize("c_loader", [True, False], ids=["libyaml", "reference"])
def test_merged_collections_are_shared_as_pyyaml_shares_them(tmp_path, monkeypatch, c_loader):
    # a list reached through an alias and through a merge key is one object in PyYAML's
    # data; the first read and the cache's later reads give the same sharing
    p = tmp_path / "a.yaml"
    p.write_text("base: &b {x: [1]}\nm: {<<: *b, y: 2}\n")
    if not c_loader:
        monkeypatch.setattr(yu, "_C_LOADER", None)
    want = yaml.load(p.read_text(), Loader=yaml.SafeLoader)
    assert want["m"]["x"] is want["base"]["x"]
    cache = ParseCache()
    for got in (read_yaml(p, cache=cache), read_yaml(p, cache=cache), read_yaml(p)):
        assert same(got, want)
        assert got["m"]["x"] is got["base"]["x"]
