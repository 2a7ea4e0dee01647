"""Shared fixtures (helpers in :mod:`tests.fixtures`); plots draw off-screen in tests."""

import os

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

from tests.fixtures import scenario_2d  # noqa: E402


@pytest.fixture
def scen2d():
    return scenario_2d
