"""A results folder is held (``flock``) by the run writing into it: another run's overwrite
is refused while it is held, a stopped run's scratch is removed only under the lock, and a
staging folder removed under a writer is an error, never a silent loss."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from libra_opt.cli.main import main
from libra_opt.errors import InputError
from libra_opt.io.output import STAGE_PREFIX, staged_outputs
from libra_opt.io.results import results_stream, write_run_folder

STUDY = {"kind": "sweep", "scenario": "s", "spec_hash": "h", "axes": {"a": [1, 2]},
         "zip": False, "points": 2}


def _holder(folder):
    """A second process that holds ``folder`` as a streaming sweep does, until killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from libra_opt.io.results import results_stream
        s = results_stream({str(folder)!r})
        s.open({STUDY!r})
        print("held", flush=True)
        time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_report_overwrite_is_refused_while_a_sweep_holds_the_folder(tmp_path, capsys):
    folder = tmp_path / "run"
    holder = _holder(folder)
    try:
        before = sorted(p.name for p in folder.iterdir())
        assert main(["report", "gpt3_175b_a100_cluster", "--out", str(folder), "--overwrite",
                     "--no-search", "--budget-points", "3", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "--out" in err[0] and "another run is writing" in err[0]
        assert sorted(p.name for p in folder.iterdir()) == before   # the sweep's files kept
    finally:
        holder.kill()
        holder.wait()


def test_a_released_folder_can_be_overwritten(tmp_path):
    folder = tmp_path / "run"
    holder = _holder(folder)
    holder.kill()
    holder.wait()   # the kernel releases the lock of a killed process
    files = write_run_folder(folder, {"a.txt": lambda p: p.write_text("x")},
                             {"format": "libra-opt-results"}, overwrite=True)
    assert [f.name for f in files] == ["a.txt", "manifest.json"]


def test_stopped_runs_scratch_is_removed_only_under_the_lock(tmp_path, monkeypatch, caplog):
    folder = tmp_path / "run"
    s = results_stream(folder)
    s.open(STUDY)
    s.close()
    (folder / (STAGE_PREFIX + "dead")).mkdir()   # left by a run that was killed
    # a file system whose flock fails for another reason than a holder (some NFS mounts):
    # the run goes on unlocked and removes nothing another run might own
    import fcntl

    def no_lock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_lock)
    s = results_stream(folder, resume=True)
    with caplog.at_level("WARNING", logger="libra_opt.io.results"):
        s.open(STUDY)
    assert "going on without a lock" in caplog.text   # said, not silent
    assert (folder / (STAGE_PREFIX + "dead")).is_dir()
    s.close()
    monkeypatch.undo()
    s = results_stream(folder, resume=True)
    s.open(STUDY)   # locked now: the stopped run's staging folder goes
    assert not (folder / (STAGE_PREFIX + "dead")).exists()
    s.close()


def test_a_staging_folder_removed_under_its_writer_is_an_error(tmp_path):
    import shutil

    with pytest.raises(InputError, match="was removed while this run wrote into it"):
        with staged_outputs(tmp_path, ["a.png"]) as staged:
            staged["a.png"].write_text("x")
            shutil.rmtree(staged["a.png"].parent)
    assert not (tmp_path / "a.png").exists()


def test_a_finished_stream_releases_its_folder(tmp_path):
    # a sweep into a caller's own stream: once finished, the folder is free again in this
    # same process (flock locks of two descriptors conflict even within one process)
    import libra_opt as lo
    from libra_opt.explore.sweep import sweep
    from libra_opt.scenario.examples import toy_scenario

    folder = tmp_path / "run"
    axes = {"sum(bw) == 300": [150.0, 300.0]}
    first = sweep(toy_scenario(), axes, progress=False, out=results_stream(folder))
    again = lo.sweep(toy_scenario(), axes, out=folder, resume=True, progress=False)
    assert list(again["point"]) == list(first["point"]) == [0, 1]
    s = results_stream(folder, resume=True, hold_after_finish=True)   # the CLI's: held
    # until close(), while it writes its plots
    sweep(toy_scenario(), axes, progress=False, out=s)
    with pytest.raises(InputError, match="open results stream of this process holds it"):
        lo.sweep(toy_scenario(), axes, out=folder, resume=True, progress=False)
    s.close()
    lo.sweep(toy_scenario(), axes, out=folder, resume=True, progress=False)


def test_a_refused_resume_does_not_keep_the_folder(tmp_path):
    # the refused open's traceback stays alive (as IPython's sys.last_traceback keeps it);
    # the folder must not stay held by the half-opened run
    import libra_opt as lo
    from libra_opt.scenario.examples import toy_scenario

    folder = tmp_path / "run"
    lo.sweep(toy_scenario(), {"sum(bw) == 300": [150.0, 300.0]}, out=folder, progress=False)
    try:
        lo.sweep(toy_scenario(), {"sum(bw) == 300": [200.0]}, out=folder, resume=True,
                 progress=False)
    except InputError as exc:
        kept_alive = exc.__traceback__
        assert "holds a different study" in exc.message
    else:
        raise AssertionError("a different study was resumed")
    df = lo.sweep(toy_scenario(), {"sum(bw) == 300": [150.0, 300.0]}, out=folder,
                  resume=True, progress=False)
    assert len(df) == 2 and kept_alive is not None


def test_python_callers_are_told_the_keyword_not_the_flag(tmp_path):
    import libra_opt as lo
    from libra_opt.scenario.examples import toy_scenario

    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(InputError) as e:
        lo.write_report(toy_scenario(), folder, budget_points=3, search=False)
    assert "overwrite=True" in e.value.message and "--" not in e.value.message
    assert e.value.source is None and e.value.field == "out_dir"


def test_a_held_folder_is_refused_before_the_work(tmp_path, monkeypatch):
    import libra_opt as lo
    import libra_opt.explore.study as study
    from libra_opt.scenario.examples import toy_scenario

    folder = tmp_path / "run"
    holder = _holder(folder)
    try:
        def no_work(*a, **k):
            raise AssertionError("the study ran before the folder was checked")

        monkeypatch.setattr(study, "design_study", no_work)
        with pytest.raises(InputError, match="another run is writing into"):
            lo.write_report(toy_scenario(), folder, budget_points=3, search=False,
                            overwrite=True)
    finally:
        holder.kill()
        holder.wait()
