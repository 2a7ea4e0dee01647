"""The example scenarios shipped with the package, loadable by name from any directory.

Examples
--------
>>> "gpt3_175b_4d" in names()
True
>>> load("gpt3_175b_4d").fabric.n_npus
4096

The small in-code scenario of the doctests is :func:`toy_scenario`.
"""

from __future__ import annotations

from libra_opt.io.example_files import example_names, example_path
from libra_opt.io.scenario_file import load_scenario
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.scenario import Scenario

__all__ = ["names", "path", "load", "toy_scenario"]


#: Names of the shipped example scenarios.
names = example_names
#: Path of a shipped example scenario (to copy and edit it).
path = example_path


def load(name: str) -> Scenario:
    """Load the shipped example scenario ``name`` (see :func:`names`)."""
    return load_scenario(example_path(name))
