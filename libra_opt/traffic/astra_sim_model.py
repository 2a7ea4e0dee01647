"""Collective times as ASTRA-sim 2.0 runs them on its analytical network backends [1]_.

Every phase is ``coef / B_d + const`` and the chunk pipeline a sum plus a max of such affine
terms, so the optimizer's program stays convex. What the simulator does (its source [2]_ [3]_):

* **One chunk, one phase** (one algorithm run on one dimension). Every received message passes
  the endpoint (``endpoint-delay`` ``e``, 10 ns by default) and, when the phase reduces, a
  reduction ``3 m / M`` (``local-mem-bw`` ``M``); a phase starts with one endpoint pass.
* **Messages.** Congestion-unaware: ``h alpha + m / X`` (``h`` hops, link bandwidth ``X``),
  no sharing. Congestion-aware: FIFO links, store and forward: ``h (alpha + m / X)``, and
  concurrent messages on one link queue. Rings are bidirectional (shorter way, ties
  clockwise); a clique has one link per ordered pair; a switch one up- and one down-link.
* **Algorithms**: ring, direct and halving-doubling, step by step (:func:`sim_phase`).
* **Chunks.** ``D`` bytes run as ``S`` chunks (``preferred-dataset-splits``) through the
  phases; each dimension has ``Q`` queues (``num-queues-per-dim``, round-robin) each running
  ``ceil(A / Q)`` chunks at once (``active-chunks-per-dimension``). A ``localBWAware``
  all-reduce runs reduce-scatter on the first half of the queues (clockwise) and all-gather
  on the second (anticlockwise).

The pipeline time of ``S`` chunks is ``sum_p t_p + max_r piece_r`` with, per dimension ``d``:

* ``0``, and per queue group running ``C_g`` chunks at once, ``W_g = ceil(S / C_g) - 1``:
  ``W_g t_p`` per phase and ``W_g u_g - m_g`` (``u_g`` the group's phase times, ``m_g`` the
  other dimensions' phases between its first and last, hidden while the queue is backlogged);
* congestion-aware: ``S beta_d + l_d - u_d - m_d`` with ``beta_d`` the busiest link's load per
  chunk (ring directions apart; halving-doubling link by link) and ``l_d`` the last step;
* congestion-aware halving-doubling on one dimension: ``sigma / B_d + l_sigma - u_d`` with
  ``sigma`` the FIFO schedule's span of all chunks (:func:`hd_link_schedule_span`) and
  ``l_sigma`` the latencies on its critical path.

On several dimensions the congestion-aware time uses the same per-dimension pieces (each
dimension has its own links); it is never below the congestion-unaware time, which is
validated, but is itself **not validated** (ASTRA-sim 518bd51 refuses such networks). A
phase with two regimes (the larger of two affine times) adds one set of pieces per choice of
regimes, so the whole stays one max of affine pieces. Checked against ASTRA-sim 2.0 runs of
both backends (``tests/traffic/astra_sim2_runs.csv``).

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
from libra_opt.traffic.astra_sim_links import hd_link_schedule_span, hd_ring_busiest_link, hd_steps

__all__ = ["Backend", "BACKENDS", "SimPhase", "hd_link_schedule_span", "sim_chunks", "sim_phase",
           "sim_pipeline_pieces"]

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
        Time the busiest link is busy with this chunk, times ``B_d``.
    channel : {'cw', 'acw', 'dir', 'shared'}
        Links the phase loads: one ring direction, its queue's direction or both.
    tail_s, tail_gb : float
        Latency of the last step; serialization of the last message after the busiest link
        (times ``B_d``).
    step_gb : float
        Busiest link's time for the largest step, times ``B_d``.
    head_s : float
        Time before the first send (one endpoint pass).
    alt : tuple of float, optional
        ``(coef_gb, const_s)`` of a second regime: the phase takes the larger of the two.
    schedule : tuple, optional
        ``(op, topology, k, buffer_gb, alpha_s, e_s, reduce_buffer_s)`` of a congestion-aware
        halving-doubling phase, for :func:`hd_link_schedule_span`.
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
    """Chunk bytes and chunk count of a collective of ``size_bytes`` in ``splits`` chunks.

    Notes
    -----
    Every chunk carries ``c = floor(D / S)`` bytes (at least ``npus``, the collective then growing
    to ``S c``, except all-gather); a remainder ``D - S c > 0`` costs one more chunk:
    ``ceil(D / c)`` chunks.

    Examples
    --------
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


def sim_phase(op: str, algorithm: str, dim: Dim, k: int, buffer_bytes: float, *, backend: Backend,
              link_latency_s: float, endpoint_delay_s: float, local_memory_gbps: float | None,
              efficiency: float = 1.0) -> SimPhase:
    """One chunk's phase time under ASTRA-sim's algorithm and analytical backend.

    Parameters
    ----------
    op : {'reduce_scatter', 'all_gather', 'all_reduce', 'all_to_all', 'p2p'}
    algorithm : {'ring', 'direct', 'halving_doubling'}
    k : int
        NPUs of the group along ``dim``.
    buffer_bytes : float
        Phase buffer ``x`` (reduce-scatter / all-reduce input, all-gather output, all-to-all send
        buffer, p2p message).
    backend : {'congestion_unaware', 'congestion_aware'}
    link_latency_s, endpoint_delay_s : float
        ``alpha`` per link, ``e`` per endpoint pass.
    local_memory_gbps : float, optional
        ``M`` (1e9 bytes/s); ``None``: reductions are free.
    efficiency : float
        Fraction ``eta`` of the link bandwidth achieved (``X = eta B_d / links_per_npu``).

    Notes
    -----
    With ``s(m) = m links / (eta B_d)``, ``h`` the hops (1, or 2 through a switch), ``f = 2`` for
    a congestion-aware switch else 1 and ``r(m) = 3 m / M``:

    * ring: reduce-scatter ``k e + (k-1)(f s(n) + h alpha + r(n))``; all-gather
      ``k e + (k-1)(f s(n) + h alpha)``; all-reduce ``(2k-1) e + 2(k-1)(f s(n) + h alpha)
      + (k-1) r(n)``; all-to-all ``(1+P) e + P (f s(n) + h alpha)``, ``P = k(k-1)/2``.
    * direct, the messages taking ``N = s(n) + alpha`` on a clique; ``s(n) + 2 alpha`` (unaware)
      or ``k s(n) + 2 alpha`` (aware) through a switch; ``s(n) + H alpha`` (unaware) or
      ``max(L s(n) + 2 alpha, (2H - 1) s(n) + H alpha)`` (aware) on a ring, ``H = floor(k/2)``,
      ``L = H (H + 1) / 2``: reduce-scatter ``2 e + N + r(n)``; all-gather and all-to-all
      ``2 e + N``; all-reduce ``3 e + 2 N + r(n)``.
    * halving-doubling (``k = 2^q``), steps ``(m_i, d_i)`` (reduce-scatter ``x / 2^i`` at
      distance ``2^(i-1)``, all-gather the reverse, all-reduce both): ``s(m_i) + h_i alpha``
      unaware, ``h_i (s(m_i) + alpha)`` aware on a ring (``h_i = d_i``) or switch
      (``h_i = 2``), ``s(m_i) + alpha`` on a clique; plus ``q + 1`` (all-reduce ``2 q + 1``)
      endpoint passes and the reductions.
    * point-to-point: ``2 e + f s(x) + h alpha``.

    Examples
    --------
    Ring all-gather of a 128 MiB shard on a FullyConnected dimension of 8 at 100 GB/s (2^30
    bytes/s) per link, 500 ns links, 10 ns endpoint delay: 7 steps of 1.25 ms, 7 x 500 ns,
    8 endpoint passes:

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
            coef += (hops if aware and (ring or switch) else 1) * m * u
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


def sim_pipeline_pieces(phases: Sequence[tuple[int, str, SimPhase]], chunks: int, *,
                        backend: Backend, queues_per_dim: int, active_chunks_per_dim: int,
                        hierarchical_all_reduce: bool) -> list[tuple[dict[int, float], float]]:
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
        phase times plus the largest piece.

    Examples
    --------
    Four chunks, one queue running one chunk at a time: ``(ceil(4/1) - 1) u``; two at once: ``u``:

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
            if ph.channel == "shared" or (hierarchical_all_reduce and not split):
                shared += ph.load_gb  # (one queue: all reduce-scatters, then all-gathers)
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


def _regime_pieces(phases: Sequence[tuple[int, str, SimPhase]], regimes: list[int], chunks: int,
                   **settings: object) -> list[tuple[dict[int, float], float]]:
    """Pieces of a pipeline whose phases ``regimes`` take the larger of two affine times: per
    choice of regimes, its pieces shifted by the chosen phases' extra time.
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
