"""Co-design search: parallelization, placement, fabric shape and per-dimension bandwidth,
chosen together, exactly.

Start here: :func:`search` (a compiled scenario in, a :class:`SearchResult` out) and
:class:`SearchSpace` (which knobs, placements and fabric shapes are searched). The package's
modules, in the order a candidate meets them:

* :mod:`~libra_opt.explore.search.base` -- the search's base (model, device, fabric family,
  prices, constraints) taken from a scenario's spec: :func:`search_base`, :func:`search`;
* :mod:`~libra_opt.explore.search.space` -- the candidates: parallelizations that the model
  and the NPU count allow, placements of their groups on the fabric's dimensions, and the
  exact memory check; :mod:`~libra_opt.explore.search.fabrics` -- the fabric shapes of a
  family (HB-domain sizes, dimension sizes and topologies);
* :mod:`~libra_opt.explore.search.bounds` -- lower bounds on a candidate's objective that
  never exceed its optimum (pruning keeps the exact best);
* :mod:`~libra_opt.explore.search.candidates` -- a candidate's scenario, solved exactly;
  :mod:`~libra_opt.explore.search.spec` -- the same candidate as a spec edit;
* :mod:`~libra_opt.explore.search.engine` -- the enumeration, the pruning and the executors:
  :func:`run_search`, :class:`SearchResult`, :func:`codesign_gains`.
"""

from libra_opt.explore.search.base import search, search_base
from libra_opt.explore.search.engine import (
    KNOB_COLUMNS,
    PRUNE_RTOL,
    Candidate,
    ModelEntry,
    SearchBase,
    SearchResult,
    candidate_scenario,
    codesign_gains,
    conventional_parallelism,
    generate,
    run_search,
)
from libra_opt.explore.search.space import FabricShape, SearchSpace
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
