"""Saved answers: a :class:`~libra_opt.optimize.solution.Solution` to and from a JSON file.

The file is :meth:`Solution.to_json <libra_opt.optimize.solution.Solution.to_json>`'s
document with metadata (scenario name, spec hash, library version, date); the reading and
writing are :mod:`libra_opt.io`'s. Loading re-evaluates the design with the numpy evaluator
against the scenario (the one given, or the file or example it was loaded from), so a file
paired with another scenario is refused.
"""

from __future__ import annotations

import os
from pathlib import Path

from libra_opt.errors import InputError
from libra_opt.io.output import write_text_atomic
from libra_opt.io.results import library_version, read_json_document, spec_hash
from libra_opt.io.scenario_file import load_scenario
from libra_opt.optimize.solution import Solution
from libra_opt.scenario.scenario import Scenario

__all__ = ["save_solution", "load_solution"]


def save_solution(solution: Solution, path: str | os.PathLike[str]) -> Path:
    """Write ``solution`` as JSON to ``path`` (atomically), with its metadata.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from libra_opt.optimize.problem import solve
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = save_solution(solve(toy_scenario()), pathlib.Path(d) / "toy.json")
    ...     load_solution(p, toy_scenario()).bw_gbps.round(3).tolist()
    [200.0, 100.0]
    """
    from datetime import UTC, datetime

    text = solution.to_json(
        spec_hash=spec_hash(solution.scenario), library_version=library_version(),
        created_utc=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return write_text_atomic(path, text)


def load_solution(path: str | os.PathLike[str], scenario: Scenario | str | None = None
                  ) -> Solution:
    """The solution saved in ``path``, for ``scenario`` (default: the scenario file or
    example the document names).

    Raises
    ------
    InputError
        The file is not a saved solution, names no loadable scenario, or does not match the
        scenario (:meth:`Solution.from_json
        <libra_opt.optimize.solution.Solution.from_json>`).
    """
    doc = read_json_document(path)
    if scenario is None:
        source = doc.get("scenario_source")
        if not source:
            raise InputError("the solution names no scenario file: pass the scenario",
                             source=str(path), field="scenario_source")
        scenario = source
    scen = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    try:
        return Solution.from_json(doc, scen)
    except InputError as exc:
        raise InputError(exc.message, source=str(path), field=exc.field) from None
