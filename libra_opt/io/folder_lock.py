"""The folder lock: an exclusive ``flock`` of a folder's own descriptor, never waited for
(results folders and a local Dask cluster's scratch folder). The kernel drops it when the
process ends, however it ends; locking the folder itself writes no lock file, which is why
a lock-file library such as ``filelock`` is not used.
"""

from __future__ import annotations

import errno
import os

__all__ = ["lock_folder"]


def lock_folder(path: str | os.PathLike[str], *, follow_symlinks: bool = True
                ) -> tuple[int, bool | None]:
    """Open the folder ``path`` (an ``OSError`` if it cannot be, or is a symbolic link
    without ``follow_symlinks``) and try its exclusive lock without waiting: its descriptor
    (closing it releases the lock) and ``True``, taken; ``False``, another descriptor holds
    it (even in this process); ``None``, the file system cannot lock.

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
