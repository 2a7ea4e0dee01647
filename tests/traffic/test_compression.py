"""Compressed collectives: traffic multipliers per group and phase, derived by hand, and
the ``compression:`` block of the scenario YAML (errors name the file and the field)."""

import pytest
from numpy.testing import assert_allclose

from libra_opt import apply_overrides
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io import load_scenario
from libra_opt.scenario.evaluate import evaluate
from libra_opt.traffic.compression import DTYPE_BYTES, Compression, compress_workload
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
from tests.fixtures import write_scenario_files


def workload():
    ar = Collective("all_reduce", 1e9, "dp")
    ag = Collective("all_gather", 1e8, "tp")
    layer = Layer("l", Phase(1e-3, (ag,)), Phase(1e-3, (ag,)), Phase(2e-3, (ar,)), count=10)
    return Workload("w", (layer,), {"dp": (1, 8), "tp": (4, 1)})


FABRIC = Fabric((Dim("node", "ring", 4, "T"), Dim("pod", "switch", 8, "T")))


def test_bytes_per_element():
    assert dict(DTYPE_BYTES) == {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1,
                                 "int4": 0.5}


def test_step_time_by_hand():
    """10 layers at B = (100, 50) GB/s:
    tp all-gather of 0.1 GB over 4 (ring): 3 x 0.1 = 0.3 GB / 100 = 3 ms, fwd and input-grad;
    dp all-reduce of 1 GB over 8 (switch): 2 x 7/8 = 1.75 GB / 50 = 35 ms.
    dp as fp8 (of bf16): 17.5 ms; tp forward as fp32: 6 ms, tp input-grad unchanged."""
    comp = Compression((("dp", "all", "fp8"), ("tp", "forward", "fp32")))
    base = step_time(workload(), FABRIC, [100.0, 50.0]).step_time_s
    got = step_time(compress_workload(workload(), comp), FABRIC, [100.0, 50.0]).step_time_s
    assert_allclose(base, 10 * (4e-3 + 3e-3 + 3e-3 + 35e-3), rtol=1e-12)
    assert_allclose(got, 10 * (4e-3 + 6e-3 + 3e-3 + 17.5e-3), rtol=1e-12)


def test_int4_from_fp32_baseline():
    comp = Compression((("dp", "weight_grad", "int4"),), baseline="fp32")
    w = compress_workload(workload(), comp)
    assert w.layers[0].weight_grad.collectives[0].size_bytes == pytest.approx(1e9 / 8)
    assert w.layers[0].forward.collectives[0].size_bytes == 1e8


@pytest.mark.parametrize(("rules", "baseline", "field"), [
    ((("dp", "all", "fp6"),), "bf16", "compression.groups.dp"),
    ((("dp", "backward", "fp8"),), "bf16", "compression.groups.dp"),
    ((), "fp12", "compression.baseline"),
])
def test_bad_rules(rules, baseline, field):
    with pytest.raises(InputError) as err:
        Compression(rules, baseline)
    assert err.value.field == field


def test_unknown_group():
    with pytest.raises(InputError, match="no group 'ep'") as err:
        compress_workload(workload(), Compression((("ep", "all", "fp8"),)))
    assert err.value.field == "compression.groups.ep"


YAML = """\
name: comp
fabric:
  dims:
    - {name: hb, topology: ring, size: 4, tier: A}
    - {name: pod, topology: switch, size: 8, tier: B}
cost_model: {A: {Link: 2.0}, B: {Link: 4.0, Switch: 10.0, Nic: 20.0}}
workloads:
  - name: w
    astra_sim: w.txt
    communicator: comm.yml
%s
"""
WORKLOAD = "DATA\n1\nl -1 1000000 ALLGATHER 100000000 0 NONE 0 2000000 ALLREDUCE 1000000000 10\n"
COMM = "Forward: [4, 1]\nInputGrad: [1, 1]\nWeightGrad: [1, 8]\n"


def write(tmp_path, block):
    return write_scenario_files(tmp_path, YAML % block, WORKLOAD, COMM)


def test_yaml_block_and_override(tmp_path):
    """forward: all-gather of 0.1 GB over the ring of 4 -> 0.3 GB / 100; weight-grad:
    all-reduce of 1 GB over the switch of 8 -> 1.75 GB / 50; compute 3 ms."""
    bw = [100.0, 50.0]
    plain = load_scenario(write(tmp_path, ""))
    assert_allclose(evaluate(plain, bw).weighted_step_time_s, 3e-3 + 3e-3 + 35e-3)
    p = write(tmp_path, "compression: {groups: {weight_grad: int4, forward: {forward: fp8}}}")
    s = load_scenario(p)
    assert_allclose(evaluate(s, bw).weighted_step_time_s, 3e-3 + 1.5e-3 + 8.75e-3)
    o = apply_overrides(p, {"compression.groups.weight_grad": "fp32"})
    assert_allclose(evaluate(o, bw).weighted_step_time_s, 3e-3 + 1.5e-3 + 70e-3)


@pytest.mark.parametrize(("block", "field"), [
    ("compression: {groups: {weight_grad: fp6}}", "compression.groups.weight_grad"),
    ("compression: {groups: {dp: fp8}}", "compression.groups.dp"),
    ("compression: {baseline: fp12, groups: {weight_grad: fp8}}", "compression.baseline"),
    ("compression: {baseline: fp7}", "compression.baseline"),  # no groups: still checked
])
def test_bad_yaml_names_file_and_field(tmp_path, block, field):
    p = write(tmp_path, block)
    with pytest.raises(InputError) as err:
        load_scenario(p)
    assert err.value.source == str(p)
    assert err.value.field == field


def test_set_adds_the_block_and_sweeps(tmp_path):
    from libra_opt import sweep

    p = write(tmp_path, "constraints: {linear: ['sum(bw) == 150']}")
    s = apply_overrides(p, {"compression": "{groups: {weight_grad: fp8}}"})
    assert_allclose(evaluate(s, [100.0, 50.0]).weighted_step_time_s, 3e-3 + 3e-3 + 17.5e-3)
    df = sweep(p, {"compression": [{"groups": {"weight_grad": d}}
                                        for d in ("fp32", "bf16", "fp8", "int4")]},
                    progress=False)
    assert list(df["status"]) == ["optimal"] * 4
    assert list(df["objective"]) == sorted(df["objective"], reverse=True)
