"""The search's result table (:func:`search_table`), its designs (:func:`designs`), error bands
(:func:`trust_columns`) and counts (:func:`search_stats`).

Rows that are one design (same fabric, and step time, cost and bandwidths the same up to
solver round-off) but differ in a knob that changes only memory are ranked once: the one
needing least memory per NPU keeps the ``rank`` and lists the others in ``alternatives``,
which name it in ``alternative_of``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from libra_opt.explore.search.spec import SEARCH_KNOBS
from libra_opt.explore.trust import search_columns
from libra_opt.generators.error_model import ErrorModel
from libra_opt.scenario.accuracy import same

if TYPE_CHECKING:
    import pandas as pd

    from libra_opt.explore.search.candidates import ModelEntry

__all__ = ["KNOB_COLUMNS", "search_table", "designs", "trust_columns", "search_stats"]

#: Knob columns of the result table, in order.
KNOB_COLUMNS = ("fabric", "hb_domain", *SEARCH_KNOBS[:-2], "placement")
_FLOATS = ("lower_bound", "objective", "step_time_s", "tokens_per_s", "mfu",
           "memory_per_npu_gb", "network_cost_usd", "network_power_w", "run_cost_usd",
           "run_cost_usd_per_mtoken", "solve_s")


def search_table(rows: list[dict], dim_names: Iterable[str], rank_key: str = "objective"
                 ) -> pd.DataFrame:
    """The rows of a search, in enumeration order, ranked by ``rank_key`` (``objective``, or
    ``effective_objective`` when ranked with failures; ``rank`` 1 = best; NA for rows not
    solved)."""
    import pandas as pd

    bw_cols = [f"bw_{n}_gbps" for n in dim_names]
    cols = ["index", *KNOB_COLUMNS, "n_candidates", "status", "reason", *_FLOATS[:6], *bw_cols,
            *_FLOATS[6:]]  # the bandwidths after the memory
    extra = sorted({k for r in rows for k in r} - set(cols))
    df = pd.DataFrame.from_records(rows, columns=[*cols, *extra])
    df = df.sort_values("index", kind="stable").reset_index(drop=True)
    for c in (*_FLOATS, *bw_cols, *(c for c in ("goodput", "effective_objective") if c in df)):
        df[c] = df[c].astype(float)
    df["hb_domain"] = df["hb_domain"].astype("Int64")
    solved = df["status"] == "optimal"
    order = df[solved].sort_values([rank_key, "index"], kind="stable").index
    df["rank"] = pd.Series(pd.NA, index=df.index, dtype="Int64")
    df.loc[order, "rank"] = np.arange(1, len(order) + 1)
    return df


def _one_design(a: Any, b: Any, bw_cols: list[str], key: str) -> bool:
    return bool(a.fabric == b.fabric and same(getattr(a, key), getattr(b, key))
                and same(a.objective, b.objective)
                and same(a.step_time_s, b.step_time_s)
                and same(a.network_cost_usd, b.network_cost_usd)
                and same([getattr(a, c) for c in bw_cols], [getattr(b, c) for c in bw_cols]))


def _differs(design: Any, alt: Any) -> str:
    knobs = [f"{k.replace('_', ' ')} {getattr(alt, k)}" for k in KNOB_COLUMNS[1:]
             if getattr(alt, k) != getattr(design, k)]
    return f"{', '.join(knobs) or 'the same knobs'} ({alt.memory_per_npu_gb:.1f} GB per NPU)"


def designs(table: pd.DataFrame, rank_key: str = "objective") -> pd.DataFrame:
    """``table`` with the rows of one design ranked once (module notes): ``rank`` counts designs,
    ``alternative_of`` and ``alternatives`` are added.

    Examples
    --------
    Two ZeRO stages with the same times and bandwidths, and a slower layout:

    >>> import pandas as pd
    >>> t = pd.DataFrame({"index": ["0", "1", "2"], "fabric": ["base"] * 3,
    ...     "hb_domain": [8] * 3, "tp": [4, 4, 8], "cp": [1] * 3, "pp": [4] * 3,
    ...     "dp": [8, 8, 4], "ep": [1] * 3, "micro_batch_size": [1] * 3, "interleave": [1] * 3,
    ...     "recompute": ["full"] * 3, "sequence_parallel": [True] * 3, "zero": [1, 2, 1],
    ...     "placement": ["p"] * 3, "status": ["optimal"] * 3, "objective": [1.0, 1.0, 1.2],
    ...     "step_time_s": [1.0, 1.0, 1.2], "network_cost_usd": [5.0, 5.0, 5.0],
    ...     "memory_per_npu_gb": [70.1, 59.3, 40.0], "bw_hb_gbps": [600.0] * 3,
    ...     "rank": pd.array([1, 2, 3], dtype="Int64")})
    >>> d = designs(t)
    >>> d["rank"].tolist(), d["alternative_of"].tolist(), d["alternatives"].tolist()
    ([<NA>, 1, 2], [1, <NA>, <NA>], ['', 'zero 1 (70.1 GB per NPU)', ''])
    """
    import pandas as pd

    bw_cols = [c for c in table.columns if str(c).startswith("bw_") and str(c).endswith("_gbps")]
    ranked = table[table["rank"].notna()].sort_values("rank")
    groups: list[list[Any]] = []
    for r in ranked.itertuples():
        home = None
        for g in reversed(groups):
            if not same(getattr(g[0], rank_key), getattr(r, rank_key)):
                break  # ranked by the key: no earlier group can match
            if _one_design(g[0], r, bw_cols, rank_key):
                home = g
                break
        if home is None:
            groups.append([r])
        else:
            home.append(r)
    rank = pd.Series(pd.NA, index=table.index, dtype="Int64")
    alt_of = pd.Series(pd.NA, index=table.index, dtype="Int64")
    alts = pd.Series("", index=table.index, dtype=object)
    for i, g in enumerate(groups, start=1):
        head = min(g, key=lambda r: (r.memory_per_npu_gb, r.rank))
        rank[head.Index] = i
        others = [r for r in g if r is not head]
        alts[head.Index] = "; ".join(_differs(head, r) for r in others)
        for r in others:
            alt_of[r.Index] = i
    return table.assign(rank=rank, alternative_of=alt_of, alternatives=alts)


def trust_columns(model: ErrorModel, table: pd.DataFrame, entry: ModelEntry,
                  rank_key: str = "objective", outside: tuple[str, ...] = ()
                  ) -> dict[str, list]:
    """The error-band columns of a search table for its workload ``entry``
    (:func:`~libra_opt.explore.trust.search_columns`).
    """
    stack = entry.parallelism.software_stack or entry.device.calibration_stack
    return search_columns(model, table, entry.device.key, stack, entry.model.seq_len,
                          entry.parallelism.n_npus, rank_key, outside)


def search_stats(table: pd.DataFrame, wall_s: float) -> dict[str, float]:
    """Candidate counts by status, wall time and solver time of a search table."""
    n = table.groupby("status")["n_candidates"].sum()
    solved = float(n.get("optimal", 0))
    solve_s = float(table["solve_s"].sum())
    return {
        "enumerated": float(table["n_candidates"].sum()),
        "memory": float(n.get("memory", 0)),
        "pruned": float(n.get("pruned", 0)),
        "solved": solved,
        "infeasible": float(n.get("infeasible", 0) + n.get("unbounded", 0)),
        "errors": float(n.get("error", 0)),
        "wall_s": wall_s,
        "solve_s": solve_s,
        "solves_per_solver_s": solved / solve_s if solve_s > 0 else math.nan,
    }
