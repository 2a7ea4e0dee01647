"""Results files with metadata (CSV + sidecar, Parquet schema) and saved solutions."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt.cli.main import main
from libra_opt.errors import InputError
from libra_opt.io.results import read_metadata, read_results, results_metadata, write_results
from libra_opt.scenario.examples import toy_scenario


@pytest.fixture
def table():
    rng = np.random.default_rng(1)
    return pd.DataFrame({"point": np.arange(5), "budget_usd": rng.random(5) * 1e7,
                         "status": ["optimal"] * 4 + ["infeasible"],
                         "message": ["", "", "", "", "budget_usd"],
                         "objective": [*rng.random(4), np.nan]})


@pytest.mark.parametrize("name", ["r.csv", "r.parquet"])
def test_results_files_carry_metadata_and_read_back_exactly(tmp_path, table, name):
    meta = results_metadata("sweep", "toy", "ab" * 32, axes={"budget_usd": [1.0]})
    path = write_results(table, tmp_path / name, meta)
    got = read_results(path)
    pd.testing.assert_frame_equal(got, table, check_exact=True, check_dtype=False)
    back = read_metadata(path)
    assert back["scenario"] == "toy" and back["spec_hash"] == "ab" * 32
    assert back["library_version"] == lo.__version__ and back["created_utc"].endswith("Z")
    if name.endswith(".csv"):  # plain pandas reads the table, the metadata is beside it
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.csv", "r.csv.meta.json"]
        assert pd.read_csv(path).shape == table.shape
    else:
        import pyarrow.parquet as pq

        assert json.loads(pq.read_schema(path).metadata[b"libra_opt"])["kind"] == "sweep"


@pytest.mark.parametrize("name", ["r.csv", "r.parquet"])
def test_a_rank_with_gaps_reads_back_as_nullable_integers(tmp_path, name):
    # the search ranks solved candidates 1..n and leaves the others empty
    table = pd.DataFrame({"status": ["optimal", "pruned", "optimal"],
                          "rank": pd.array([2, pd.NA, 1], dtype="Int64")})
    got = read_results(write_results(table, tmp_path / name, results_metadata("s", "t", "h")))
    assert str(got["rank"].dtype) == "Int64"
    pd.testing.assert_frame_equal(got, table, check_exact=True)


def test_sweep_parquet_beside_the_csv_with_the_manifest_metadata(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["sweep", "gpt3_175b_4d", "--axis", "budget_usd=2e7,3e7", "--no-progress",
                 "--out", str(out), "--parquet"]) == 0
    pd.testing.assert_frame_equal(read_results(out / "results.parquet"),
                                  read_results(out / "results.csv"), check_exact=True,
                                  check_dtype=False)
    manifest = json.loads((out / "manifest.json").read_text())
    assert read_metadata(out / "results.parquet")["spec_hash"] == manifest["spec_hash"]


def test_solution_round_trip_through_a_file(tmp_path):
    sol = lo.solve(lo.examples.load("gpt3_175b_4d"))
    path = lo.save_solution(sol, tmp_path / "sol.json")
    again = lo.load_solution(path)  # the scenario comes from the file the document names
    assert again.bw_gbps.tolist() == sol.bw_gbps.tolist()
    assert not again.bw_gbps.flags.writeable
    assert again.objective == sol.objective and again.objective_value == sol.objective_value
    assert again.constraints == sol.constraints and again.solver == sol.solver
    assert_allclose(again.evaluation.weighted_step_time_s, sol.evaluation.weighted_step_time_s,
                    rtol=1e-12)
    assert again.step_time_s == pytest.approx(sol.step_time_s, rel=1e-12)
    doc = json.loads(path.read_text())
    assert doc["metadata"]["library_version"] == lo.__version__
    assert len(doc["metadata"]["spec_hash"]) == 64


def test_a_solution_loaded_against_another_scenario_is_refused(tmp_path):
    sol = lo.solve(toy_scenario())
    path = lo.save_solution(sol, tmp_path / "toy.json")
    with pytest.raises(InputError, match="names no scenario file"):
        lo.load_solution(path)
    other = dataclasses.replace(toy_scenario(), collective_model="sequential")
    with pytest.raises(InputError, match="another scenario"):
        lo.load_solution(path, other)
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        lo.load_solution(tmp_path / "bad.json", toy_scenario())


def test_solve_json_on_an_infeasible_design_prints_one_object(capsys):
    assert main(["solve", "gpt3_175b_4d", "--set", "budget_usd=1", "--json"]) == 1
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert doc["status"] == "infeasible" and doc["scenario"] == "gpt3_175b_4d"
    # a $1 budget cannot buy positive bandwidth on the dimensions that carry traffic
    assert doc["conflicting_constraints"] == [
        "budget_usd", "bandwidth > 0 on every dimension that carries traffic"]
    assert err.count("\n") == 1 and "infeasible" in err
