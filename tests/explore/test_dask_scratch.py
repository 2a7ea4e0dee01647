"""Scratch folders of local Dask clusters: locked by their run, removed at its end, and the
ones a killed run left behind (SIGKILL leaves no chance to clean up) removed by the next
run -- only those: never a folder whose run still holds it, another host's, a symbolic link
or anything the sweep cannot judge."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import pytest

from libra_opt.explore.dask_scratch import (
    SCRATCH_PREFIX,
    dask_scratch,
    host_tag,
    remove_orphaned_scratch,
)

HOLD = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(60)
"""


def _holder(path):
    """A second process holding ``path``'s flock until killed."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    return proc


def _try_lock(path) -> bool:
    code = ("import fcntl, os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\nexcept OSError:\n"
            "    sys.exit(1)\n")
    return subprocess.run([sys.executable, "-c", code, str(path)]).returncode == 0


def test_only_unlocked_folders_of_this_host_are_removed(tmp_path):
    mine = f"{SCRATCH_PREFIX}{host_tag()}-"
    orphan = tmp_path / f"{mine}123-abc"
    (orphan / "dask-scratch-space" / "worker-1").mkdir(parents=True)
    (orphan / "dask-scratch-space" / "global.lock").write_text("")
    live = tmp_path / f"{mine}456-def"
    live.mkdir()
    other_host = tmp_path / f"{SCRATCH_PREFIX}{'0' * 8 if host_tag() != '0' * 8 else '1' * 8}-1-x"
    other_host.mkdir()
    target = tmp_path / "not-scratch"
    target.mkdir()
    (target / "keep.txt").write_text("keep")
    link = tmp_path / f"{mine}789-link"
    link.symlink_to(target, target_is_directory=True)
    a_file = tmp_path / f"{mine}1-file"
    a_file.write_text("")
    odd = [tmp_path / f"{mine}{name}" for name in ("99999999999999999999-x", "\u00b2-x", "-", "")]
    for d in odd:
        d.mkdir(exist_ok=True)
    holder = _holder(live)
    try:
        removed = remove_orphaned_scratch(str(tmp_path))
        assert sorted(removed) == sorted(str(p) for p in [orphan, *odd])
        assert not orphan.exists()
        assert live.is_dir() and other_host.is_dir() and a_file.is_file()
        assert link.is_symlink() and (target / "keep.txt").read_text() == "keep"
        assert remove_orphaned_scratch(str(tmp_path)) == []
    finally:
        holder.kill()
        holder.wait()
    # its run gone, the live folder is an orphan too
    assert remove_orphaned_scratch(str(tmp_path)) == [str(live)]


def test_a_run_holds_its_folder_and_removes_it(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    orphan = tmp_path / f"{SCRATCH_PREFIX}{host_tag()}-1-abc"
    orphan.mkdir()
    with dask_scratch() as scratch:
        assert os.path.dirname(scratch) == str(tmp_path)
        assert os.path.basename(scratch).startswith(
            f"{SCRATCH_PREFIX}{host_tag()}-{os.getpid()}-")
        assert not orphan.exists()          # the killed run's folder went first
        assert not _try_lock(scratch)       # another process cannot take it ...
        assert remove_orphaned_scratch(str(tmp_path)) == []   # ... nor sweep it away
        with dask_scratch() as second:      # a second run of this process keeps the first
            assert second != scratch and os.path.isdir(scratch)
    assert list(tmp_path.iterdir()) == []


def test_missing_temporary_directory_is_not_an_error(tmp_path):
    assert remove_orphaned_scratch(str(tmp_path / "absent")) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root opens every folder")
def test_folder_that_cannot_be_opened_is_left(tmp_path):
    closed = tmp_path / f"{SCRATCH_PREFIX}{host_tag()}-5-x"
    closed.mkdir(mode=0)
    try:
        assert remove_orphaned_scratch(str(tmp_path)) == []
        assert closed.exists()
    finally:
        closed.chmod(0o700)
