"""A co-design search candidate as a spec edit (:func:`candidate_spec`). The search builds
a candidate's scenario directly (:func:`~libra_opt.explore.search.candidate_scenario`, about
0.15 ms against 9 ms for a compile on Llama 3 405B); the tests check that compiling its spec
gives the same scenario.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from libra_opt.generators.mapping import AXES, Placement
from libra_opt.generators.parallelism import Parallelism
from libra_opt.scenario.spec import ScenarioSpec

__all__ = ["SEARCH_KNOBS", "placement_mapping", "candidate_spec"]

#: Parallelism keys a candidate sets: the search's knobs, and the overlap options it drops
#: where a candidate cannot have them.
SEARCH_KNOBS = ("tp", "cp", "pp", "dp", "ep", "micro_batch_size", "interleave", "recompute",
                "sequence_parallel", "zero", "tp_comm_overlap", "dp_comm_overlap")


def placement_mapping(placement: Placement) -> dict[str, dict[str, int]]:
    """A placement as a scenario's ``mapping`` (``{axis: {dim: count}}``; ``dp`` is ``ep x edp``),
    which :func:`~libra_opt.generators.mapping.place_groups` turns back into ``placement``.

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim
    >>> from libra_opt.generators.mapping import place_groups
    >>> f = multi_dim((4, 4), ("ring", "switch"))
    >>> pl = place_groups(f, {"tp": 2, "edp": 8})
    >>> m = placement_mapping(pl)
    >>> m["tp"], m["dp"]
    ({'chiplet': 2, 'package': 1}, {'chiplet': 2, 'package': 4})
    >>> place_groups(f, {"tp": 2, "edp": 8}, m) == pl
    True
    """
    spans = {ax: tuple(placement.spans[ax]) for ax in AXES}
    dp = tuple(a * b for a, b in zip(spans["ep"], spans["edp"], strict=True))
    names = placement.dim_names
    return {key: dict(zip(names, span, strict=True))
            for key, span in (("tp", spans["tp"]), ("cp", spans["cp"]), ("ep", spans["ep"]),
                              ("dp", dp), ("pp", spans["pp"]))}


def candidate_spec(spec: ScenarioSpec, workload: str, base: Parallelism, par: Parallelism,
                   placement: Placement, hb_domain: int | None = None,
                   fabric_edits: Sequence[tuple[str, Any]] = ()) -> ScenarioSpec:
    """The spec of one candidate: workload ``workload``'s knobs set to ``par``'s (those that
    differ from ``base`` or that ``spec`` writes), its ``mapping`` to ``placement``, then
    ``fabric.hb_domain`` and the shape's ``fabric_edits``.

    Examples
    --------
    >>> import libra_opt as lo
    >>> from libra_opt.generators.mapping import place_groups
    >>> from libra_opt.generators.parallelism import parallelism_from_dict
    >>> from libra_opt.scenario.compile import compile
    >>> from libra_opt.scenario.spec import thaw
    >>> spec = lo.load_spec("gpt3_175b_a100_cluster")
    >>> p0 = parallelism_from_dict(thaw(spec.workloads[0].parallelism))
    >>> par = p0.model_copy(update={"pp": 8, "dp": 16})
    >>> f = lo.compile(spec).fabric
    >>> cand = candidate_spec(spec, spec.workloads[0].name, p0, par,
    ...                       place_groups(f, par.degrees()))
    >>> cand.workloads[0].parallelism["pp"], compile(cand).workloads[0].groups["pp"]
    (8, (1, 8))
    """
    prefix = f"workloads.{workload}"
    written = next((w.parallelism or {} for w in spec.workloads if w.name == workload), {})
    for key in SEARCH_KNOBS:
        value = getattr(par, key)
        if value != getattr(base, key) or key in written:
            spec = spec.replace(f"{prefix}.parallelism.{key}", value)
    spec = spec.replace(f"{prefix}.mapping", placement_mapping(placement))
    if hb_domain and spec.fabric.builder is not None \
            and spec.fabric.args.get("hb_domain") not in (None, hb_domain):
        spec = spec.replace("fabric.hb_domain", hb_domain)
    for path, value in fabric_edits:
        if path != "fabric.hb_domain":
            spec = spec.replace(path, value)
    return spec
