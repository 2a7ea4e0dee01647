"""Topology-aware collective times (the ``topology_aware`` collective model): algorithm steps,
hops, chunk pipelining, per-message latency and reduction cost.

A collective is a sequence of *phases* (one algorithm run on one dimension, in hierarchical
order), each a number of *steps* paying serialization, the latency of every hop, an endpoint
delay and, for reductions, local memory traffic; chunks stream through the phases as a
pipeline. Every phase time is ``coef / B_d + const`` and the collective time is built by sums
and a max, so the optimizer's program stays convex. ``B_d`` is the aggregate bandwidth one NPU
drives into dimension ``d`` (GB/s), split over the topology's links; a simulator's ``X`` GB/s
(2^30 bytes) per link is ``B_d = links_per_npu x X x 2^30 / 1e9`` (:func:`bw_from_link_gbps`).

References
----------
.. [1] R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
   Operations in MPICH", Int. J. High Performance Computing Applications 19(1), 2005.
.. [2] W. Won, T. Heo, S. Rashidi, S. Sridharan, S. Srinivasan, T. Krishna, "ASTRA-sim2.0:
   Modeling Hierarchical Networks and Disaggregated Systems for Large-model Training at
   Scale", ISPASS 2023.
.. [3] NVIDIA, "NCCL User Guide" and nccl-tests "Performance" (algorithm and bus bandwidth),
   https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.options import CollectiveAlgorithm
from libra_opt.traffic.astra_sim_model import sim_chunks, sim_phase, sim_pipeline_pieces
from libra_opt.traffic.collective_settings import HD_TOPOLOGIES, CollectiveSettings
from libra_opt.traffic.collectives import hierarchical_traffic_bytes
from libra_opt.traffic.links import LINE_RATE_PRESETS, bw_from_link_gbps

__all__ = ["collective_buffers_bytes", "LINE_RATE_PRESETS", "CollectiveSettings",
           "ChunkedCollective", "bw_from_link_gbps", "phase_time_terms", "collective_phases"]


def phase_time_terms(op: str, algorithm: CollectiveAlgorithm, dim: Dim, k: int, buffer_bytes: float,
                     link_latency_s: float, endpoint_delay_s: float = 0.0,
                     local_memory_gbps: float | None = None, efficiency: float = 1.0,
                     in_network: bool = False) -> tuple[float, float]:
    """Time of one phase on one dimension as ``coef_gb / B_d + const_s``.

    Parameters
    ----------
    op : {'reduce_scatter', 'all_gather', 'all_reduce', 'all_to_all', 'p2p'}
    algorithm : {'ring', 'direct', 'halving_doubling'}
    k : int
        NPUs of the group along ``dim``.
    buffer_bytes : float
        Phase buffer ``x`` (reduce-scatter / all-reduce input, all-gather output, all-to-all send
        buffer, p2p message).
    link_latency_s, endpoint_delay_s : float
        ``alpha`` per hop and ``e`` per message.
    local_memory_gbps : float, optional
        ``M``; ``None`` makes reductions free.
    efficiency : float
        Fraction ``eta`` of line rate achieved.
    in_network : bool
        The switch of ``dim`` reduces and multicasts in the network (SHARP class).

    Notes
    -----
    With ``n = x / k``, ``l = h alpha + e`` (``h`` the topology's hops), ``rho = 3 n / M`` and
    ``tau = phi n / (eta B_d)``, ``phi`` the topology's ``ring_serialization``:

    * ring [1]_, [2]_: reduce-scatter ``(k-1)(tau + l + rho)``; all-gather ``(k-1)(tau + l)``;
      all-reduce ``(k-1)(2 tau + 2 l + rho)``; all-to-all ``k(k-1)/2 (tau + l)``;
    * direct: ``ser = psi n / (eta B_d)``, ``psi`` the topology's ``direct_serialization``,
      ``l' = H alpha + e`` (``H`` the farthest peer's hops); reduce-scatter
      ``ser + l' + (k-1) rho``; all-gather and all-to-all ``ser + l'``; all-reduce
      ``2 ser + 2 l' + (k-1) rho``;
    * halving-doubling [1]_ (``k = 2^q``; not on a ring or mesh): ``ser = (k-1) n links /
      (eta B_d)``; reduce-scatter ``ser + q l + (k-1) rho``; all-gather ``ser + q l``; all-reduce
      twice serialization and latency plus ``(k-1) rho``; all-to-all as direct;
    * point-to-point: ``x links_per_npu / (eta B_d) + l``.

    In-network (a switch dimension, reduction in the switch): all-reduce and reduce-scatter
    ``x / (eta B_d) + l``; all-gather (multicast) ``(k-1) n / (eta B_d) + l``; others as without.

    References
    ----------
    .. [1] Thakur, Rabenseifner and Gropp, IJHPCA 19(1), 2005 (the module's References).
    .. [2] Won et al., ASTRA-sim2.0, ISPASS 2023 (the module's References).

    Examples
    --------
    Ring reduce-scatter of 8 MB over 4 NPUs at 100 GB/s, 1 us links: 3 steps of 20 us + 1 us:

    >>> ring = Dim("r", "ring", 4, "T")
    >>> c, l = phase_time_terms("reduce_scatter", "ring", ring, 4, 8e6, 1e-6)
    >>> round((c / 100 + l) * 1e6, 6)
    63.0
    """
    if k < 2:
        return 0.0, 0.0
    n = buffer_bytes / k
    topo = dim.topology
    lat = topo.hops * link_latency_s + endpoint_delay_s
    red = 0.0 if local_memory_gbps is None else 3.0 * n / (1e9 * local_memory_gbps)
    links = topo.links_per_npu(dim.size)
    scale = 1.0 / (1e9 * efficiency)
    if op == "p2p":
        return buffer_bytes * links * scale, lat
    if in_network and topo.switched:
        if op in ("all_reduce", "reduce_scatter"):
            return buffer_bytes * scale, lat
        if op == "all_gather":
            return (k - 1) * n * scale, lat
    if algorithm == "halving_doubling" and op == "all_to_all":
        algorithm = "direct"
    if algorithm == "halving_doubling" and topo.forwards:
        raise InputError(f"algorithm {algorithm!r} needs a {HD_TOPOLOGIES} dimension",
                         field=f"collectives.algorithm.{dim.name}")
    if algorithm == "ring":
        tau = topo.ring_serialization(dim.size) * n * scale
        steps = k - 1
        if op == "reduce_scatter":
            return steps * tau, steps * (lat + red)
        if op == "all_gather":
            return steps * tau, steps * lat
        if op == "all_reduce":
            return 2 * steps * tau, steps * (2 * lat + red)
        if op == "all_to_all":
            pairs = k * (k - 1) / 2
            return pairs * tau, pairs * lat
    elif algorithm == "direct":
        ser = topo.direct_serialization(k, dim.size) * n * scale
        far = topo.farthest_hops(k) * link_latency_s + endpoint_delay_s
        if op == "reduce_scatter":
            return ser, far + (k - 1) * red
        if op in ("all_gather", "all_to_all"):
            return ser, far
        if op == "all_reduce":
            return 2 * ser, 2 * far + (k - 1) * red
    elif algorithm == "halving_doubling":
        if k & (k - 1):
            raise InputError(
                f"halving_doubling needs a power-of-two group on {dim.name!r}, got {k} NPUs",
                field=f"collectives.algorithm.{dim.name}")
        q = k.bit_length() - 1
        ser = (k - 1) * n * links * scale
        if op == "reduce_scatter":
            return ser, q * lat + (k - 1) * red
        if op == "all_gather":
            return ser, q * lat
        if op == "all_reduce":
            return 2 * ser, 2 * q * lat + (k - 1) * red
    raise InputError(f"no {algorithm!r} phase time for {op!r}", field="collectives.algorithm")


@dataclass(frozen=True)
class ChunkedCollective:
    """A collective as the phases one chunk goes through, and how chunks stream.

    Attributes
    ----------
    dims : tuple of int
        Dimension of each phase, in order.
    coef_gb, const_s : tuple of float
        Phase time ``coef_gb / B_d + const_s`` of one chunk.
    chunks : int
        ``S``.
    active_chunks : int or None
        ``A`` (``None``: unlimited).
    pieces : tuple, optional
        The pipeline's affine pieces ``((dim, coef_gb), ...), const_s``; the time is
        ``sum_p t_p + max_r piece_r``. Default: the Notes' pieces; ASTRA-sim backends give their
        own (:func:`~libra_opt.traffic.astra_sim_model.sim_pipeline_pieces`).

    Notes
    -----
    The first chunk takes every phase in turn, each further chunk one cycle of the slowest stage.
    A stage is a dimension (``u_d = sum_{p on d} t_p``: an all-reduce's phases share its links);
    at most ``A`` chunks in flight bound the cycle by ``sum_p t_p / A``:

    .. math:: T = \\sum_p t_p + (S - 1) \\max\\left(\\max_d u_d, \\frac{1}{A} \\sum_p t_p\\right)

    ``S = 1`` is the sequential sum; large ``S`` approaches ``S max_d u_d``. ``T`` is convex in
    ``1 / B``.
    """

    dims: tuple[int, ...]
    coef_gb: tuple[float, ...]
    const_s: tuple[float, ...]
    chunks: int = 1
    active_chunks: int | None = None
    pieces: tuple[tuple[tuple[tuple[int, float], ...], float], ...] | None = None

    def __post_init__(self) -> None:
        if self.pieces is not None:
            return
        pieces: list[tuple[tuple[tuple[int, float], ...], float]] = []
        w = self.chunks - 1
        if self.dims and w > 0:
            for d in sorted(set(self.dims)):
                on_d = [i for i, dd in enumerate(self.dims) if dd == d]
                pieces.append((((d, w * sum(self.coef_gb[i] for i in on_d)),),
                               w * sum(self.const_s[i] for i in on_d)))
            a = self.active_chunks
            if a is not None and a < len(self.dims):
                per_dim: dict[int, float] = {}
                for d, c in zip(self.dims, self.coef_gb, strict=True):
                    per_dim[d] = per_dim.get(d, 0.0) + w * c / a
                pieces.append((tuple(sorted(per_dim.items())), w * sum(self.const_s) / a))
        object.__setattr__(self, "pieces", tuple(pieces))

    def piece_arrays(self, n_dims: int) -> tuple[np.ndarray, np.ndarray]:
        """``(R, n_dims)`` coefficients (GB) and ``(R,)`` constants (s) of the pieces."""
        pieces = self.pieces or ()
        coef = np.zeros((len(pieces), n_dims))
        for r, (terms, _) in enumerate(pieces):
            for d, c in terms:
                coef[r, d] += c
        return coef, np.array([c for _, c in pieces], dtype=float)

    def phase_times_s(self, bw_gbps: npt.ArrayLike) -> np.ndarray:
        """``t_p`` of one chunk at bandwidth ``bw_gbps`` (one value per dimension)."""
        bw = np.asarray(bw_gbps, dtype=float)
        with np.errstate(divide="ignore"):
            return np.array(self.coef_gb) / bw[list(self.dims)] + np.array(self.const_s)

    def time_s(self, bw_gbps: npt.ArrayLike) -> float:
        """Collective time ``T`` (Notes) at bandwidth ``bw_gbps``.

        Examples
        --------
        Phases of 1 and 3 ms, 4 chunks: 4 + 3 x 3 = 13 ms; the first phase again on dimension 0
        (busy 2 ms < 3 ms): 5 + 3 x 3 = 14 ms.

        >>> c = ChunkedCollective((0, 1), (0.1, 0.3), (0.0, 0.0), chunks=4)
        >>> round(c.time_s([100.0, 100.0]) * 1e3, 9)
        13.0
        >>> c = ChunkedCollective((0, 1, 0), (0.1, 0.3, 0.1), (0.0, 0.0, 0.0), chunks=4)
        >>> round(c.time_s([100.0, 100.0]) * 1e3, 9)
        14.0
        """
        if not self.dims:
            return 0.0
        bw = np.asarray(bw_gbps, dtype=float)
        total = float(self.phase_times_s(bw).sum())
        if not self.pieces:
            return total
        coef, const = self.piece_arrays(bw.size)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(coef != 0, coef / bw[None, :], 0.0).sum(axis=1) + const
        return total + float(per.max())


def _plan(kind: str, chunk: float, span: Sequence[int], spanned: list[int],
          full: bool) -> list[tuple[str, int, float, str]]:
    """``(phase op, dim, buffer bytes, queue group)`` of one chunk (see collective_phases)."""
    plan: list[tuple[str, int, float, str]] = []
    if kind in ("reduce_scatter", "all_reduce"):
        if full:
            return [("all_reduce", d, chunk, "all") for d in spanned]
        hier = kind == "all_reduce"
        up = spanned if kind == "reduce_scatter" else spanned[:-1]
        m = chunk
        for d in up:
            plan.append(("reduce_scatter", d, m, "first" if hier else "all"))
            m /= int(span[d])
        if hier:
            plan.append(("all_reduce", spanned[-1], m, "first"))
            for d in reversed(up):
                plan.append(("all_gather", d, m * int(span[d]), "last"))
                m *= int(span[d])
    elif kind == "all_gather":
        m = chunk
        for d in reversed(spanned):
            plan.append(("all_gather", d, m * int(span[d]), "all"))
            m *= int(span[d])
    else:  # all_to_all, p2p
        plan = [(kind, d, chunk, "all") for d in spanned]
    return plan


def collective_buffers_bytes(kind: str, size_bytes: float, span: Sequence[int],
                             flat_ring: bool = False) -> np.ndarray:
    """The buffer each spanned dimension's phase handles, in nccl-tests' ``size`` convention.

    A hierarchical reduce-scatter on ``d`` handles ``size / prod_{e < d} k_e``, an all-gather the
    buffer it assembles; a flat ring handles ``size`` everywhere (all-gather ``size x prod k``).
    All-to-all and point-to-point handle ``size``; 0 on a dimension not spanned.

    Examples
    --------
    >>> collective_buffers_bytes("all_reduce", 8e6, (4, 2)).tolist()   # RS a, AR b (2 MB)
    [8000000.0, 2000000.0]
    >>> collective_buffers_bytes("all_gather", 1e6, (8, 2), flat_ring=True).tolist()
    [16000000.0, 16000000.0]
    """
    out = np.zeros(len(span))
    spanned = [d for d, k in enumerate(span) if int(k) > 1]
    if not spanned:
        return out
    if flat_ring and kind in ("all_reduce", "reduce_scatter", "all_gather"):
        total = size_bytes * (math.prod(int(k) for k in span) if kind == "all_gather" else 1)
        out[spanned] = total
        return out
    for _, d, buf, _ in _plan(kind, float(size_bytes), span, spanned, False):
        out[d] = max(out[d], buf)
    return out


def collective_phases(kind: str, size_bytes: float, span: Sequence[int], fabric: Fabric,
                      settings: CollectiveSettings) -> ChunkedCollective:
    """The phases of one chunk of a collective, in hierarchical order.

    Parameters
    ----------
    kind, size_bytes, span
        As in :func:`libra_opt.traffic.collectives.hierarchical_traffic_bytes`.

    Notes
    -----
    A chunk carries ``x = size_bytes / S``. Over the spanned dimensions ``d_1 < ... < d_m``:
    reduce-scatter phases on ``d_1 .. d_m``, ``x <- x / k_d`` after each; all-gather on
    ``d_m .. d_1``, the buffer the gathered ``x k_d``; all-reduce ``hierarchical``: reduce-scatter
    on ``d_1 .. d_{m-1}``, all-reduce on ``d_m``, all-gather back (``full``: an all-reduce of
    ``x`` on each); all-to-all and point-to-point: ``x`` on each. With ``settings.backend`` the
    times are ASTRA-sim's (:mod:`libra_opt.traffic.astra_sim_model`). 0 bytes: no phases.

    Examples
    --------
    >>> f = Fabric((Dim("a", "ring", 4, "T"), Dim("b", "switch", 2, "T")))
    >>> c = collective_phases("all_reduce", 8e6, (4, 2), f, CollectiveSettings())
    >>> c.dims, [round(v, 6) for v in c.coef_gb]   # RS a, AR b (2 MB), AG a
    ((0, 1, 0), [0.006, 0.002, 0.006])
    """
    hierarchical_traffic_bytes(kind, size_bytes, span)  # validates the arguments
    if len(span) != fabric.n_dims:
        raise InputError(f"span {tuple(span)} has {len(span)} entries, the fabric has "
                         f"{fabric.n_dims} dims", field="collective.group")
    s = settings
    chunk = float(size_bytes) / s.chunks
    spanned = [d for d, k in enumerate(span) if int(k) > 1]
    if chunk <= 0 or not spanned:
        return ChunkedCollective((), (), (), s.chunks, s.active_chunks, pieces=())
    n_chunks = s.chunks
    if s.backend is not None:
        npus = math.prod(d.size for d in fabric.dims)
        chunk, n_chunks = sim_chunks(kind, size_bytes, s.chunks, npus)
    full = kind == "all_reduce" and s.all_reduce == "full"
    plan = _plan(kind, chunk, span, spanned, full)
    dims, coef, const, sim = [], [], [], []
    for op, d, buf, group in plan:
        dim, k = fabric.dims[d], int(span[d])
        algorithm, eta = s.algorithm_of(dim, kind), s.efficiency_of(dim, buf * s.chunks, k)
        if s.backend is not None:
            ph = sim_phase(op, algorithm, dim, k, buf, backend=s.backend,
                           link_latency_s=s.latency_of(dim), endpoint_delay_s=s.endpoint_delay_s,
                           local_memory_gbps=s.local_memory_gbps, efficiency=eta)
            sim.append((d, group, ph))
            c, l_s = ph.coef_gb, ph.const_s
        else:
            c, l_s = phase_time_terms(op, algorithm, dim, k, buf, s.latency_of(dim),
                                      s.endpoint_delay_s, s.local_memory_gbps, eta,
                                      dim.name in s.in_network_reduction)
        dims.append(d)
        coef.append(c)
        const.append(l_s)
    if s.backend is not None:
        pieces = sim_pipeline_pieces(
            sim, n_chunks, backend=s.backend, queues_per_dim=s.queues_per_dim,
            active_chunks_per_dim=s.active_chunks_per_dim,
            hierarchical_all_reduce=kind == "all_reduce" and not full)
        return ChunkedCollective(
            tuple(dims), tuple(coef), tuple(const), n_chunks, s.active_chunks,
            pieces=tuple((tuple(sorted(t.items())), c) for t, c in pieces))
    return ChunkedCollective(tuple(dims), tuple(coef), tuple(const), s.chunks, s.active_chunks)
