"""The report's co-design search section: the design study runs a search over the bounded
space and the report renders it; its table, counts and gains are cross-checked against
``lo.search`` on the same space, run separately, and against the scenario's own optimum."""

from __future__ import annotations

import math

import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.explore.search_base import search_base
from libra_opt.explore.study import REPORT_SEARCH_TOP, design_study, report_search_space
from libra_opt.report.html import build_report, render_html, render_markdown
from libra_opt.scenario.examples import toy_scenario
from tests.cli.test_search import MODEL, SCENARIO
from tests.report.test_html import _Collect, _num


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """64 H100s (hb 8 x scale-out 8) training a 4-layer model; the scenario's own layout is
    TP 8 (the HB domain) x DP 8, PP 1, i.e. the conventional one."""
    d = tmp_path_factory.mktemp("tiny")
    (d / "tiny.yaml").write_text(MODEL)
    (d / "s.yaml").write_text(SCENARIO)
    return lo.load_scenario(d / "s.yaml")


@pytest.fixture(scope="module")
def study(tiny):
    return design_study(tiny, budget_points=2, families=(), progress=False)


def _section(report, title):
    return next(s for s in report.sections if s.title == title)


def test_search_section_carries_the_numbers_of_a_separate_search(tiny, study) -> None:
    space = report_search_space(search_base(tiny))
    # the bounded space: the workload's own knobs, the scenario's own fabric
    assert (space.micro_batch_sizes, space.recompute, space.zero, space.hb_domains) == (
        (1,), ("full",), (1,), None)
    ref = lo.search(tiny, space=space, top=REPORT_SEARCH_TOP, gains=True)
    best = ref.best(REPORT_SEARCH_TOP)
    assert len(best) == REPORT_SEARCH_TOP

    report = build_report(study)
    sec = _section(report, "Co-design search")
    caption, header, rows = sec.tables[0]
    assert caption == f"The {REPORT_SEARCH_TOP} best candidates"
    col = {h: i for i, h in enumerate(header)}
    assert len(rows) == REPORT_SEARCH_TOP
    for row, (_, r) in zip(rows, best.iterrows(), strict=True):
        assert [int(row[col[k]]) for k in ("rank", "TP", "CP", "PP", "DP", "EP")] == [
            r["rank"], r["tp"], r["cp"], r["pp"], r["dp"], r["ep"]]
        assert row[col["placement"]] == r["placement"]
        # printed with 4 significant digits (step time, tokens/s), 3 decimals (MFU),
        # 0.1 GB and 0.1 GB/s, whole dollars, 6 digits (objective)
        assert_allclose(_num(row[col["step time (s)"]]), r["step_time_s"], rtol=5e-4)
        assert_allclose(_num(row[col["tokens/s"]]), r["tokens_per_s"], rtol=5e-4)
        assert_allclose(_num(row[col["MFU"]]), r["mfu"], atol=5e-4)
        assert_allclose(_num(row[col["memory per NPU (GB)"]]), r["memory_per_npu_gb"], atol=0.05)
        assert_allclose(_num(row[col["hb (GB/s)"]]), r["bw_hb_gbps"], atol=0.05 + 1e-6 * r["bw_hb_gbps"])
        assert_allclose(_num(row[col["scaleout (GB/s)"]]), r["bw_scaleout_gbps"],
                        atol=0.05 + 1e-6 * r["bw_scaleout_gbps"])
        assert_allclose(_num(row[col["network cost ($)"]]), r["network_cost_usd"],
                        rtol=1e-6, atol=0.5)
        assert_allclose(_num(row[col["objective (s)"]]), r["objective"], rtol=5e-6)
    # the counts of the text are the separate search's
    s = ref.stats
    text = " ".join(sec.text)
    assert (f"{int(s['enumerated']):,} candidates: {int(s['memory']):,} do not fit in memory, "
            f"{int(s['pruned']):,} are pruned") in text
    # gains: the equal-split ratio of the separate search; the conventional layout is the
    # scenario's own here, so its ratio is the study's own optimum over the search's best
    g = ref.gains
    assert f"{g['equal_split']:.3f}x against the best parallelization" in text
    conv = study.solution.objective_value / float(best["objective"].iloc[0])
    assert_allclose(g["conventional"], conv, rtol=1e-6)
    assert f"{conv:.3f}x against the conventional layout (TP 8 on the HB domain, PP 1" in text
    assert g["equal_split"] >= 1 - 1e-9 and conv >= 1 - 1e-9  # the co-design is no worse
    # the figure, and the rendered HTML table with the same cells
    assert [name for name, _c, png in sec.figures if png.startswith(b"\x89PNG")] == ["search"]
    parsed = _Collect()
    parsed.feed(render_html(report))
    assert parsed.tables[caption][1:] == rows
    assert "## Co-design search" in render_markdown(report)


def test_a_scenario_the_search_cannot_take_gets_one_line() -> None:
    study = design_study(toy_scenario(), budget_points=2, families=(), progress=False)
    assert study.search is None
    sec = _section(build_report(study), "Co-design search")
    assert sec.tables == [] and sec.figures == [] and len(sec.text) == 1
    assert sec.text[0].startswith("Co-design search not run: the co-design search needs a "
                                  "scenario compiled from a spec")
    skipped = design_study(toy_scenario(), budget_points=2, families=(), progress=False,
                           search=False)
    assert _section(build_report(skipped), "Co-design search").text == [
        "Co-design search not run: not asked for"]
    assert math.isfinite(study.timings_s["search_s"])
