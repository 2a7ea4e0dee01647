"""Co-design search: parallelization, placement, fabric shape and per-dimension bandwidth,
chosen together, exactly.

Start here: :func:`search` (a compiled scenario in, a :class:`SearchResult` out) and
:class:`SearchSpace`. The modules, in the order a candidate meets them: ``base`` (the base
from a scenario's spec), ``space`` and ``fabrics`` (the candidates), ``bounds`` (lower bounds
that keep the exact best), ``candidates`` and ``spec`` (a candidate's scenario and spec),
``engine`` (enumeration, pruning, executors) and ``results`` (the table).
"""

from libra_opt.explore.search.base import search, search_base
from libra_opt.explore.search.candidates import (
    Candidate,
    ModelEntry,
    SearchBase,
    candidate_scenario,
    conventional_parallelism,
    generate,
)
from libra_opt.explore.search.engine import PRUNE_RTOL, SearchResult, codesign_gains, run_search
from libra_opt.explore.search.fabrics import FabricShape
from libra_opt.explore.search.results import KNOB_COLUMNS
from libra_opt.explore.search.space import SearchSpace
from libra_opt.explore.search.spec import candidate_spec

__all__ = [
    "search",
    "search_base",
    "SearchSpace",
    "SearchResult",
    "SearchBase",
    "ModelEntry",
    "Candidate",
    "FabricShape",
    "run_search",
    "codesign_gains",
    "candidate_scenario",
    "candidate_spec",
    "conventional_parallelism",
    "generate",
    "KNOB_COLUMNS",
    "PRUNE_RTOL",
]
