"""Fine-grained overlap: phase time max(C, sum f X) + sum (1 - f) X derived by hand, brute
force over the bandwidths, both backends, DCP, and the YAML block."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.cost.prices import CostModel
from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io import load_scenario
from libra_opt.optimize.problem import build_problem, solve
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.scenario import Scenario
from libra_opt.traffic.overlap import OVERLAP_PRESETS, OverlapPolicy, overlap_workload
from libra_opt.traffic.step_time import step_time
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload
from tests.fixtures import write_scenario_files
from tests.optimize.test_problem import brute_line, check

FABRIC = Fabric((Dim("node", "ring", 4, "A"), Dim("pod", "switch", 8, "B")))
COST = CostModel.from_tables({"A": {"link": 2.0}, "B": {"link": 4.0, "switch": 10.0, "nic": 20.0}})
POLICY = OverlapPolicy.from_presets(["dp_backward"], (("tp", "all", 0.5), ("ep", "all", 0.25)))


def workload():
    ag = Collective("all_gather", 0.1e9, "tp")
    a2a = Collective("all_to_all", 0.8e9, "ep")
    ar = Collective("all_reduce", 1e9, "dp")
    layer = Layer("l", Phase(10e-3, (ag,)), Phase(5e-3, (a2a,)), Phase(20e-3, (ar,)), count=3)
    return Workload("w", (layer,), {"tp": (4, 1), "ep": (4, 8), "dp": (1, 8)})


def step(b0, b1):
    """3 layers; X_tp = 3 x 0.1 / b0 (ring all-gather of 0.1 GB shards over 4);
    X_ep = max(0.8 x 3/4 / b0, 0.8 x 7/8 / b1) (pipelined all-to-all); X_dp = 2 x 7/8 / b1.
    f = 0.5, 0.25, 1."""
    x_tp = 0.3 / b0
    x_ep = np.maximum(0.6 / b0, 0.7 / b1)
    x_dp = 1.75 / b1
    fwd = np.maximum(10e-3, 0.5 * x_tp) + 0.5 * x_tp
    ig = np.maximum(5e-3, 0.25 * x_ep) + 0.75 * x_ep
    wg = np.maximum(20e-3, x_dp)
    return 3 * (fwd + ig + wg)


def test_closed_form_equals_max_form():
    for b in ([10.0, 100.0], [300.0, 20.0]):
        x_tp, x_ep = 0.3 / b[0], max(0.6 / b[0], 0.7 / b[1])
        alt = max(10e-3 + 0.5 * x_tp, x_tp) + max(5e-3 + 0.75 * x_ep, x_ep) \
            + max(20e-3, 1.75 / b[1])
        assert_allclose(step(*b), 3 * alt, rtol=1e-12)


def test_step_time_by_hand():
    o = overlap_workload(workload(), POLICY)
    for b in ([10.0, 100.0], [300.0, 20.0], [60.0, 60.0]):
        got = step_time(o, FABRIC, b, TimingModel(training_loop="overlap")).step_time_s
        assert_allclose(got, step(*b), rtol=1e-12)


def test_extremes_are_the_two_loops():
    w = workload()
    none = overlap_workload(w, OverlapPolicy())
    full = overlap_workload(w, OverlapPolicy((("tp", "all", 1), ("ep", "all", 1), ("dp", "all", 1))))
    b = [50.0, 30.0]
    assert_allclose(step_time(none, FABRIC, b, TimingModel(training_loop="overlap")).step_time_s,
                    step_time(w, FABRIC, b, TimingModel(training_loop="no_overlap")).step_time_s, rtol=1e-12)
    assert_allclose(step_time(full, FABRIC, b, TimingModel(training_loop="overlap")).step_time_s,
                    step_time(w, FABRIC, b, TimingModel(training_loop="overlap")).step_time_s, rtol=1e-12)


def scenario(objective="perf"):
    cons = (parse_constraint("sum(bw) == 120", FABRIC),)
    return Scenario(FABRIC, COST, (overlap_workload(workload(), POLICY),), constraints=cons,
                    objective=objective, training_loop="overlap")


@pytest.mark.parametrize("objective", ["perf", "perf_per_cost"])
def test_brute_force_and_backends(objective):
    s = scenario(objective)
    sol = solve(s)
    kappa = np.array([32 * 2.0, 32 * 34.0])

    def obj(a, b):
        t = step(a, b)
        return t if objective == "perf" else t * (kappa[0] * a + kappa[1] * b)

    best, _ = brute_line(120.0, obj)
    check(sol, best, 1e-6)
    p = build_problem(s, backend="cvxpy")
    assert p.program.problem.is_dcp()
    assert_allclose(solve(p).objective_value, sol.objective_value, rtol=1e-7)
    assert_allclose(evaluate(s, sol.bw_gbps).weighted_step_time_s, step(*sol.bw_gbps), rtol=1e-9)


def test_presets_and_bad_rules():
    assert set(OVERLAP_PRESETS) == {"dp_backward", "tp_layer", "moe_all_to_all"}
    with pytest.raises(InputError) as err:
        OverlapPolicy((("tp", "forward", 1.5),))
    assert err.value.field == "fine_grained_overlap.groups.tp.forward"
    with pytest.raises(InputError) as err:
        OverlapPolicy.from_presets(["zero_bubble"])
    assert err.value.field == "fine_grained_overlap.presets"


YAML = """\
name: ov
fabric:
  dims:
    - {name: node, topology: ring, size: 4, tier: A}
    - {name: pod, topology: switch, size: 8, tier: B}
cost_model: {A: {Link: 2.0}, B: {Link: 4.0, Switch: 10.0, Nic: 20.0}}
workloads:
  - name: w
    astra_sim: w.txt
    communicator: comm.yml
%s
"""
# forward: 10 ms + all-gather of 0.1 GB over the ring; weight-grad: 20 ms + all-reduce 1 GB
WORKLOAD = "DATA\n1\nl -1 10000000 ALLGATHER 100000000 0 NONE 0 20000000 ALLREDUCE 1000000000 0\n"
COMM = "Forward: [4, 1]\nInputGrad: [1, 1]\nWeightGrad: [1, 8]\n"


def write(tmp_path, block):
    return write_scenario_files(tmp_path, YAML % block, WORKLOAD, COMM)


def test_yaml(tmp_path):
    """The YAML's forward / weight-grad groups are named after their phases: 0.3 / b0 and
    1.75 / b1; forward 40% hidden, weight-grad fully."""
    p = write(tmp_path, "training_loop: overlap\nfine_grained_overlap: "
                        "{groups: {forward: 0.4, weight_grad: 1.0}}")
    b = [10.0, 100.0]
    x_f, x_w = 0.3 / b[0], 1.75 / b[1]
    want = max(10e-3, 0.4 * x_f) + 0.6 * x_f + max(20e-3, x_w)
    assert_allclose(evaluate(load_scenario(p), b).weighted_step_time_s, want, rtol=1e-12)


@pytest.mark.parametrize(("block", "field"), [
    ("fine_grained_overlap: {groups: {forward: 0.4}}", "fine_grained_overlap"),
    ("training_loop: overlap\nfine_grained_overlap: {groups: {forward: 2}}",
     "fine_grained_overlap.groups.forward"),
    ("training_loop: overlap\nfine_grained_overlap: {presets: [nope]}",
     "fine_grained_overlap.presets"),
])
def test_bad_yaml_names_file_and_field(tmp_path, block, field):
    p = write(tmp_path, block)
    with pytest.raises(InputError) as err:
        load_scenario(p)
    assert err.value.source == str(p)
    assert err.value.field == field
