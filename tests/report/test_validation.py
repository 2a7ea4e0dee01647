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
