"""The report's co-design search section: the design study runs a search over the bounded
space and the report renders it; its table, counts and gains are cross-checked against
``lo.search`` on the same space, run separately, and against the scenario's own optimum."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.explore.search import search_base
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
        # step time and objective in one rule, 6 significant digits (the step time had 4:
        # '24.5' beside '24.4981'), whole tokens/s with thousands separators, MFU as a
        # percentage (as everywhere else; the column is a fraction), 0.1 GB and 0.1 GB/s,
        # whole dollars
        for h, v in (("step time (s)", r["step_time_s"]), ("objective (s)", r["objective"])):
            assert 1e-4 < v < 1e5 and row[col[h]] == f"{v:.6g}", (h, row[col[h]], v)
        assert row[col["tokens/s"]] == f"{r['tokens_per_s']:,.0f}"
        assert "," in row[col["tokens/s"]] and "e+" not in row[col["tokens/s"]]
        assert row[col["MFU"]] == f"{100 * r['mfu']:.1f}%" and 0 < r["mfu"] < 1
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


TCO = """tco: {accelerator_usd: 30000, host_usd_per_npu: 6000, npu_power_w: 700,
      host_power_w_per_npu: 300, pue: 1.3, electricity_usd_per_kwh: 0.08,
      lifetime_years: 4, steps: 100000}
"""


def test_search_section_shows_the_training_cost_per_million_tokens(tmp_path) -> None:
    from libra_opt.cost.tco import tco_breakdown

    (tmp_path / "tiny.yaml").write_text(MODEL)
    (tmp_path / "s.yaml").write_text(SCENARIO.replace("objective: perf", "objective: tco")
                                     + TCO)
    study = design_study(lo.load_scenario(tmp_path / "s.yaml"), budget_points=2, families=(),
                         progress=False)
    caption, header, rows = _section(build_report(study), "Co-design search").tables[0]
    # the cost of one training run per million tokens, not a TCO (the cluster's lifetime cost)
    assert "training cost per million tokens ($)" in header
    assert not any("TCO" in h for h in header)
    col = {h: i for i, h in enumerate(header)}
    for row, sol in zip(rows, study.search.solutions, strict=True):
        scen = sol.scenario
        b = tco_breakdown(scen.tco, scen.fabric, scen.coefficients, sol.bw_gbps,
                          sol.evaluation.weighted_step_time_s)
        tokens = 100000 * scen.workloads[0].metrics.tokens_per_step
        assert_allclose(_num(row[col["training cost per million tokens ($)"]]),
                        b.run_usd / tokens * 1e6, rtol=5e-4)
        assert_allclose(_num(row[col["objective ($)"]]), b.run_usd, rtol=5e-6)


def _label_boxes(fig):
    """The texts written in the axes (not empty) and their boxes, and the legend's box,
    from the drawn figure."""
    fig.canvas.draw()
    ax = fig.axes[0]
    texts = [t for t in ax.texts if t.get_text()]
    return texts, [t.get_window_extent() for t in texts], ax.get_legend().get_window_extent()


def _assert_readable(fig) -> list[str]:
    from tests.figure_check import figure_problems

    texts, boxes, legend = _label_boxes(fig)
    inside = fig.axes[0].get_window_extent()
    for i, box in enumerate(boxes):
        assert fig.bbox.containsx(box.x0) and fig.bbox.containsx(box.x1), texts[i]
        assert fig.bbox.containsy(box.y0) and fig.bbox.containsy(box.y1), texts[i]
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1, texts[i]
        assert inside.y0 <= box.y0 and box.y1 <= inside.y1, texts[i]
        assert not box.overlaps(legend), texts[i]
        for j in range(i):
            assert not box.overlaps(boxes[j]), (texts[j].get_text(), texts[i].get_text())
    assert figure_problems(fig) == []
    return [t.get_text() for t in texts]


def test_search_plot_labels_never_overlap_and_stay_inside() -> None:
    import matplotlib.pyplot as plt

    from libra_opt.report.search_plot import plot_search

    # ranks 1 and 2 on one point, 3 and 4 on another a hair away, 5 at the right edge,
    # 6 at the top-left corner, 7 to 10 bunched together; a pruned row (rank NA)
    x = [128.4, 128.4, 131.7, 131.7, 400.0, 100.0, 250.0, 250.1, 250.2, 250.3, 300.0, 150.0]
    y = [2.397, 2.397, 2.42, 2.42, 2.43, 4.0, 3.0, 3.0, 3.001, 3.001, 3.5, 2.6]
    t = pd.DataFrame({
        "status": ["optimal"] * 12 + ["pruned"], "network_cost_usd": [v * 1e6 for v in x] + [0],
        "run_cost_usd_per_mtoken": [*y, float("nan")],
        "step_time_s": [6.0] * 13, "rank": pd.array([*range(1, 13), None], dtype="Int64"),
        "tp": [4] * 13, "cp": [4] * 13, "pp": [16] * 13, "dp": [64] * 13,
        "zero": [1, 2] * 6 + [1]})
    fig = plot_search(SimpleNamespace(table=t, objective="tco"), top=10)
    try:
        # each of the 10 best numbered by its rank, its layout in the legend
        assert _assert_readable(fig) == [str(k) for k in range(1, 11)]
        legend = [x.get_text() for x in fig.axes[0].get_legend().get_texts()]
        # no placement column to tell rows of one layout apart: their ranks do
        assert legend[3:] == [f"TP4 CP4 PP16 DP64 ZeRO {z} (rank {k})"
                              for k, z in zip(range(1, 11), [1, 2] * 5, strict=True)]
    finally:
        plt.close(fig)


def test_report_search_figure_labels_are_readable(study) -> None:
    import matplotlib.pyplot as plt

    from libra_opt.report.search_plot import plot_search

    fig = plot_search(study.search, top=REPORT_SEARCH_TOP)
    try:
        assert _assert_readable(fig) == [str(k) for k in range(1, REPORT_SEARCH_TOP + 1)]
    finally:
        plt.close(fig)


def test_candidates_differing_only_in_placement_have_distinct_legend_entries() -> None:
    """Ranks 1 and 3 of the Llama 3 405B TCO search both read 'TP4 CP4 PP16 DP64 mb 1
    ZeRO 1': they differ in placement only."""
    import matplotlib.pyplot as plt

    from libra_opt.report.search_plot import plot_search

    a = "tp: hb 4 | cp: hb 2, scaleout 2 | dp: scaleout 64 | pp: scaleout 16"
    b = "tp: hb 4 | cp: scaleout 4 | dp: hb 2, scaleout 32 | pp: scaleout 16"
    c = "tp: hb 4 | cp: hb 2, scaleout 4 | dp: scaleout 32 | pp: scaleout 16"
    t = pd.DataFrame({
        "status": ["optimal"] * 4, "network_cost_usd": [128.4e6, 128.4e6, 131.7e6, 132.8e6],
        "step_time_s": [6.448, 6.448, 6.476, 6.485], "rank": pd.array([1, 2, 3, 4], "Int64"),
        "tp": [4] * 4, "cp": [4, 4, 4, 8], "pp": [16] * 4, "dp": [64, 64, 64, 32],
        "zero": [1, 2, 1, 1], "placement": [a, a, b, c]})
    fig = plot_search(SimpleNamespace(table=t, objective="perf"), top=4)
    try:
        legend = [x.get_text() for x in fig.axes[0].get_legend().get_texts()][3:]
        assert len(set(legend)) == 4
        # ranks 1 and 3 (same degrees, same ZeRO) named by the first group placed
        # differently (cp; tp is placed alike, and cp's placement already tells them apart)
        assert legend[0] == "TP4 CP4 PP16 DP64 ZeRO 1 [cp: hb 2, scaleout 2]"
        assert legend[2] == "TP4 CP4 PP16 DP64 ZeRO 1 [cp: scaleout 4]"
        # ranks 2 and 4 are told apart by their knobs already: no placement added
        assert legend[1] == "TP4 CP4 PP16 DP64 ZeRO 2" and legend[3] == "TP4 CP8 PP16 DP32 ZeRO 1"
        _assert_readable(fig)
    finally:
        plt.close(fig)


def test_rows_alike_in_every_shown_knob_and_placement_get_their_rank() -> None:
    from libra_opt.report.search_plot import _layouts

    best = pd.DataFrame({"rank": [1, 2], "tp": [8, 8], "cp": [1, 1], "pp": [2, 2],
                         "dp": [4, 4], "placement": ["auto", "auto"]})
    assert _layouts(best) == ["TP8 CP1 PP2 DP4 (rank 1)", "TP8 CP1 PP2 DP4 (rank 2)"]
    # three alike but for placement, the first group (tp) telling only two of them apart
    best = pd.DataFrame({"rank": [1, 2, 3], "tp": [8] * 3, "cp": [1] * 3, "pp": [2] * 3,
                         "dp": [4] * 3, "placement": ["tp: hb 8 | pp: so 2 | dp: so 4",
                                                     "tp: hb 8 | pp: hb 2 | dp: so 4",
                                                     "tp: so 8 | pp: hb 2 | dp: so 4"]})
    assert _layouts(best) == ["TP8 CP1 PP2 DP4 [tp: hb 8 | pp: so 2]",
                              "TP8 CP1 PP2 DP4 [tp: hb 8 | pp: hb 2]",
                              "TP8 CP1 PP2 DP4 [tp: so 8 | pp: hb 2]"]
