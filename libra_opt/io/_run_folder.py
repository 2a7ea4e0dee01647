"""One-shot run folders (``report --out``, ``search --out``) and the lock every results
folder is held by while a run writes into it (:mod:`libra_opt.io.folder_lock`): a second run into the folder is refused meanwhile, and only a run holding the lock removes
the scratch a stopped run left there. A file system that cannot lock is said in a warning,
and the run goes on unlocked.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError, option_context
from libra_opt.io._results_files import MANIFEST, RUN_FILES, load_manifest, utc_now
from libra_opt.io.folder_lock import lock_folder
from libra_opt.io.output import (
    confined_path,
    prepare_output_dir,
    staged_outputs,
    write_text_atomic,
)

logger = logging.getLogger(__name__)


def check_run_folder(directory: str | os.PathLike[str], names: Sequence[str], *,
                     overwrite: bool = False) -> Path:
    """Check, before any work and without creating anything, a folder
    :func:`write_run_folder` will write ``names`` and its manifest into: every path
    (:func:`~libra_opt.io.output.prepare_output_dir`), and an existing folder empty unless
    ``overwrite``; an :class:`InputError` saying what to do instead."""
    prepare_output_dir(directory, (*names, MANIFEST), create=False)
    path = Path(directory)
    entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if entries and not overwrite:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise InputError(f"{str(directory)!r} is not empty ({shown}): give overwrite=True to "
                         "replace its run, or another folder")
    if entries:
        refuse_held(path)
    return path


def write_run_folder(directory: str | os.PathLike[str],
                     writers: Mapping[str, Callable[[Path], object] | str | bytes],
                     metadata: Mapping[str, Any], *, overwrite: bool = False) -> list[Path]:
    """Write a one-shot run's files into ``directory`` together, with ``manifest.json``;
    the paths written, the manifest last.

    Each ``writers[name](path)`` writes one file into a hidden staging folder inside
    ``directory`` (text is written as UTF-8, bytes as they are); ``metadata`` (:func:`~libra_opt.io.results.results_metadata`), with
    ``files`` (the names written) and ``complete: true``, becomes ``manifest.json``. Only
    when every file is written, and after the earlier run's files are removed
    (``overwrite``: :data:`~libra_opt.io._results_files.RUN_FILES` and the old manifest's
    ``files``), are they moved into place. An error or an interrupt before that leaves
    ``directory`` as it was (a folder this call created is removed again).

    Raises
    ------
    InputError
        The folder is not empty and ``overwrite`` is false, another run holds it, or a
        file cannot be written or removed.
    """
    path = check_run_folder(directory, list(writers), overwrite=overwrite)
    names = [*writers, MANIFEST]
    existed = path.is_dir()
    try:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create {str(path)!r}: {exc.strerror or exc}") from None
        # held while staging and moving in: a run still writing into the folder (a sweep
        # streaming its points) is never overwritten, and no other run takes the staging
        # folder for a stopped run's
        with hold_results_folder(path), staged_outputs(path, names) as staged:
            for name, write in writers.items():
                if isinstance(write, bytes):
                    staged[name].write_bytes(write)
                elif isinstance(write, str):
                    staged[name].write_text(write, encoding="utf-8")
                else:
                    write(staged[name])
            manifest = {**dict(metadata), "complete": True, "files": list(writers)}
            staged[MANIFEST].write_text(json.dumps(manifest, indent=2, default=str) + "\n",
                                        encoding="utf-8")
            if overwrite:
                remove_run_files(path, set(names))
    except BaseException:
        if not existed:
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return [path / n for n in names]


def remove_run_files(path: Path, keep: set[str]) -> None:
    """Remove the earlier run's files from ``path`` (those ``keep`` names are replaced by
    the renames that follow)."""
    old: dict[str, Any] = {}
    if (path / MANIFEST).is_file():
        with contextlib.suppress(InputError):
            old = load_manifest(path / MANIFEST)
    names = set(RUN_FILES) | {str(n) for n in old.get("files") or ()}
    for name in sorted(names - keep):
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            continue
        target = path / name  # a symlink is removed itself, never followed
        if target.is_symlink() or target.is_file():
            try:
                target.unlink()
            except OSError as exc:
                raise InputError(f"cannot remove {str(target)!r}: {exc.strerror}") from None


def flock_folder(directory: str | os.PathLike[str]) -> int | None:
    """An fd of ``directory`` holding its lock, or ``None`` where the file system cannot
    lock (a warning is logged); an :class:`InputError` when another run (or an open
    results stream of this process) holds it, or the folder cannot be opened."""
    try:
        fd, taken = lock_folder(directory)
    except OSError as exc:
        raise InputError(f"cannot open {str(directory)!r}: {exc.strerror or exc}") from None
    if taken:
        return fd
    os.close(fd)
    if taken is False:
        raise InputError(f"another run is writing into {str(directory)!r} (or an open results "
                         "stream of this process holds it): wait for it, stop it or close() "
                         "it first")
    logger.warning("cannot lock %s: going on without a lock, so another run into it is not "
                   "refused meanwhile", directory)
    return None


def refuse_held(path: Path) -> None:
    """Refuse, before any work, a folder a run is writing into (its lock taken and released
    at once)."""
    with hold_results_folder(path):
        pass


@contextlib.contextmanager
def hold_results_folder(directory: str | os.PathLike[str]) -> Iterator[bool]:
    """Hold ``directory``'s lock for the block (:func:`flock_folder`); yields whether it is
    held (``False`` where the file system cannot lock)."""
    fd = flock_folder(directory)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def record_run_files(directory: str | os.PathLike[str], names: Sequence[str],
                     flag: str | None = "--out") -> list[str]:
    """List in ``directory``'s manifest, as its ``files``, those of ``names`` that are files
    there now (in that order; ``updated_utc`` refreshed when the list changes); the list.
    An :class:`InputError` blaming ``flag`` when the manifest cannot be read or written."""
    with option_context(flag):
        files = [n for n in names if confined_path(directory, n).is_file()]
        path = confined_path(directory, MANIFEST)
        manifest = load_manifest(path)
        if manifest.get("files") != files:
            manifest["files"] = files
            manifest["updated_utc"] = utc_now()
            write_text_atomic(path, json.dumps(manifest, indent=2, default=str) + "\n")
    return files
