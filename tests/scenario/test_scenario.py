"""Notebook representations of Scenario and Evaluation: short reprs and parseable HTML tables."""

import dataclasses
from functools import cache
from html.parser import HTMLParser

import pytest

from libra_opt.io.examples import load, names
from libra_opt.optimize.problem import solve
from libra_opt.scenario.display import html_table
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.scenario import Scenario

EXAMPLES = names()
VOID = {"br", "hr", "img", "meta", "input", "col", "wbr"}


class TableParser(HTMLParser):
    """Every ``<table>`` as a list of rows of cell texts (unescaped), plus its caption.

    Fails on mismatched or unclosed tags, so a count that passes also means well-formed.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[list[str]]] = []
        self.captions: list[str] = []
        self._stack: list[str] = []
        self._text: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self._stack.append(tag)
        if tag == "table":
            self.tables.append([])
            self.captions.append("")
        elif tag == "tr":
            assert self.tables, "<tr> outside a <table>"
            self.tables[-1].append([])
        elif tag in ("td", "th", "caption"):
            self._text = []

    def handle_endtag(self, tag):
        assert self._stack and self._stack[-1] == tag, f"</{tag}> closes {self._stack}"
        self._stack.pop()
        if tag in ("td", "th"):
            assert self._text is not None
            self.tables[-1][-1].append("".join(self._text))
            self._text = None
        elif tag == "caption":
            assert self._text is not None
            self.captions[-1] = "".join(self._text)
            self._text = None

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)


def parse_tables(markup: str) -> TableParser:
    """Parse ``markup``; every tag must be closed."""
    p = TableParser()
    p.feed(markup)
    p.close()
    assert not p._stack, f"unclosed tags {p._stack}"
    return p


@cache
def _scenario(name: str) -> Scenario:
    return load(name)


def test_html_table_escapes_and_counts_rows():
    p = parse_tables(html_table(["a", "b"], [["<x>", "1"], ["y & z", "2"]], caption="'c'"))
    assert p.tables == [[["a", "b"], ["<x>", "1"], ["y & z", "2"]]]
    assert p.captions == ["'c'"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_scenario_repr_is_short_and_complete(name):
    scen = _scenario(name)
    r = repr(scen)
    assert len(r) < 2000
    assert r.startswith(f"Scenario({scen.name!r}: {scen.fabric.n_npus:,} NPUs")
    assert len(r.splitlines()) <= 6
    for d in scen.fabric.dims:
        assert f"{d.name} {d.topology} x {d.size}" in r
    assert scen.weights is not None
    for w, wt in zip(scen.workloads, scen.weights, strict=True):
        assert f"{w.name} (weight {wt:g})" in r
    assert f"objective {scen.objective} " in r
    n = len(scen.constraints)
    assert f"{n} linear constraint{'s' if n != 1 else ''}" in r
    if scen.budget_usd is not None:
        assert f"budget ${scen.budget_usd:,.0f}" in r
    else:
        assert "budget" not in r
    if scen.power_w is not None:
        assert f"power cap {scen.power_w:,.0f} W" in r


@pytest.mark.parametrize("name", EXAMPLES)
def test_scenario_html_tables(name):
    scen = _scenario(name)
    p = parse_tables(scen._repr_html_())
    assert len(p.tables) == 2
    dims, wls = p.tables
    assert len(dims) == scen.fabric.n_dims + 1  # header + one row per dimension
    assert dims[0][:3] == ["dim", "topology", "size"]
    assert [row[:3] for row in dims[1:]] == [
        [d.name, d.topology, f"{d.size:,}"] for d in scen.fabric.dims
    ]
    assert len(wls) == len(scen.workloads) + 1
    assert [row[0] for row in wls[1:]] == [w.name for w in scen.workloads]
    assert scen.name in p.captions[0] and scen.objective in p.captions[0]


def test_scenario_repr_truncates_many_workloads_and_escapes_html():
    base = toy_scenario()
    wls = tuple(dataclasses.replace(base.workloads[0], name=f"w{i}") for i in range(20))
    scen = dataclasses.replace(base, workloads=wls, weights=None, name="<b>&'x'")
    r = repr(scen)
    assert len(r) < 2000
    assert "w7 (weight 1)" in r and "w8 " not in r and "... (12 more)" in r
    h = scen._repr_html_()
    assert "<b>" not in h and "&lt;b&gt;&amp;" in h
    p = parse_tables(h)
    assert len(p.tables[1]) == 21  # the HTML lists every workload
    assert "<b>&'x'" in p.captions[0]


def test_scenario_is_still_a_frozen_dataclass():
    scen = toy_scenario()
    assert dataclasses.is_dataclass(scen)
    with pytest.raises(dataclasses.FrozenInstanceError):
        scen.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["gpt3_175b_a100_cluster", "multi_4d"])
def test_evaluation_repr_and_html(name):
    scen = _scenario(name)
    ev = evaluate(scen, solve(scen, with_baselines=False).bw_gbps)
    r = repr(ev)
    assert len(r) < 1000 and "\n" not in r
    bw = ", ".join(f"{b:.1f}" for b in ev.bw_gbps)
    assert f"bw GB/s [{bw}]" in r
    assert f"weighted step time {ev.weighted_step_time_s:.6g} s" in r
    assert f"network cost ${ev.cost.network_cost_usd:,.0f}" in r
    power = ev.cost.network_power_w
    assert (f"network power {power:,.0f} W" in r) if power is not None else ("power" not in r)
    assert r.endswith(", feasible)")

    p = parse_tables(ev._repr_html_())
    dims, wls = p.tables
    assert len(dims) == scen.fabric.n_dims + 1
    assert [row[1] for row in dims[1:]] == [f"{b:.1f}" for b in ev.bw_gbps]
    assert ("power W" in dims[0]) == (power is not None)
    assert len(wls) == len(scen.workloads) + 1
    assert [row[0] for row in wls[1:]] == [t.name for t in ev.workloads]
    assert "feasible" in p.captions[0]


def test_evaluation_repr_names_violated_constraints():
    ev = evaluate(toy_scenario(), [100.0, 100.0])
    assert not ev.feasible()
    assert repr(ev).endswith("infeasible: sum(bw) == 300)")
    assert "infeasible" in parse_tables(ev._repr_html_()).captions[0]
