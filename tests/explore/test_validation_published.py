"""The step-time model against published training runs (tables in libra_opt/data/validation).

At most two constants per device are calibrated on the rows marked ``calibrate: true`` and
one constant per software stack on the rows marked ``calibrate: stack``; every other row is
a prediction (convention-dependent rows are reported, not judged). The target is an average
absolute error of at most 3.5 % and a worst of at most 8 % on the out-of-sample rows of each
software stack. The tolerances below are what the model reaches today, per table and per
stack (printed by ``test_print_error_table``): the Megatron-LM 2022, Megatron-LM 2021 and
Llama 3 (Meta) stacks meet the target (SC21 since the A100 NVLink tier is priced with NCCL's
measured bus-bandwidth curve and the pipeline fill and drain as a flow shop); Megatron-DeepSpeed
meets it on MT-NLG but not on the BigScience topology search (bloom_prequel_a100: shallow
pipelines at TP 8 with micro-batches of 1-2 too fast by up to 9 %, pipelines of 12-24 stages at
TP 2-4 too slow by up to 19 %); NeMo 24.07 (its Llama 3 8B row, 12 % too
fast) does not, and NeMo Megatron-Core (Megatron-Bridge, H100, FP8) meets the worst but not
the average.
"""

import dataclasses

import pytest
from numpy.testing import assert_allclose

from libra_opt.explore.calibration import calibrate_device, calibrate_stacks
from libra_opt.explore.ranking import stack_summaries, variant_rankings
from libra_opt.explore.validation import validate
from libra_opt.generators.stacks import with_stacks
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
    "korthikanti22_a100": (0.019, 0.033),
    "megatron_sc21_a100": (0.028, 0.056),
    "llama3_h100": (0.010, 0.010),
    "mtnlg_a100": (0.029, 0.043),
    "nemo_h100": (0.041, 0.056),
    "nemo2407_h100": (0.051, 0.127),
    "bloom_prequel_a100": (0.067, 0.192),
    "vtrain_dev_a100": (0.073, 0.455),
}
#: Tables whose validation rows meet TARGET today.
MEETS_TARGET = {"korthikanti22_a100", "megatron_sc21_a100", "llama3_h100", "mtnlg_a100"}
#: (average, worst) out-of-sample error per software stack (measured, rounded up).
STACK_REACHED = {
    "megatron_lm_2022": (0.019, 0.033),
    "llama3_meta": (0.010, 0.010),
    "megatron_deepspeed": (0.065, 0.192),
    "megatron_lm_2021": (0.028, 0.056),
    "nemo_megatron_core": (0.041, 0.056),
    "nemo_24_07": (0.051, 0.127),
    "megatron_deepspeed_2023": (0.073, 0.455),
}
#: Stacks whose out-of-sample rows meet TARGET today.
STACKS_MEETING_TARGET = {"megatron_lm_2022", "megatron_lm_2021", "llama3_meta"}
#: Variant sets that miss the ranking target today, with (Spearman at least, regret at most).
VARIANTS_MISSING_TARGET = {"vtrain_gpt_18p4b_256gpu": (0.72, 0.045)}
#: Sets judged by the regret of the model's pick alone (the BLOOM topology search), with the
#: Spearman they reach today (reported; at least).
JUDGED_BY_REGRET = {"bloom_187b_320gpu_mbs": 0.99, "bloom_181b_384gpu": 0.70,
                    "bloom_182b_384gpu": 0.49, "bloom_181b_384gpu_tp": 0.62,
                    "bloom_182b_384gpu_tp": 0.49}
#: Fitted stack constants (devices.yaml), per (device, stack).
STACKS = {("a100_80gb", "megatron_lm_2021"), ("a100_80gb", "megatron_deepspeed"),
          ("a100_80gb", "megatron_deepspeed_2023"),
          ("h100_sxm", "nemo_megatron_core"), ("h100_sxm", "nemo_24_07")}


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
    for r in res.rows:   # one row per constant is reproduced; more are least squares
        n_fit = sum(x.role == r.role and x.stack == r.stack for x in res.rows)
        if r.role in ("device", "stack"):
            assert abs(r.error) < (2e-3 if n_fit <= (2 if r.role == "device" else 1) else 0.02), r


def test_stacks_meet_the_target_out_of_sample(results):
    """Per software stack, on the rows neither calibrated on nor convention-dependent."""
    summaries = {s.stack: s for s in stack_summaries(list(results.values()))}
    assert set(summaries) == set(STACK_REACHED)
    meets = {k for k, s in summaries.items()
             if s.mean_abs_error <= TARGET[0] and s.worst_abs_error <= TARGET[1]}
    assert meets == STACKS_MEETING_TARGET
    for k, (mean, worst) in STACK_REACHED.items():
        assert summaries[k].mean_abs_error <= mean, k
        assert summaries[k].worst_abs_error <= worst, k
        assert summaries[k].judged, k   # every stack has out-of-sample rows


def test_convention_dependent_row_reported_not_judged(results):
    (row,) = [r for r in results["llama3_h100"].rows if r.role == "convention"]
    assert "128K" in row.name and row.convention_band == 0.16
    assert row not in results["llama3_h100"].validation_rows
    assert abs(row.error) <= row.convention_band   # inside the band the convention spans


def test_published_variant_sets_rank_right(results):
    """Every variant set: Spearman >= 0.9 and regret <= 3 % (the target), the sets judged by
    regret the regret alone; the ones listed in VARIANTS_MISSING_TARGET must stay at least
    as good as today."""
    sets = variant_rankings(list(results.values()))
    assert len(sets) >= 16
    names = {v.name for v in sets}
    assert set(VARIANTS_MISSING_TARGET) <= names and set(JUDGED_BY_REGRET) <= names
    for v in sets:
        assert (v.judged_by == "regret") == (v.name in JUDGED_BY_REGRET), v.name
        if v.name in VARIANTS_MISSING_TARGET:
            rho, regret = VARIANTS_MISSING_TARGET[v.name]
            assert v.spearman >= rho - 1e-9 and v.regret <= regret + 1e-9, (v.name, v.spearman)
            assert not v.meets_target, f"{v.name} meets the target now"
        else:
            assert v.meets_target, (v.name, v.spearman, v.regret)
            assert v.regret <= 0.03
            if v.name in JUDGED_BY_REGRET:
                assert v.spearman >= JUDGED_BY_REGRET[v.name] - 1e-9, v.name
            else:
                assert v.spearman >= 0.9


@pytest.mark.parametrize(("device", "stack"), sorted(STACKS))
def test_stack_constants_are_the_calibrated_values(device, stack):
    """devices.yaml holds what fitting on the calibrate: stack rows gives (from 0.8x)."""
    preset = load_device(device)
    tables = []
    for name in validation_table_names():
        t = load_validation_table(name)
        rows = tuple(r for r in t.rows if r.calibrate_stack and r.software_stack == stack
                     and r.cluster.device.key == device)
        if rows:  # start the fit away from the packaged value
            start = with_stacks(preset, {stack: 0.8 * preset.software_stacks[stack]})
            rows = tuple(dataclasses.replace(
                r, cluster=dataclasses.replace(r.cluster, device=start)) for r in rows)
            tables.append(dataclasses.replace(t, rows=rows))
    (cal,) = calibrate_stacks(tables)
    assert cal.before != preset.software_stacks[stack]
    assert_allclose(cal.after, preset.software_stacks[stack], rtol=2e-4)


def test_enough_validation_rows_and_sources(results):
    rows = [r for res in results.values() for r in res.validation_rows]
    sources = {s.strip() for r in rows for s in r.source.split(",")}
    assert len(rows) >= 12
    assert {"N21", "K22", "D24", "S22", "MB", "N2407", "BP", "V24"} <= sources


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
    from libra_opt.explore.validation import _generate

    row = next(r for r in load_validation_table("megatron_sc21_a100").rows
               if r.name == "SC21 GPT 1008B")
    g, _ = _generate(row, row.cluster.device)
    B, s, n_l, h, V = 3072, 2048, 128, 25600, 51200
    eq3 = 96 * B * s * n_l * h**2 * (1 + s / (6 * h) + V / (16 * n_l * h))
    assert_allclose(g.published_hardware_flops_per_step, eq3, rtol=1e-12)
