"""The ``topology_aware`` model given an ASTRA-sim 2.0 configuration against the simulator
itself: single collectives run on ASTRA-sim's two analytical network backends
(``astra_sim2_runs.csv`` beside this file; the header names the simulator commit and how
the runs were made). The expected times are the simulator's reported cycles (ns), measured,
not derived from the model.

Bands as the collective-model parity target: within 10 % from 64 MiB up, within 25 % at
1 MiB. Every run is checked, including the congestion-unaware ones whose concurrent chunks
share no bandwidth, and the held-out part of the congestion-aware grid (column ``part``,
the rule in the table's header) is checked and reported apart.
"""

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from libra_opt.io.astra_sim_network import (
    network_from_mapping,
    read_astra_sim_network,
    read_astra_sim_system,
    settings_from_mapping,
)
from libra_opt.traffic.topology_aware import collective_phases

RUNS = Path(__file__).with_name("astra_sim2_runs.csv")
MIB = 2**20


def load_runs() -> list[dict]:
    with RUNS.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def network_mapping(row: dict) -> dict:
    return {"topology": row["topology"].split("|"),
            "npus_count": [int(v) for v in row["npus_count"].split("|")],
            "bandwidth": [float(v) for v in row["bandwidth_gbps"].split("|")],
            "latency": [float(v) for v in row["latency_ns"].split("|")]}


def system_mapping(row: dict) -> dict:
    ndims = len(row["topology"].split("|"))
    algo = row["algorithm"]
    sysd = {"scheduling-policy": row["scheduling_policy"],
            "endpoint-delay": int(row["endpoint_delay_ns"]),
            "active-chunks-per-dimension": int(row["active_chunks"]),
            "preferred-dataset-splits": int(row["splits"]),
            "collective-optimization": row["collective_optimization"],
            "local-mem-bw": float(row["local_mem_bw"]),
            "boost-mode": 0, "roofline-enabled": 0, "peak-perf": 900}
    for key in ("all-reduce", "reduce-scatter", "all-gather"):
        sysd[f"{key}-implementation"] = (
            ["ring", "direct", "ring"][:ndims] if algo == "mixed" else [algo] * ndims)
    a2a = "direct" if algo == "halvingDoubling" else algo
    sysd["all-to-all-implementation"] = (
        ["direct", "ring", "direct"][:ndims] if algo == "mixed" else [a2a] * ndims)
    return sysd


def model_ns(row: dict) -> float:
    net = network_from_mapping(network_mapping(row))
    s = settings_from_mapping(system_mapping(row), net.fabric.names, backend=row["backend"],
                              queues_per_dim=int(row["queues"]))
    span = tuple(d.size for d in net.fabric.dims)
    c = collective_phases(row["kind"], int(row["size_mib"]) * MIB, span, net.fabric, s)
    return c.time_s(np.array(net.bw_gbps)) * 1e9


ROWS = load_runs()


def test_table_covers_both_backends_and_every_collective():
    """The table holds what it claims: both backends, all four collectives at 1 and 64 MiB
    (and some at 1 GiB), ring, direct and halving-doubling, one to three dimensions."""
    assert {r["backend"] for r in ROWS} == {"congestion_unaware", "congestion_aware"}
    assert {r["kind"] for r in ROWS} == {"all_reduce", "reduce_scatter", "all_gather",
                                         "all_to_all"}
    assert {r["size_mib"] for r in ROWS} == {"1", "64", "1024"}
    assert {r["algorithm"] for r in ROWS} == {"ring", "direct", "halvingDoubling", "mixed"}
    assert {len(r["topology"].split("|")) for r in ROWS} == {1, 2, 3}
    assert len(ROWS) == 3896
    # the congestion-aware grid: 6 networks x 3 algorithms x 9 knob sets x 4 kinds x 3 sizes
    grid = [r for r in ROWS if r["network"].endswith("_100G")]
    assert len(grid) == 6 * 3 * 9 * 4 * 3
    assert {r["backend"] for r in grid} == {"congestion_aware"}
    held = {(r["network"], r["knobs"]) for r in grid if r["part"] == "held_out"}
    assert len(held) == 50 and {r["part"] for r in ROWS} == {"dev", "held_out"}


def test_held_out_part_follows_the_documented_rule():
    """``part`` is the header's rule, recomputed: a grid configuration is held out when the
    first byte of sha256('held-out|<network>|<knobs>') is below 64; every other run is dev."""
    import hashlib

    for r in ROWS:
        digest = hashlib.sha256(f"held-out|{r['network']}|{r['knobs']}".encode()).digest()
        held = r["network"].endswith("_100G") and digest[0] < 64
        assert r["part"] == ("held_out" if held else "dev"), r


def _key(r: dict) -> tuple[str, str, str, str, str]:
    return (r["network"], r["knobs"], r["backend"], r["kind"], r["size_mib"])


@pytest.mark.parametrize("part", ["dev", "held_out"])
@pytest.mark.parametrize("backend", ["congestion_unaware", "congestion_aware"])
@pytest.mark.parametrize("size_mib", ["1", "64", "1024"])
def test_model_within_band_of_the_simulator(backend, size_mib, part):
    """Every run of this backend, size and part within its band (10 % at 64 MiB, 25 % at
    1 MiB)."""
    rows = [r for r in ROWS if r["backend"] == backend and r["size_mib"] == size_mib
            and r["part"] == part]
    if backend == "congestion_unaware" and part == "held_out":
        assert not rows  # the grid runs the congestion-aware backend only
        return
    assert rows
    sim = np.array([float(r["sim_ns"]) for r in rows])
    got = np.array([model_ns(r) for r in rows])
    tol = 0.10 if int(size_mib) >= 64 else 0.25
    bad = [(r["network"], r["knobs"], r["kind"], g / s)
           for r, g, s in zip(rows, got, sim, strict=True) if abs(g / s - 1) > tol]
    assert not bad, f"outside ±{tol:.0%} of ASTRA-sim: {bad}"


def test_uneven_splits_add_a_full_chunk():
    """``preferred-dataset-splits`` 6 of 64 MiB: 11,184,810-byte chunks and a 4-byte
    remainder, which the simulator sends as a seventh full chunk; with 3 chunks at once,
    ceil(7 / 3) = 3 waves, not 2 (the model 2/3 of the simulator without it). The
    congestion-unaware times (direct, FIFO, five networks of one and two dimensions) are
    matched within 0.5 %."""
    rows = [r for r in ROWS if r["knobs"] == "direct_fifo_a3_s6"
            and r["backend"] == "congestion_unaware"]
    assert len(rows) == 40
    sim = np.array([float(r["sim_ns"]) for r in rows])
    assert_allclose([model_ns(r) for r in rows], sim, rtol=5e-3)


def test_halving_doubling_on_fully_connected_pipelines_per_link():
    """Fully-connected[8], 100 GB/s, halving-doubling all-gather of 64 MiB in 8 chunks, two
    at once, congestion-aware: each step has its own link (peers at distance 1, 2, 4), so
    the chunks pipeline behind the busiest one (the 32 MiB step, 312,500 ns at 107.37
    B/ns): 8 x 312,500 + the first chunk's 8 and 16 MiB steps (78,125 + 156,250 ns) =
    2,734,375 ns plus latencies; ASTRA-sim 2.0 reports 2,735,915 ns."""
    row = next(r for r in ROWS if _key(r) == ("FC8", "hd_q1_a2_s8", "congestion_aware",
                                              "all_gather", "64"))
    assert row["sim_ns"] == "2735915"
    assert_allclose(model_ns(row), 2_735_915, rtol=2e-3)
    assert_allclose(8 * 312_500 + 78_125 + 156_250, 2_734_375)


def test_hgx_h100_validated_example():
    """ASTRA-sim's own HGX-H100-validated example (Switch[8], 400 GB/s, 936.25 ns; ring,
    2 active chunks, 4 splits, local-mem-bw 3350): every collective at 1 and 64 MiB on both
    backends within 0.5 % of the simulator."""
    rows = [r for r in ROWS if r["knobs"] == "hgx_validated"]
    assert len(rows) == 16
    sim = np.array([float(r["sim_ns"]) for r in rows])
    assert_allclose([model_ns(r) for r in rows], sim, rtol=5e-3)


def test_halving_doubling_on_a_ring_loads_the_busiest_link():
    """Ring[8], 50 GB/s, halving-doubling all-gather of 64 MiB in 8 chunks, two at once,
    congestion-aware. Per chunk (shard c = 8 MiB): c at distance 4 (every NPU clockwise, the
    tie, 4 hops: every clockwise link carries 4 c), 2c at distance 2 (NPUs 0, 1, 4, 5
    clockwise: link 0->1 carries one of them), 4c at distance 1 (even NPUs clockwise: link
    0->1 carries one). Link 0->1 carries 4c + 2c + 4c = 10 c = 80 MiB a chunk (not the
    4c + 2 x 2c + 4c = 12 c of every hop of every message on one link): 8 chunks x 80 MiB /
    53.687 B/ns = 12,500,000 ns, a lower bound: ASTRA-sim 2.0 reports 12,813,530 ns (the
    link is not busy every moment; the model follows the two chunks' interleaving,
    ``hd_link_schedule_span``)."""
    row = next(r for r in ROWS if _key(r) == ("Ring8", "hd_q1_a2_s8", "congestion_aware",
                                              "all_gather", "64"))
    assert row["sim_ns"] == "12813530"
    assert_allclose(8 * 80 * MIB / (50 * 2**30 / 1e9), 12_500_000, rtol=1e-12)
    assert model_ns(row) >= 12_500_000
    assert_allclose(model_ns(row), 12_813_530, rtol=5e-3)


# Halving-doubling, two chunks at once, congestion-aware, 64 MiB: the busiest-link bound
# alone was 10-15 % fast on these (two chunks' steps interleave on the links, leaving the
# busiest link idle part of the time); the link schedule brings them within 2 %.
INTERLEAVED = [
    ("Ring16", "all_reduce", 2_266_962), ("Ring16", "reduce_scatter", 1_175_353),
    ("FC8", "all_reduce", 801_560), ("Switch8", "all_gather", 1_356_781),
    ("HGX8", "all_gather", 1_364_629),
]


@pytest.mark.parametrize(("network", "kind", "sim_ns"), INTERLEAVED)
def test_interleaved_halving_doubling_chunks(network, kind, sim_ns):
    row = next(r for r in ROWS if _key(r) == (network, "hd_q1_a2_s8", "congestion_aware",
                                              kind, "64"))
    assert row["sim_ns"] == str(sim_ns)
    assert_allclose(model_ns(row), sim_ns, rtol=0.02)


def test_switch_all_gather_two_chunks_by_hand():
    """Switch[8], 400 GB/s (429.50 B/ns), halving-doubling all-gather of 64 MiB in 8
    chunks of shard c = 8 MiB (steps c, 2c, 4c), two at once, congestion-aware. Up-link
    then down-link, FIFO. Wave 1 (chunks A, B from 0, in units of c): up A1 [0,1] B1 [1,2]
    A2 [2,4] B2 [4,6] A3 [6,10] B3 [10,14]; A3 leaves the down-link at 14, B3 at 18. A
    later wave starts when A finishes (T): its first step waits on the down-link behind the
    previous B's 4c (until T + 4), B' starts at T + 4: up B'1 [T+4,T+5], A'2 [T+5,T+7],
    B'2 [T+7,T+9], A'3 [T+9,T+13], B'3 [T+13,T+17], A' done at T + 17 (2 L - c + 4c with
    L = 7c). Four waves: 14 + 3 x 17 + 4 = 69 c = 552 MiB / 429.50 B/ns = 1,347,656 ns
    plus latencies; ASTRA-sim 2.0 reports 1,356,781 ns."""
    from libra_opt.traffic.astra_sim_model import hd_link_schedule_span

    assert_allclose(8 * hd_link_schedule_span("all_gather", "switch", 8, 8, 1, 2)[0], 69,
                    rtol=1e-6)
    row = next(r for r in ROWS if _key(r) == ("Switch8", "hd_q1_a2_s8", "congestion_aware",
                                              "all_gather", "64"))
    bound_ns = 69 * 8 * MIB / (400 * 2**30 / 1e9)
    assert_allclose(bound_ns, 1_347_656.25, rtol=1e-9)
    assert bound_ns < model_ns(row) < bound_ns + 20_000  # latencies: a few us
    assert_allclose(model_ns(row), float(row["sim_ns"]), rtol=5e-3)


def test_ring_runs_within_one_percent():
    """Ring-algorithm runs (one to three dimensions, queues and active chunks 1 to 4, both
    backends): the model follows the simulator's ring step by step, so within 1 % -- except
    congestion-aware runs with more active chunks than queues, which share links in ways
    the shared-link bound follows only to within the band (up to 9.5 % fast with 3 chunks
    on 2 queues)."""
    rows = [r for r in ROWS if r["algorithm"] == "ring"
            and (r["backend"] == "congestion_unaware"
                 or int(r["active_chunks"]) <= int(r["queues"]))]
    assert len(rows) > 500
    sim = np.array([float(r["sim_ns"]) for r in rows])
    assert_allclose([model_ns(r) for r in rows], sim, rtol=1e-2)


def test_files_read_the_documented_way(tmp_path):
    """The network YAML and system JSON of one run, written as ASTRA-sim reads them and read
    back with ``read_astra_sim_network`` / ``read_astra_sim_system``: the simulator's time.
    Ring4xSwitch4, ring, one queue, 64 MiB all-reduce (congestion-unaware): 682,059 ns."""
    row = next(r for r in ROWS if r["network"] == "Ring4xSwitch4"
               and r["knobs"] == "ring_q1_a1" and r["kind"] == "all_reduce"
               and r["size_mib"] == "64")
    assert row["sim_ns"] == "682059"
    net_map = network_mapping(row)
    (tmp_path / "net.yml").write_text("".join(
        f"{k}: [ {', '.join(str(v) for v in vals)} ]\n" for k, vals in net_map.items()))
    (tmp_path / "sys.json").write_text(json.dumps(system_mapping(row)))
    net = read_astra_sim_network(tmp_path / "net.yml")
    s = read_astra_sim_system(tmp_path / "sys.json", net.fabric.names,
                              backend="congestion_unaware", queues_per_dim=1)
    c = collective_phases("all_reduce", 64 * MIB, (4, 4), net.fabric, s)
    assert_allclose(c.time_s(np.array(net.bw_gbps)) * 1e9, 682_059, rtol=1e-3)


def _grid(network: str, knobs: str, kind: str = "all_reduce", size_mib: str = "1024") -> dict:
    return next(r for r in ROWS if _key(r) == (network, knobs, "congestion_aware", kind,
                                               size_mib))


# 100 GB/s = 107.374 B/ns per link; ASTRA-sim truncates every serialization to whole ns.
ISSUE_RUNS = [
    # Switch[16], ring, one chunk: 30 steps, each stored and forwarded through the switch
    # (2 x 64 MiB / 107.374 = 2 x 625,000 ns) plus 2 x 500 ns and one 10 ns pass; 15
    # reductions of 64 MiB at 1600e9 B/s (125,829 ns): 30 x 1,251,010 + 15 x 125,829 + 10
    ("Switch16_100G", "ca_ring_q1_a1_s1", 30 * 1_251_010 + 15 * 125_829 + 10, 39_417_745),
    # Ring[16], direct, 16 chunks of 64 MiB one at a time: the busiest clockwise link carries
    # the messages to distance 1..8 of the 8 NPUs behind it (36 messages of 4 MiB, 39,062
    # ns each) per round, 2 rounds a chunk: 16 x 72 x 39,062 (the link-bound floor)
    ("Ring16_100G", "ca_direct_q1_a1_s16", 16 * 72 * 39_062, 45_157_712),
    # Ring[16], ring, 64 chunks, two at once on the one queue (one direction): each chunk's
    # 30 steps of 1 MiB (9,765 ns) on the same clockwise links: 64 x 30 x 9,765
    ("Ring16_100G", "ca_ring_q1_a2_s64", 64 * 30 * 9_765, 18_749_320),
    # FullyConnected[8], ring, 64 chunks, two at once: 14 steps of 2 MiB (19,531 ns) each on
    # the one link to the next NPU: 64 x 14 x 19,531
    ("FC8_100G", "ca_ring_q1_a2_s64", 64 * 14 * 19_531, 17_500_296),
]


@pytest.mark.parametrize(("network", "knobs", "by_hand_ns", "sim_ns"), ISSUE_RUNS)
def test_congestion_aware_mechanisms_by_hand(network, knobs, by_hand_ns, sim_ns):
    """1 GiB all-reduces with LIFO, localBWAware, endpoint-delay 10, local-mem-bw 1600, one
    queue (100 GB/s, 500 ns links): the simulator within 0.5 % of the mechanism derived by
    hand (store-and-forward through a switch; a ring's busiest link under the direct
    algorithm's concurrent flows; two chunks on one ring direction), and the model within
    0.5 % of the simulator. Priced as congestion-unaware, the same files come out 0.52 x,
    0.03 x, 0.58 x and 0.56 x: the backend is an argument, never a default."""
    row = _grid(network, knobs)
    assert row["sim_ns"] == str(sim_ns)
    assert_allclose(by_hand_ns, sim_ns, rtol=5e-3)
    assert_allclose(model_ns(row), sim_ns, rtol=5e-3)
    unaware = model_ns({**row, "backend": "congestion_unaware"}) / sim_ns
    assert unaware < 0.6


def test_halving_doubling_chunks_hide_each_others_latency():
    """FullyConnected[8], halving-doubling reduce-scatter of 64 MiB in 64 chunks of 1 MiB,
    two at once: a chunk's steps take 8,545 ns of serialization and 2,277 ns of latency,
    endpoint passes and reductions (t_p = 10,822 ns). Each of the two slots runs 32 chunks
    back to back (32 t_p = 346,304 ns), and the other chunk's transmissions fill the link
    while one waits: ASTRA-sim 2.0 reports 350,962 ns. Adding every wave's latency to the
    chunks' span on the links instead (the link schedule at vanishing latency plus 31 t_p^0,
    the model before) gave 389,035 ns, 10.8 % slow; the latencies on the schedule's critical
    path are what the model adds now."""
    row = _grid("FC8_100G", "ca_hd_q1_a2_s64", "reduce_scatter", "64")
    assert row["sim_ns"] == "350962"
    assert_allclose(32 * 10_822, 346_304)
    assert 346_304 < model_ns(row) < 389_035 * 0.95
    assert_allclose(model_ns(row), 350_962, rtol=0.02)


def test_step_time_convex_and_decreasing_in_bandwidth():
    """Every congestion-aware grid configuration (64 MiB) and every halving-doubling run with
    chunks interleaving (the link-schedule piece): the time is a max of ``c / B + d`` with
    ``c >= 0`` (each piece plus the phase times), so it falls with ``B`` and is convex;
    checked piece by piece, and on ``time_s`` at B, 1.5 B and 2 B."""
    rows = [r for r in ROWS if r["backend"] == "congestion_aware" and r["size_mib"] == "64"
            and (r["network"].endswith("_100G")
                 or r["algorithm"] == "halvingDoubling" and int(r["splits"]) > 1)]
    assert len(rows) > 600
    for r in rows:
        net = network_from_mapping(network_mapping(r))
        s = settings_from_mapping(system_mapping(r), net.fabric.names, backend=r["backend"],
                                  queues_per_dim=int(r["queues"]))
        c = collective_phases(r["kind"], 64 * MIB, (net.fabric.dims[0].size,), net.fabric, s)
        coef, _ = c.piece_arrays(1)
        assert np.all(coef[:, 0] + sum(c.coef_gb) >= -1e-12), r
        t1, t15, t2 = (c.time_s(np.array([f * net.bw_gbps[0]])) for f in (1.0, 1.5, 2.0))
        assert t2 <= t15 <= t1 and t15 <= (t1 + t2) / 2 * (1 + 1e-12), r


def test_multi_dimensional_congestion_aware_is_bounded_below_by_the_validated_backend():
    """ASTRA-sim's congestion-aware backend refuses networks of more than one dimension, so
    on several dimensions the model's congestion-aware time is not validated; what holds is
    its stated bound: never below the congestion-unaware time of the same configuration,
    which is validated here (every multi-dimensional configuration of the table)."""
    multi = [r for r in ROWS if "|" in r["topology"]]
    assert len(multi) >= 400 and {r["backend"] for r in multi} == {"congestion_unaware"}
    for r in multi:
        assert model_ns({**r, "backend": "congestion_aware"}) >= model_ns(r) * (1 - 1e-12), r
