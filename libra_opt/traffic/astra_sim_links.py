"""Halving-doubling on ASTRA-sim's congestion-aware links: which link each step loads and how
chunks in flight share the links (the link schedule), per buffer byte; a constant over
``B_d`` at zero latency, so :mod:`libra_opt.traffic.astra_sim_model` uses it as one more
affine piece.

References
----------
ASTRA-sim 2.0 (github.com/astra-sim/astra-sim), ``astra-sim/system/collective/
HalvingDoubling.cc`` and the congestion-aware network backend
(github.com/astra-sim/astra-network-analytical).
"""

from __future__ import annotations

import functools
import heapq
import itertools
from collections.abc import Callable

from libra_opt.fabric.topology import Topology, topology_of

__all__ = ["hd_steps", "hd_ring_busiest_link", "hd_link_schedule_span"]


def hd_steps(op: str, k: int, x: float) -> list[tuple[float, int]]:
    """(message bytes, peer distance) of each halving-doubling step."""
    q = k.bit_length() - 1
    rs = [(x / 2**i, 2 ** (i - 1)) for i in range(1, q + 1)]
    if op == "reduce_scatter":
        return rs
    if op == "all_gather":
        shard = x / k
        return [(shard * 2 ** (i - 1), k // 2**i) for i in range(1, q + 1)]
    return rs + rs[::-1]


def _ring_route(i: int, dist: int, k: int) -> tuple[int, list[tuple[int, int]]]:
    """Peer of NPU ``i`` at distance ``dist`` (``i + d`` when ``floor(i / d)`` is even, else
    ``i - d``) and the directed ring links to it, the shorter way round (ties clockwise)."""
    peer = (i + dist) % k if (i // dist) % 2 == 0 else (i - dist) % k
    cw = (peer - i) % k
    way, hops = (-1, k - cw) if k - cw < cw else (1, cw)
    return peer, [((i + way * h) % k, way) for h in range(hops)]


def hd_ring_busiest_link(op: str, k: int, x: float) -> float:
    """Bytes the busiest directed link of a ring of ``k`` carries in one halving-doubling
    phase."""
    per_link: dict[tuple[int, int], float] = {}
    for m, dist in hd_steps(op, k, x):
        for i in range(k):
            for link in _ring_route(i, dist, k)[1]:
                per_link[link] = per_link.get(link, 0.0) + m
    return max(per_link.values())


def hd_link_schedule_span(op: str, topology: Topology | str, k: int, chunks: int, queues: int,
                          per_queue: int) -> tuple[float, int, int, float]:
    """Span of ``chunks`` halving-doubling chunks on congestion-aware links, per buffer byte, and
    the latencies on its critical path.

    Parameters
    ----------
    op : {'reduce_scatter', 'all_gather', 'all_reduce'}
    topology : Topology or str
        ASTRA-sim's ``Ring``, ``FullyConnected`` or ``Switch``.
    k : int
        NPUs of the dimension (a power of two).
    chunks : int
        Chunks ``S``; chunk ``s`` runs on queue ``s mod queues``.
    queues, per_queue : int
        Queues of the phase and chunks each runs at once.

    Returns
    -------
    span : float
        First send to last reception with a serialization of ``m`` bytes taking ``m`` (buffer
        1): times ``x / X`` it is the bandwidth-bound span.
    hops, passes : int
        Link latencies and endpoint passes on the schedule's critical path.
    reduced : float
        Bytes (per buffer byte) reduced on that path.

    Notes
    -----
    The schedule is followed message by message on FIFO links with latencies vanishing (kept as
    tie-breakers in the simulator's event order): chunks' steps interleave on each link and a
    new chunk starts when one finishes. ``span x / X + hops alpha + passes e + 3 reduced x / M``
    is that chain of events at finite latency, exact as latency becomes small. The result
    depends on the six arguments alone.

    Examples
    --------
    Switch of 8, all-gather (steps of 1, 2, 4 shards ``m``), two chunks at once: the first wave
    takes ``14 m``, each later wave ``17 m`` (behind the previous wave's last step), the last
    step is forwarded (``4 m``): ``14 + 3 x 17 + 4 = 69`` shards of ``1/8``:

    >>> round(hd_link_schedule_span("all_gather", "switch", 8, 8, 1, 2)[0], 6)
    8.625
    """
    topo = topology_of(topology)
    steps = hd_steps(op, k, 1.0)
    q = k.bit_length() - 1
    Link = tuple[int, int | str]
    Path = tuple[float, int, int, float]  # serialization, hops, endpoint passes, reduced

    def at(p: Path) -> float:  # tie-breakers: reduction << endpoint delay << link latency
        return p[0] + 1e-9 * p[1] + 1e-11 * p[2] + 1e-13 * p[3]

    def route(i: int, dist: int) -> tuple[int, list[Link]]:
        peer, ring = _ring_route(i, dist, k)
        if topo.switched:
            return peer, [(i, "up"), (peer, "down")]
        if not topo.forwards:  # a link per peer
            return peer, [(i, peer)]
        return peer, list(ring)

    heap: list[tuple[float, int, Path, Callable[[Path], None]]] = []
    seq = itertools.count()
    free: dict[Link, Path] = {}
    ready: dict[tuple[int, int, int], Path] = {}  # first of (own send, reception) seen
    running = [[0] * queues for _ in range(k)]
    waiting = [[[s for s in range(chunks) if s % queues == qq] for qq in range(queues)]
               for _ in range(k)]
    finish: list[Path] = [(0.0, 0, 0, 0.0)]

    def push(p: Path, fn: Callable[[Path], None]) -> None:
        heapq.heappush(heap, (at(p), next(seq), p, fn))

    def kick(p: Path, i: int, qq: int) -> None:
        while waiting[i][qq] and running[i][qq] < per_queue:
            running[i][qq] += 1
            push((p[0], p[1], p[2] + 1, p[3]),
                 functools.partial(send, i=i, s=waiting[i][qq].pop(0), st=0))

    def meet(p: Path, i: int, s: int, st: int) -> None:
        """NPU ``i``'s step ``st`` of chunk ``s`` is done once sent and received."""
        if (i, s, st) not in ready:
            ready[(i, s, st)] = p
            return
        other = ready.pop((i, s, st))
        p = max(p, other, key=at)
        red = steps[st + 1][0] if op != "all_gather" and st + 1 < q else 0.0
        done = (p[0], p[1], p[2] + 1, p[3] + red)
        if st + 1 < len(steps):
            push(done, lambda p1: send(p1, i, s, st + 1))
        else:
            finish[0] = max(finish[0], done, key=at)
            running[i][s % queues] -= 1
            kick(done, i, s % queues)

    def hop(p: Path, links: list[Link], m: float, dest: int, s: int, st: int) -> None:
        start = max(p, free.get(links[0], p), key=at)
        end = (start[0] + m, start[1], start[2], start[3])
        free[links[0]] = end
        arrive = (end[0], end[1] + 1, end[2], end[3])
        if len(links) > 1:
            push(arrive, lambda p1: hop(p1, links[1:], m, dest, s, st))
        else:
            push(arrive, lambda p1: meet(p1, dest, s, st))

    def send(p: Path, i: int, s: int, st: int) -> None:
        m, dist = steps[st]
        peer, links = route(i, dist)
        hop(p, links, m, peer, s, st)
        meet(p, i, s, st)

    for i in range(k):
        for qq in range(queues):
            kick((0.0, 0, 0, 0.0), i, qq)
    while heap:
        _, _, p, fn = heapq.heappop(heap)
        fn(p)
    return finish[0]
