"""Fitting device constants on validation rows (``calibrate_tables``).

The independent check is recovery of a known truth: rows whose "published" values are the
model's own predictions with chosen constants must give those constants back, starting from
the packaged preset.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.calibration import CALIBRABLE, calibrate_tables
from libra_opt.explore.validation import predict_row
from libra_opt.generators.validation import ValidationTable
from libra_opt.io.validation import load_validation_table

K22 = load_validation_table("korthikanti22_a100")
#: The two smallest K22 configurations (22B, no pipeline): fast to predict.
SMALL = tuple(r for r in K22.rows if r.name.startswith("K22 22B"))


def _synthetic(truth: dict[str, float], marked: tuple[bool, ...]) -> ValidationTable:
    """SMALL with published values predicted by the A100 preset with ``truth`` constants."""
    dev = dataclasses.replace(SMALL[0].cluster.device, **truth)
    rows = tuple(dataclasses.replace(r, published=predict_row(r, dev).predicted, calibrate=m)
                 for r, m in zip(SMALL, marked, strict=True))
    return ValidationTable("synthetic", "model-made rows", rows)


def test_recovers_known_constants_from_model_made_rows():
    truth = {"default_efficiency": 0.71, "gemm_k_overhead": 310.0}
    (cal,) = calibrate_tables([_synthetic(truth, (True, True))], list(truth))
    assert cal.constants == ("default_efficiency", "gemm_k_overhead")
    assert_allclose(cal.after, list(truth.values()), rtol=1e-4)
    assert_allclose(cal.before, [SMALL[0].cluster.device.default_efficiency,
                                 SMALL[0].cluster.device.gemm_k_overhead])
    assert max(abs(e) for e in cal.errors) < 1e-6
    assert cal.device.efficiency_source.startswith(
        "calibrated (default_efficiency, gemm_k_overhead) by libra_opt on synthetic: K22 22B")


def test_one_constant_on_one_marked_row_leaves_the_other_rows_to_validate():
    truth = {"default_efficiency": 0.8}
    table = _synthetic(truth, (True, False))
    (cal,) = calibrate_tables([table], ["default_efficiency"])
    assert cal.rows == ("synthetic: K22 22B full recompute",)
    assert_allclose(cal.after, [0.8], rtol=1e-6)
    # the unmarked row was made with the same truth, so it validates exactly too
    assert abs(predict_row(table.rows[1], cal.device).error) < 1e-6


def test_all_rows_is_an_in_sample_fit_over_every_row():
    truth = {"default_efficiency": 0.66}
    (cal,) = calibrate_tables([_synthetic(truth, (False, False))], list(truth), rows="all")
    assert len(cal.rows) == 2 and max(abs(e) for e in cal.errors) < 1e-6


def test_a_bound_is_reported_when_the_rows_pull_past_it():
    # rows 2x slower than efficiency 1 could make them: the fit stops at the lower bound
    truth = {"default_efficiency": 0.03}
    table = _synthetic(truth, (True, True))
    (cal,) = calibrate_tables([table], ["default_efficiency"])
    assert cal.after == (0.05,)
    assert "(at its bound" in cal.describe()


@pytest.mark.parametrize("constants, rows, words", [
    (["default_efficiency", "gemm_k_overhead"], (True, False), "a100_80gb has 1 row to fit and 2"),
    (["default_efficiency"], (False, False), "no row is marked 'calibrate: true' in synthetic"),
    (["peak_flops"], (True, True), "cannot calibrate peak_flops"),
    (["default_efficiency", "default_efficiency"], (True, True), "two distinct"),
    (list(CALIBRABLE)[:3], (True, True), "one or two"),
])
def test_errors(constants, rows, words):
    table = _synthetic({"default_efficiency": 0.9}, rows)
    with pytest.raises(InputError) as e:
        calibrate_tables([table], constants)
    assert words in e.value.message


def test_packaged_tables_give_the_packaged_constants():
    """devices.yaml's A100 constants are what the K22 marked rows give."""
    (cal,) = calibrate_tables([K22], ["default_efficiency", "gemm_k_overhead"])
    dev = K22.rows[0].cluster.device
    assert_allclose(cal.after, [dev.default_efficiency, dev.gemm_k_overhead], rtol=2e-4)


def test_two_devices_with_one_key_are_refused_not_merged():
    from libra_opt.io.validation import validation_table_from_dict

    def table(device_b):
        link = {"node": {"bw_gbps": 230}, "pod": {"bw_gbps": 25}, "gpus_per_node": 8}
        row = {"source": "s", "metric": "step_time_s", "published": 1.0, "model": "llama3_8b",
               "parallelism": {"tp": 8, "global_batch_size": 8}}
        return validation_table_from_dict({
            "name": "two", "clusters": {"a": {"device": "a100_80gb", **link},
                                        "b": {"device": device_b, **link}},
            "rows": [{"name": "ra", "cluster": "a", "calibrate": True, **row},
                     {"name": "rb", "cluster": "b", **row}]}, "two.yaml")

    with pytest.raises(InputError) as e:
        calibrate_tables([table({"preset": "a100_80gb", "hbm_gbps": 1555})], ["default_efficiency"])
    assert e.value.source == "two.yaml" and "same key 'a100_80gb'" in e.value.message
    # with its own key the overridden device is kept apart: only cluster a is fitted
    t = table({"preset": "a100_80gb", "key": "a100_40gb", "hbm_gbps": 1555})
    (cal,) = calibrate_tables([t], ["default_efficiency"])
    assert cal.device.key == "a100_80gb" and cal.rows == ("two: ra",)


def test_a_row_the_model_refuses_is_named_with_its_table_file():
    from libra_opt.explore.validation import validate

    row = dataclasses.replace(SMALL[0], check_memory=True, parallelism=SMALL[0].parallelism.model_copy(
        update={"tp": 1, "tp_comm_overlap": False, "dp": 8, "global_batch_size": 32}))
    table = ValidationTable("t", "t", (row,), source="mine.yaml")
    for call in (lambda: validate(table), lambda: calibrate_tables([table], ["default_efficiency"],
                                                                     rows="all")):
        with pytest.raises(InputError) as e:
            call()
        assert e.value.source == "mine.yaml"
        assert e.value.field.startswith("rows[0] (K22 22B full recompute)")
        assert "does not fit" in e.value.message
