"""Fabric shapes of the co-design search: the families a scenario's fabric spans.

A shape (:class:`FabricShape`) is the scenario's spec with its fabric edited by dotted path
and compiled (:func:`~libra_opt.scenario.compile.compile_fabric`), so its prices come from
the scenario's cost model: ``fabric.hb_domain`` of a two-level builder (:func:`fabric_shapes`),
or the sizes and topologies of a multi-dimensional fabric's dimensions (:func:`dim_shapes`).
A shape that cannot be built or priced is kept with its reason, never dropped.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from libra_opt.errors import InputError, input_context
from libra_opt.fabric.dims import Fabric
from libra_opt.fabric.topology import Ring, topology_of
from libra_opt.scenario.compile import compile_fabric
from libra_opt.scenario.constraints import parse_constraint
from libra_opt.scenario.spec import API_SOURCE, ScenarioSpec

__all__ = [
    "FabricShape",
    "fabric_shapes",
    "dim_shapes",
    "ordered_factorizations",
    "divisors",
    "require_buildable",
    "shape_reasons",
]


@dataclass(frozen=True)
class FabricShape:
    """One fabric shape: a label, its HB domain size (0 outside a two-level family), the fabric
    or why it cannot be built, and the spec ``edits`` (dotted path, value) that make it.
    """

    label: str
    hb_domain: int
    fabric: Fabric | None
    reason: str = ""
    edits: tuple[tuple[str, Any], ...] = ()


#: Builders whose fabrics form an HB-domain family (two levels: ``hb`` and ``scaleout``).
_TWO_LEVEL_BUILDERS = ("fat_tree", "rail_optimized_fat_tree", "rail_only")


def fabric_shapes(base: Fabric, hb_domains: Sequence[int] | None,
                  spec: ScenarioSpec | None = None) -> tuple[FabricShape, ...]:
    """The fabric shapes of a search: ``base`` alone, or the fabric of each HB size of a
    two-level ``fat_tree`` or ``rail_only`` builder (the spec with ``fabric.hb_domain``
    replaced; a size that does not divide the NPU count is kept with a reason). Sizes without a
    spec, or for a fabric that is not the spec's two-level builder call, are refused.

    Examples
    --------
    >>> import libra_opt as lo
    >>> spec = lo.load_spec("llama3_405b_h100_tco")
    >>> f = lo.compile(spec).fabric
    >>> [(s.label, s.fabric is not None) for s in fabric_shapes(f, (8, 72), spec)]
    [('hb 8', True), ('hb 72', False)]
    """
    if hb_domains is None:
        hb = base.dims[0].size if base.n_dims == 2 else 0
        return (FabricShape("base", hb, base),)
    if spec is None:
        raise InputError("an HB-domain family is rebuilt from the scenario's spec (its "
                         "builder call); this scenario was built from objects",
                         field="search.hb_domains")
    source = spec.source or API_SOURCE
    fs = spec.fabric
    if fs.builder not in _TWO_LEVEL_BUILDERS or fs.members is not None \
            or "hb_domain" not in fs.args:
        raise InputError(
            "an HB-domain family needs a two-level fat_tree or rail_only fabric (dimensions "
            f"hb, scaleout); this one has {', '.join(base.names)}", field="search.hb_domains")
    if compile_fabric(fs, source) != base:
        raise InputError(
            "the fabric differs from what its spec's builder call makes; the HB-domain "
            "family can only rebuild the spec's fabric", field="search.hb_domains")
    out = []
    for h in dict.fromkeys(hb_domains):
        if base.n_npus % h:
            out.append(FabricShape(f"hb {h}", h, None,
                                   f"HB domain {h} does not divide {base.n_npus} NPUs"))
            continue
        try:
            fabric = compile_fabric(spec.replace("fabric.hb_domain", h).fabric, source)
            out.append(FabricShape(f"hb {h}", h, fabric, edits=(("fabric.hb_domain", h),)))
        except InputError as exc:
            out.append(FabricShape(f"hb {h}", h, None, exc.message))
    return tuple(out)


def ordered_factorizations(n: int, k: int, min_factor: int = 2) -> list[tuple[int, ...]]:
    """Every ordered factorization of ``n`` into ``k`` factors ``>= min_factor``, lexicographic
    (``prod_p C(a_p + k - 1, k - 1)`` of them for ``n = prod_p p^{a_p}`` and factors ``>= 1``).

    Examples
    --------
    >>> ordered_factorizations(12, 2)
    [(2, 6), (3, 4), (4, 3), (6, 2)]
    >>> len(ordered_factorizations(4096, 4))  # C(11, 3): 12 twos over 4 non-empty parts
    165
    """
    if k < 1 or n < 1 or min_factor < 1:
        raise InputError(f"cannot factor {n} into {k} factors >= {min_factor}",
                         field="search.dim_sizes")
    return list(_factorizations(n, k, min_factor))


@functools.lru_cache(maxsize=256)
def _factorizations(n: int, k: int, low: int) -> tuple[tuple[int, ...], ...]:
    if k == 1:
        return ((n,),) if n >= low else ()
    return tuple((d, *rest) for d in divisors(n) if d >= low
                 for rest in _factorizations(n // d, k - 1, low))


def _named_dims(spec: ScenarioSpec, base: Fabric) -> dict[str, str]:
    """For each dimension, the first constraint that bandwidth on it would help meet (an
    equality, a ``>=`` with a positive or a ``<=`` with a negative coefficient)."""
    c = spec.constraints
    texts = [(t, f"constraints.linear[{i}]") for i, t in enumerate(c.linear)]
    for key, (lo, hi) in c.bounds.items():
        if lo is not None:
            texts.append((f"bw.{key} >= {float(lo)!r}", f"constraints.bounds.{key}"))
        if hi is not None:
            texts.append((f"bw.{key} <= {float(hi)!r}", f"constraints.bounds.{key}"))
    out: dict[str, str] = {}
    for text, fld in texts:
        with input_context(spec.source or API_SOURCE):
            row = parse_constraint(text, base, field=fld)
        for name, coef in zip(base.names, row.bw_coef, strict=True):
            helps = coef != 0 and (row.sense == "==" or (row.sense == ">=") == (coef > 0))
            if helps and name not in out:
                out[name] = row.label
    return out


def dim_shapes(base: Fabric, spec: ScenarioSpec | None,
               dim_sizes: str | Sequence[Sequence[int]] | None,
               dim_topologies: Sequence[str] | None = None,
               unit_dims: bool = False) -> tuple[FabricShape, ...]:
    """The shapes of a multi-dimensional fabric family (inline ``dims`` or ``multi_dim``):
    sizes x topologies per dimension, each the spec with the sizes and topologies that change
    replaced (a radix or rail scope dropped where a dimension stops being a switch).

    Sizes are :func:`ordered_factorizations` of the NPU count (``'factorizations'``, factors
    ``>= 1`` with ``unit_dims``), the given tuples or the base's; topologies every combination
    of ``dim_topologies`` (default each dimension's own; a dimension of size 1 keeps it, or
    ``ring`` for one needing two NPUs). Kept with a reason: a tuple of the wrong length or
    product, a shape the compiler refuses, one removing a dimension a constraint needs.

    Examples
    --------
    >>> import libra_opt as lo
    >>> spec = lo.load_spec("gpt3_175b_4d")
    >>> f = lo.compile(spec).fabric
    >>> shapes = dim_shapes(f, spec, "factorizations")
    >>> len(shapes), shapes[0].label  # 4,096 = 2^12 over 4 dimensions: C(11, 3) tuples
    (165, '2x2x2x512 R,FC,R,SW')
    >>> shapes[0].edits[:2]
    (('fabric.dims[0].size', 2), ('fabric.dims[1].size', 2))
    >>> [s.label for s in dim_shapes(f, spec, ((8, 8, 2, 32),), ("ring", "switch"))][:3]
    ['8x8x2x32 R,R,R,R', '8x8x2x32 R,R,R,SW', '8x8x2x32 R,R,SW,R']
    """
    field_ = "search.dim_sizes"
    if spec is None:
        raise InputError("a dimension family is rebuilt from the scenario's spec; this "
                         "scenario was built from objects", field=field_)
    source = spec.source or API_SOURCE
    fs = spec.fabric
    inline = fs.dims is not None and fs.members is None
    builder = fs.builder == "multi_dim" and fs.members is None
    if not (inline or builder):
        raise InputError("a dimension family needs a fabric given as inline 'dims' or the "
                         "multi_dim builder (a libra_network file: write its dimensions "
                         "inline)", field=field_)
    if compile_fabric(fs, source) != base:
        raise InputError("the fabric differs from what its spec makes; the dimension family "
                         "can only rebuild the spec's fabric", field=field_)
    n, k = base.n_npus, base.n_dims
    if dim_sizes is None:
        size_list: list[tuple[int, ...]] = [base.sizes]
    elif isinstance(dim_sizes, str):
        size_list = ordered_factorizations(n, k, 1 if unit_dims else 2)
    else:
        size_list = [tuple(int(v) for v in t) for t in dim_sizes]
    named = _named_dims(spec, base)
    own = tuple(d.topology.name for d in base.dims)
    out: list[FabricShape] = []
    for sizes in dict.fromkeys(size_list):
        label0 = "x".join(map(str, sizes))
        if len(sizes) != k or math.prod(sizes) != n:
            out.append(FabricShape(label0, 0, None, f"sizes {label0} are not {k} dimensions "
                                   f"multiplying to {n} NPUs"))
            continue
        gone = [(name, named[name]) for name, s in zip(base.names, sizes, strict=True)
                if s == 1 and name in named]
        choices = [((own[i] if base.dims[i].topology.min_size == 1 else Ring.name),) if s == 1
                   else (tuple(dim_topologies) if dim_topologies is not None else (own[i],))
                   for i, s in enumerate(sizes)]
        for topos in itertools.product(*choices):
            label = f"{label0} {','.join(topology_of(t).abbr for t in topos)}"
            if gone:
                out.append(FabricShape(label, 0, None, "; ".join(
                    f"the shape removes dimension '{name}' (size 1), which constraint "
                    f"'{what}' names: bandwidth there would count without links"
                    for name, what in gone)))
                continue
            edits = _dim_edits(spec, base, sizes, topos)
            try:
                edited = spec
                for path, value in edits:
                    edited = edited.replace(path, value)
                fabric = compile_fabric(edited.fabric, source)
            except InputError as exc:
                out.append(FabricShape(label, 0, None, exc.one_line(), edits))
                continue
            out.append(FabricShape(label, 0, fabric, edits=edits))
    return tuple(out)


def _dim_edits(spec: ScenarioSpec, base: Fabric, sizes: tuple[int, ...],
               topos: tuple[str, ...]) -> tuple[tuple[str, Any], ...]:
    """The spec edits giving ``sizes`` and ``topos`` (only what differs from the base)."""
    fs = spec.fabric
    if fs.dims is None:  # the multi_dim builder
        out: list[tuple[str, Any]] = []
        if tuple(sizes) != base.sizes:
            out.append(("fabric.shape", list(sizes)))
        if tuple(topos) != tuple(d.topology for d in base.dims):
            out.append(("fabric.topologies", list(topos)))
        return tuple(out)
    edits: list[tuple[str, Any]] = []
    for i, (d, s, t) in enumerate(zip(fs.dims, sizes, topos, strict=True)):
        if s != d.size:
            edits.append((f"fabric.dims[{i}].size", s))
        if t != d.topology:
            edits.append((f"fabric.dims[{i}].topology", t))
            if not topology_of(t).switched and d.switch_radix is not None:
                edits.append((f"fabric.dims[{i}].switch_radix", None))
            if not topology_of(t).switched and d.switch_scope != "block":
                edits.append((f"fabric.dims[{i}].switch_scope", "block"))
    return tuple(edits)


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` in increasing order.

    Examples
    --------
    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _split_vectors(degree: int, free: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """Vectors ``k`` with ``k_d | free_d`` and ``prod k_d = degree``, lexicographic."""
    if not free:
        if degree == 1:
            yield ()
        return
    for k in divisors(math.gcd(degree, free[0])):
        for rest in _split_vectors(degree // k, free[1:]):
            yield (k, *rest)


def require_buildable(shapes: Sequence[FabricShape], field: str) -> tuple[FabricShape, ...]:
    """``shapes``, after checking that at least one has a fabric: a family none of whose shapes
    can be built is bad input (an :class:`~libra_opt.errors.InputError` on ``field`` listing
    each shape with its reason), not an infeasible design.

    Examples
    --------
    >>> require_buildable((FabricShape("hb 7", 7, None, "HB domain 7 does not divide 64 "
    ...                                "NPUs"),), "--hb-domain")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: --hb-domain: no fabric shape can be built: hb 7: HB domain 7 does not divide 64 NPUs
    """
    if any(s.fabric is not None for s in shapes):
        return tuple(shapes)
    if not shapes:
        raise InputError("no fabric shape to search", field=field)
    raise InputError("no fabric shape can be built: "
                     + shape_reasons((s.label, s.reason) for s in shapes), field=field)


def shape_reasons(shapes: Iterable[tuple[str, str]]) -> str:
    """``(label, reason)`` pairs of shapes that cannot be searched, as one line: labels grouped by
    reason, at most three named per reason.

    Examples
    --------
    >>> shape_reasons([("hb 72", "HB domain 72 does not divide 16384 NPUs"),
    ...                ("hb 5", "HB domain 5 does not divide 16384 NPUs"), ("hb 8", "")])
    'hb 72: HB domain 72 does not divide 16384 NPUs; hb 5: HB domain 5 does not divide 16384 NPUs; hb 8: cannot be built'
    """
    by_reason: dict[str, list[str]] = {}
    for label, reason in shapes:
        by_reason.setdefault(reason or "cannot be built", []).append(label)
    parts = []
    for reason, labels in by_reason.items():
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        parts.append(f"{shown}: {reason}")
    return "; ".join(parts)
