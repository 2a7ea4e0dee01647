"""``compare_fabrics`` times every fabric with the scenario's collective settings: its
per-dimension efficiency under every collective model (and topology_aware's other
settings), and refuses a compared fabric whose dimensions those settings do not name."""

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.errors import InputError
from libra_opt.explore.compare import compare_fabrics
from libra_opt.fabric.builders import multi_dim
from libra_opt.scenario.evaluate import evaluate
from libra_opt.scenario.examples import toy_scenario
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import CollectiveSettings

EFF = {"node": 0.5, "pod": "ndr400_ib_nccl"}


@pytest.mark.parametrize("model", ["pipelined", "sequential", "topology_aware"])
def test_the_step_time_column_is_the_scenarios_own(model):
    s = dataclasses.replace(toy_scenario(), collective_model=model,
                            collectives=CollectiveSettings(efficiency=EFF))
    plain = dataclasses.replace(toy_scenario(), collective_model=model)
    t = evaluate(s, [200.0, 100.0]).weighted_step_time_s
    assert t > evaluate(plain, [200.0, 100.0]).weighted_step_time_s   # the settings matter
    df = compare_fabrics(s, {"same": s.fabric}, bw_gbps=[200.0, 100.0], modes=["equal_bw"],
                         timing=s.timing)
    assert_allclose(df["step_time_s"].iloc[0], t, rtol=1e-12)


def test_a_fabric_without_the_named_dimensions_is_refused():
    s = dataclasses.replace(toy_scenario(), collectives=CollectiveSettings(efficiency=EFF))
    other = multi_dim(s.fabric.sizes, [d.topology for d in s.fabric.dims])
    assert other.names != s.fabric.names
    with pytest.raises(InputError, match=r"fabrics: fabric 'other' has no dimension node, pod "
                       r"that the scenario's collective settings name"):
        compare_fabrics(s, {"same": s.fabric, "other": other}, bw_gbps=[200.0, 100.0],
                        modes=["equal_bw"], timing=s.timing)


def test_topology_aware_defaults_to_hierarchical_traffic():
    # no timing given: topology_aware runs dimension by dimension, so the comparison
    # takes the hierarchical traffic the scenario itself is timed with
    s = dataclasses.replace(toy_scenario(), collective_model="topology_aware",
                            collectives=CollectiveSettings(efficiency=EFF))
    df = compare_fabrics(s, {"same": s.fabric}, bw_gbps=[200.0, 100.0], modes=["equal_bw"])
    assert df.attrs["traffic_model"] == "hierarchical"
    assert_allclose(df["step_time_s"].iloc[0], evaluate(s, [200.0, 100.0]).weighted_step_time_s,
                    rtol=1e-12)


def test_native_traffic_under_topology_aware_is_refused_not_mislabelled():
    # the topology_aware model has no routing-aware form: asking for it is an error, not
    # hierarchical numbers labelled 'native'
    s = dataclasses.replace(toy_scenario(), collective_model="topology_aware")
    with pytest.raises(InputError, match="traffic_model: collective_model 'topology_aware' "
                       "runs collectives dimension by dimension"):
        compare_fabrics(s, {"same": s.fabric}, bw_gbps=[200.0, 100.0], modes=["equal_bw"],
                        timing=s.timing_with(traffic_model="native"))


def test_budget_optimum_follows_the_collective_model():
    from libra_opt.explore.compare import budget_optimum

    s = toy_scenario()
    kappa = np.array([1.0, 1.0])
    aware = TimingModel("topology_aware")
    bw = budget_optimum(s.workloads, s.fabric, kappa, 300.0, timing=aware)
    other = budget_optimum(s.workloads, s.fabric, kappa, 300.0)   # pipelined, native
    assert kappa @ bw == pytest.approx(300.0, rel=1e-6)
    # the topology_aware optimum is the best point of the budget line under that model: no
    # worse there than the pipelined optimum, another point of the same line
    timed = dataclasses.replace(s, collective_model="topology_aware")
    assert (evaluate(timed, bw).weighted_step_time_s
            <= evaluate(timed, other).weighted_step_time_s * (1 + 1e-9))
    with pytest.raises(InputError, match="does not model 'native' routing"):
        budget_optimum(s.workloads, s.fabric, kappa, 300.0,
                       timing=TimingModel("topology_aware", traffic_model="native"))


def test_the_scenarios_in_network_reduction_reaches_topology_aware_settings():
    """The scenario's top-level ``in_network_reduction`` joins the topology_aware settings
    in its own timing; the comparison built its timing separately and dropped it (the pod
    all-reduce of tests.fixtures.workload_2d priced without the switch's reduction)."""
    from tests.optimize.test_in_network import scen

    s = scen(collective_model="topology_aware")
    plain = dataclasses.replace(s, in_network_reduction=())
    t = evaluate(s, [50.0, 20.0]).weighted_step_time_s
    assert t < evaluate(plain, [50.0, 20.0]).weighted_step_time_s   # the reduction matters
    df = compare_fabrics(s, {"same": s.fabric}, bw_gbps=[50.0, 20.0], modes=["equal_bw"])
    assert_allclose(df["step_time_s"].iloc[0], t, rtol=1e-12)
