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
