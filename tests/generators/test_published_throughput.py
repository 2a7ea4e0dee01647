"""The step-time model against published training runs (tables in libra_opt/data/validation).

At most two constants per device are calibrated on the rows marked ``calibrate``; every other
row is a prediction. The target (issue 11) is an average absolute error of at most 3.5 % and
a worst of at most 8 % on the validation rows. The tolerances below are what the model
reaches today, per table (the table and the per-table statistics are printed by
``test_print_error_table``); only the calibration table's own other rows meet the target --
the SC21 Megatron-LM runs (2021 software), the DeepSpeed MT-NLG runs and the Llama 3 128K
context run are further off, see the table files' notes.
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
#: Issue-11 target on the validation rows: (average, worst) absolute error.
TARGET = (0.035, 0.08)
#: (average, worst) absolute error reached on the validation rows of each table (measured,
#: rounded up by a few tenths of a percent).
REACHED = {
    "korthikanti22_a100": (0.018, 0.027),
    "megatron_sc21_a100": (0.046, 0.099),
    "llama3_h100": (0.080, 0.150),
    "mtnlg_a100": (0.199, 0.216),
}
#: Tables whose validation rows meet TARGET today.
MEETS_TARGET = {"korthikanti22_a100"}


@pytest.fixture(scope="module")
def results():
    return {name: validate(load_validation_table(name)) for name in validation_table_names()}


def test_print_error_table(results, capsys):
    rows = [r for res in results.values() for r in res.validation_rows]
    with capsys.disabled():
        print()
        print(validation_report(list(results.values())))
        print(f"target: average {100 * TARGET[0]:.1f} %, worst {100 * TARGET[1]:.1f} %")
        for name, res in sorted(results.items()):
            print(f"  {name}: average {100 * res.mean_abs_error:.2f} %, "
                  f"worst {100 * res.worst_abs_error:.2f} %")
        print(f"  all {len(rows)} validation rows: average "
              f"{100 * sum(abs(r.error) for r in rows) / len(rows):.2f} %, "
              f"worst {100 * max(abs(r.error) for r in rows):.2f} %")


def test_which_tables_meet_the_target(results):
    """Fails when a table crosses the target in either direction (update MEETS_TARGET)."""
    meets = {name for name, res in results.items()
             if res.mean_abs_error <= TARGET[0] and res.worst_abs_error <= TARGET[1]}
    assert meets == MEETS_TARGET, validation_report(list(results.values()))


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
