"""Text table and plot of ``libra-opt validate``."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402

from libra_opt.explore.validation import RowResult, TableResult  # noqa: E402
from libra_opt.report.validation import plot_validation, validation_report  # noqa: E402

RES = TableResult("t", "Test table", (
    RowResult("cal row", "S1", "a100_80gb", "step_time_s", 2.0, 2.0, 2.0, True),
    RowResult("row a", "S1", "a100_80gb", "step_time_s", 2.0, 2.1, 2.1, False),
    RowResult("row b", "S2", "a100_80gb", "hardware_tflops_per_gpu", 150.0, 141.0, 9.0, False),
))


def test_report_rows_and_statistics_exclude_calibration():
    text = validation_report([RES])
    assert "cal row" in text and sum(ln.endswith("  cal") for ln in text.splitlines()) == 1
    assert "+5.0%" in text and "-6.0%" in text
    assert text.splitlines()[-1] == "  t: 2 validation rows, average |error| 5.50 %, worst 6.00 %"


def test_plot_returns_a_figure_with_one_point_per_row():
    fig = plot_validation([RES])
    ax = fig.axes[0]
    assert len(ax.lines) == 3 + 1   # rows + the y = 1 line
    assert ax.get_ylabel() == "predicted / published step time"
    assert_allclose(sorted(ax.lines[i].get_ydata()[0] for i in range(3)), [1.0, 1.05, 150 / 141])
    plt.close(fig)


def test_report_pools_the_validation_rows_of_several_tables():
    other = TableResult("u", "Other", (
        RowResult("row c", "S3", "h100_sxm", "step_time_s", 10.0, 8.0, 8.0, False),))
    last = validation_report([RES, other]).splitlines()[-1]
    # |+5 %|, |-6 %| and |-20 %| over three rows: 31 / 3 = 10.33 %
    assert last == "all 2 tables: 3 validation rows, average |error| 10.33 %, worst 20.00 %"
    fitted = validation_report([RES, other], in_sample=True).splitlines()
    assert fitted[-1].startswith("all 2 tables: 3 fitted rows (in-sample), average")


def test_no_negative_zero_whole_names_and_one_format_per_column():
    """The audit saw '-0.0%', '1.204e+04' beside '1533' in one column, and two distinct rows
    cut to the same 41 characters ('BLOOM-prequel 181B (02-25), TP 8, PP 12, ')."""
    a = "BLOOM-prequel 181B (02-25), TP 8, PP 12, MBS 4"
    b = "BLOOM-prequel 181B (02-25), TP 8, PP 12, MBS 2"
    res = TableResult("n", "N", (
        RowResult(a, "BP", "h100_sxm", "tokens_per_s_per_gpu", 1533.0, 1532.994, 0.0, False),
        RowResult(b, "BP", "h100_sxm", "tokens_per_s_per_gpu", 12036.0, 13536.4, 0.0, False),
        RowResult("c", "BP", "h100_sxm", "tokens_per_s_per_gpu", 292.0, 300.94, 0.0, False),
    ))
    assert -1e-5 < res.rows[0].error < 0   # rounds to zero: never '-0.0%'
    text = validation_report([res])
    lines = {ln.split("  ")[1]: ln for ln in text.splitlines() if ln.startswith("  BLOOM")}
    assert set(lines) == {a, b}   # whole names: two rows, two names
    assert "-0.0%" not in text and "e+" not in text
    assert lines[a].split()[-2:] == ["1,533", "0.0%"]
    assert lines[b].split()[-3:] == ["12,036", "13,536", f"{100 * res.rows[1].error:+.1f}%"]
    row_c = next(ln for ln in text.splitlines() if ln.startswith("  c "))
    assert row_c.split()[-3:-1] == ["292", "301"]   # one column, one rule: no decimals here


def test_stack_report_keeps_whole_names():
    from libra_opt.explore.ranking import stack_summaries
    from libra_opt.report.validation import stack_report

    long = "Llama 3.1 405B, 1024 GPUs, GBS 1536 (26.04.01), a name longer than 46 characters"
    rows = (RowResult("cal", "S", "d", "step_time_s", 2.0, 2.0, 2.0, True, stack="s",
                      calibrate_stack=True),
            RowResult(long, "S", "d", "step_time_s", 2.0, 1.99999, 2.0, False, stack="s"))
    text = stack_report(stack_summaries([TableResult("t", "T", rows)]))
    assert -1e-5 < rows[1].error < 0 and "-0.0%" not in text
    (line,) = [ln for ln in text.splitlines() if long in ln]
    assert line.split()[-2:] == ["d", "0.0%"]


def test_error_summary_is_the_printed_rounding():
    from libra_opt.report.validation import error_summary

    # llama3_meta's one out-of-sample row: 0.8046 % is 0.80 %, not 0.81 %
    assert error_summary([-0.008045882402590743]) == "average |error| 0.80 %, worst 0.80 %"
    assert error_summary([0.05, -0.06]) == "average |error| 5.50 %, worst 6.00 %"


def _bboxes(texts):
    return [t.get_window_extent() for t in texts if t.get_visible() and t.get_text()]


def _overlapping(boxes) -> list[tuple[int, int]]:
    return [(i, j) for i, p in enumerate(boxes) for j, q in enumerate(boxes[i + 1:], i + 1)
            if p.x0 < q.x1 and q.x0 < p.x1 and p.y0 < q.y1 and q.y0 < p.y1]


def test_validation_plot_names_and_tick_labels_never_overlap():
    """Table names ran into each other ('korthikanti22_a100llama3_h100megatron_sc21...') and
    rotated, wrapped row names covered their neighbours."""
    names = ["bloom_prequel_a100", "korthikanti22_a100", "llama3_h100", "megatron_sc21_a100",
             "mtnlg_a100", "nemo2407_h100", "nemo_h100"]
    sizes = [6, 4, 3, 4, 3, 4, 1]
    results = [TableResult(n, n, tuple(
        RowResult(f"{n} row {i}: Llama 3.1 405B, 1024 GPUs, GBS 1536 (26.04.01)", "S", "d",
                  "step_time_s", 2.0, 2.0 + 0.01 * i, 2.0, False) for i in range(k)))
        for n, k in zip(names, sizes, strict=True)]
    fig = plot_validation(results)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    titles = [t for t in ax.texts if t.get_text() in names]
    assert sorted(t.get_text() for t in titles) == sorted(names)
    assert _overlapping(_bboxes(titles)) == []
    ticks = ax.get_xticklabels()
    assert len(ticks) == sum(sizes) and "\n" not in "".join(t.get_text() for t in ticks)
    assert _overlapping(_bboxes(ticks)) == []
    plt.close(fig)


def test_variant_sets_never_share_a_colour_and_marker():
    """13 sets drawn with 10 colours: three pairs looked alike."""
    from matplotlib.colors import to_hex

    from libra_opt.explore.ranking import variant_rankings
    from libra_opt.report.validation import plot_variants

    rows = tuple(RowResult(f"v{k} r{i}", "S", "d", "step_time_s", 1.0 + i, 1.1 + i, 1.1, False,
                           variant_set=f"set{k}", n_npus=8, samples_per_step=8.0)
                 for k in range(13) for i in range(2))
    sets = variant_rankings([TableResult("t", "T", rows)])
    fig = plot_variants(sets)
    ax = fig.axes[0]
    series = [ln for ln in ax.lines if ln.get_label().startswith("set")]
    assert len(series) == 13
    assert len({(to_hex(ln.get_color()), ln.get_marker()) for ln in series}) == 13
    assert ax.get_legend() is None and len(fig.legends) == 1   # below the plot, not over it
    plt.close(fig)


def test_one_row_is_a_row_not_rows():
    """``libra-opt validate`` printed 'llama3_h100: 1 validation rows'."""
    from libra_opt.explore.ranking import stack_summaries
    from libra_opt.report.validation import stack_report

    one = TableResult("t", "T", (
        RowResult("cal", "S", "d", "step_time_s", 2.0, 2.0, 2.0, True, stack="s",
                  calibrate_stack=True),
        RowResult("a", "S", "d", "step_time_s", 2.0, 2.1, 2.1, False, stack="s")))
    assert validation_report([one]).splitlines()[-1].startswith("  t: 1 validation row, ")
    fitted = validation_report([one], in_sample=True).splitlines()[-1]
    assert fitted.startswith("  t: 1 fitted row (in-sample), ")
    lines = stack_report(stack_summaries([one])).splitlines()
    assert lines[-2].startswith("  s: 1 out-of-sample row, ")
    assert lines[-1].startswith("pooled over all stacks: 1 out-of-sample row, ")
    # and two are rows
    assert validation_report([RES]).splitlines()[-1].startswith("  t: 2 validation rows, ")


def _point_style(line):
    return (line.get_marker(), line.get_markeredgecolor(), line.get_markerfacecolor())


def test_convention_rows_have_their_own_legend_entry():
    """The convention-dependent row (calibrate is set for it too) was drawn as a hollow
    orange circle under a title that explained only 'hollow: calibration rows'."""
    from matplotlib.colors import to_rgba

    conv = RowResult("conv row", "S", "d", "step_time_s", 2.0, 1.8, 1.8, True,
                     convention="128K", convention_band=0.16)
    assert conv.role == "convention" and conv.calibrate
    res = TableResult("t", "T", (*RES.rows, conv))
    fig = plot_validation([res])
    ax = fig.axes[0]
    points = {ln.get_xdata()[0]: ln for ln in ax.lines if len(ln.get_xdata()) == 1}
    cal, valid, conv_pt = points[0], points[1], points[3]
    # three kinds, three looks: the convention row is neither a calibration nor a judged row
    assert len({_point_style(cal), _point_style(valid), _point_style(conv_pt)}) == 3
    assert to_rgba(cal.get_markerfacecolor())[3] == 0   # calibration rows hollow
    (legend,) = fig.legends
    entries = dict(zip([t.get_text() for t in legend.get_texts()], legend.legend_handles,
                       strict=True))
    assert list(entries) == ["validation row (judged)",
                             "calibration row (constants fitted on it; not judged)",
                             "convention-dependent row (reported, not judged)"]
    # each entry looks like its points
    for text, pt in zip(entries, (valid, cal, conv_pt), strict=True):
        assert _point_style(entries[text]) == _point_style(pt), text
    assert "hollow" not in ax.get_title()
    fig.canvas.draw()
    assert fig.bbox.x0 <= legend.get_window_extent().x0
    assert legend.get_window_extent().x1 <= fig.bbox.x1
    plt.close(fig)
    # a plot without such a row names no such kind
    fig = plot_validation([RES])
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "validation row (judged)", "calibration row (constants fitted on it; not judged)"]
    plt.close(fig)


def test_variants_are_points_not_lines_in_table_order():
    """variants.png joined each set's points in table order: a zig-zag meaning nothing."""
    from libra_opt.explore.ranking import variant_rankings
    from libra_opt.report.validation import plot_variants

    # measured 3, 1, 2 GPU-s: in table order a line would go right, left, right
    rows = tuple(RowResult(f"r{i}", "S", "d", "step_time_s", m, p, p, False, variant_set="v",
                           n_npus=8, samples_per_step=8.0)
                 for i, (m, p) in enumerate([(3.0, 3.3), (1.0, 1.1), (2.0, 1.9)]))
    fig = plot_variants(variant_rankings([TableResult("t", "T", rows)]))
    ax = fig.axes[0]
    (pts,) = [ln for ln in ax.lines if ln.get_label().startswith("v ")]
    assert pts.get_linestyle() == "None"
    # every variant a point, at its cost over the set's measured best (1.0 GPU-s)
    points = sorted(zip(pts.get_xdata(), pts.get_ydata(), strict=True))
    assert points == [(1.0, 1.1), (2.0, 1.9), (3.0, 3.3)]
    # the one line is the diagonal, named in the legend
    (diag,) = [ln for ln in ax.lines if ln.get_linestyle() != "None"]
    assert list(diag.get_xdata()) == list(diag.get_ydata())
    assert diag.get_label() in [t.get_text() for t in fig.legends[0].get_texts()]
    plt.close(fig)


def test_count_plural_and_note():
    from libra_opt.report.validation import _count

    assert _count(1, "validation row") == "1 validation row"
    assert _count(3, "fitted row", " (in-sample)") == "3 fitted rows (in-sample)"
