"""A set of files written into one directory and nowhere else (a rendered report's files).

Whoever renders (``libra_opt.report``) hands over names and contents; this module checks
every name stays inside the directory, writes the files into a hidden sibling folder and
moves them into place together (:func:`libra_opt.io.output.staged_outputs`), so a failure
half-way (a full disk) leaves the directory as it was.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from libra_opt.errors import option_context
from libra_opt.io.output import check_output_dir, staged_outputs

__all__ = ["write_bundle"]


def write_bundle(out_dir: str | os.PathLike[str], files: Mapping[str, str | bytes]
                 ) -> dict[str, Path]:
    """Write ``files`` (relative name to text or bytes) into ``out_dir``, created if missing.

    Parameters
    ----------
    out_dir : str or path
    files : mapping of str to str or bytes
        Text is written as UTF-8; bytes as they are.

    Returns
    -------
    dict of str to Path
        Each name and the path written, in the order given.

    Raises
    ------
    InputError
        ``field="out_dir"``: ``out_dir`` cannot be a directory, or a name would leave it.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     paths = write_bundle(Path(d) / "r", {"a.md": "# a", "a.png": b"png"})
    ...     [p.name for p in paths.values()], paths["a.png"].read_bytes()
    (['a.md', 'a.png'], b'png')
    """
    with option_context("out_dir"):
        check_output_dir(out_dir)
    with staged_outputs(out_dir, list(files), flag="out_dir") as staged:
        for name, content in files.items():
            if isinstance(content, bytes):
                staged[name].write_bytes(content)
            else:
                staged[name].write_text(content, encoding="utf-8")
    return {name: Path(out_dir) / name for name in files}
