"""Grid sweeps: columns, hand-derived points, structural axes, executors, progress, errors."""

import math

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

import libra_opt as lo
from libra_opt import apply_overrides, sweep
from libra_opt.errors import InputError
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario

TIMING = ["compile_s", "solve_s", "wall_s"]


def toy_budget_point(budget):
    """Hand optimum of the toy under ``sum(bw) == 300`` and a budget: the balanced
    allocation (200, 100) when affordable, else the point of the segment B0 + B1 = 300 on
    the budget line (the cheaper dimension, node, takes the rest)."""
    k = toy_scenario().coefficients.usd_per_gbps
    if k @ [200.0, 100.0] <= budget:
        bw = np.array([200.0, 100.0])
    else:
        bw = np.linalg.solve(np.array([[1.0, 1.0], k]), [300.0, budget])
    return bw, 0.01 + max(1.0 / bw[0], 0.5 / bw[1])


def test_columns_and_hand_derived_budget_points():
    k = toy_scenario().coefficients.usd_per_gbps
    assert k[1] > k[0]  # the pod is dearer per GB/s: a tight budget shifts bandwidth to node
    budgets = [110_000.0, 120_000.0, 200_000.0, 0.5 * k[0] * 300]
    df = sweep(toy_scenario(), {"budget_usd": budgets}, progress=False)
    assert df.columns.tolist() == [
        "budget_usd", "status", "message", "objective", "weighted_step_time_s",
        "step_time_toy_s", "network_cost_usd", "network_power_w", "bw_node_gbps",
        "bw_pod_gbps", "shadow_sum(bw) == 300", "shadow_budget_usd", *TIMING]
    assert df["status"].tolist() == ["optimal"] * 3 + ["infeasible"]
    assert df["message"].iloc[:3].tolist() == [""] * 3
    assert "budget_usd" in df["message"].iloc[3]
    assert np.isnan(df.iloc[3][["objective", "bw_node_gbps", "network_cost_usd"]].astype(float)).all()
    for i, b in enumerate(budgets[:3]):
        bw, step = toy_budget_point(b)
        assert_allclose(df.loc[i, ["bw_node_gbps", "bw_pod_gbps"]].astype(float), bw, rtol=1e-6)
        assert_allclose(df.loc[i, "weighted_step_time_s"], step, rtol=1e-6)
        assert_allclose(df.loc[i, "network_cost_usd"], k @ bw, rtol=1e-6)
    # a binding budget has a negative shadow price, a slack one none
    assert df.loc[0, "shadow_budget_usd"] < 0
    assert_allclose(df.loc[2, "shadow_budget_usd"], 0.0, atol=1e-12)
    assert (df["wall_s"] > 0).all()


def test_power_is_nan_without_a_power_model_and_a_number_with_one():
    df = sweep(toy_scenario(), {"sum(bw) == 300": [300.0]}, progress=False)
    bw = df.loc[0, ["bw_node_gbps", "bw_pod_gbps"]].to_numpy(dtype=float)
    assert_allclose(df.loc[0, "network_power_w"], toy_scenario().coefficients.w_per_gbps @ bw,
                    rtol=1e-9)
    gpt3 = sweep("gpt3_175b_4d", {"sum(bw) == 1000": [1000.0]}, progress=False)
    assert math.isnan(gpt3.loc[0, "network_power_w"])


def test_grid_order_product_and_zip():
    axes = {"sum(bw) == 300": [150.0, 300.0], "collective_model": ["pipelined", "sequential"]}
    df = sweep(toy_scenario(), axes, progress=False)
    assert df[list(axes)].values.tolist() == [
        [150.0, "pipelined"], [150.0, "sequential"], [300.0, "pipelined"], [300.0, "sequential"]]
    # pipelined: 0.01 + 1.5 / S; sequential: min 1/x + 0.5/y on x + y = S is
    # (1 + sqrt(0.5))^2 / S (Cauchy-Schwarz), at x / y = sqrt(2)
    s = df["sum(bw) == 300"].to_numpy()
    seq = df["collective_model"] == "sequential"
    want = np.where(seq, 0.01 + (1 + math.sqrt(0.5)) ** 2 / s, 0.01 + 1.5 / s)
    assert_allclose(df["weighted_step_time_s"], want, rtol=1e-6)
    # the objective is flat (quadratic) at a smooth optimum: the argmin is known to ~sqrt(tol)
    assert_allclose(df.loc[seq, "bw_node_gbps"] / df.loc[seq, "bw_pod_gbps"], math.sqrt(2),
                    rtol=1e-3)
    zipped = sweep(toy_scenario(), axes, zip=True, progress=False)
    assert zipped[list(axes)].values.tolist() == [[150.0, "pipelined"], [300.0, "sequential"]]
    assert_allclose(zipped["weighted_step_time_s"], want[[0, 3]], rtol=1e-6)


def test_zip_needs_equal_lengths():
    with pytest.raises(InputError) as exc:
        sweep(toy_scenario(), {"budget_usd": [1e5, 2e5], "objective": ["perf"]}, zip=True)
    assert exc.value.field == "budget_usd" and "one length" in exc.value.message


def test_an_axis_named_like_a_result_column_gets_a_suffix():
    df = sweep(toy_scenario(), {"objective": ["perf", "perf_per_cost"]}, progress=False)
    assert df.columns[:2].tolist() == ["objective_axis", "status"]
    assert df["status"].tolist() == ["optimal", "optimal"]
    # perf_per_cost's objective is step time x network cost
    assert_allclose(df.loc[1, "objective"],
                    df.loc[1, "weighted_step_time_s"] * df.loc[1, "network_cost_usd"], rtol=1e-6)


@pytest.mark.parametrize(
    ("axes", "field", "needle"),
    [
        ({"budget_usd": [-1.0]}, "budget_usd", "must be > 0"),
        ({"budget_usd": [float("nan")]}, "budget_usd", "finite"),
        ({"sum(bw) == 300": ["abc"]}, "sum(bw) == 300", "expected numbers"),
        ({"power_w": [1e3]}, None, None),  # toy has a power model: fine
        ({"fabric.dims.nope.size": [4]}, "fabric.dims.nope.size", "no dimension named 'nope'"),
        ({"fabric.dims.pod.size": ["big"]}, "fabric.dims.pod.size", "expected a number"),
        ({"workloads.toy.weight": [-2]}, "workloads.toy.weight", "must be > 0"),
        ({"fabric.hb_domain": [8]}, "fabric.hb_domain", "needs the scenario's spec"),
        ({"budget_usd": []}, "budget_usd", "no values"),
        ({"budget_usd": 5.0}, "budget_usd", "expected a sequence"),
    ],
)
def test_bad_axes_raise_naming_the_axis(axes, field, needle):
    if field is None:
        assert sweep(toy_scenario(), axes, progress=False)["status"].tolist() == ["optimal"]
        return
    with pytest.raises(InputError) as exc:
        sweep(toy_scenario(), axes, progress=False)
    assert exc.value.field == field and needle in exc.value.message, exc.value


def test_unknown_document_key_raises_naming_the_axis():
    with pytest.raises(InputError) as exc:
        sweep("deepseek_v3_rail_only", {"fabric.hb_domian": [8]}, progress=False)
    assert exc.value.field == "fabric.hb_domian" and "unknown key" in exc.value.message


def test_numpy_and_pandas_values():
    df = sweep("deepseek_v3_rail_only", {"fabric.hb_domain": np.array([8, 16]),
                                         "budget_usd": pd.Series([1.2e8])}, progress=False)
    assert df["status"].tolist() == ["optimal", "optimal"]
    assert df["fabric.hb_domain"].tolist() == [8, 16]


def test_a_value_the_scenario_rejects_is_bad_input():
    """One structural axis: each value alone makes a point's scenario, so a value the
    scenario rejects is refused before anything is solved, naming the axis."""
    with pytest.raises(InputError) as exc:
        sweep("deepseek_v3_rail_only", {"fabric.hb_domain": [8, 3]}, progress=False)
    assert exc.value.field == "fabric.hb_domain"
    assert "not a multiple of hb_domain 3" in exc.value.message


def test_a_point_the_scenario_rejects_is_an_error_row():
    """Two structural axes: a combination may fail where each value alone would not; that
    point is a row with its reason."""
    df = sweep("deepseek_v3_rail_only", {"fabric.hb_domain": [8, 3],
                                         "objective": ["perf"]}, progress=False)
    assert df["status"].tolist() == ["optimal", "error"]
    assert "not a multiple of hb_domain 3" in df.loc[1, "message"]


def test_structural_axis_equals_fresh_solves():
    axes = {"fabric.hb_domain": [8, 16], "budget_usd": [4e7, 6e7]}
    df = sweep("deepseek_v3_rail_only", axes, progress=False)
    assert df["status"].tolist() == ["optimal"] * 4
    for _, row in df.iterrows():
        scen = apply_overrides("deepseek_v3_rail_only",
                               {"fabric.hb_domain": int(row["fabric.hb_domain"]),
                                "budget_usd": row["budget_usd"]})
        sol = solve(scen, with_baselines=False)
        assert_allclose(row[["bw_hb_gbps", "bw_scaleout_gbps"]].astype(float), sol.bw_gbps,
                        rtol=1e-6)
        assert_allclose(row["step_time_deepseek_v3_s"], sol.step_time_s["deepseek_v3"],
                        rtol=1e-6)
    # a larger HB domain shrinks the scale-out rails: the fabrics really differ
    assert df.loc[0, "network_cost_usd"] != df.loc[2, "network_cost_usd"]


def test_budget_axis_on_a_scenario_without_budget_equals_fresh_solves():
    budgets = np.linspace(2e7, 6e7, 25)
    df = sweep("gpt3_175b_4d", {"budget_usd": budgets}, progress=False)
    assert (df["status"] == "optimal").all()
    assert list(df.columns).index("shadow_budget_usd") > list(df.columns).index("bw_pod_gbps")
    rng = np.random.default_rng(0)
    for i in rng.choice(len(budgets), 4, replace=False):
        sol = solve(apply_overrides("gpt3_175b_4d", {"budget_usd": budgets[i]}),
                    with_baselines=False)
        assert_allclose(df.loc[i, "objective"], sol.objective_value, rtol=1e-6)
        # above ~$27.3M the budget is slack and the pipelined optimum is not unique (a
        # dimension off the critical collective may move a little): the sweep's allocation
        # must be optimal for the fresh scenario, and close to the fresh one
        got = df.loc[i, [f"bw_{d}_gbps" for d in sol.scenario.fabric.names]].to_numpy(float)
        assert_allclose(evaluate(sol.scenario, got).objective_value, sol.objective_value,
                        rtol=1e-6)
        assert_allclose(got, sol.bw_gbps, rtol=1e-3)


def test_a_weight_axis_is_data_and_gives_the_hand_optimum():
    """Two workloads on the toy fabric (a: 3 GB on node, b: 1.75 GB on pod per step, compute
    10 and 20 ms) under sum(bw) == 300: with weights w_a, w_b the optimum puts B_i in
    proportion to sqrt(w_i c_i) (Cauchy-Schwarz); the weighted step time is
    w_a 0.01 + w_b 0.02 + (sqrt(3 w_a) + sqrt(1.75 w_b))^2 / 300. Both weights are data
    (numbers in the objective), swept on one built problem, on every executor."""
    from libra_opt.explore.executors import ExecutorOptions
    from libra_opt.explore.grid import check_axes
    from libra_opt.explore.overrides import ScenarioBase
    from tests.optimize.test_data_updates import hand_optimum, two_workloads

    axes = {"workloads.a.weight": [1.0, 4.0, 0.25], "workloads.b.weight": [1.0, 9.0]}
    base = ScenarioBase.of(two_workloads())
    assert [(a.kind, a.workload) for a in check_axes(base, axes, ExecutorOptions())] == [
        ("weight", "a"), ("weight", "b")]
    df = sweep(two_workloads(), axes, progress=False)
    for _, row in df.iterrows():
        bw, objective = hand_optimum(row["workloads.a.weight"], row["workloads.b.weight"])
        assert_allclose(row["objective"], objective, rtol=1e-7)
        assert_allclose(row[["bw_node_gbps", "bw_pod_gbps"]].astype(float), bw, rtol=1e-5)
    procs = sweep(two_workloads(), axes, progress=False, executor="processes", max_workers=2,
                  batch_size=2)
    pd.testing.assert_frame_equal(_no_timing(df), _no_timing(procs), check_exact=True)
    with pytest.raises(InputError) as exc:  # refused before anything is solved
        sweep(two_workloads(), {"workloads.a.weight": [1.0, 0.0]}, progress=False)
    assert exc.value.field == "workloads.a.weight"


def test_a_weight_axis_under_diloco_is_structural(tmp_path):
    """DiLoCo's outer sync weighs a share of its workload's weight: the compiled weights are
    not the spec's, so a weight edit is compiled (and gives the fresh answer)."""
    from libra_opt.explore.overrides import ScenarioBase
    from tests.optimize.test_diloco import write

    base = ScenarioBase.of(load_scenario("gpt3_175b_4d"))
    assert base.weight_of("workloads.gpt3_175b.weight") == "gpt3_175b"
    assert base.weight_of("workloads[0].weight") == "gpt3_175b"
    assert base.weight_of("workloads.nope.weight") is None
    assert base.weight_of("workloads.gpt3_175b.parallelism") is None
    path = write(tmp_path)
    diloco = ScenarioBase.of(load_scenario(path))
    assert [w.name for w in diloco.scenario.workloads] == ["gpt", "gpt_outer"]
    assert diloco.weight_of("workloads.gpt.weight") is None
    df = sweep(path, {"workloads.gpt.weight": [1.0, 3.0]}, progress=False)
    for w, got in zip([1.0, 3.0], df["objective"], strict=True):
        want = solve(apply_overrides(path, {"workloads.gpt.weight": w}), with_baselines=False)
        assert_allclose(got, want.objective_value, rtol=1e-7)


def test_a_bounds_axis_keeps_the_base_program_and_equals_fresh_solves():
    """Bounds are rows: the points' scenarios are compiled once each and their problems
    built from the base problem with new numbers; the answers are fresh solves'."""
    values = [40.0, 60.0, 80.0, 100.0]
    df = sweep("gpt3_175b_a100_cluster", {"constraints.bounds.scaleout[1]": values},
               progress=False)
    assert df["status"].tolist() == ["optimal"] * 4
    for v, (_, row) in zip(values, df.iterrows(), strict=True):
        sol = solve(apply_overrides("gpt3_175b_a100_cluster",
                                    {"constraints.bounds.scaleout[1]": v}), with_baselines=False)
        assert_allclose(row["objective"], sol.objective_value, rtol=1e-7)


def test_a_zipped_point_edits_only_what_the_axis_check_did_not(monkeypatch):
    """The axes' check edits each value into the spec once; a point of zipped structural
    axes starts from its first axis's checked spec: 5 + 5 edits for the checks, 5 for the
    points (not 10), and each point equals a fresh solve of the two overrides."""
    from libra_opt.scenario.spec import ScenarioSpec

    base = apply_overrides("gpt3_175b_a100_cluster", {"workloads.gpt3_175b.mapping": None,
                                                      "workloads.gpt3_175b.parallelism.zero": 1})
    tp, dp = [1, 2, 4, 8, 16], [64, 32, 16, 8, 4]
    axes = {"workloads.gpt3_175b.parallelism.tp": tp, "workloads.gpt3_175b.parallelism.dp": dp}
    edits: list[str] = []
    replace = ScenarioSpec.replace
    monkeypatch.setattr(ScenarioSpec, "replace",
                        lambda self, path, value: edits.append(path) or replace(self, path, value))
    df = sweep(base, axes, zip=True, progress=False)
    monkeypatch.undo()
    assert edits.count("workloads.gpt3_175b.parallelism.tp") == 5
    assert edits.count("workloads.gpt3_175b.parallelism.dp") == 10 and len(edits) == 15
    for t, d, got in zip(tp, dp, df["objective"], strict=True):
        want = solve(apply_overrides(base, {"workloads.gpt3_175b.parallelism.tp": t,
                                            "workloads.gpt3_175b.parallelism.dp": d}))
        assert_allclose(got, want.objective_value, rtol=1e-9)


def test_executor_options_are_one_value():
    from libra_opt.explore.executors import ExecutorOptions

    for kwargs, field in [({"executor": "threads"}, "executor"),
                          ({"max_workers": 0}, "max_workers"),
                          ({"batch_size": "8"}, "batch_size"),
                          ({"out": "folder"}, "out"),
                          ({"executor": "processes", "scheduler": "tcp://h:1"}, "scheduler")]:
        with pytest.raises(InputError) as exc:
            ExecutorOptions(**kwargs)
        assert exc.value.field == field
    opts = ExecutorOptions("processes", max_workers=3, batch_size=7, progress=False)
    assert (opts.executor, opts.workers, opts.batch_size) == ("processes", 3, 7)
    from libra_opt.explore.sweep import sweep as explore_sweep

    df = explore_sweep(toy_scenario(), {"sum(bw) == 300": [150.0]}, options=opts)
    assert df["status"].tolist() == ["optimal"]
    with pytest.raises(InputError) as exc:
        explore_sweep(toy_scenario(), {"sum(bw) == 300": [150.0]}, options=opts,
                      executor="serial")
    assert exc.value.field == "options"
    with pytest.raises(TypeError):
        explore_sweep(toy_scenario(), {"sum(bw) == 300": [150.0]}, workers=2)


def _no_timing(df):
    return df.drop(columns=TIMING)


def test_executors_give_identical_rows():
    axes = {"collective_model": ["pipelined", "sequential"], "sum(bw) == 300": [150.0, 240.0, 300.0]}
    serial = sweep(toy_scenario(), axes, progress=False)
    procs = sweep(toy_scenario(), axes, executor="processes", max_workers=2, progress=False)
    dask = sweep(toy_scenario(), axes, executor="dask", max_workers=2, progress=False)
    pd.testing.assert_frame_equal(_no_timing(serial), _no_timing(procs), check_exact=True)
    pd.testing.assert_frame_equal(_no_timing(serial), _no_timing(dask), check_exact=True)


def test_dask_client_passed_in():
    from distributed import Client, LocalCluster

    axes = {"budget_usd": [1.1e5, 2e5]}
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                      host="127.0.0.1", dashboard_address=None) as cluster, Client(cluster) as c:
        df = sweep(toy_scenario(), axes, executor=c, progress=False)
    pd.testing.assert_frame_equal(_no_timing(df), _no_timing(sweep(toy_scenario(), axes,
                                                                   progress=False)))


def test_bad_executor_and_workers():
    with pytest.raises(InputError, match="executor"):
        sweep(toy_scenario(), {"budget_usd": [1e5]}, executor="threads")
    with pytest.raises(InputError, match="max_workers"):
        sweep(toy_scenario(), {"budget_usd": [1e5]}, executor="processes", max_workers=0)


def test_progress_callable_and_bar(capsys):
    calls = []
    sweep(toy_scenario(), {"budget_usd": [1.1e5, 1.2e5, 2e5]},
          progress=lambda done, total, point: calls.append((done, total, dict(point))))
    assert calls == [(1, 3, {"budget_usd": 1.1e5}), (2, 3, {"budget_usd": 1.2e5}),
                     (3, 3, {"budget_usd": 2e5})]
    sweep(toy_scenario(), {"budget_usd": [1.1e5]}, progress=False)
    assert capsys.readouterr().err == ""
    sweep(toy_scenario(), {"budget_usd": [1.1e5, 2e5]}, progress=True)
    assert "2/2" in capsys.readouterr().err  # the tqdm bar


def test_progress_of_process_batches_counts_every_point():
    calls = []
    budgets = [1.1e5, 1.2e5, 1.5e5, 2e5]
    sweep(toy_scenario(), {"budget_usd": budgets}, executor="processes", max_workers=2,
          batch_size=2, progress=lambda done, total, point: calls.append((done, total, point)))
    # two batches of two points: the count reaches 4, one step per report, and every
    # report names a point of the grid
    dones = [c[0] for c in calls]
    assert dones == sorted(dones) and dones[-1] == 4 and len(set(dones)) == len(dones)
    assert {c[1] for c in calls} == {4}
    assert all(c[2]["budget_usd"] in budgets for c in calls)


def test_a_built_problem_is_reused_for_right_hand_sides():
    problem = build_problem(toy_scenario())
    before = problem.n_solves
    df = sweep(problem, {"sum(bw) == 300": [150.0, 300.0]}, progress=False)
    assert problem.n_solves == before + 2
    assert_allclose(df["weighted_step_time_s"], [0.02, 0.015], rtol=1e-6)


def test_scenario_object_from_a_file_keeps_its_in_memory_changes():
    # changes made on the scenario's spec (a dataclasses.replace copy has none)
    spec = load_scenario("deepseek_v3_rail_only").spec.edit(
        {"budget_usd": 5e7, "collective_model": "sequential"})
    scen = lo.compile(spec)
    df = sweep(scen, {"fabric.hb_domain": [16]}, progress=False)
    want = solve(apply_overrides(scen, {"fabric.hb_domain": 16}), with_baselines=False)
    assert want.scenario.collective_model == "sequential" and want.scenario.budget_usd == 5e7
    assert_allclose(df.loc[0, "objective"], want.objective_value, rtol=1e-6)


# --------------------------------------------------------------------------- runs on disk

RUN_AXES = {"collective_model": ["pipelined", "sequential"],
            "sum(bw) == 1000": list(np.linspace(500.0, 2000.0, 15))}


def _stop_after(n_points):
    """A progress callback that presses Ctrl-C once ``n_points`` points are done."""
    def progress(done, total, point):
        if done >= n_points:
            raise KeyboardInterrupt
    return progress


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "run"
    return sweep("gpt3_175b_4d", RUN_AXES, progress=False, out=out)


def test_results_are_identical_whatever_the_executor_batches_and_interruptions(
        tmp_path, uninterrupted):
    """30 points (2 structural groups x 15 right-hand sides): stopped twice, on two
    executors with three batch sizes, then finished: the same rows as one serial run."""
    from libra_opt.explore.sweep import SweepInterrupted

    assert uninterrupted["point"].tolist() == list(range(30))
    out = tmp_path / "run"
    with pytest.raises(SweepInterrupted) as first:
        sweep("gpt3_175b_4d", RUN_AXES, out=out, batch_size=4, progress=_stop_after(9))
    assert first.value.total == 30 and 8 <= first.value.kept < 30
    assert len(pd.read_csv(out / "results.csv")) == first.value.kept  # whole batches only
    with pytest.raises(SweepInterrupted) as second:
        sweep("gpt3_175b_4d", RUN_AXES, out=out, resume=True, executor="processes",
              max_workers=2, batch_size=3, progress=_stop_after(first.value.kept + 6))
    assert first.value.kept < second.value.kept < 30
    calls = []
    df = sweep("gpt3_175b_4d", RUN_AXES, out=out, resume=True, executor="processes",
               max_workers=2, batch_size=7, progress=lambda d, t, p: calls.append(d))
    assert calls[0] > second.value.kept and calls[-1] == 30  # only the missing points
    pd.testing.assert_frame_equal(_no_timing(df), _no_timing(uninterrupted), check_exact=True)


def test_a_torn_last_batch_is_solved_again_on_resume(tmp_path, uninterrupted):
    """A kill during a write leaves a partial last line: resume drops it and re-solves."""
    from libra_opt.explore.sweep import SweepInterrupted

    out = tmp_path / "run"
    with pytest.raises(SweepInterrupted):
        sweep("gpt3_175b_4d", RUN_AXES, out=out, batch_size=5, progress=_stop_after(10))
    csv = out / "results.csv"
    lines = csv.read_bytes().splitlines(keepends=True)
    csv.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # torn
    df = sweep("gpt3_175b_4d", RUN_AXES, out=out, resume=True, progress=False)
    pd.testing.assert_frame_equal(_no_timing(df), _no_timing(uninterrupted), check_exact=True)


def test_a_results_folder_refuses_another_study_and_needs_overwrite(tmp_path, uninterrupted):
    out = tmp_path / "run"
    sweep("gpt3_175b_4d", {"sum(bw) == 1000": [500.0, 1000.0]}, out=out, progress=False)
    (out / "notes.txt").write_text("mine")
    (out / "sweep.png").write_bytes(b"stale")
    with pytest.raises(InputError, match="not empty"):
        sweep("gpt3_175b_4d", {"sum(bw) == 1000": [500.0, 1000.0]}, out=out, progress=False)
    with pytest.raises(InputError, match="different study"):
        sweep("gpt3_175b_4d", {"sum(bw) == 1000": [500.0, 700.0]}, out=out, resume=True,
              progress=False)
    with pytest.raises(InputError, match="different study"):  # zipped: another grid
        sweep("gpt3_175b_4d", {"sum(bw) == 1000": [500.0, 1000.0]}, out=out, resume=True,
              progress=False, zip=True)
    df = sweep("gpt3_175b_4d", {"sum(bw) == 1000": [700.0]}, out=out, overwrite=True,
               progress=False)
    assert df["sum(bw) == 1000"].tolist() == [700.0]
    # the earlier run's files are gone (its plot too); files that are not a run's stay
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "notes.txt",
                                                     "results.csv"]
    import json

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] and manifest["kept"] == 1 and manifest["points"] == 1
    assert manifest["scenario"] == "gpt3_175b_4d" and len(manifest["spec_hash"]) == 64
    assert manifest["axes"] == {"sum(bw) == 1000": [700.0]}
    assert manifest["library_version"] and manifest["created_utc"].endswith("Z")


def test_two_runs_into_one_folder_at_once_are_refused(tmp_path):
    """While one run holds its folder open, a second (a --resume started twice) is
    refused; the lock goes with the first run."""
    from libra_opt.io.results import open_results

    study = {"kind": "sweep", "scenario": "s", "spec_hash": "0" * 64, "axes": {"a": [1]},
             "zip": False, "points": 1}
    first = open_results(tmp_path / "run", study)
    with pytest.raises(InputError, match="another run is writing"):
        open_results(tmp_path / "run", study, resume=True)
    del first
    import gc

    gc.collect()
    assert open_results(tmp_path / "run", study, resume=True).done == frozenset()


class _MemorySink:
    """A results sink in memory: explore streams into any sink, not only a folder."""

    def __init__(self, kept=()):
        self.kept, self.frames, self.study, self.closed = frozenset(kept), [], None, False

    @property
    def location(self):
        return "memory"

    def open(self, study):
        self.study = dict(study)
        return self.kept

    def append(self, frame):
        self.frames.append(frame)

    def done_points(self):
        return self.kept | {int(p) for f in self.frames for p in f["point"]}

    def finish(self):
        return pd.concat(self.frames).sort_values("point").reset_index(drop=True)

    def close(self):
        self.closed = True


def test_a_sweep_streams_into_any_sink_and_skips_the_points_it_holds():
    """Point 0 already held: only points 1 and 2 are solved and appended. The toy's step
    time is 0.01 s + 1.5 GB / total bandwidth (the module doctest): 300 -> 0.015,
    600 -> 0.0125."""
    from libra_opt.explore.overrides import ScenarioBase
    from libra_opt.explore.sink import ResultsSink, spec_fingerprint
    from libra_opt.explore.sweep import sweep

    sink = _MemorySink(kept={0})
    assert isinstance(sink, ResultsSink)
    df = sweep(toy_scenario(), {"sum(bw) == 300": [150, 300, 600]}, progress=False,
                    out=sink)
    assert df["point"].tolist() == [1, 2]
    assert_allclose(df["weighted_step_time_s"], [0.015, 0.0125], rtol=1e-6)
    assert sink.study["points"] == 3 and sink.study["axes"] == {
        "sum(bw) == 300": [150.0, 300.0, 600.0]}
    assert sink.study["spec_hash"] == spec_fingerprint(ScenarioBase.of(toy_scenario()))
    with pytest.raises(InputError, match="results sink") as err:
        sweep(toy_scenario(), {"sum(bw) == 300": [150]}, progress=False, out="folder")
    assert err.value.field == "out"


def test_resume_and_overwrite_need_a_results_folder():
    for flag in ("resume", "overwrite"):
        with pytest.raises(InputError, match="give out=DIR") as err:
            lo.sweep(toy_scenario(), {"sum(bw) == 300": [150]}, progress=False, **{flag: True})
        assert err.value.field == flag


def test_points_re_checked_together_are_the_points_solved_one_by_one(monkeypatch):
    """A chunk's data points are solved and re-checked in groups (``solve_many``): every
    column but the timings is what the one-by-one path gives, infeasible points included;
    the group path decides most feasible points itself (counted: those near the budget's
    floor, polished or pinned, go one by one)."""
    from libra_opt.explore import grid
    from libra_opt.optimize import batch

    axes = {"budget_usd": np.geomspace(1e5, 6e7, 23),
            "workloads.gpt3_175b.weight": [0.5, 2.0],
            "constraints.bounds.scaleout[1]": [60.0, 100.0]}
    decided = []

    def counted(problem, points):
        answers = batch.solve_many(problem, points)
        decided.extend(a for a in answers if a is not None)
        return answers

    monkeypatch.setattr(grid, "solve_many", counted)
    together = sweep("gpt3_175b_a100_cluster", axes, progress=False)
    monkeypatch.setattr(grid, "_GROUP", 1)
    alone = sweep("gpt3_175b_a100_cluster", axes, progress=False)
    pd.testing.assert_frame_equal(_no_timing(together), _no_timing(alone), check_exact=True)
    n_optimal = int((together["status"] == "optimal").sum())
    assert 0 < n_optimal < len(together) == 23 * 2 * 2
    assert 0.75 * n_optimal <= len(decided) <= n_optimal
