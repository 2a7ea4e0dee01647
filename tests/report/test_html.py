"""The HTML/Markdown report: self-contained, escaped, confined, and its tables carry the
solution's numbers (the toy scenario's optimum is derived by hand in its docstring)."""

from __future__ import annotations

import base64
import dataclasses
import json
from html.parser import HTMLParser

import numpy as np
import pytest

from libra_opt import write_report
from libra_opt.errors import InputError
from libra_opt.explore.study import design_study
from libra_opt.optimize.problem import solve
from libra_opt.report.html import build_report, render_html, render_markdown
from libra_opt.scenario.accuracy import SAME_REL_TOL
from libra_opt.scenario.examples import toy_scenario


class _Collect(HTMLParser):
    """Tags, attributes, and the text of every table cell, row by row, per caption."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str, str | None]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._caption: str | None = None
        self._in: str | None = None
        self._row: list[str] | None = None
        self._buf = ""
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [(tag, k, v) for k, v in attrs]
        if tag == "caption":
            self._in, self._buf = "caption", ""
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._in, self._buf = "cell", ""

    def handle_endtag(self, tag):
        if tag == "caption":
            self._caption = self._buf
            self.tables[self._caption] = []
            self._in = None
        elif tag in ("td", "th") and self._row is not None:
            self._row.append(self._buf)
            self._in = None
        elif tag == "tr" and self._row is not None and self._caption is not None:
            self.tables[self._caption].append(self._row)
            self._row = None

    def handle_data(self, data):
        self.text += data
        if self._in:
            self._buf += data


def _num(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("%"))


@pytest.fixture(scope="module")
def toy_report(tmp_path_factory):
    out = tmp_path_factory.mktemp("rep") / "out"
    sol = solve(toy_scenario())
    written = write_report(sol, out, budget_points=6)
    return sol, out, written


def test_html_parses_and_is_self_contained(toy_report):
    _, out, written = toy_report
    text = (out / "report.html").read_text(encoding="utf-8")
    p = _Collect()
    p.feed(text)
    p.close()
    assert {"html", "head", "body", "table", "img", "style"} <= set(p.tags)
    assert not {"script", "link", "iframe", "object", "embed"} & set(p.tags)
    srcs = [v for tag, k, v in p.attrs if k == "src"]
    assert len(srcs) >= 5
    for src in srcs:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [a for a in p.attrs if a[1] in ("href", "action", "xmlns")]
    for needle in ("http://", "https://", "url(", "@import", "//cdn"):
        assert needle not in text
    assert written["html"] == out / "report.html"


def test_tables_carry_the_hand_derived_optimum(toy_report):
    sol, out, _ = toy_report
    p = _Collect()
    p.feed((out / "report.html").read_text(encoding="utf-8"))
    rows = p.tables["Bandwidth per dimension"]
    assert rows[0][:5] == ["dimension", "topology", "size", "tier", "bandwidth (GB/s per NPU)"]
    body = {r[0]: r for r in rows[1:]}
    # 1 GB on node and 0.5 GB on pod per NPU, 300 GB/s in total: B = (200, 100).
    assert _num(body["node"][4]) == pytest.approx(200.0, rel=1e-5)
    assert _num(body["pod"][4]) == pytest.approx(100.0, rel=1e-5)
    # 32 NPUs: ring of 2 links at $2 per GB/s; switch dim link + switch + NIC = $34 per GB/s.
    assert _num(body["node"][6]) == pytest.approx(32 * 2 * 200.0, abs=1)
    assert _num(body["pod"][6]) == pytest.approx(32 * 34 * 100.0, abs=1)
    assert _num(body["total"][6]) == pytest.approx(121_600, abs=1)
    assert _num(body["node"][7]) == pytest.approx(sol.evaluation.cost.w_by_dim_component.sum(axis=1)[0], abs=1)
    step = p.tables["Step time per workload"]
    assert step[0][2] == "step time (ms)"
    assert _num(step[1][2]) == pytest.approx(15.0, rel=1e-5)   # 10 ms + 1 GB / 200 GB/s
    cons = p.tables["Constraints at the optimum"]
    assert cons[1][0] == "sum(bw) == 300" and cons[1][5] == "yes"
    # d(step)/d(total) = -1.5 GB / total^2 = -1.667e-8 s per GB/s... in seconds per GB/s:
    assert _num(cons[1][6]) == pytest.approx(-1.5 / 300**2, rel=1e-3)
    base = {r[0]: r for r in p.tables["Baselines at the same total bandwidth"][1:]}
    # equal split 150/150: 10 ms + max(1/150, 0.5/150) s = 16.667 ms.
    assert _num(base["equal split"][2]) == pytest.approx(10 + 1000 / 150, rel=1e-5)
    assert base["equal split"][4] == "yes"


def test_sections_present(toy_report):
    _, out, _ = toy_report
    text = (out / "report.html").read_text(encoding="utf-8")
    for title in ("Optimal bandwidth allocation", "Constraints and shadow prices", "Baselines",
                  "Sensitivity", "Budget sweep and Pareto front", "Fabric families"):
        assert f"<h2>{title}</h2>" in text


def test_markdown_references_its_pngs_relatively(toy_report):
    _, out, written = toy_report
    md = (out / "report.md").read_text(encoding="utf-8")
    import re

    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert links and all("/" not in x and (out / x).is_file() for x in links)
    pngs = {p.name for p in out.iterdir() if p.suffix == ".png"}
    assert set(links) == pngs
    assert "| node | ring | 4 |" in md


def test_writes_only_inside_the_directory(tmp_path):
    out = tmp_path / "a" / "b"
    write_report(toy_scenario(), out, budget_points=3)
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file() and out not in p.parents) == []
    assert {p.name for p in out.iterdir()} >= {"report.html", "report.md"}
    assert not [p for p in out.iterdir() if p.name.startswith(".")]   # no temporary left


def test_the_api_refuses_a_non_empty_folder_as_the_command_does(tmp_path):
    # lo.write_report and `libra-opt report --out` are one implementation: a report folder
    # with a manifest, a non-empty folder refused unless overwrite, stale files removed
    out = tmp_path / "r"
    first = write_report(toy_scenario(), out, budget_points=3, search=False)
    listed = set(json.loads(first["manifest"].read_text())["files"])
    assert listed == {p.name for p in out.iterdir()} - {"manifest.json"}
    (out / "report_extra.png").write_bytes(b"stale")   # not listed: a user's file, kept
    # a figure the earlier report listed and this one does not draw: removed
    manifest = json.loads(first["manifest"].read_text())
    manifest["files"].append("report_search.png")
    first["manifest"].write_text(json.dumps(manifest))
    (out / "report_search.png").write_bytes(b"old figure")
    with pytest.raises(InputError, match=r"out_dir: .* is not empty"):
        write_report(toy_scenario(), out, budget_points=3, search=False)
    again = write_report(toy_scenario(), out, budget_points=3, search=False, overwrite=True)
    assert again["html"].is_file() and (out / "report_extra.png").is_file()
    assert not (out / "report_search.png").exists()


def test_user_strings_are_escaped():
    scen = dataclasses.replace(toy_scenario(), name='<script>alert("x")</script>')
    report = build_report(design_study(scen, budget_points=3, families=()))
    h = render_html(report)
    assert "<script>" not in h and "&lt;script&gt;" in h
    md = render_markdown(report)
    assert "<script>" not in md


# ------------------------------------------------------------------ one number format


def _report_table(report, caption):
    return next((h, rows) for sec in report.sections for c, h, rows in sec.tables
                if c == caption)


@pytest.fixture(scope="module")
def tco_study():
    from libra_opt.io import load_scenario

    study = design_study(load_scenario("llama3_405b_h100_tco"), budget_points=3,
                         progress=False, search=False)
    return study, build_report(study)


def test_watts_dollars_and_prices_are_whole_numbers_with_separators(tco_study):
    """The audit saw 1.93754e+06 beside 770,119 (W), 3.09146e+06 beside 90,112 ($ per GB/s)
    and 'cost of one training run = 6.2776e+07 $' beside the TCO table's 62,776,039."""
    study, report = tco_study
    sol, ev = study.solution, study.solution.evaluation
    header, rows = _report_table(report, "Bandwidth per dimension")
    col = header.index("network power (W)")
    watts = [*ev.cost.w_by_dim_component.sum(axis=1), ev.cost.network_power_w]
    assert [r[col] for r in rows] == [f"{round(w):,}" for w in watts]
    # the recorded magnitudes, to the solver's round-off (the last digits move with the build)
    shown = [float(r[col].replace(",", "")) for r in rows]
    np.testing.assert_allclose(shown, [2_136_744, 770_111, 2_906_855], rtol=SAME_REL_TOL)
    header, rows = _report_table(report, "Marginal step time of each dimension")
    col = header.index("price ($ per GB/s)")
    prices = study.sensitivity["usd_per_gbps"].tolist()
    assert [r[col] for r in rows] == [f"{round(p):,}" for p in prices] == ["90,112", "3,091,456"]
    assert report.summary[1].startswith(
        f"Objective tco: cost of one training run = ${round(sol.objective_value):,}; ")
    # no large number anywhere in exponent form (tiny derivatives such as -1.583e-08 may be)
    cells = [c for sec in report.sections for _c, _h, rows in sec.tables for r in rows for c in r]
    assert not [c for c in [*cells, *report.summary] if "e+" in c]


def test_fabric_comparison_has_whole_watts_and_fixed_decimal_percentages(tco_study):
    study, report = tco_study
    header, rows = _report_table(report, "Fabric comparison")
    df = study.comparison
    power, red = header.index("network power (W)"), header.index("cost reduction")
    change = header.index("step time change")
    assert [r[power] for r in rows] == [f"{round(w):,}" for w in df["network_power_w"]]
    assert [r[red] for r in rows] == [f"{x:.2f}%".replace("-0.00", "0.00")
                                      for x in df["cost_reduction_pct"]]
    assert [r[change] for r in rows] == [f"{x:.2f}%".replace("-0.00", "0.00")
                                         for x in df["step_time_change_pct"]]


def test_constraints_of_the_report_read_as_on_the_command_line(capsys):
    """Active bounds showed slack 4.791e-09 and 1.201e-08 where the CLI shows 0."""
    import re

    from libra_opt.cli import main
    from libra_opt.io import load_scenario

    study = design_study(load_scenario("gpt3_175b_a100_cluster"), budget_points=2,
                         progress=False, search=False)
    header, rows = _report_table(build_report(study), "Constraints at the optimum")
    html_rows = {r[0]: r[1:5] for r in rows}
    assert main(["solve", "gpt3_175b_a100_cluster"]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("constraint"))
    cli_rows = {}
    for ln in lines[start + 2:]:
        if not ln.strip():
            break
        cells = re.split(r"\s{2,}", ln.strip())
        cli_rows[cells[0]] = cells[1:5]
    assert html_rows == cli_rows
    assert html_rows["bw.hb <= 600.0"][3] == html_rows["bw.scaleout <= 100.0"][3] == "0"
    assert html_rows["budget_usd"] == ["17,388,800", "<=", "40,000,000", "22,611,200"]


def test_failures_section_of_a_scenario_with_a_reliability_section(tco_study):
    study, report = tco_study
    header, rows = _report_table(report, "Failure modes: what breaks and what it does")
    by = {r[0]: r for r in rows}
    assert by["NPU"][header.index("failures per 54.0 days")] == "196.00"     # Table 5
    assert by["scaleout core"][header.index("effect")].startswith("scaleout at 96.9%")
    header, rows = _report_table(report, "Goodput under checkpoint/restart")
    assert rows[0][header.index("goodput")] == "92.97%"
    html = render_html(report)
    assert "<h2>Failures and goodput</h2>" in html and "Job MTTF 3.27 h" in html
