"""The step-time model against published training runs (tables in libra_opt/data/validation).

At most two constants per device are calibrated on the rows marked ``calibrate``; every other
row is a prediction. The tolerances below are what the model reaches today (see the printed
table with ``pytest -s``), per table: tight on the calibration table's other rows, looser on
tables from other software stacks (other Megatron-LM versions, DeepSpeed), which run at other
speeds on the same hardware and configuration.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose

from libra_opt.generators.validation import calibrate_device, validate
from libra_opt.io.presets import load_device
from libra_opt.io.validation import load_validation_table, validation_table_names
from libra_opt.report.validation import validation_report

#: Constants calibrated per device (at most two), on the calibrate rows of the tables.
CALIBRATED = {
    "a100_80gb": ("default_efficiency", "gemm_k_overhead"),
    "h100_sxm": ("default_efficiency",),
}
#: (average, worst) absolute error reached on the validation rows of each table.
REACHED = {
    "korthikanti22_a100": (0.020, 0.035),
    "megatron_sc21_a100": (0.070, 0.15),
    "llama3_h100": (0.21, 0.30),
    "mtnlg_a100": (0.23, 0.25),
}


@pytest.fixture(scope="module")
def results():
    return {name: validate(load_validation_table(name)) for name in validation_table_names()}


def test_print_error_table(results, capsys):
    with capsys.disabled():
        print()
        print(validation_report(list(results.values())))


@pytest.mark.parametrize("name", sorted(REACHED))
def test_validation_error_within_what_the_model_reaches(results, name):
    res = results[name]
    mean, worst = REACHED[name]
    assert res.mean_abs_error <= mean, validation_report([res])
    assert res.worst_abs_error <= worst, validation_report([res])
    for r in res.rows:
        if r.calibrate:
            assert abs(r.error) < 2e-3, r


def test_enough_validation_rows_and_sources(results):
    rows = [r for res in results.values() for r in res.validation_rows]
    sources = {s.strip() for r in rows for s in r.source.split(",")}
    assert len(rows) >= 12
    assert {"N21", "K22", "D24", "S22"} <= sources


@pytest.mark.parametrize("device", sorted(CALIBRATED))
def test_device_constants_are_the_calibrated_values(device):
    """devices.yaml holds what calibrating on the calibrate rows gives (from other starts)."""
    rows = [r for name in validation_table_names() for r in load_validation_table(name).rows
            if r.calibrate and r.cluster.device.key == device]
    names = CALIBRATED[device]
    assert 1 <= len(rows) and len(names) <= 2 and len(rows) == len(names)
    preset = load_device(device)
    start = dataclasses.replace(preset, **{n: getattr(preset, n) * 0.8 for n in names})
    fitted = calibrate_device(rows, start, names)
    assert_allclose([getattr(fitted, n) for n in names], [getattr(preset, n) for n in names],
                    rtol=5e-3)


def test_megatron_tflops_use_eq3_hardware_flops():
    """Megatron's per-GPU figure uses eq. (3): 96 B s l h^2 (1 + s/(6h) + V/(16 l h))."""
    from libra_opt.generators.validation import _generate

    row = next(r for r in load_validation_table("megatron_sc21_a100").rows
               if r.name == "SC21 GPT 1008B")
    g, _ = _generate(row, row.cluster.device)
    B, s, n_l, h, V = 3072, 2048, 128, 25600, 51200
    eq3 = 96 * B * s * n_l * h**2 * (1 + s / (6 * h) + V / (16 * n_l * h))
    assert_allclose(g.hardware_flops_per_step, eq3, rtol=1e-12)
