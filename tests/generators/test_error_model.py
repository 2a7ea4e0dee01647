"""The error model's rules (libra_opt.generators.error_model), on runs whose answers are
worked out by hand."""

import math

import pytest

from libra_opt.generators.error_model import MIN_RUNS, Band, ErrorModel, ValidatedRun


def run(name, device, stack, error, role="validation", **knobs):
    return ValidatedRun(name, "t", device, stack, role, error, **knobs)


# a100: 3 out-of-sample runs of stack s (|e| 0.02, 0.05, 0.01), 1 of stack r (0.30), one
# calibration run of s (in-sample, 0.0); h100: 2 runs of stack q only (0.04, 0.08)
RUNS = (
    run("a", "a100", "s", 0.02, tp=8, pp=8, micro_batch_size=1, mfu_measured=0.50),
    run("b", "a100", "s", -0.05, tp=4, pp=16, micro_batch_size=2, mfu_measured=0.55),
    run("c", "a100", "s", 0.01, tp=8, pp=1, micro_batch_size=4, recompute="full"),
    run("d", "a100", "r", 0.30, tp=2, pp=4, recompute="selective"),
    run("e", "a100", "s", 0.0, role="device", tp=8, pp=64, mfu_measured=0.58),
    run("f", "h100", "q", 0.04, tp=8, pp=2),
    run("g", "h100", "q", -0.08, tp=8, pp=4),
)
MODEL = ErrorModel(RUNS)


def test_a_stack_with_enough_runs_gets_its_own_worst_error():
    assert MIN_RUNS == 3
    b = MODEL.band("a100", "s", {"tp": 8, "pp": 8})
    assert b.rel_error == pytest.approx(0.05) and b.inside


def test_too_few_runs_fall_back_to_the_device_then_to_every_device():
    # stack r has one run: every a100 run (|e| up to 0.30)
    assert MODEL.band("a100", "r", {"tp": 2}).rel_error == pytest.approx(0.30)
    # h100 has two runs in all: every device's runs (0.30 again, the worst anywhere)
    assert MODEL.band("h100", "q", {"tp": 8}).rel_error == pytest.approx(0.30)


def test_outside_the_envelope_takes_the_worst_error_and_says_why():
    # the a100 envelope: tp 2-8, pp 1-64, micro-batch 1-4, recompute none/full/selective
    b = MODEL.band("a100", "s", {"tp": 16, "pp": 8, "micro_batch_size": 8})
    assert b.rel_error == pytest.approx(0.30)
    assert b.outside == ("tp 16 (validated 2-8)", "micro-batch 8 (validated 1-4)")
    assert not b.inside
    assert MODEL.outside("a100", "s", {"recompute": "selective"}) == ()
    assert MODEL.outside("h100", "q", {"recompute": "full"}) == (
        "recompute full (validated none)",)
    assert MODEL.outside("b200", "s", {}) == ("device b200 (no validated runs)",)
    assert MODEL.outside("a100", "z", {}) == ("software stack z (no validated runs on a100)",)


def test_the_worst_band_counts_out_of_sample_runs_only():
    # run e (calibration) is excluded; the worst is d's 0.30
    assert MODEL.worst_band == pytest.approx(0.30)
    assert math.isnan(ErrorModel((run("x", "a", "s", 0.1, role="device"),)).worst_band)


def test_interval_inverts_the_relative_error():
    # e = t_pred / t_meas - 1 in [-b, b]  ->  t_meas in [t / (1 + b), t / (1 - b)]
    lo, hi = Band(0.25, "x").interval_s(10.0)
    assert lo == pytest.approx(8.0) and hi == pytest.approx(40.0 / 3.0)
    assert Band(1.0, "x").interval_s(1.0)[1] == math.inf


def test_rank_band_is_the_worst_ratio_error_within_a_set():
    runs = (run("a", "g", "s", 0.10, variant_set="v"), run("b", "g", "s", -0.05, variant_set="v"),
            run("c", "g", "s", 0.50, variant_set="w"), run("d", "g", "s", 0.52, variant_set="w"),
            run("e", "g", "t", 0.0))
    m = ErrorModel(runs)
    # set v: 1.10 / 0.95 - 1 = 0.157895; set w: 1.52 / 1.50 - 1 = 0.013333
    assert m.rank_band("g", "s") == pytest.approx(1.10 / 0.95 - 1)
    # stack t has no set: the device's sets
    assert m.rank_band("g", "t") == pytest.approx(1.10 / 0.95 - 1)
    assert math.isnan(ErrorModel((run("e", "g", "t", 0.0),)).rank_band("g", "t"))


def test_best_measured_mfu():
    assert MODEL.best_mfu("a100") == (0.58, "e")
    assert MODEL.best_mfu("h100") is None
