"""Where a sweep's finished points go: the results sink a study streams into, and the
fingerprint of the spec it starts from.

:func:`~libra_opt.explore.sweep.sweep` writes nothing itself: given a sink (``out=``)
it opens it for its study, hands it every finished batch of rows and asks it for the table
at the end. :func:`libra_opt.io.results.results_stream` is the sink of a results folder
(``libra_opt.sweep(..., out=DIR)`` and ``libra-opt sweep --out DIR`` make it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from libra_opt.scenario.fingerprint import fingerprint

if TYPE_CHECKING:
    import pandas as pd

    from libra_opt.explore.overrides import ScenarioBase

__all__ = ["ResultsSink", "spec_fingerprint"]


@runtime_checkable
class ResultsSink(Protocol):
    """What a sweep streams its rows into.

    The sweep calls :meth:`open` once with its study before any point is solved, then
    :meth:`append` per finished batch (in completion order), then :meth:`finish` when every
    point is done, or :meth:`close` when stopped.
    """

    @property
    def location(self) -> str:
        """Where the rows go (a folder), for messages."""
        ...

    def open(self, study: Mapping[str, Any]) -> frozenset[int]:
        """Start (or, resuming, continue) the run of ``study`` (``kind``, ``scenario``,
        ``spec_hash``, ``axes``, ``zip``, ``points``); returns the indices of the points
        already kept, which the sweep does not solve again.

        Raises :class:`~libra_opt.errors.InputError` when the sink holds another study or
        cannot be written."""
        ...

    def append(self, frame: pd.DataFrame) -> None:
        """Keep a finished batch: its rows, with a
        :data:`~libra_opt.options.POINT_COLUMN` (grid index)."""
        ...

    def done_points(self) -> frozenset[int]:
        """The indices of the points kept so far."""
        ...

    def finish(self) -> pd.DataFrame:
        """Close the run and return every point's row in grid order (``point`` first)."""
        ...

    def close(self) -> None:
        """Release the sink: without finishing (a stopped run), or after a :meth:`finish`
        that kept it (a folder whose owner still writes into it). Safe to call twice."""
        ...


def spec_fingerprint(base: ScenarioBase) -> str:
    """SHA-256 of what a sweep starts from: its spec (caps and edits included), or the
    scenario when it was built from objects; the ``spec_hash`` of its results' metadata.

    Examples
    --------
    >>> from libra_opt.explore.overrides import ScenarioBase
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> base = ScenarioBase.of(toy_scenario())
    >>> spec_fingerprint(base) == spec_fingerprint(ScenarioBase.of(toy_scenario()))
    True
    >>> len(spec_fingerprint(base))
    64
    """
    return fingerprint(base.spec if base.spec is not None else base.scenario)
