"""Tensor-parallel backward collectives overlapped with their GEMMs (``tp_comm_overlap``).

The step time of the overlap-form workload is checked against a hand derivation: each
hidden collective ``c`` with its GEMM ``w`` costs ``max(w, c) = w + c - min(w, c)``, so the
step is shorter than the plain one by exactly ``sum min(w, c)`` over the hidden
collectives, with ``w`` priced from the named GEMM operators and ``c`` from the textbook
switch formulas (all-reduce ``2 (n-1)/n A / B``, reduce-scatter ``(n-1)/n A / B``, all-gather
of shards ``s``: ``(n-1) s / B``).
"""

from pathlib import Path

import numpy as np
import pytest
import yaml

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import generate_workload, model_from_dict
from libra_opt.generators.operators import head_operators, transformer_layer_operators
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.roofline import operator_time_s
from libra_opt.io.astra_sim import export_astra_sim
from libra_opt.io.presets import load_device
from libra_opt.io.scenario_file import scenario_from_dict
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel

MODEL = model_from_dict(dict(kind="transformer", name="m", n_layers=3, hidden_size=1024,
                             ffn_hidden_size=4096, n_heads=16, vocab_size=32000, seq_len=1024,
                             bias=True, norm="layernorm", dropout=True))
DEVICE = load_device("a100_80gb")
N = 2  # tensor-parallel ranks, one switch
FABRIC = Fabric((Dim("node", "switch", N, "NVLink"),))
M = 3  # micro-batches


def _par(**kw):
    base = dict(tp=N, micro_batch_size=2, global_batch_size=2 * M, recompute="full",
                precision={"compute_dtype": "bf16"})
    base.update(kw)
    return Parallelism(**base)


def _times(par, bw):
    plain = generate_workload(MODEL, par.model_copy(update={"tp_comm_overlap": False}), DEVICE, FABRIC)
    over = generate_workload(MODEL, par.model_copy(update={"tp_comm_overlap": True}), DEVICE, FABRIC)
    assert over.workload.overlap_form and not plain.workload.overlap_form
    t_plain = step_time(plain.workload, FABRIC, [bw]).step_time_s
    t_over = step_time(over.workload, FABRIC, [bw], TimingModel(training_loop="overlap")).step_time_s
    return plain, over, t_plain, t_over


def _gemm_s(ops, name):
    (op,) = [o for o in ops if o.name == name]
    return operator_time_s(op, DEVICE, "bf16", DEVICE.default_efficiency)


@pytest.mark.parametrize("bw", [1.0, 20.0, 150.0, 5000.0])
def test_all_reduce_behind_weight_gradient_gemm_by_hand(bw):
    par = _par()
    plain, over, t_plain, t_over = _times(par, bw)
    act = 2 * 1024 * 1024 * 2.0  # micro-batch 2 x sequence 1024 x hidden 1024 x bf16
    c = 2 * (N - 1) / N * act / (bw * 1e9)
    layer = transformer_layer_operators(MODEL, par, moe=False)
    head = head_operators(MODEL, par)
    windows = [_gemm_s(layer.weight_grad, "qkv_proj_wgrad"),
               _gemm_s(layer.weight_grad, "mlp_fc1_wgrad")] * MODEL.n_layers
    windows.append(_gemm_s(head.weight_grad, "logits_wgrad"))
    saving = M * sum(min(w, c) for w, c in zip(windows, [c] * len(windows), strict=True))
    np.testing.assert_allclose(t_plain - t_over, saving, rtol=1e-9)
    # the split moves compute, it does not change it
    np.testing.assert_allclose(over.workload.compute_s, plain.workload.compute_s, rtol=1e-12)
    assert dict(over.compute_breakdown_s) == dict(plain.compute_breakdown_s)


@pytest.mark.parametrize("bw", [1.0, 40.0, 5000.0])
def test_sequence_parallel_gather_and_reduce_scatter_by_hand(bw):
    par = _par(sequence_parallel=True, recompute="selective")
    _, _, t_plain, t_over = _times(par, bw)
    act = 2 * 1024 * 1024 * 2.0
    c_ag = (N - 1) * (act / N) / (bw * 1e9)   # all-gather of 1/N shards
    c_rs = (N - 1) / N * act / (bw * 1e9)
    layer = transformer_layer_operators(MODEL, par, moe=False)
    head = head_operators(MODEL, par)
    saving = 0.0
    for ops, lin, n in ((layer, "qkv_proj", MODEL.n_layers), (layer, "mlp_fc1", MODEL.n_layers),
                        (head, "logits", 1)):
        w_d, w_w = _gemm_s(ops.input_grad, f"{lin}_dgrad"), _gemm_s(ops.weight_grad, f"{lin}_wgrad")
        saving += n * (min(w_d, c_ag) + min(w_w, c_rs))
    np.testing.assert_allclose(t_plain - t_over, M * saving, rtol=1e-9)


def test_pipeline_bubble_interleave_and_moe_by_hand():
    """MoE layers (routed and shared experts), sequence parallelism, pp 2 x interleave 2.

    With the tensor-parallel link far slower than any GEMM, every hidden collective
    outlasts its GEMM, so the overlap saves exactly the GEMMs' time: for every pass through
    the representative stage (m micro-batches plus the bubble's sum_{s != r} t_s / (v t_r)),
    each block's
    column-parallel input-gradient and weight-gradient GEMMs (the output layer's too on
    the last stage).
    """
    from libra_opt.generators.pipeline import stage_plan

    moe = model_from_dict(dict(kind="transformer", name="moe", n_layers=4, hidden_size=512,
                               ffn_hidden_size=2048, n_heads=8, vocab_size=32000, seq_len=512,
                               moe={"n_experts": 8, "top_k": 2, "expert_ffn_hidden_size": 1024,
                                    "n_shared_experts": 1}))
    fabric = Fabric((Dim("node", "switch", 4, "NVLink"), Dim("pod", "switch", 4, "IB")))
    par = Parallelism(tp=2, pp=2, interleave=2, dp=4, ep=2, micro_batch_size=1,
                      global_batch_size=12, sequence_parallel=True,
                      precision={"compute_dtype": "bf16"})
    plain = generate_workload(moe, par, DEVICE, fabric)
    over = generate_workload(moe, par.model_copy(update={"tp_comm_overlap": True}), DEVICE, fabric)
    np.testing.assert_allclose(over.workload.compute_s, plain.workload.compute_s, rtol=1e-12)
    assert over.notes[0].startswith("workload of pipeline stage 1") and "output layer" in over.notes[0]
    (last,) = [s for s in stage_plan(moe, 2, 2) if s.has_head]
    assert last.n_moe == last.n_layers == 2
    ops = transformer_layer_operators(moe, par, moe=True)
    head = head_operators(moe, par)

    def both(o, lin):
        return _gemm_s(o.input_grad, f"{lin}_dgrad") + _gemm_s(o.weight_grad, f"{lin}_wgrad")

    per_pass = (last.n_moe * (both(ops, "qkv_proj") + both(ops, "experts_fc1")
                              + both(ops, "shared_experts_fc1")) + both(head, "logits"))
    t_stages = plain.stage_compute_s   # flow-shop fill and drain (pipeline_bubble_passes)
    passes = par.micro_batches + (sum(t_stages) - max(t_stages)) / (par.interleave * max(t_stages))
    bw = [1e-4, 50.0]  # GB/s: tensor-parallel collectives take ~10^3 s each
    t_plain = step_time(plain.workload, fabric, bw).step_time_s
    t_over = step_time(over.workload, fabric, bw, TimingModel(training_loop="overlap")).step_time_s
    np.testing.assert_allclose(t_plain - t_over, passes * per_pass, rtol=1e-9)
    names = {layer.name for layer in over.workload.layers}
    assert {"moe_layer~tp_overlap_attention", "moe_layer~tp_overlap_experts",
            "moe_layer~tp_overlap_shared_experts"} <= names
    # the bubble (less than one pass here) is one scaled copy of the stage's layers
    assert "bubble_moe_layer~tp_overlap_experts_part" in names
    # every layer is exact under the overlap loop: only overlap layers pair compute with
    # collectives in one phase
    for layer in over.workload.layers:
        if "~tp_overlap_" not in layer.name:
            assert all(not (p.compute_s and p.collectives) for _, p in layer.phases()), layer.name


def test_bad_uses_are_refused():
    with pytest.raises(ValueError, match="tp_comm_overlap needs tp > 1"):
        Parallelism(tp=1, tp_comm_overlap=True, global_batch_size=1)
    with pytest.raises(InputError, match="needs the roofline compute model"):
        generate_workload(MODEL, _par(tp_comm_overlap=True), DEVICE, FABRIC, efficiency=0.5)
    over = generate_workload(MODEL, _par(tp_comm_overlap=True), DEVICE, FABRIC)
    with pytest.raises(InputError, match="overlap form"):
        export_astra_sim(over, Path("/nonexistent/never_written.txt"))
    with pytest.raises(InputError, match="timed only by training_loop 'overlap'"):
        step_time(over.workload, FABRIC, [100.0])


EXAMPLE = Path(__file__).parents[2] / "libra_opt/data/examples/gpt3_175b_a100_cluster.yaml"


def _scenario(loop, **extra):
    data = yaml.safe_load(EXAMPLE.read_text())
    data["workloads"][0]["parallelism"]["tp_comm_overlap"] = True
    data["training_loop"] = loop
    data.update(extra)
    return scenario_from_dict(data, "s.yaml", EXAMPLE.parent)


def test_scenario_needs_the_overlap_loop_and_no_fine_grained_policy():
    with pytest.raises(InputError) as e:
        _scenario("no_overlap")
    assert e.value.source == "s.yaml" and e.value.field == "training_loop"
    assert "training_loop: overlap" in e.value.message
    with pytest.raises(InputError) as e:
        _scenario("overlap", fine_grained_overlap={"presets": ["dp_backward"]})
    assert e.value.source == "s.yaml" and e.value.field == "fine_grained_overlap"


def test_optimizer_matches_a_brute_force_search_on_the_overlap_form():
    from libra_opt.optimize.problem import solve

    scen = _scenario("overlap", constraints={"bounds": {"hb": [100, 600], "scaleout": [12.5, 100]},
                                             "linear": ["bw.hb + 8 * bw.scaleout <= 700"]})
    sol = solve(scen)
    (wl,) = scen.workloads
    best = np.inf
    for hb in np.linspace(100, 600, 2001):
        so = min(100.0, (700 - hb) / 8)
        if so < 12.5:
            continue
        best = min(best, step_time(wl, scen.fabric, [hb, so], scen.timing).step_time_s)
    assert sol.objective_value <= best * (1 + 1e-9)
    assert sol.objective_value >= best * (1 - 1e-4)  # grid spacing 0.25 GB/s


def test_cli_set_turns_it_on_together_with_the_overlap_loop(capsys):
    import json

    from libra_opt.cli.main import main

    on = ["--set", "workloads[gpt3_175b].parallelism.tp_comm_overlap=true"]
    loop = ["--set", "training_loop=overlap"]
    assert main(["solve", "gpt3_175b_a100_cluster", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)["objective_value"]
    for argv in (on + loop, loop + on):
        assert main(["solve", "gpt3_175b_a100_cluster", "--json", *argv]) == 0
        assert json.loads(capsys.readouterr().out)["objective_value"] < plain
    assert main(["solve", "gpt3_175b_a100_cluster", *on]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "training_loop: overlap" in err


# --- data-parallel gradient reduction behind the last micro-batch's backward pass -------

DP_FABRIC = Fabric((Dim("pod", "switch", 2, "IB"),))


def _dp_par(**kw):
    base = dict(dp=2, micro_batch_size=1, global_batch_size=2 * M, precision={"compute_dtype": "bf16"})
    base.update(kw)
    return Parallelism(**base)


def _backward_s(ops):
    _, ig, wg = ops.passes()
    return sum(operator_time_s(o, DEVICE, "bf16", DEVICE.default_efficiency) for o in ig + wg)


@pytest.mark.parametrize("bw", [0.05, 1.0, 400.0])
def test_gradient_all_reduce_behind_last_backward_by_hand(bw):
    from libra_opt.generators.operators import embedding_operators

    par = _dp_par()
    plain = generate_workload(MODEL, par, DEVICE, DP_FABRIC)
    over = generate_workload(MODEL, par.model_copy(update={"dp_comm_overlap": True}), DEVICE,
                             DP_FABRIC)
    (sync,) = [x for x in plain.workload.layers if x.name == "dp_grad_sync"]
    (ar,) = sync.weight_grad.collectives
    t_ar = 2 * (2 - 1) / 2 * ar.size_bytes / (bw * 1e9)
    window = (MODEL.n_layers * _backward_s(transformer_layer_operators(MODEL, par, moe=False))
              + _backward_s(head_operators(MODEL, par)) + _backward_s(embedding_operators(MODEL, par)))
    t_plain = step_time(plain.workload, DP_FABRIC, [bw]).step_time_s
    t_over = step_time(over.workload, DP_FABRIC, [bw],
                       TimingModel(training_loop="overlap")).step_time_s
    np.testing.assert_allclose(t_plain - t_over, min(window, t_ar), rtol=1e-9)
    np.testing.assert_allclose(over.workload.compute_s, plain.workload.compute_s, rtol=1e-12)


def test_both_overlaps_together_never_count_a_gemm_twice():
    fabric = Fabric((Dim("node", "switch", 2, "NVLink"), Dim("pod", "switch", 2, "IB")))
    par = Parallelism(tp=2, dp=2, micro_batch_size=1, global_batch_size=2 * M,
                      sequence_parallel=True, precision={"compute_dtype": "bf16"})
    gen = {flags: generate_workload(MODEL, par.model_copy(update=dict(zip(
        ("tp_comm_overlap", "dp_comm_overlap"), flags, strict=True))), DEVICE, fabric)
        for flags in ((False, False), (True, False), (False, True), (True, True))}
    for g in gen.values():
        np.testing.assert_allclose(g.workload.compute_s, gen[(False, False)].workload.compute_s,
                                   rtol=1e-12)
    layer = transformer_layer_operators(MODEL, par, moe=False)
    head = head_operators(MODEL, par)
    from libra_opt.generators.operators import embedding_operators

    backward = (MODEL.n_layers * _backward_s(layer) + _backward_s(head)
                + _backward_s(embedding_operators(MODEL, par)))
    tp_gemms = sum(n * (_gemm_s(ops.input_grad, f"{lin}_dgrad") + _gemm_s(ops.weight_grad, f"{lin}_wgrad"))
                   for ops, lin, n in ((layer, "qkv_proj", MODEL.n_layers),
                                       (layer, "mlp_fc1", MODEL.n_layers), (head, "logits", 1)))
    (sync,) = [x for x in gen[(False, False)].workload.layers if x.name == "dp_grad_sync"]
    (ar,) = sync.weight_grad.collectives
    for bw in ([1000.0, 0.01], [0.5, 1000.0], [20.0, 2.0], [20.0, 0.2]):
        t = {k: step_time(g.workload, fabric, bw, TimingModel(
                 training_loop="overlap" if any(k) else "no_overlap")).step_time_s
             for k, g in gen.items()}
        t_dp = ar.size_bytes / (bw[1] * 1e9)  # all-reduce over 2: 2 (1/2) size / B
        s_tp = t[(False, False)] - t[(True, False)]
        s_dp = t[(False, False)] - t[(False, True)]
        s_both = t[(False, False)] - t[(True, True)]
        np.testing.assert_allclose(s_dp, min(backward, t_dp), rtol=1e-9)
        # with both, the DP window is the backward compute not already hiding a TP
        # collective: no GEMM hides two collectives
        np.testing.assert_allclose(s_both - s_tp, min(backward - tp_gemms, t_dp), rtol=1e-9,
                                   atol=1e-15)


@pytest.mark.parametrize("bw", [[400.0, 0.02], [400.0, 2.0], [400.0, 200.0]])
def test_data_and_pipeline_traffic_share_the_scale_out_links(bw):
    # PP and DP both cross the scale-out ('pod') links. Under dp_comm_overlap the gradient
    # reduction hides behind the last micro-batch's backward compute (the window W), while
    # the pipeline sends stay exposed. The links are shared, not doubled: the step is never
    # shorter than the compute outside the window plus everything the pod links carry
    # (DP and PP bytes together), T >= C - W + busy_pod, at any bandwidth.
    from libra_opt.generators.comm_overlap import DP_WINDOW

    fabric = Fabric((Dim("node", "switch", 2, "NVLink"), Dim("pod", "switch", 4, "IB")))
    par = Parallelism(tp=2, pp=2, dp=2, micro_batch_size=1, global_batch_size=2 * M,
                      precision={"compute_dtype": "bf16"})
    plain = generate_workload(MODEL, par, DEVICE, fabric)
    over = generate_workload(MODEL, par.model_copy(update={"dp_comm_overlap": True}), DEVICE,
                             fabric)
    assert over.workload.groups["pp"] == (1, 2) and over.workload.groups["dp"] == (1, 2)
    (win,) = [x for x in over.workload.layers if x.name == DP_WINDOW]
    window_s = win.weight_grad.compute_s
    st = step_time(over.workload, fabric, bw, TimingModel(training_loop="overlap"))
    st_plain = step_time(plain.workload, fabric, bw)
    pod = fabric.names.index("pod")
    by_group = {g: t for g, t in st.comm_by_group_s.items() if t > 0}
    assert by_group["pp"] > 0 and by_group["dp"] > 0   # both groups on the pod links
    assert st.step_time_s >= st.compute_s - window_s + st.busy_by_dim_s[pod] * (1 - 1e-12)
    # and the overlap saves exactly min(W, t_dp): the pipeline sends are not hidden
    t_dp = st_plain.comm_by_group_s["dp"]
    np.testing.assert_allclose(st_plain.step_time_s - st.step_time_s, min(window_s, t_dp),
                               rtol=1e-9)


def test_dp_overlap_needs_a_reduction():
    with pytest.raises(ValueError, match="dp_comm_overlap needs a data-parallel"):
        Parallelism(dp=1, dp_comm_overlap=True, global_batch_size=1)
    with pytest.raises(ValueError, match="dp_comm_overlap needs a data-parallel"):
        Parallelism(dp=2, zero=3, dp_comm_overlap=True, global_batch_size=2)
    from libra_opt.generators.resnet import check_data_parallel_only

    with pytest.raises(InputError, match="modelled for transformer steps"):
        check_data_parallel_only(Parallelism(dp=2, dp_comm_overlap=True, global_batch_size=2),
                                 "ResNet")


def test_fine_grained_dp_preset_is_refused_where_it_could_hide_nothing():
    data = yaml.safe_load(EXAMPLE.read_text())
    data["training_loop"] = "overlap"
    data["fine_grained_overlap"] = {"presets": ["dp_backward"]}
    with pytest.raises(InputError) as e:
        scenario_from_dict(data, "s.yaml", EXAMPLE.parent)
    assert e.value.source == "s.yaml" and e.value.field == "fine_grained_overlap"
    assert "'dp' collectives" in e.value.message and "dp_grad_sync" in e.value.message
    assert "parallelism.dp_comm_overlap" in e.value.message
    data["fine_grained_overlap"] = {"presets": ["tp_layer"]}  # TP shares phases with GEMMs
    assert scenario_from_dict(data, "s.yaml", EXAMPLE.parent).training_loop == "overlap"


def test_sweep_axis_with_a_set_training_loop(tmp_path, capsys):
    from libra_opt.cli.main import main

    out = tmp_path / "sweep"
    assert main(["sweep", "gpt3_175b_a100_cluster", "--set", "training_loop=overlap", "--axis",
                 "workloads[gpt3_175b].parallelism.tp_comm_overlap=true,false",
                 "--out", str(out)]) == 0
    text = (out / "results.csv").read_text().splitlines()
    assert len(text) == 3 and all(",optimal," in line for line in text[1:])


def test_set_a_device_mapping_and_export_refusal(tmp_path, capsys):
    from libra_opt.cli.main import main

    assert main(["solve", "gpt3_175b_a100_cluster", "--json", "--set",
                 "workloads[gpt3_175b].device={preset: a100_80gb, default_efficiency: 0.5}"]) == 0
    assert main(["solve", "gpt3_175b_a100_cluster", "--set",
                 "workloads[gpt3_175b].device={preset: a100_80gb, default_eff: 0.5}"]) == 2
    assert "unknown key 'default_eff'" in capsys.readouterr().err
    data = yaml.safe_load(EXAMPLE.read_text())
    data["workloads"][0]["parallelism"]["dp_comm_overlap"] = True
    data["training_loop"] = "overlap"
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    export = tmp_path / "export"
    assert main(["workload", str(path), "--export", str(export)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # refused before anything is printed
    assert len(captured.err.strip().splitlines()) == 1
    assert str(path) in captured.err and "--export: workload 'gpt3_175b'" in captured.err
    assert not export.exists() or not list(export.iterdir())
