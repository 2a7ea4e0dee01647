"""Fitting software-stack constants, predicting rows, and the variant-set ranking statistics.

Independent checks: recovery of a known constant from model-made rows, the cap of the fit
derived by hand, Spearman's rho against scipy and against a hand computation, regret by hand.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose
from scipy.stats import spearmanr

from libra_opt.errors import InputError
from libra_opt.explore.calibration import calibrate_stacks
from libra_opt.explore.ranking import spearman, variant_rankings
from libra_opt.explore.validation import RowResult, TableResult, predict_row
from libra_opt.generators.stacks import with_stacks
from libra_opt.generators.validation import ValidationTable
from libra_opt.io.validation import load_validation_table, validation_table_from_dict

K22 = load_validation_table("korthikanti22_a100")
SMALL = tuple(r for r in K22.rows if r.name.startswith("K22 22B"))


def test_stack_fit_recovers_a_known_constant_from_model_made_rows():
    truth = 0.77
    dev = with_stacks(SMALL[0].cluster.device, {"my_stack": truth})
    rows = []
    for r, mark in zip(SMALL, (True, False), strict=True):
        r = dataclasses.replace(r, parallelism=r.parallelism.model_copy(
            update={"software_stack": "my_stack"}), calibrate=False)
        made = predict_row(r, dev).predicted
        start = with_stacks(r.cluster.device, {"my_stack": 1.0})
        rows.append(dataclasses.replace(r, published=made, calibrate_stack=mark,
                                        cluster=dataclasses.replace(r.cluster, device=start)))
    (cal,) = calibrate_stacks([ValidationTable("synthetic", "model-made", tuple(rows))])
    assert (cal.stack, cal.device, cal.before) == ("my_stack", "a100_80gb", 1.0)
    assert_allclose(cal.after, truth, rtol=1e-5)
    assert cal.rows == ("synthetic: K22 22B full recompute",)
    # the unmarked row, made with the same truth, validates exactly with the fitted constant
    fitted = with_stacks(rows[1].cluster.device, {"my_stack": cal.after})
    assert abs(predict_row(rows[1], fitted).error) < 1e-5


def _table(rows):
    return {"name": "t", "clusters": {"c": {"device": "a100_80gb", "gpus_per_node": 8,
            "node": {"bw_gbps": 230}, "pod": {"bw_gbps": 25}}},
            "defaults": {"cluster": "c"}, "rows": rows}


ROW = {"name": "r", "source": "me", "metric": "step_time_s", "published": 1.0,
       "model": "llama3_8b", "parallelism": {"tp": 8, "global_batch_size": 8}}


def test_table_marks_are_checked():
    with pytest.raises(InputError, match=r"t.yaml: rows\[0\].calibrate"):
        validation_table_from_dict(_table([{**ROW, "calibrate": "device"}]), "t.yaml")
    with pytest.raises(InputError, match=r"rows\[0\].convention: convention_band needs"):
        validation_table_from_dict(_table([{**ROW, "convention_band": 0.1}]), "t.yaml")
    t = validation_table_from_dict(_table([{**ROW, "calibrate": "stack"}]), "t.yaml")
    assert t.rows[0].calibrate_stack and not t.rows[0].calibrate
    with pytest.raises(InputError, match=r"rows\[0\].calibrate: stack 'megatron_lm_2022' is "
                       "the calibration stack of a100_80gb"):
        calibrate_stacks([t])


def test_spearman_matches_scipy_and_a_hand_value():
    # ranks of a: 1, 2.5, 2.5, 4; of b: 1..4 -> cov 4.5, var 4.5 and 5: 4.5 / sqrt(22.5)
    a, b = [1.0, 2.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]
    assert_allclose(spearman(a, b), 4.5 / 22.5 ** 0.5, rtol=1e-12)
    for x, y in ((a, b), ([3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8, 2, 8, 1, 8])):
        assert_allclose(spearman(x, y), spearmanr(x, y).statistic, rtol=1e-12)


def test_regret_and_pick_by_hand():
    # measured costs (8 GPUs x t / 8 samples): 1.0, 1.2, 1.5; the model ranks the second first
    def row(name, measured, predicted):
        return RowResult(name, "s", "d", "step_time_s", measured, predicted, predicted, False,
                         variant_set="v", n_npus=8, samples_per_step=8.0)

    rows = (row("a", 1.0, 1.3), row("b", 1.2, 1.1), row("c", 1.5, 1.6))
    (v,) = variant_rankings([TableResult("t", "t", rows)])
    assert (v.pick, v.best) == ("b", "a")
    assert_allclose(v.regret, 1.2 / 1.0 - 1, rtol=1e-12)
    assert_allclose(v.spearman, 0.5, rtol=1e-12)   # ranks (1,2,3) vs (2,1,3): 1 - 6*2/24


def test_tokens_per_second_metric_is_tokens_over_time_and_gpus():
    t = load_validation_table("nemo_h100")
    row = t.rows[0]
    r = predict_row(row)
    # 128 sequences x 8192 tokens / (t x 64 GPUs)
    assert_allclose(r.predicted, 128 * 8192 / (r.step_time_s * 64), rtol=1e-12)
    assert r.role == "stack" and r.stack == "nemo_megatron_core"


def test_stack_fit_stops_where_a_kernel_would_beat_the_peak():
    # rows "published" 3x faster than the model can go: the fit ends at the cap
    # eta = 1 / max(default_efficiency, attention_efficiency, mem_efficiency), no error
    r = SMALL[0]
    dev = with_stacks(r.cluster.device, {"my_stack": 1.0})
    r = dataclasses.replace(r, parallelism=r.parallelism.model_copy(
        update={"software_stack": "my_stack"}), calibrate=False, calibrate_stack=True,
        cluster=dataclasses.replace(r.cluster, device=dev))
    r = dataclasses.replace(r, published=predict_row(r).predicted / 3.0)   # step_time_s
    (cal,) = calibrate_stacks([ValidationTable("t", "t", (r,))])
    cap = 1.0 / max(dev.default_efficiency, dev.attention_efficiency, dev.mem_efficiency)
    assert_allclose(cal.after, cap, rtol=1e-9)
    assert cal.errors[0] > 0.5   # still far from the row: reported, not forced
