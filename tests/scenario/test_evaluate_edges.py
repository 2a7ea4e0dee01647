"""The numpy evaluator at the edges: overflowing or infinite figures are refused (never a
NaN that passes a tolerance check, never a numpy warning), and bandwidths given by name."""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from libra_opt.cli.main import main
from libra_opt.errors import InputError
from libra_opt.io import examples
from libra_opt.scenario.evaluate import evaluate


@pytest.fixture(scope="module")
def gpt3():
    return examples.load("gpt3_175b_4d")


def test_cli_refuses_overflowing_bandwidths_naming_the_flag(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a numpy RuntimeWarning fails the test
        code = main(["evaluate", "gpt3_175b_4d", "--bw", "1e308,1e308,1e308,1e308"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "--bw" in err and "network cost is inf" in err
    assert "all satisfied" not in err


def test_huge_finite_bandwidths_violate_the_total(gpt3):
    """At 1e300 GB/s per dimension ``sum(bw) == 1000`` is violated by 4e300 - 1000, which
    the evaluation reports (the old code compared inf/inf = NaN and called it satisfied)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ev = evaluate(gpt3, [1e300] * 4)
    assert_allclose(ev.residuals["sum(bw) == 1000"], 4e300, rtol=1e-12)
    assert not ev.feasible()


def test_zero_bandwidth_on_a_dimension_with_traffic_is_refused(gpt3):
    with pytest.raises(InputError, match="'chiplet' carries traffic at 0 GB/s") as info:
        evaluate(gpt3, [0.0, 0.0, 0.0, 1000.0])
    assert info.value.field == "bw"


def test_bandwidths_by_dimension_name(gpt3):
    names = gpt3.fabric.names  # chiplet, package, node, pod
    bw = [500.0, 300.0, 150.0, 50.0]
    ref = evaluate(gpt3, bw).weighted_step_time_s
    by_name = dict(zip(names, bw, strict=True))
    assert evaluate(gpt3, dict(reversed(by_name.items()))).weighted_step_time_s == ref
    labelled = pd.Series(by_name)[list(reversed(names))]  # labels in the other order
    assert evaluate(gpt3, labelled).weighted_step_time_s == ref
    assert evaluate(gpt3, pd.Series(bw)).weighted_step_time_s == ref  # 0..n-1: positional
    assert evaluate(gpt3, np.array(bw)).weighted_step_time_s == ref
    # read by position the reversed labelled series is a different design
    assert evaluate(gpt3, labelled.to_numpy()).weighted_step_time_s != ref


def test_unknown_and_missing_names_in_one_message(gpt3):
    with pytest.raises(InputError) as info:
        evaluate(gpt3, {"chiplet": 500.0, "package": 300.0, "node": 150.0, "rack": 50.0})
    msg = str(info.value)
    assert "unknown 'rack'" in msg and "missing 'pod'" in msg
    with pytest.raises(InputError, match="missing 'pod'"):
        evaluate(gpt3, pd.Series({"chiplet": 1.0, "package": 1.0, "node": 1.0}))
