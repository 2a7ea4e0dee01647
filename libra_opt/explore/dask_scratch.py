"""Scratch folders of the local Dask clusters the executors start.

A local cluster's workers keep spill and lock files in
``<tmp>/libra-opt-dask-<host>-<pid>-<random>`` (``<host>``: 8 hex digits of the host name's
SHA-256), locked by the run (an exclusive ``flock``, :func:`libra_opt.io.folder_lock.lock_folder`)
from before it gets that name until it is removed, so a folder whose lock nobody holds was
left by a killed run: every Dask run first removes those of this host (never folders whose
lock cannot be tried, of another host or name, or symbolic links).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator

from libra_opt.io.folder_lock import lock_folder

__all__ = ["SCRATCH_PREFIX", "dask_scratch", "remove_orphaned_scratch", "host_tag"]

logger = logging.getLogger(__name__)

#: Start of a scratch folder's name; the host tag, the process id and a random part follow.
SCRATCH_PREFIX = "libra-opt-dask-"
_NEW_PREFIX = ".libra-opt-dask-new-"   # before it is locked: never looked at by the sweep


def host_tag() -> str:
    """8 hex digits naming this host in scratch folder names.

    Examples
    --------
    >>> len(host_tag()), host_tag() == host_tag()
    (8, True)
    """
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


@contextlib.contextmanager
def dask_scratch() -> Iterator[str]:
    """A scratch folder for a local Dask cluster's workers, locked while it exists and removed
    on exit, after removing those of killed runs (:func:`remove_orphaned_scratch`).
    """
    remove_orphaned_scratch()
    root = tempfile.gettempdir()
    new = tempfile.mkdtemp(prefix=_NEW_PREFIX, dir=root)
    # where the file system cannot lock, no sweep removes the folder either
    fd, _taken = lock_folder(new)
    try:
        path = os.path.join(root, f"{SCRATCH_PREFIX}{host_tag()}-{os.getpid()}-"
                                  f"{os.path.basename(new)[len(_NEW_PREFIX):]}")
        os.rename(new, path)   # the lock stays with the folder
        new = path
        yield path
    finally:
        shutil.rmtree(new, ignore_errors=True)
        os.close(fd)


def remove_orphaned_scratch(root: str | None = None) -> list[str]:
    """Remove the scratch folders of this host under ``root`` (default: the temporary
    directory) whose lock no process holds; return their paths.
    """
    root = root or tempfile.gettempdir()
    mine = f"{SCRATCH_PREFIX}{host_tag()}-"
    removed: list[str] = []
    try:
        with os.scandir(root) as it:
            names = [e.name for e in it if e.name.startswith(mine)]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(root, name)
        try:
            fd, taken = lock_folder(path, follow_symlinks=False)
        except OSError:   # gone, a symbolic link, not a folder, not ours to open
            continue
        try:
            if taken is True:
                shutil.rmtree(path, ignore_errors=True)
                if not os.path.lexists(path):
                    removed.append(path)
        finally:
            os.close(fd)
    if removed:
        logger.info("removed %d Dask scratch folder(s) of runs that were killed", len(removed))
    return removed
