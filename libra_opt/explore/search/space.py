"""The co-design search space: parallelizations, placements and fabric shapes.

A candidate is a :class:`~libra_opt.generators.parallelism.Parallelism`, a placement of the
axes ``tp, cp, ep, edp, pp`` on the fabric's dimensions (a span matrix ``k_{a,d}``) and a
fabric shape (:mod:`~libra_opt.explore.search.fabrics`), enumerated in increasing ``tp``,
``cp``, ``pp``, ``ep``, the knobs in :class:`SearchSpace`'s order and the span matrices
lexicographically. A collective over ``k_d`` NPUs of dimension ``d`` costs the same
whichever ``k_d`` of them, so rank orders with the same span matrix are one candidate
(Megatron-Core's ``tp-cp-ep-dp-pp``, :func:`~libra_opt.generators.mapping.place_groups`, is
one of them).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from libra_opt.errors import InputError
from libra_opt.explore.search.fabrics import (
    FabricShape,
    _split_vectors,
    dim_shapes,
    divisors,
    fabric_shapes,
)
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.topology import topology_names, topology_of
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, Device, compute_time_s
from libra_opt.generators.generator import timing_model
from libra_opt.generators.in_network_optimizer import IN_NETWORK_OPTIMIZER
from libra_opt.generators.mapping import AXES, Placement
from libra_opt.generators.memory import MemoryBreakdown, transformer_layer_activation_bytes
from libra_opt.generators.operators import transformer_layer_operators
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.pipeline import pipeline_bubble_passes, stage_plan
from libra_opt.generators.roofline import operator_time_s
from libra_opt.generators.transformer_counts import embedding_params, layer_counts
from libra_opt.generators.transformer_workload import layer_params_local, stage_memory
from libra_opt.scenario.spec import ScenarioSpec

__all__ = [
    "RECOMPUTE",
    "SearchSpace",
    "search_shapes",
    "parallelisms",
    "placement_key",
    "span_matrices",
    "groups_of",
    "placement_of",
    "group_spans",
    "MemoryModel",
    "compute_lower_bound_s",
    "LayerTimeCache",
]

RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True)
class SearchSpace:
    """Which knobs the search varies, and over which values.

    ``micro_batch_sizes``, ``interleave`` (with ``pp > 1``), ``recompute``,
    ``sequence_parallel`` (a choice with ``tp > 1``) and ``zero`` (``0`` only with the
    in-network optimizer) list each knob's values; ``tp``, ``cp``, ``pp``, ``ep`` restrict a
    degree (``None``: every value the model allows, ``cp`` up to ``max_cp``); ``placements`` is
    ``all`` (every distinct span matrix) or ``auto``. The fabric family is the base fabric, an
    HB-domain family (``hb_domains``, :func:`fabric_shapes`) or a multi-dimensional one
    (:func:`dim_shapes`: ``dim_sizes`` ``'factorizations'`` or size tuples, ``dim_topologies``,
    and ``unit_dims`` to allow dimensions of size 1).

    Examples
    --------
    >>> SearchSpace().recompute
    ('none', 'selective', 'full')
    """

    micro_batch_sizes: tuple[int, ...] = (1, 2, 4)
    interleave: tuple[int, ...] = (1, 2, 4, 8)
    recompute: tuple[str, ...] = RECOMPUTE
    sequence_parallel: tuple[bool, ...] = (False, True)
    zero: tuple[int, ...] = (0, 1, 2, 3)
    tp: tuple[int, ...] | None = None
    cp: tuple[int, ...] | None = None
    pp: tuple[int, ...] | None = None
    ep: tuple[int, ...] | None = None
    max_cp: int = 16
    placements: str = "all"
    hb_domains: tuple[int, ...] | None = None
    dim_sizes: str | tuple[tuple[int, ...], ...] | None = None
    dim_topologies: tuple[str, ...] | None = None
    unit_dims: bool = False

    def __post_init__(self) -> None:
        self._check_dims()
        for name in ("micro_batch_sizes", "interleave", "zero", "tp", "cp", "pp", "ep",
                     "hb_domains"):
            values = getattr(self, name)
            if values is None:
                continue
            values = tuple(values)
            object.__setattr__(self, name, values)
            low = 0 if name == "zero" else 1
            if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < low
                                 for v in values):
                raise InputError(f"expected a non-empty list of integers >= {low}, got "
                                 f"{values!r}", field=f"search.{name}")
        object.__setattr__(self, "recompute", tuple(self.recompute))
        object.__setattr__(self, "sequence_parallel", tuple(self.sequence_parallel))
        bad = [r for r in self.recompute if r not in RECOMPUTE]
        if bad or not self.recompute:
            raise InputError(f"recompute values must be some of {', '.join(RECOMPUTE)}, got "
                             f"{self.recompute!r}", field="search.recompute")
        if any(z > 3 for z in self.zero):
            raise InputError(f"ZeRO stages are 0..3, got {self.zero!r}", field="search.zero")
        if self.placements not in ("all", "auto"):
            raise InputError(f"placements must be 'all' or 'auto', got {self.placements!r}",
                             field="search.placements")
        if self.max_cp < 1:
            raise InputError(f"max_cp {self.max_cp} must be >= 1", field="search.max_cp")

    def _check_dims(self) -> None:
        sizes = self.dim_sizes
        if isinstance(sizes, str):
            if sizes != "factorizations":
                raise InputError(f"dim_sizes must be 'factorizations' or a list of size "
                                 f"tuples, got {sizes!r}", field="search.dim_sizes")
        elif sizes is not None:
            sizes = tuple(tuple(t) for t in sizes)
            if not sizes or any(not t or any(isinstance(v, bool) or not isinstance(v, int)
                                             or v < 1 for v in t) for t in sizes):
                raise InputError(f"dim_sizes must be a non-empty list of tuples of integers "
                                 f">= 1, got {self.dim_sizes!r}", field="search.dim_sizes")
            object.__setattr__(self, "dim_sizes", tuple(dict.fromkeys(sizes)))
        if self.dim_topologies is not None:
            topos = self.dim_topologies
            if not topos or any(t not in topology_names(aliases=True) for t in topos):
                raise InputError(f"dim_topologies must be some of {', '.join(topology_names())} "
                                 f"(or torus), got {self.dim_topologies!r}",
                                 field="search.dim_topologies")
            object.__setattr__(self, "dim_topologies", tuple(dict.fromkeys(
                topology_of(t, aliases=True).name for t in topos)))
        if not isinstance(self.unit_dims, bool):
            raise InputError(f"unit_dims must be true or false, got {self.unit_dims!r}",
                             field="search.unit_dims")
        if self.unit_dims and self.dim_sizes != "factorizations":
            raise InputError("unit_dims applies to dim_sizes='factorizations'",
                             field="search.unit_dims")
        if self.hb_domains is not None and (self.dim_sizes is not None
                                            or self.dim_topologies is not None):
            raise InputError("give one fabric family: hb_domains (two-level fabrics) or "
                             "dim_sizes / dim_topologies (multi-dimensional fabrics)",
                             field="search.dim_sizes")


def search_shapes(base: Fabric, space: SearchSpace,
                  spec: ScenarioSpec | None = None) -> tuple[FabricShape, ...]:
    """The fabric shapes of ``space``: its multi-dimensional family (:func:`dim_shapes`)
    when it names one, else its HB-domain family or the base (:func:`fabric_shapes`)."""
    if space.dim_sizes is not None or space.dim_topologies is not None:
        return dim_shapes(base, spec, space.dim_sizes, space.dim_topologies, space.unit_dims)
    return fabric_shapes(base, space.hb_domains, spec)


def _allowed(values: tuple[int, ...] | None, candidates: list[int]) -> list[int]:
    return candidates if values is None else [c for c in candidates if c in values]


def parallelisms(
    model: TransformerSpec, n_npus: int, base: Parallelism, space: SearchSpace
) -> Iterator[Parallelism]:
    """Every parallelization of ``model`` on ``n_npus`` NPUs in ``space``: ``tp`` divides the
    heads and ``tp``, ``n_kv_heads`` divide one another; ``cp`` a micro-batch's tokens; ``pp x
    interleave <= layers + 2`` (:func:`~libra_opt.generators.pipeline.stage_plan`); ``ep`` the
    experts and ``dp`` (``tp > 1`` with ``ep > 1`` needs sequence parallelism); ``dp x
    micro_batch`` the global batch. ``base`` gives what is not varied (global batch, precision,
    data-parallel mode, the overlap options, dropped where a candidate cannot have them).

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> m = load_model("llama3_8b")
    >>> base = Parallelism(global_batch_size=16)
    >>> space = SearchSpace(micro_batch_sizes=(1,), recompute=("none",), zero=(1,),
    ...                     sequence_parallel=(True,), interleave=(1,), cp=(1,))
    >>> [(p.tp, p.pp, p.dp) for p in parallelisms(m, 8, base, space)]  # every tp x pp x dp = 8
    [(1, 1, 8), (1, 2, 4), (1, 4, 2), (1, 8, 1), (2, 1, 4), (2, 2, 2), (2, 4, 1), (4, 1, 2), (4, 2, 1), (8, 1, 1)]
    """
    gbs = base.global_batch_size
    heads, kv = model.n_heads, model.kv_heads
    n_experts = model.moe.n_experts if model.moe is not None else 1
    for tp in _allowed(space.tp, divisors(n_npus)):
        if heads % tp or (kv % tp and tp % kv):
            continue
        rest_tp = n_npus // tp
        for cp in _allowed(space.cp, divisors(rest_tp)):
            if space.cp is None and cp > space.max_cp:
                continue
            for pp in _allowed(space.pp, divisors(rest_tp // cp)):
                if pp > model.n_layers + 2:
                    continue
                dp = rest_tp // (cp * pp)
                if gbs % dp:
                    continue
                eps = [e for e in divisors(dp) if n_experts % e == 0]
                for ep in _allowed(space.ep, eps if model.moe is not None else [1]):
                    yield from _knobs(model, base, space, tp, cp, pp, dp, ep)


def _knobs(model: TransformerSpec, base: Parallelism, space: SearchSpace,
           tp: int, cp: int, pp: int, dp: int, ep: int) -> Iterator[Parallelism]:
    gbs = base.global_batch_size
    for mb in space.micro_batch_sizes:
        if gbs % (dp * mb) or (model.seq_len * mb) % cp:
            continue
        for v in space.interleave if pp > 1 else (1,):
            if pp * v > model.n_layers + 2:  # stage_plan: at most two spare stages
                continue
            for rec in space.recompute:
                sps = [sp for sp in space.sequence_parallel if tp > 1 or not sp] or [False]
                if ep > 1 and tp > 1:
                    sps = [sp for sp in sps if sp]
                for sp in sps:
                    for zero in space.zero:
                        if base.dp_mode == IN_NETWORK_OPTIMIZER and zero != 0:
                            continue
                        dp_ovl = base.dp_comm_overlap and dp * cp > 1 and zero < 3
                        yield Parallelism.model_validate({  # the descriptor's checks run
                            **base.model_dump(), "tp": tp, "cp": cp, "pp": pp, "dp": dp,
                            "ep": ep, "micro_batch_size": mb, "interleave": v,
                            "recompute": rec, "sequence_parallel": sp, "zero": zero,
                            "tp_comm_overlap": base.tp_comm_overlap and tp > 1,
                            "dp_comm_overlap": dp_ovl})


def span_matrices(sizes: Sequence[int], degrees: dict[str, int]) -> list[tuple[tuple[int, ...], ...]]:
    """Every span matrix ``k_{a,d}`` (rows: the axes ``tp, cp, ep, edp, pp``; columns: the
    dimensions) with row products the degrees and column products the sizes, lexicographic.

    Examples
    --------
    >>> span_matrices((4, 4), {"tp": 4, "edp": 4})[0]
    ((1, 4), (1, 1), (1, 1), (4, 1), (1, 1))
    """
    return list(_span_matrices(tuple(sizes), tuple(int(degrees.get(ax, 1)) for ax in AXES)))


@functools.lru_cache(maxsize=8192)
def _span_matrices(sizes: tuple[int, ...], deg: tuple[int, ...]
                   ) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """:func:`span_matrices` of integer tuples, memoized."""
    out: list[tuple[tuple[int, ...], ...]] = []

    def rec(i: int, free: tuple[int, ...], rows: tuple[tuple[int, ...], ...]) -> None:
        if i == len(AXES) - 1:  # the last axis takes what is left
            if math.prod(free) == deg[i]:
                out.append((*rows, free))
            return
        for k in _split_vectors(deg[i], free):
            rec(i + 1, tuple(f // kk for f, kk in zip(free, k, strict=True)), (*rows, k))

    if math.prod(deg) == math.prod(sizes):
        rec(0, tuple(sizes), ())
    return tuple(out)


def groups_of(matrix: tuple[tuple[int, ...], ...]) -> dict[str, tuple[int, ...]]:
    """The workload groups of a span matrix (``dp = ep x edp x cp``, ``edp = edp x cp``).

    Examples
    --------
    >>> groups_of(((2, 1), (1, 2), (1, 1), (2, 1), (1, 2)))["dp"]
    (2, 2)
    """
    tp, cp, ep, edp, pp = matrix
    return {
        "tp": tp, "cp": cp, "pp": pp, "ep": ep,
        "dp": tuple(a * b * c for a, b, c in zip(ep, edp, cp, strict=True)),
        "edp": tuple(b * c for b, c in zip(edp, cp, strict=True)),
    }


def placement_of(fabric: Fabric, matrix: tuple[tuple[int, ...], ...]) -> Placement:
    """The :class:`~libra_opt.generators.mapping.Placement` of a span matrix."""
    return Placement(fabric.names, MappingProxyType(dict(zip(AXES, matrix, strict=True))))


def group_spans(sizes: Sequence[int], degrees: dict[str, int]) -> dict[str, list[tuple[int, ...]]]:
    """Every span each workload group can take on dimensions of ``sizes`` (a superset of
    those the span matrices give: any ``k`` with ``k_d | n_d`` and the group's size)."""
    deg = {ax: int(degrees.get(ax, 1)) for ax in AXES}
    size = {"tp": deg["tp"], "cp": deg["cp"], "pp": deg["pp"], "ep": deg["ep"],
            "dp": deg["ep"] * deg["edp"] * deg["cp"], "edp": deg["edp"] * deg["cp"]}
    return {g: list(_split_vectors(n, tuple(sizes))) for g, n in size.items()}


def placement_key(placement: Placement) -> tuple[tuple[int, ...], ...]:
    """The span matrix of ``placement`` (axes in :data:`~libra_opt.generators.mapping.AXES`
    order), a hashable identity."""
    return tuple(tuple(placement.spans[ax]) for ax in AXES)


@dataclass
class MemoryModel:
    """HBM bytes of the most loaded NPU as the generator counts them
    (:mod:`libra_opt.generators.memory`, per pipeline stage), without generating the workload;
    per-layer quantities are cached by the knobs they depend on. The test suite checks it
    equals ``GeneratedWorkload.memory.total_bytes`` on random configurations.

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> par = Parallelism(tp=8, sequence_parallel=True, pp=16, interleave=2, dp=128,
    ...                   global_batch_size=2048, recompute="full", zero=1)
    >>> round(MemoryModel(load_model("llama3_405b")).bytes_per_npu(par) / 1e9, 1)
    19.0
    """

    model: TransformerSpec
    capacity_bytes: float = 0.0
    _params: dict[tuple, tuple[float, float]] = field(default_factory=dict)
    _acts: dict[tuple, float] = field(default_factory=dict)
    _plans: dict[tuple[int, int], tuple] = field(default_factory=dict)

    def _layer_params(self, par: Parallelism, moe: bool) -> tuple[float, float]:
        key = (par.tp, par.ep, par.capacity_factor, moe)
        if key not in self._params:
            self._params[key] = layer_params_local(self.model, par, layer_counts(
                self.model, moe, capacity_factor=par.capacity_factor))
        return self._params[key]

    def _act(self, par: Parallelism, moe: bool) -> float:
        key = (par.tp, par.cp, par.micro_batch_size, par.sequence_parallel, par.recompute,
               par.capacity_factor, par.precision.activation_bytes, moe)
        if key not in self._acts:
            self._acts[key] = transformer_layer_activation_bytes(self.model, par, moe=moe)
        return self._acts[key]

    def _plan(self, pp: int, v: int) -> tuple:
        if (pp, v) not in self._plans:
            self._plans[(pp, v)] = stage_plan(self.model, pp, v)
        return self._plans[(pp, v)]

    def _dense(self, s: Any, tp: int, d_dense: float, d_moe: float) -> float:
        """Dense parameters of stage ``s`` (layers, embedding and output layer)."""
        m = self.model
        vocab = m.vocab_size * m.hidden_size  # the embedding (and output) matrix, split by tp
        dense = s.n_dense * d_dense + s.n_moe * d_moe
        if s.has_embedding:
            dense += vocab / tp + (embedding_params(m) - vocab)
        if s.has_head:  # its norm, and its matrix unless tied to this stage's embedding
            norm = (2 if m.norm == "layernorm" else 1) * m.hidden_size
            dense += norm + (0.0 if m.tied_embeddings and s.has_embedding else vocab / tp)
        return dense

    def min_dense_params(self, par: Parallelism) -> float:
        """The fewest dense parameters any pipeline stage holds (before ZeRO sharding)."""
        d_dense, _ = self._layer_params(par, False)
        d_moe, _ = self._layer_params(par, True) if self.model.moe is not None else (0.0, 0.0)
        return min(self._dense(s, par.tp, d_dense, d_moe)
                   for s in self._plan(par.pp, par.interleave))

    def bytes_per_npu(self, par: Parallelism) -> float:
        """Peak HBM bytes over the pipeline stages (see the class docstring)."""
        return self.breakdown(par).total_bytes

    def breakdown(self, par: Parallelism) -> MemoryBreakdown:
        """The most loaded NPU's memory, as the generator reports it
        (``GeneratedWorkload.memory``)."""
        model = self.model
        d_dense, e_dense = self._layer_params(par, False)
        d_moe, e_moe = self._layer_params(par, True) if model.moe is not None else (0.0, 0.0)
        layer_act = (self._act(par, False), self._act(par, True) if model.moe is not None else 0.0)
        worst: MemoryBreakdown | None = None
        seen = set()
        for s in self._plan(par.pp, par.interleave):
            # stages alike but for their index: the first holds the most micro-batches
            # (inflight_microbatches does not increase with the index), so it is the peak
            sig = (s.n_dense, s.n_moe, s.has_embedding, s.has_head)
            if sig in seen:
                continue
            seen.add(sig)
            mb = stage_memory(model, par, s, self._dense(s, par.tp, d_dense, d_moe),
                              s.n_dense * e_dense + s.n_moe * e_moe, self.capacity_bytes, layer_act)
            if worst is None or mb.total_bytes > worst.total_bytes:
                worst = mb
        assert worst is not None
        return worst


@dataclass
class LayerTimeCache:
    """Per-micro-batch compute seconds of one transformer layer, cached by the knobs they depend
    on; each parallelization's software stack is applied as the generator applies it
    (:func:`~libra_opt.generators.generator.timing_model`).
    """

    model: TransformerSpec
    device: Device
    efficiency: ComputeEfficiency
    times: dict[tuple, float] = field(default_factory=dict)
    plans: dict[tuple[int, int], tuple] = field(default_factory=dict)
    timings: dict[str | None, tuple[Device, ComputeEfficiency]] = field(default_factory=dict)

    def plan(self, pp: int, v: int) -> tuple:
        """:func:`~libra_opt.generators.pipeline.stage_plan`, cached."""
        if (pp, v) not in self.plans:
            self.plans[(pp, v)] = stage_plan(self.model, pp, v)
        return self.plans[(pp, v)]

    def layer_s(self, par: Parallelism, moe: bool) -> float:
        """Forward + input-gradient (with recomputation) + weight-gradient seconds of one
        layer for one micro-batch, priced exactly as the generator prices it."""
        key = (par.tp, par.cp, par.ep, par.micro_batch_size, par.sequence_parallel,
               par.recompute, par.capacity_factor, par.flash_attention,
               par.gradient_accumulation_fusion, par.software_stack, moe)
        t = self.times.get(key)
        if t is None:
            # the device and efficiency the generator prices with (software stack applied)
            timing = self.timings.get(par.software_stack)
            if timing is None:
                timing = timing_model(self.model, par, self.device, self.efficiency)
                self.timings[par.software_stack] = timing
            t = _layer_compute_s(self.model, par, moe, *timing)
            self.times[key] = t
        return t


def _layer_compute_s(model: TransformerSpec, par: Parallelism, moe: bool, device: Device,
                     eff: ComputeEfficiency) -> float:
    dtype = par.precision.compute_dtype
    if eff.kind == "roofline":
        ops = transformer_layer_operators(model, par, moe)
        return sum(operator_time_s(op, device, dtype, eff.value)
                   for pass_ops in ops.passes() for op in pass_ops)
    c = layer_counts(model, moe, capacity_factor=par.capacity_factor)
    tokens = par.micro_batch_size * model.seq_len / par.cp
    lin = c.linear_flops_per_token * tokens / par.tp
    att = c.attention_flops_per_token * tokens / par.tp
    ig = lin + 2.0 * att + (lin + att if par.recompute == "full" else
                            att if par.recompute == "selective" else 0.0)
    return sum(compute_time_s(x, device, dtype, eff) for x in (lin + att, ig, lin))


def compute_lower_bound_s(model: TransformerSpec, par: Parallelism, cache: LayerTimeCache) -> float:
    """A lower bound on the step time of ``par`` at any bandwidth: the transformer layers'
    compute on the busiest pipeline stage, with the bubble.

    Notes
    -----
    The step charges the slowest stage ``r`` for ``m`` micro-batches plus the bubble ``sum_{s
    != r} c_s / v``, with ``c_s = L_s + e_s`` (``L_s`` its layers' compute, ``e_s >= 0``) and
    an optimizer step and communication ``>= 0``; since ``c_r >= max_s L_s`` and ``sum_{s != r}
    c_s >= sum_s L_s - max_s L_s``, ``T(B) >= m max_s L_s + (sum_s L_s - max_s L_s) / v``. The
    test suite checks it against generated workloads.

    Examples
    --------
    >>> from libra_opt.io.presets import load_device, load_model
    >>> m, d = load_model("llama3_8b"), load_device("h100_sxm")
    >>> cache = LayerTimeCache(m, d, ComputeEfficiency("roofline", d.default_efficiency))
    >>> par = Parallelism(tp=8, pp=2, dp=2, global_batch_size=16)
    >>> compute_lower_bound_s(m, par, cache) > 0
    True
    """
    t_dense = cache.layer_s(par, moe=False)
    t_moe = cache.layer_s(par, moe=True) if model.moe is not None else 0.0
    loads = [s.n_dense * t_dense + s.n_moe * t_moe for s in cache.plan(par.pp, par.interleave)]
    busiest = max(loads)
    return busiest * (par.micro_batches
                      + pipeline_bubble_passes(loads, loads.index(busiest), par.interleave))
