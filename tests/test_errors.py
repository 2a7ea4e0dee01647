"""The error context helper: file and field of an InputError come from the enclosing block."""

from __future__ import annotations

import pytest

from libra_opt.errors import API_SOURCE, InputError, input_context


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


def test_no_error_no_effect():
    with input_context("s.yaml", "fabric"):
        value = 3
    assert value == 3
