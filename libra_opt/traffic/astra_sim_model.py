"""Collective times as ASTRA-sim 2.0 runs them on its analytical network backends.

The ``topology_aware`` model (:mod:`libra_opt.traffic.topology_aware`) prices collectives on
a physical fabric. A user holding an ASTRA-sim configuration expects instead the times the
simulator gives for it, with its algorithms' exact step structure, its chunk scheduler and
one of its two analytical network backends (``CollectiveSettings.backend``). This module
derives those times, every phase as ``coef / B_d + const`` and the chunk pipeline as a sum
plus a max of such affine terms, so the optimizer's program stays convex and exact.

What the simulator does (read from its public source, see References):

* **One chunk, one phase.** A phase is one algorithm run on one dimension. Every message a
  phase receives passes the endpoint (``endpoint-delay`` ``e``, 10 ns when the key is
  absent), a reduction when the phase reduces (``3 m / M``: two reads and a write of the
  ``m``-byte message at ``local-mem-bw`` ``M``, in 1e9 bytes/s), then the next message is
  sent. A phase starts with one endpoint pass before its first send.
* **Messages** (network backend). Congestion-unaware: ``h alpha + m / X`` (``h`` hops of
  latency ``alpha``, one serialization on the link bandwidth ``X``), no sharing between
  concurrent messages. Congestion-aware: links are FIFO servers and every device stores
  and forwards, so a message crossing ``h`` links pays ``h (alpha + m / X)`` and concurrent
  messages on one link queue behind each other. Rings are bidirectional (one link each way
  to each neighbour, routes take the shorter way, ties clockwise); a fully-connected
  dimension has one link per ordered pair; a switch one up- and one down-link per NPU.
* **Algorithms** (``k`` NPUs, phase buffer ``x``, message ``n = x / k``):

  - ring: reduce-scatter and all-gather ``k - 1`` steps of ``n`` to the next NPU, all-reduce
    ``2 (k - 1)`` (reductions only in the first ``k - 1``), all-to-all ``k (k - 1) / 2``;
    ``k``, ``k``, ``2 k - 1`` and ``1 + k (k - 1) / 2`` endpoint passes. The ring runs one
    way: clockwise, or anticlockwise on the second half of the dimension's queues.
  - direct: the ``k - 1`` messages at once, one per peer, then the ``k - 1`` receptions
    (reduced for reduce-scatter); all-reduce sends a second round after every first-round
    message is reduced; 2 endpoint passes (3 for all-reduce).
  - halving-doubling (``k = 2^q``): reduce-scatter sends ``x / 2^i`` to the peer at
    distance ``2^(i-1)``, ``i = 1..q``; all-gather the reverse (``x / k 2^(i-1)`` at
    distance ``k / 2^i``); all-reduce both; ``q + 1`` (``2 q + 1``) endpoint passes, and the
    reduction of receptions ``2..q`` sized ``x / 2^i``. It has no all-to-all.

* **Chunks.** A collective of ``D`` bytes runs as ``S`` chunks (``preferred-dataset-splits``)
  streamed through the phases. Each dimension has ``Q`` queues (``num-queues-per-dim``,
  round-robin over chunks) and a queue runs ``ceil(A / Q)`` chunks at once
  (``active-chunks-per-dimension`` ``A``); more wait. A hierarchical all-reduce
  (``collective-optimization: localBWAware``) runs reduce-scatter and the top all-reduce
  on the first half of the queues, clockwise, and the all-gather on the second half,
  anticlockwise (one queue: both on it).

The pipeline time of ``S`` chunks (:class:`~libra_opt.traffic.topology_aware.
ChunkedCollective`) is ``sum_p t_p + max_r piece_r`` with, per dimension ``d``:

* ``0``, and per queue group ``g`` running ``C_g`` chunks at once, with ``W_g = ceil(S /
  C_g) - 1`` further waves: ``W_g t_p`` for each of its phases (a stage of the
  pipeline), and ``W_g u_g - m_g`` with ``u_g`` the group's phase times of one chunk and
  ``m_g`` the other dimensions' phases between its first and last (hidden while the
  group's queue is backlogged: it works through the later chunks' first phases before
  the first chunk comes back);
* congestion-aware only: ``S beta_d + l_d - u_d - m_d``: the busiest link of the dimension
  busy ``beta_d`` per chunk (the two ring directions counted apart; halving-doubling counted
  link by link: one link per peer distance on a fully-connected dimension, every directed
  ring link its messages cross) the whole time, the dimension's own latency hidden but its
  last step's ``l_d``;
* congestion-aware halving-doubling on one dimension: ``sigma / B_d + l_sigma - u_d``
  with ``sigma / B_d`` the span of the ``S`` chunks' messages on FIFO links at vanishing
  latency (:func:`hd_link_schedule_span`; with several chunks at once their steps
  interleave and the busiest link idles part of the time, so the bound above is 10-15 %
  short) and ``l_sigma`` the link latencies, endpoint passes and reductions on that
  schedule's critical path: while one chunk waits on a latency the other chunks'
  transmissions keep the links busy, so a wave does not add its whole ``t_p^0`` (that
  made 64 chunks of 1 MiB up to 11 % slow); where latencies dominate, the waves piece
  above (each queue slot's chunks back to back) is the larger.

Multi-dimensional networks on the congestion-aware backend are priced by the same
per-dimension pieces: each dimension's links are its own (ASTRA-sim gives every dimension
separate links), its chunks share them as above, and the dimensions are joined by the chunk
pipeline of the congestion-unaware backend. The result is never below the congestion-unaware
time of the same configuration (the test over every multi-dimensional run of the table
checks it), which is validated; the congestion-aware time itself is **not validated** on
more than one dimension: ASTRA-sim 518bd51's congestion-aware backend refuses such networks,
so there is nothing to compare it with.

A phase with two regimes (a congestion-aware direct phase on a ring: the larger of two
affine times) is priced at its first; every choice of regimes adds its pieces shifted by
the chosen phases' extra time, so the whole stays one max of affine pieces. Checked against
ASTRA-sim 2.0 runs of both backends (``tests/traffic/astra_sim2_runs.csv``).

References
----------
.. [1] W. Won, T. Heo, S. Rashidi, S. Sridharan, S. Srinivasan, T. Krishna, "ASTRA-sim2.0:
   Modeling Hierarchical Networks and Disaggregated Systems for Large-model Training at
   Scale", ISPASS 2023.
.. [2] ASTRA-sim source, https://github.com/astra-sim/astra-sim: ``astra-sim/system/Sys.cc``
   (system-file keys, chunking, queue allocation), ``astra-sim/system/QueueLevelHandler.cc``
   (queue directions), ``astra-sim/system/PacketBundle.cc`` and ``MemBus.cc`` (endpoint
   delay, reduction time), ``astra-sim/system/astraccl/native_collectives/
   collective_algorithm/{Ring,AllToAll,HalvingDoubling}.cc`` (the algorithms),
   ``astra-sim/network_frontend/analytical/common/CmdLineParser.cc`` (``num-queues-per-dim``).
.. [3] ASTRA-sim analytical network backend, https://github.com/astra-sim/astra-network-analytical:
   ``congestion_unaware/basic-topology/*.cpp`` (hops, ``latency x hops + size / bandwidth``),
   ``congestion_aware/network/Link.cpp`` and ``basic-topology/*.cpp`` (FIFO links,
   store-and-forward routes), ``common/NetworkFunction.cpp`` (GB = 2^30 bytes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, get_args

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim
from libra_opt.fabric.topology import Topology
from libra_opt.traffic.astra_sim_links import (
    hd_link_schedule_span,
    hd_ring_busiest_link,
    hd_steps,
)

__all__ = [
    "Backend",
    "BACKENDS",
    "SimPhase",
    "hd_link_schedule_span",
    "sim_chunks",
    "sim_phase",
    "sim_pipeline_pieces",
]

#: ASTRA-sim's analytical network backends.
Backend = Literal["congestion_unaware", "congestion_aware"]
BACKENDS: tuple[Backend, ...] = get_args(Backend)


@dataclass(frozen=True)
class SimPhase:
    """One chunk's phase on one dimension, as the simulator runs it.

    Attributes
    ----------
    coef_gb, const_s : float
        Phase time ``coef_gb / B_d + const_s`` of one chunk alone.
    load_gb : float
        Time the busiest link of the dimension is busy with this chunk, times ``B_d``.
    channel : {'cw', 'acw', 'dir', 'shared'}
        Links the phase loads: one ring direction, the direction of its queue (``dir``) or
        links of both directions (``shared``).
    tail_s : float
        Latency of the phase's last step (endpoint, hops, reduction).
    tail_gb : float
        Serialization of its last message after it leaves the busiest link (a stored and
        forwarded hop), times ``B_d``.
    step_gb : float
        Time the busiest link is busy with the phase's largest step, times ``B_d``.
    head_s : float
        Time before the phase's first send (one endpoint pass).
    alt : tuple of float, optional
        ``(coef_gb, const_s)`` of a second regime: the phase takes the larger of the two
        (:func:`sim_pipeline_pieces` keeps the pipeline a max of affine pieces).
    schedule : tuple, optional
        ``(op, topology, k, buffer_gb, alpha_s, e_s, reduce_buffer_s)`` of a
        congestion-aware halving-doubling phase (the buffer times ``B_d``, the link latency,
        the endpoint delay and the time to reduce the whole buffer):
        :func:`hd_link_schedule_span` prices several chunks of it interleaving on the
        dimension's links.
    """

    coef_gb: float
    const_s: float
    load_gb: float
    channel: str
    tail_s: float
    tail_gb: float = 0.0
    step_gb: float = 0.0
    head_s: float = 0.0
    alt: tuple[float, float] | None = None
    schedule: tuple[str, Topology, int, float, float, float, float] | None = None


def sim_chunks(kind: str, size_bytes: float, splits: int, npus: int) -> tuple[float, int]:
    """Chunk bytes and chunk count of a collective as the simulator splits it.

    Parameters
    ----------
    kind : str
        Collective kind (``'all_gather'`` has no minimum chunk).
    size_bytes : float
        Collective size ``D`` (bytes, as the workload's ``comm_size``).
    splits : int
        ``preferred-dataset-splits`` ``S``.
    npus : int
        NPUs of the whole network.

    Returns
    -------
    chunk_bytes : float
    chunks : int

    Notes
    -----
    Every chunk carries ``c = floor(D / S)`` bytes (at least ``npus`` bytes, the collective
    then growing to ``S c``, except for all-gather); chunks of ``c`` are issued until ``D``
    is covered, so a remainder ``D - S c > 0`` costs one more full chunk:
    ``ceil(D / c)`` chunks.

    Examples
    --------
    64 MiB in 6 splits: 11,184,810 bytes a chunk, 4 bytes left over, 7 chunks:

    >>> sim_chunks("all_to_all", 64 * 2**20, 6, 8)
    (11184810.0, 7)
    >>> sim_chunks("all_reduce", 64 * 2**20, 4, 8)
    (16777216.0, 4)
    """
    size = int(size_bytes)
    chunk = size // splits
    if kind != "all_gather" and npus > chunk:
        chunk, size = npus, splits * npus
    if chunk <= 0:
        return float(size_bytes) / splits, splits
    return float(chunk), -(-size // chunk)


def sim_phase(
    op: str,
    algorithm: str,
    dim: Dim,
    k: int,
    buffer_bytes: float,
    *,
    backend: Backend,
    link_latency_s: float,
    endpoint_delay_s: float,
    local_memory_gbps: float | None,
    efficiency: float = 1.0,
) -> SimPhase:
    """One chunk's phase time under ASTRA-sim's algorithm and analytical backend.

    Parameters
    ----------
    op : {'reduce_scatter', 'all_gather', 'all_reduce', 'all_to_all', 'p2p'}
    algorithm : {'ring', 'direct', 'halving_doubling'}
    dim : Dim
    k : int
        NPUs of the group along ``dim`` (``>= 2``).
    buffer_bytes : float
        Phase buffer ``x`` (the input of a reduce-scatter or all-reduce, the gathered output
        of an all-gather, the send buffer of an all-to-all, the message of a
        point-to-point transfer).
    backend : {'congestion_unaware', 'congestion_aware'}
    link_latency_s, endpoint_delay_s : float
        ``alpha`` per link, ``e`` per endpoint pass.
    local_memory_gbps : float, optional
        ``M`` (1e9 bytes/s); ``None``: reductions are free.
    efficiency : float
        Fraction ``eta`` of the link bandwidth achieved (a link carries ``X = eta B_d /
        links``, ``links`` the topology's ``links_per_npu``).

    Returns
    -------
    SimPhase

    Notes
    -----
    With ``s(m) = m links / (eta B_d)`` one link's serialization of ``m`` bytes, ``h`` the
    hops (1 ring neighbour or clique peer, 2 through a switch), ``f = 2`` for a
    congestion-aware switch (stored and forwarded) else 1 and ``r(m) = 3 m / M``:

    * ring: reduce-scatter ``k e + (k-1)(f s(n) + h alpha + r(n))``; all-gather
      ``k e + (k-1)(f s(n) + h alpha)``; all-reduce ``(2k-1) e + 2(k-1)(f s(n) + h alpha)
      + (k-1) r(n)``; all-to-all ``(1+P) e + P (f s(n) + h alpha)``, ``P = k(k-1)/2``.
    * direct, the ``k - 1`` messages at once taking ``N = s(n) + alpha`` on a clique;
      ``s(n) + 2 alpha`` (unaware) or ``k s(n) + 2 alpha`` (aware: ``k - 1`` through the
      up-link, the last one forwarded) through a switch; ``s(n) + H alpha`` (unaware) or
      ``max(L s(n) + 2 alpha, (2H - 1) s(n) + H alpha)`` (aware; the busiest link busy
      throughout, or the farthest message's hops each behind the transmissions queued on
      its way) on a ring, ``H = floor(k/2)`` the farthest peer and
      ``L = H (H + 1) / 2`` the messages on a clockwise link: reduce-scatter
      ``2 e + N + r(n)``; all-gather and all-to-all ``2 e + N``; all-reduce
      ``3 e + 2 N + r(n)``.
    * halving-doubling, steps ``(m_i, d_i)`` (module notes), each ``s(m_i) + h_i alpha``
      unaware, ``h_i (s(m_i) + alpha)`` aware on a ring (``h_i = d_i``) or through a switch
      (``h_i = 2``), ``s(m_i) + alpha`` on a clique; plus the endpoint passes and
      reductions of the module notes.
    * point-to-point: one message of ``x``: ``2 e + f s(x) + h alpha``.

    Examples
    --------
    ASTRA-sim's GB/s is 2^30 bytes/s. Ring all-gather of a 128 MiB shard over a
    FullyConnected dimension of 8 at 100 GB/s per link, 500 ns links, 10 ns endpoint delay:
    7 steps of 128 MiB / 107.37 B/ns = 1.25 ms each, 7 x 500 ns of links, 8 endpoint passes:

    >>> fc = Dim("d", "fully_connected", 8, "T", latency_s=500e-9)
    >>> link_gbps = 100 * 2**30 / 1e9
    >>> p = sim_phase("all_gather", "ring", fc, 8, 8 * 2**27, backend="congestion_aware",
    ...               link_latency_s=500e-9, endpoint_delay_s=10e-9,
    ...               local_memory_gbps=None)
    >>> round((p.coef_gb / (7 * link_gbps) + p.const_s) * 1e3, 6)
    8.75358
    """
    if k < 2:
        return SimPhase(0.0, 0.0, 0.0, "shared", 0.0)
    return replace(_sim_phase(op, algorithm, dim, k, buffer_bytes, backend, link_latency_s,
                              endpoint_delay_s, local_memory_gbps, efficiency),
                   head_s=endpoint_delay_s)


def _sim_phase(op: str, algorithm: str, dim: Dim, k: int, buffer_bytes: float,
               backend: Backend, link_latency_s: float, endpoint_delay_s: float,
               local_memory_gbps: float | None, efficiency: float) -> SimPhase:
    """:func:`sim_phase` without the head."""
    aware = backend == "congestion_aware"
    topo = dim.topology
    if topo.astra_sim_name is None:
        raise InputError(f"ASTRA-sim's analytical backends have no {topo}: dimension "
                         f"{dim.name!r} is a {topo}", field="collectives.backend")
    # ASTRA-sim's three topologies: Switch, Ring (messages forwarded), FullyConnected
    ring, switch = topo.forwards, topo.switched
    a, e = link_latency_s, endpoint_delay_s
    u = topo.links_per_npu(dim.size) / (1e9 * efficiency)  # s(m) = m * u / B_d

    def red(m: float) -> float:
        return 0.0 if local_memory_gbps is None else 3.0 * m / (1e9 * local_memory_gbps)

    hop = topo.hops
    fwd = hop if aware else 1  # a switch stores and forwards
    x = float(buffer_bytes)
    n = x / k
    if op == "p2p":
        return SimPhase(fwd * x * u, 2 * e + hop * a, x * u, "shared", e + hop * a,
                        (fwd - 1) * x * u, x * u)
    if algorithm == "ring":
        steps = {"reduce_scatter": k - 1, "all_gather": k - 1, "all_reduce": 2 * (k - 1),
                 "all_to_all": k * (k - 1) // 2}[op]
        passes = steps + 1
        reds = (k - 1) * red(n) if op in ("reduce_scatter", "all_reduce") else 0.0
        tail = e + hop * a + (red(n) if op == "reduce_scatter" else 0.0)
        # both ways round a ring (or clique) of 3 or more use different links
        channel = "shared" if switch or k < 3 else "dir"
        return SimPhase(steps * fwd * n * u, passes * e + steps * hop * a + reds,
                        steps * n * u, channel, tail, (fwd - 1) * n * u, n * u)
    if algorithm == "direct":
        if switch:
            coef, lat, load = (k if aware else 1) * n * u, 2 * a, (k - 1) * n * u
        elif not ring:
            coef, lat, load = n * u, a, n * u
        else:
            far = k // 2
            on_link = far * (far + 1) // 2
            coef, lat, load = (on_link if aware else 1) * n * u, far * a, on_link * n * u
        alt = None
        if aware and ring and k > 4:
            # serialization-bound: the busiest link busy the whole phase, two latencies
            # exposed; latency-bound: the farthest message's far hops, each after the
            # 2 far - 1 transmissions queued ahead of it on its way (congestion-aware runs)
            alt, lat = ((2 * far - 1) * n * u, far * a), 2 * a
        last = (fwd - 1) * n * u
        if op == "all_reduce":
            return SimPhase(2 * coef, 3 * e + 2 * lat + red(n), 2 * load, "shared", e + lat,
                            last, load,
                            alt=None if alt is None else
                            (2 * alt[0], 3 * e + 2 * alt[1] + red(n)))
        r = red(n) if op == "reduce_scatter" else 0.0
        return SimPhase(coef, 2 * e + lat + r, load, "shared", e + lat + r, last, load,
                        alt=None if alt is None else (alt[0], 2 * e + alt[1] + r))
    if algorithm == "halving_doubling":
        if op == "all_to_all":
            raise InputError("ASTRA-sim's halving-doubling has no all-to-all; use ring or "
                             "direct", field=f"collectives.algorithm.{dim.name}")
        if k & (k - 1):
            raise InputError(
                f"halving_doubling needs a power-of-two group on {dim.name!r}, got {k} NPUs",
                field=f"collectives.algorithm.{dim.name}")
        q = k.bit_length() - 1
        coef = const = load = biggest = 0.0
        hops, m = 0, 0.0
        for m, dist in hd_steps(op, k, x):
            biggest = max(biggest, (dist if ring else 1) * m * u)
            hops = dist if ring else hop
            if not (ring or switch) or not aware:
                coef += m * u
            else:
                coef += hops * m * u
            const += hops * a
            load += (dist if ring else 1) * m * u
        passes = (2 * q + 1) if op == "all_reduce" else q + 1
        reds = 0.0
        if op in ("reduce_scatter", "all_reduce"):
            reds = sum(red(x / 2**i) for i in range(2, q + 1))
        last = m * u if aware and switch else 0.0  # a ring's hops are all loaded
        if not (ring or switch):
            # each peer distance has its own link: the busiest carries its own steps, the
            # other steps' transmissions pass on other links before or after it
            per_link: dict[int, float] = {}
            for m_i, dist in hd_steps(op, k, x):
                per_link[dist] = per_link.get(dist, 0.0) + m_i * u
            load = max(per_link.values())
            last = sum(per_link.values()) - load
        elif ring:
            load = hd_ring_busiest_link(op, k, x) * u
        return SimPhase(coef, passes * e + const + reds, load, "shared", e + hops * a, last,
                        biggest, schedule=(op, topo, k, x * u, a, e, red(x)) if aware else None)
    raise InputError(f"no {algorithm!r} phase time for {op!r}", field="collectives.algorithm")


def sim_pipeline_pieces(
    phases: Sequence[tuple[int, str, SimPhase]],
    chunks: int,
    *,
    backend: Backend,
    queues_per_dim: int,
    active_chunks_per_dim: int,
    hierarchical_all_reduce: bool,
) -> list[tuple[dict[int, float], float]]:
    """The pieces of the pipeline max (module notes) for one chunk's ``phases``.

    Parameters
    ----------
    phases : sequence of (dim index, queue group, SimPhase)
        In order; the queue group is ``'first'`` (reduce-scatter and top all-reduce of a
        hierarchical all-reduce), ``'last'`` (its all-gathers) or ``'all'``.
    chunks : int
        ``S``.
    backend : {'congestion_unaware', 'congestion_aware'}
    queues_per_dim, active_chunks_per_dim : int
        ``Q`` and ``A``.
    hierarchical_all_reduce : bool
        The phases are a hierarchical all-reduce (ring directions fixed by the group).

    Returns
    -------
    list of (mapping dim -> coef_gb, const_s)
        Affine pieces ``sum_d coef_d / B_d + const``; the collective time is the sum of the
        phase times plus the largest piece (every dimension has a piece ``>= 0``).

    Examples
    --------
    Four chunks, one queue running one chunk at a time: the dimension's time three more
    times (``(ceil(4/1) - 1) u``); running two at once, once more:

    >>> p = SimPhase(1.0, 1e-6, 1.0, "dir", 1e-7)
    >>> sim_pipeline_pieces([(0, "all", p)], 4, backend="congestion_unaware",
    ...                     queues_per_dim=1, active_chunks_per_dim=1,
    ...                     hierarchical_all_reduce=False)[-1]
    ({0: 3.0}, 3e-06)
    >>> sim_pipeline_pieces([(0, "all", p)], 4, backend="congestion_unaware",
    ...                     queues_per_dim=1, active_chunks_per_dim=2,
    ...                     hierarchical_all_reduce=False)[-1]
    ({0: 1.0}, 1e-06)
    """
    regimes = [i for i, p in enumerate(phases) if p[2].alt is not None]
    if regimes:
        return _regime_pieces(phases, regimes, chunks, backend=backend,
                              queues_per_dim=queues_per_dim,
                              active_chunks_per_dim=active_chunks_per_dim,
                              hierarchical_all_reduce=hierarchical_all_reduce)
    q = queues_per_dim
    per_queue = -(-active_chunks_per_dim // q)
    split = hierarchical_all_reduce and q >= 2
    slots = ({"first": (q // 2) * per_queue, "last": (q - q // 2) * per_queue} if split
             else {"all": q * per_queue})
    cw_share = (q // 2) / q if q >= 2 else 1.0
    pieces: list[tuple[dict[int, float], float]] = [({}, 0.0)]
    if chunks < 2:
        return []

    def add(acc: dict[int, float], d: int, c: float) -> None:
        acc[d] = acc.get(d, 0.0) + c

    def between(members: list[int]) -> tuple[dict[int, float], float]:
        """Phase times of other dimensions between the first and last of ``members``."""
        coef: dict[int, float] = {}
        const = 0.0
        for i in range(members[0] + 1, members[-1]):
            if i not in members:
                add(coef, phases[i][0], phases[i][2].coef_gb)
                const += phases[i][2].const_s
        return coef, const

    # congestion-aware: a chunk sharing its links with ``r`` others on a saturated link
    # finishes its phase once the link has carried all of them (``(r + 1) load`` and its
    # last step) instead of ``t_p``: the delay it brings to the next dimension
    late: list[tuple[dict[int, float], float] | None] = []
    for d_i, g_i, ph in phases:
        group = g_i if split else "all"
        shared_link = ph.channel != "dir" or split or hierarchical_all_reduce
        share = 1.0 if shared_link else max(cw_share, 1 - cw_share)
        rivals = min(chunks, math.ceil(slots[group] * share)) - 1
        if backend != "congestion_aware" or rivals < 1:
            late.append(None)
            continue
        late.append(({d_i: (rivals + 1) * ph.load_gb + ph.tail_gb - ph.coef_gb},
                     ph.head_s + ph.tail_s - ph.const_s))

    for d in sorted({p[0] for p in phases}):
        on_d = [i for i, p in enumerate(phases) if p[0] == d]
        groups: dict[str, list[int]] = {}
        for i in on_d:
            groups.setdefault(phases[i][1] if split else "all", []).append(i)
        for g, members in groups.items():
            waves = math.ceil(chunks / slots[g]) - 1
            if waves == 0 and (backend != "congestion_aware" or slots[g] < 2):
                continue
            mid_coef, mid_const = between(members)
            coef = {d: waves * sum(phases[i][2].coef_gb for i in members)}
            if backend == "congestion_aware":  # the wave's chunks queue for the link once
                directional = [phases[i][2].channel == "dir" for i in members]
                share = 1.0 if split or not all(directional) else max(cw_share, 1 - cw_share)
                rivals = min(chunks, math.ceil(slots[g] * share)) - 1
                add(coef, d, rivals * max(phases[i][2].step_gb for i in members))
            for dd, c in mid_coef.items():
                add(coef, dd, -c)
            const = waves * sum(phases[i][2].const_s for i in members) - mid_const
            pieces.append((coef, const))
            upstream = [late[i] for i in range(members[0])
                        if phases[i][0] != d and late[i] is not None]
            if upstream:  # the first chunk arrives late from contended dimensions
                delayed = dict(coef)
                for lc, lk in upstream:  # type: ignore[misc]
                    for dd, c in lc.items():
                        add(delayed, dd, c)
                    const += lk
                pieces.append((delayed, const))
            for i in members:
                pieces.append(({d: waves * phases[i][2].coef_gb}, waves * phases[i][2].const_s))
        if backend != "congestion_aware":
            continue
        sched = phases[on_d[0]][2].schedule
        if len(phases) == 1 and sched is not None:
            # halving-doubling chunks interleaving on the links (hd_link_schedule_span)
            g = phases[0][1] if split else "all"
            queues = {"first": q // 2, "last": q - q // 2}.get(g, q)
            op, topo, k, x_gb, alpha, e, red_x = sched
            span, hops, passes, reduced = hd_link_schedule_span(op, topo, k, chunks, queues,
                                                                per_queue)
            ph = phases[0][2]
            pieces.append(({d: x_gb * span - ph.coef_gb},
                           hops * alpha + passes * e + reduced * red_x - ph.const_s))
        shared = cw = acw = 0.0
        for i in on_d:
            ph = phases[i][2]
            if ph.channel == "shared":
                shared += ph.load_gb
            elif hierarchical_all_reduce and not split:
                shared += ph.load_gb  # one queue: all reduce-scatters, then all-gathers
            elif hierarchical_all_reduce:
                if phases[i][1] == "last":
                    acw += ph.load_gb
                else:
                    cw += ph.load_gb
            else:
                cw += cw_share * ph.load_gb
                acw += (1.0 - cw_share) * ph.load_gb
        busiest = shared + max(cw, acw)
        own = sum(phases[i][2].coef_gb for i in on_d)
        latency = sum(phases[i][2].const_s for i in on_d)
        mid_coef, mid_const = between(on_d)
        coef = {d: max(chunks * busiest + phases[on_d[-1]][2].tail_gb - own, 0.0)}
        for dd, c in mid_coef.items():
            add(coef, dd, -c)
        pieces.append((coef, phases[on_d[0]][2].head_s + phases[on_d[-1]][2].tail_s
                       - latency - mid_const))
    return pieces


def _regime_pieces(
    phases: Sequence[tuple[int, str, SimPhase]],
    regimes: list[int],
    chunks: int,
    **settings: object,
) -> list[tuple[dict[int, float], float]]:
    """Pieces of a pipeline whose phases ``regimes`` take the larger of two affine times.

    The time is ``sum_p t_p + max_r piece_r`` for every choice of regime per phase; the
    largest over the choices is the phases at their first regime plus the max, over choices
    ``c`` and their pieces ``r``, of ``piece_r^c + sum_p (t_p^c - t_p)``: still one max of
    affine pieces.
    """
    out: list[tuple[dict[int, float], float]] = []
    for choice in itertools.product((False, True), repeat=len(regimes)):
        chosen = list(phases)
        shift: dict[int, float] = {}
        shift_s = 0.0
        for i, second in zip(regimes, choice, strict=True):
            d, g, ph = phases[i]
            if second:
                assert ph.alt is not None
                coef, const = ph.alt
                shift[d] = shift.get(d, 0.0) + coef - ph.coef_gb
                shift_s += const - ph.const_s
                ph = replace(ph, coef_gb=coef, const_s=const)
            chosen[i] = (d, g, replace(ph, alt=None))
        pieces = sim_pipeline_pieces(chosen, chunks, **settings) or [({}, 0.0)]  # type: ignore[arg-type]
        for coef_d, const_p in pieces:
            total = dict(coef_d)
            for d, c in shift.items():
                total[d] = total.get(d, 0.0) + c
            out.append((total, const_p + shift_s))
    return out
