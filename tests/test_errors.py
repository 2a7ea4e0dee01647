"""The error context helper: file and field of an InputError come from the enclosing block."""

from __future__ import annotations

import pytest

from libra_opt.errors import API_SOURCE, InputError, input_context, option_context


def _raised(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


def test_context_names_file_and_prefixes_field():
    def go():
        with input_context("s.yaml", "fabric"):
            raise InputError("expected a number", field="dims[0].bw_gbps")

    exc = _raised(go)
    assert isinstance(exc, InputError)
    assert (exc.source, exc.field) == ("s.yaml", "fabric.dims[0].bw_gbps")
    assert exc.message == "expected a number"
    assert str(exc) == "s.yaml: fabric.dims[0].bw_gbps: expected a number"


def test_nested_contexts_compose_once():
    def go():
        with input_context("s.yaml", "workloads"):
            with input_context(None, "[2]"):
                with input_context(None, "parallelism"):
                    raise InputError("expected an int >= 1, got 0", field="tp")

    exc = _raised(go)
    assert (exc.source, exc.field) == ("s.yaml", "workloads[2].parallelism.tp")


def test_context_field_alone_and_error_field_alone():
    def ctx_only():
        with input_context("a.yaml", "constraints"):
            raise InputError("bad")

    def err_only():
        with input_context("a.yaml"):
            raise InputError("bad", field="tco.years")

    assert (_raised(ctx_only).field, _raised(err_only).field) == ("constraints", "tco.years")


def test_error_naming_a_file_keeps_it():
    err = InputError("bad layer", source="model.json", field="layers[3]")

    def go():
        with input_context("scenario.yaml", "workloads[0]"):
            raise err

    exc = _raised(go)
    assert exc is err
    assert (exc.source, exc.field) == ("model.json", "layers[3]")


def test_api_placeholder_is_replaced_by_the_file():
    def go():
        with input_context("s.yaml", "tco"):
            raise InputError("expected a number", source=API_SOURCE, field="years")

    assert (_raised(go).source, _raised(go).field) == ("s.yaml", "tco.years")


def test_no_source_keeps_placeholder_and_unchanged_error_is_the_same_object():
    err = InputError("bad", source=API_SOURCE, field="x")

    def go():
        with input_context(None):
            raise err

    assert _raised(go) is err


def test_other_exceptions_pass_through_untouched():
    err = KeyError("k")

    def go():
        with input_context("s.yaml", "fabric"):
            raise err

    assert _raised(go) is err


# --- option_context: the command line (or a Python function) names its option -------------

_UNLABELLED = "'r' is not empty (a.txt): give resume=True to continue its run, overwrite=True to replace it"


@pytest.mark.parametrize(("name", "source", "field", "message"), [
    ("--out", "<cli>", "--out",
     "'r' is not empty (a.txt): give --resume to continue its run, --overwrite to replace it"),
    ("out_dir", None, "out_dir", _UNLABELLED),
])
def test_option_context_names_the_option(name, source, field, message):
    def go():
        with option_context(name):
            raise InputError(_UNLABELLED)

    err = _raised(go)
    assert (err.source, err.field, err.message) == (source, field, message)


@pytest.mark.parametrize("err", [
    InputError("bad", source="s.yaml"),              # about a file: that file's
    InputError("bad", field="budget_usd"),           # another field: not this option's
    InputError("bad", source="<cli>", field="--plot"),  # already named by an inner option
])
def test_option_context_leaves_other_errors(err):
    def go():
        with option_context("--out"):
            raise err

    assert _raised(go) is err


def test_option_context_takes_the_fields_it_is_given():
    def go(name):
        with option_context("--out", fields=("out_dir",)), option_context(name):
            raise InputError("give overwrite=True")

    err = _raised(lambda: go("out_dir"))   # a Python function's keyword, named on the CLI
    assert (err.source, err.field, err.message) == ("<cli>", "--out", "give --overwrite")
    assert _raised(lambda: go(None)).field is None   # None names nothing


def test_no_error_no_effect():
    with input_context("s.yaml", "fabric"):
        value = 3
    assert value == 3


def test_scenario_checks_name_its_file_only_when_it_has_one():
    """The Scenario's own checks raise without a file; its ``source`` names it (one context)."""
    from libra_opt.scenario.scenario import Scenario
    from tests.fixtures import cost_2d, fabric_2d, workload_2d

    wl = workload_2d()
    with pytest.raises(InputError) as info:
        Scenario(fabric_2d(), cost_2d(), (wl, wl), source="s.yaml")
    assert info.value.source == "s.yaml" and info.value.field == "workloads"
    assert info.value.one_line().startswith("s.yaml: workloads: workload names must be unique")
    with pytest.raises(InputError) as info:
        Scenario(fabric_2d(), cost_2d(), (wl, wl))
    assert info.value.source is None and info.value.field == "workloads"


def test_compile_names_the_spec_file_and_the_scenario_field():
    """A spec read from a file names it; one built in Python names ``<api>`` and
    ``scenario.<field>`` for the Scenario's own checks."""
    import dataclasses

    import libra_opt as lo
    from libra_opt.scenario.spec import DimSpec, FabricSpec, ScenarioSpec, WorkloadSpec

    spec = ScenarioSpec(
        fabric=FabricSpec(dims=(DimSpec("node", "switch", 8, "ScaleUp"),)),
        cost_model={"ScaleUp": {"link": 1.0, "switch": 0.5, "nic": 0.5}},
        workloads=(WorkloadSpec("l8", model="llama3_8b", device="h100_sxm",
                                parallelism={"tp": 8, "global_batch_size": 8}),),
        objective="tco")  # needs a tco section
    with pytest.raises(InputError) as info:
        lo.compile(spec)
    assert (info.value.source, info.value.field) == (API_SOURCE, "scenario.tco")
    with pytest.raises(InputError) as info:
        lo.compile(dataclasses.replace(spec, source="toy.yaml"))
    assert (info.value.source, info.value.field) == ("toy.yaml", "tco")
    bad_tp = spec.replace("workloads.l8.parallelism.tp", 3)  # 3 does not divide 8
    with pytest.raises(InputError) as info:
        lo.compile(dataclasses.replace(bad_tp, source="toy.yaml"))
    assert info.value.source == "toy.yaml"
    assert info.value.field is not None and info.value.field.startswith("workloads[l8].")
