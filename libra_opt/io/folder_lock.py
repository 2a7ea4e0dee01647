"""The folder lock: an exclusive ``flock`` of a folder's own descriptor, never waited for.

One primitive for every folder a run must own while it works in it: a results folder
(:mod:`libra_opt.io.results`) and a local Dask cluster's scratch folder
(:mod:`libra_opt.explore.dask_scratch`). The kernel drops the lock when the descriptor is
closed or the process ends, however it ends (SIGKILL included), and it stays with the folder
through a rename. Locking the folder itself puts no lock file in it nor beside it (nothing is
written outside the folder the user named), which is why a lock-file library such as
``filelock`` is not used here.
"""

from __future__ import annotations

import errno
import os

__all__ = ["lock_folder"]


def lock_folder(path: str | os.PathLike[str], *, follow_symlinks: bool = True
                ) -> tuple[int, bool | None]:
    """Open the folder ``path`` and try its exclusive lock without waiting.

    Returns the folder's descriptor (holding the lock when taken; closing it releases the
    lock) and whether the lock was taken: ``True``; ``False``, another descriptor holds it
    (two descriptors conflict even in one process); ``None``, the file system cannot lock.
    An ``OSError`` when ``path`` cannot be opened as a folder (or is a symbolic link when
    ``follow_symlinks`` is false).

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> fd, taken = lock_folder(d)
    >>> other, again = lock_folder(d)
    >>> taken, again
    (True, False)
    >>> os.close(other); os.close(fd)
    """
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        import fcntl
    except ImportError:  # not POSIX
        return fd, None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        return fd, (False if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN) else None)
    return fd, True
