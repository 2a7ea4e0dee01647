"""Reproduce published end-to-end training throughput (data: published_throughput.yaml).

One efficiency constant per device is calibrated on one configuration; the other
configurations of that device are predicted and must fall within +-15 % of the published
figure. The calibration is exact and closed-form: at a fixed bandwidth the step time is
``A / eta + B`` (compute scales with ``1/eta``, communication does not), so two evaluations
give ``A`` and ``B``.
"""

from pathlib import Path

import pytest
import yaml

from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.generators import achieved_flops_per_npu, generate_workload, model_from_dict
from libra_opt.io.presets import load_device, load_model
from libra_opt.traffic.step_time import step_time

DATA = yaml.safe_load((Path(__file__).with_name("published_throughput.yaml")).read_text())
TOLERANCE = 0.15


def _model(row):
    m = row["model"]
    if isinstance(m, str):
        model = load_model(m)
        if "seq_len" in row:
            model = model.model_copy(update={"seq_len": row["seq_len"]})
        return model
    d = dict(m)
    d["ffn_hidden_size"] = 4 * d["hidden_size"]
    return model_from_dict(d, "published_throughput.yaml")


def _run(row, eff):
    cl = DATA["clusters"][row["cluster"]]
    par = row["parallelism"]
    n = par["tp"] * par.get("cp", 1) * par.get("pp", 1) * par["dp"]
    per_node = cl["gpus_per_node"]
    fabric = Fabric(
        (
            Dim("node", cl["node"]["topology"], per_node, cl["node"]["tier"]),
            Dim("pod", cl["pod"]["topology"], n // per_node, cl["pod"]["tier"]),
        )
    )
    g = generate_workload(
        _model(row),
        par,
        load_device(cl["device"]),
        fabric,
        efficiency=eff,
        check_memory=row.get("check_memory", True),
    )
    t = step_time(g.workload, fabric, [cl["node"]["bw_gbps"], cl["pod"]["bw_gbps"]])
    hardware = row["metric"] == "hardware_tflops_per_gpu"
    return g, t, achieved_flops_per_npu(g, t.step_time_s, hardware=hardware) / 1e12


def _calibrate(row):
    _, t1, f1 = _run(row, 1.0)
    _, t2, _ = _run(row, 0.5)
    a = t2.step_time_s - t1.step_time_s
    b = t1.step_time_s - a
    target_s = t1.step_time_s * f1 / row["published"]
    return a / (target_s - b)


def _rows(cluster):
    return [r for r in DATA["rows"] if r["cluster"] == cluster]


@pytest.fixture(scope="module")
def efficiencies():
    out = {}
    for cluster in DATA["clusters"]:
        (cal,) = [r for r in _rows(cluster) if r.get("calibrate")]
        out[cluster] = _calibrate(cal)
    return out


@pytest.mark.parametrize("row", DATA["rows"], ids=[r["name"] for r in DATA["rows"]])
def test_published_throughput(row, efficiencies):
    eta = efficiencies[row["cluster"]]
    g, t, pred = _run(row, eta)
    err = pred / row["published"] - 1
    if row.get("calibrate"):
        assert err == pytest.approx(0.0, abs=1e-9)
    assert abs(err) <= TOLERANCE, (
        f"{row['name']}: predicted {pred:.1f} TFLOP/s per GPU, published {row['published']} "
        f"({100 * err:+.1f} %), eta {eta:.3f}, step {t.step_time_s:.2f} s"
    )


def test_calibrated_efficiencies_match_device_defaults(efficiencies):
    """devices.yaml's default efficiencies are the values calibrated here."""
    for cluster, eta in efficiencies.items():
        dev = load_device(DATA["clusters"][cluster]["device"])
        assert dev.default_efficiency == pytest.approx(eta, abs=0.01)
        assert 0.3 < eta < 0.85  # a plausible fraction of the dense peak


def test_megatron_tflops_use_eq3_hardware_flops():
    """Megatron's per-GPU figure uses eq. (3): 96 B s l h^2 (1 + s/(6h) + V/(16 l h))."""
    row = next(r for r in DATA["rows"] if r.get("model") == "megatron_1t")
    g, _, _ = _run(row, 0.5)
    B, s, n_l, h, V = 3072, 2048, 128, 25600, 51200
    eq3 = 96 * B * s * n_l * h**2 * (1 + s / (6 * h) + V / (16 * n_l * h))
    assert g.hardware_flops_per_step == pytest.approx(eq3, rel=1e-12)
