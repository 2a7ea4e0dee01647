"""Error models as YAML (libra_opt.io.error_model): the packaged one is what the packaged
tables give the current model; files round-trip; bad entries name their field."""

import dataclasses

import pytest

from libra_opt.errors import InputError
from libra_opt.explore.trust import validated_runs
from libra_opt.explore.validation import validate
from libra_opt.generators.error_model import ErrorModel, ValidatedRun
from libra_opt.io.error_model import error_model_yaml, load_error_model
from libra_opt.io.validation import load_validation_table, validation_table_names


def test_the_packaged_runs_are_what_the_packaged_tables_give_today():
    """Regenerate with `libra-opt validate --error-model libra_opt/data/error_model.yaml`."""
    tables = [load_validation_table(n) for n in validation_table_names()]
    now = validated_runs(tables, [validate(t) for t in tables])
    packaged = load_error_model().runs
    assert [r.name for r in packaged] == [r.name for r in now]
    for a, b in zip(packaged, now, strict=True):
        assert a.error == pytest.approx(b.error, rel=1e-6, abs=1e-8), a.name
        assert a.mfu_measured == pytest.approx(b.mfu_measured, rel=1e-5), a.name
        assert dataclasses.replace(a, error=0.0, mfu_measured=0.0) == \
            dataclasses.replace(b, error=0.0, mfu_measured=0.0)


def test_round_trip(tmp_path):
    m = ErrorModel((ValidatedRun("a", "t", "gpu", "s", "validation", 0.0123456789, "v", tp=8,
                                 pp=4, n_npus=64, mfu_measured=0.4),
                    ValidatedRun("b", "t", "gpu", "s", "device", -0.5)))
    p = tmp_path / "e.yaml"
    p.write_text(error_model_yaml(m, ["t"], "x"))
    assert load_error_model(p) == m


@pytest.mark.parametrize(("entry", "field", "says"), [
    ("{name: a, table: t, device: d, stack: s, role: validation}", "runs[0].error", "missing"),
    ("{name: a, table: t, device: d, stack: s, role: guess, error: 0.1}", "runs[0].role",
     "not one of"),
    ("{name: a, table: t, device: d, stack: s, role: validation, error: -1.5}",
     "runs[0].error", "above -1"),
    ("{name: a, table: t, device: d, stack: s, role: validation, error: 0.1, tp: 0}",
     "runs[0].tp", "positive integer"),
    ("{name: a, table: t, device: d, stack: s, role: validation, error: 0.1, colour: red}",
     "runs[0]", "unknown key"),
])
def test_bad_entries_name_their_field(tmp_path, entry, field, says):
    p = tmp_path / "bad.yaml"
    p.write_text(f"runs:\n  - {entry}\n")
    with pytest.raises(InputError) as e:
        load_error_model(p)
    assert e.value.field == field and says in e.value.message
    assert str(p) in str(e.value)


def test_an_empty_model_is_refused(tmp_path):
    p = tmp_path / "empty.yaml"
    p.write_text("runs: []\n")
    with pytest.raises(InputError, match="no runs"):
        load_error_model(p)
