"""Where the shipped example scenarios are: names and paths in ``libra_opt/data/examples``
(installed with the package, so examples load from any directory; loading is in
:mod:`libra_opt.io.examples`).
"""

from __future__ import annotations

import functools
from pathlib import Path

from libra_opt.errors import InputError
from libra_opt.io.files import data_path, packaged_names

__all__ = ["example_names", "example_path", "is_example_name"]


@functools.cache
def example_names() -> tuple[str, ...]:
    """Names of the shipped example scenarios (their file names without ``.yaml``), listed
    once per process.

    Examples
    --------
    >>> "gpt3_175b_4d" in example_names()
    True
    """
    return packaged_names("examples")


def example_path(name: str) -> Path:
    """Path of the example scenario file called ``name``; an :class:`InputError` listing
    the names when there is no such example."""
    if name not in example_names():
        raise InputError(f"no example scenario {name!r}; examples: "
                         f"{', '.join(example_names())} (or give a path to a scenario .yaml "
                         "file)", field="scenario")
    # setuptools installs package data as plain files, so the traversable is a real path
    return Path(str(data_path("examples", f"{name}.yaml")))


def is_example_name(ref: str | Path) -> bool:
    """True when ``ref`` names a shipped example rather than a file path.

    Examples
    --------
    >>> is_example_name("gpt3_175b_4d"), is_example_name("gpt3_175b_4d.yaml")
    (True, False)
    """
    return not isinstance(ref, Path) and str(ref) in example_names()
