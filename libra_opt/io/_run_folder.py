"""One-shot run folders (``report --out``, ``search --out``) and the lock every results
folder is held by while a run writes into it.

A run holds its folder (an exclusive ``flock`` of the directory) from opening it until its
last file is written: a second run into the folder is refused meanwhile, and only a run
holding the lock removes the scratch a stopped run left there. A file system that cannot
lock is said in a warning, and the run goes on unlocked.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError
from libra_opt.io._results_files import (
    MANIFEST,
    RUN_FILES,
    atomic_text,
    flag_option,
    folder_error,
    load_manifest,
    utc_now,
)
from libra_opt.io.output import confined_path, prepare_output_dir

logger = logging.getLogger(__name__)

def check_run_folder(directory: str | os.PathLike[str], names: Sequence[str], *,
                     overwrite: bool = False, flag: str | None = "--out") -> Path:
    """Check, before any work and without creating anything, a folder a one-shot run
    (:func:`write_run_folder`) will write ``names`` and its manifest into: every path
    (:func:`~libra_opt.io.output.prepare_output_dir`), and an existing folder empty unless
    ``overwrite``.

    Raises
    ------
    InputError
        ``field=flag``, saying what is wrong and what to do instead.
    """
    prepare_output_dir(directory, (*names, MANIFEST), flag, create=False)
    path = Path(directory)
    entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if entries and not overwrite:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise folder_error(f"{str(directory)!r} is not empty ({shown}): give "
                   f"{flag_option('overwrite', flag)} to replace its run, or another folder", flag)
    if entries:
        refuse_held(path, flag)
    return path


def write_run_folder(directory: str | os.PathLike[str],
                     writers: Mapping[str, Callable[[Path], object]],
                     metadata: Mapping[str, Any], *, overwrite: bool = False,
                     flag: str | None = "--out") -> list[Path]:
    """Write a one-shot run's files into ``directory`` together, with ``manifest.json``.

    Each ``writers[name](path)`` writes one file into a hidden staging folder inside
    ``directory``; ``metadata`` (:func:`~libra_opt.io.results.results_metadata`), with ``files`` (the names
    written) and ``complete: true``, becomes ``manifest.json``. Only when every file is
    written, and after the earlier run's files are removed (``overwrite``: the names of
    :data:`~libra_opt.io._results_files.RUN_FILES` and of the old manifest's ``files``), are they moved into place
    (renames). An error or an interrupt before that leaves ``directory`` as it was (a
    folder this call created is removed again).

    Returns
    -------
    list of Path
        The files written, ``manifest.json`` last.

    Raises
    ------
    InputError
        ``field=flag``: the folder is not empty and ``overwrite`` is false, or a file cannot
        be written or removed.
    """
    from libra_opt.io.output import staged_outputs

    path = check_run_folder(directory, list(writers), overwrite=overwrite, flag=flag)
    names = [*writers, MANIFEST]
    existed = path.is_dir()
    try:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise folder_error(f"cannot create {str(path)!r}: {exc.strerror or exc}", flag) from None
        # held while staging and moving in: a run still writing into the folder (a sweep
        # streaming its points) is never overwritten, and no other run takes the staging
        # folder for a stopped run's
        with hold_results_folder(path, flag), staged_outputs(path, names, flag=flag) as staged:
            for name, write in writers.items():
                write(staged[name])
            manifest = {**dict(metadata), "complete": True, "files": list(writers)}
            staged[MANIFEST].write_text(json.dumps(manifest, indent=2, default=str) + "\n",
                                        encoding="utf-8")
            if overwrite:
                remove_run_files(path, set(names), flag)
    except BaseException:
        if not existed:
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return [path / n for n in names]


def remove_run_files(path: Path, keep: set[str], flag: str | None) -> None:
    """Remove the earlier run's files from ``path`` (those ``keep`` names are replaced by
    the renames that follow)."""
    old: dict[str, Any] = {}
    if (path / MANIFEST).is_file():
        with contextlib.suppress(InputError):
            old = load_manifest(path / MANIFEST, flag)
    names = set(RUN_FILES) | {str(n) for n in old.get("files") or ()}
    for name in sorted(names - keep):
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            continue
        target = path / name  # a symlink is removed itself, never followed
        if target.is_symlink() or target.is_file():
            try:
                target.unlink()
            except OSError as exc:
                raise folder_error(f"cannot remove {str(target)!r}: {exc.strerror}", flag) from None


def flock_folder(directory: str | os.PathLike[str], busy: str,
                  flag: str | None) -> int | None:
    """An fd of ``directory`` holding its exclusive ``flock``, or ``None`` where the file
    system cannot lock (not POSIX, or ``flock`` fails for another reason than a holder:
    some network file systems; a warning is logged and the run goes on unlocked).

    Raises
    ------
    InputError
        ``field=flag`` with ``busy``, when the lock is held: by another run, or by an open
        results stream of this process (``flock`` locks of two descriptors conflict even in
        one process); or when the folder cannot be opened.
    """
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        return None
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError as exc:
        raise folder_error(f"cannot open {str(directory)!r}: {exc.strerror or exc}", flag) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise folder_error(busy, flag) from None
        logger.warning("cannot lock %s (%s): going on without a lock, so another run into "
                       "it is not refused meanwhile", directory, exc.strerror or exc)
        return None
    return fd


def busy_message(directory: Any) -> str:
    return (f"another run is writing into {str(directory)!r} (or an open results stream of "
            "this process holds it): wait for it, stop it or close() it first")


def refuse_held(path: Path, flag: str | None) -> None:
    """Refuse, before any work, a folder a run is writing into (its lock taken and released
    at once; the run's own writing takes it again)."""
    with hold_results_folder(path, flag):
        pass


@contextlib.contextmanager
def hold_results_folder(directory: str | os.PathLike[str],
                        flag: str | None = "--out") -> Iterator[bool]:
    """Hold ``directory``'s lock (the ``flock`` :func:`~libra_opt.io.results.open_results` takes) for the block,
    so another run into the folder is refused meanwhile; yields whether the lock is held
    (``False`` where the file system cannot lock: :func:`flock_folder`).

    Raises
    ------
    InputError
        ``field=flag``, when another run holds the folder.
    """
    fd = flock_folder(directory, busy_message(directory), flag)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


def record_run_files(directory: str | os.PathLike[str], names: Sequence[str],
                     flag: str | None = "--out") -> list[str]:
    """List in ``directory``'s manifest, as its ``files``, those of ``names`` that are files
    there now (in that order; ``updated_utc`` refreshed when the list changes); the list.

    Raises
    ------
    InputError
        ``field=flag``, when the manifest cannot be read or written.
    """
    files = [n for n in names if confined_path(directory, n, flag=flag).is_file()]
    path = confined_path(directory, MANIFEST, flag=flag)
    manifest = load_manifest(path, flag)
    if manifest.get("files") != files:
        manifest["files"] = files
        manifest["updated_utc"] = utc_now()
        try:
            atomic_text(path, json.dumps(manifest, indent=2, default=str) + "\n")
        except OSError as exc:
            raise folder_error(f"cannot write {str(path)!r}: {exc.strerror or exc}", flag) from None
    return files
