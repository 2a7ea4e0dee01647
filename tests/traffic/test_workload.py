"""The one walk over a workload: every phase of every layer, with its repeat count."""

from libra_opt.options import PHASES
from libra_opt.traffic.workload import (
    Collective,
    Layer,
    Phase,
    Workload,
    walk_collectives,
    walk_phases,
)


def _workload():
    ar = Collective("all_reduce", 1e6, "dp")
    ag = Collective("all_gather", 2e6, "tp")
    return Workload(
        "w",
        (
            Layer("emb", Phase(1e-3, (ag,)), count=1),
            Layer("block", Phase(2e-3, (ag, ag)), Phase(3e-3), Phase(4e-3, (ar,)), count=96),
        ),
        {"dp": (1, 8), "tp": (4, 1)},
    )


def test_walk_visits_every_phase_in_step_order():
    steps = list(walk_phases(_workload()))
    assert [(s.layer.name, s.name, s.count) for s in steps] == [
        ("emb", p, 1) for p in PHASES
    ] + [("block", p, 96) for p in PHASES]


def test_walk_collectives_counts_by_hand():
    """emb: 1 all-gather; block (x96): 2 all-gathers forward, 1 all-reduce weight-grad."""
    steps = list(walk_collectives(_workload()))
    assert [(s.layer.name, s.phase_name, s.kind, s.span, s.count) for s in steps] == [
        ("emb", "forward", "all_gather", (4, 1), 1),
        ("block", "forward", "all_gather", (4, 1), 96),
        ("block", "forward", "all_gather", (4, 1), 96),
        ("block", "weight_grad", "all_reduce", (1, 8), 96),
    ]
    per_step = {}
    for s in steps:
        per_step[s.kind] = per_step.get(s.kind, 0) + s.count
    assert per_step == {"all_gather": 1 + 2 * 96, "all_reduce": 96}


def test_compute_and_repr():
    w = _workload()
    assert abs(w.compute_s - (1e-3 + 96 * (2e-3 + 3e-3 + 4e-3))) < 1e-15
    text = repr(w)
    assert len(text) < 300 and "2 distinct layers, 97 in all" in text


def test_flat_walk_is_the_walk_by_hand():
    """emb: 3 phases (count 1), then block: 3 phases (count 96); collectives in step order."""
    w = _workload()
    f = w.flat
    assert f is w.flat  # built once per workload
    assert f.phase_count.tolist() == [1, 1, 1, 96, 96, 96]
    assert f.phase_compute_s.tolist() == [1e-3, 0.0, 0.0, 2e-3, 3e-3, 4e-3]
    assert f.phase_kind.tolist() == [0, 1, 2, 0, 1, 2]
    assert f.coll_phase.tolist() == [0, 3, 3, 5]
    assert [f.collectives[i] for i in f.coll_id] == [
        ("all_gather", 2e6, "tp"), ("all_gather", 2e6, "tp"), ("all_gather", 2e6, "tp"),
        ("all_reduce", 1e6, "dp"),
    ]


def test_flat_walk_agrees_with_walk_phases_on_shared_phases():
    """Layers sharing one Phase object (as a parsed file with repeated lines) walk the same
    as layers with equal but distinct phases."""
    ar = Collective("all_reduce", 1e6, "dp")
    shared = Phase(1e-3, (ar, ar))
    layers = tuple(Layer(f"l{i}", shared, Phase(2e-3), shared, count=i + 1) for i in range(5))
    w = Workload("w", layers, {"dp": (2, 1)})
    f = w.flat
    steps = list(walk_phases(w))
    assert f.phase_count.tolist() == [s.count for s in steps]
    assert f.phase_compute_s.tolist() == [s.phase.compute_s for s in steps]
    expected = [p for p, s in enumerate(steps) for _ in s.phase.collectives]
    assert f.coll_phase.tolist() == expected
