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

from pathlib import Path

from libra_opt.io.example_files import example_names, example_path
from libra_opt.io.scenario_file import load_scenario
from libra_opt.scenario.examples import toy_scenario
from libra_opt.scenario.scenario import Scenario

__all__ = ["names", "path", "load", "toy_scenario"]


def names() -> tuple[str, ...]:
    """Names of the shipped example scenarios."""
    return example_names()


def path(name: str) -> Path:
    """Path of the shipped example scenario ``name`` (to copy and edit it)."""
    return example_path(name)


def load(name: str) -> Scenario:
    """Load the shipped example scenario ``name`` (see :func:`names`)."""
    return load_scenario(example_path(name))
