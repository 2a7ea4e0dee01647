"""libra_opt.io.output: safe names, confinement, up-front checks and atomic writes."""

import os
import stat
from pathlib import Path

import pytest

from libra_opt.errors import InputError, option_context
from libra_opt.io.output import (
    CSV_SUFFIXES,
    MAX_SLUG_BYTES,
    PLOT_SUFFIXES,
    STAGE_PREFIX,
    check_output_dir,
    check_writable_output,
    confined_path,
    safe_slug,
    save_figure_atomic,
    write_bytes_atomic,
    write_csv_atomic,
    write_text_atomic,
)


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("gpt3_175b_4d", "gpt3_175b_4d"),
        ("../../escaped", "escaped"),
        ("..\\..\\escaped", "escaped"),
        ("/abs/path", "abs_path"),
        ("/", "unnamed"),
        ("..", "unnamed"),
        (".", "unnamed"),
        ("", "unnamed"),
        ("   ", "unnamed"),
        (".hidden", "hidden"),
        ("-rf", "rf"),
        ("a\x00b\nc\td\x1b", "a_b_c_d"),
        ("C:\\Windows\\x", "C_Windows_x"),
        ("名前/ü", "名前_ü"),
        ("u\u0308", "ü"),  # NFC: one character
        ("a/../b", "a_b"),
        ("bad\nname\x00", "bad_name"),
        ("GPT 3 (175B)", "GPT_3_175B"),
        ("模型-α", "模型-α"),
        ("x" * 1000, "x" * 100),
    ],
)
def test_safe_slug(name, slug):
    assert safe_slug(name) == slug


@pytest.mark.parametrize("name", ["../../escaped", "/abs/path", "..", "", "a/b/../../..",
                                  "\x00", "é" * 300, "x" * 1000, "../" * 50])
def test_safe_slug_is_one_plain_component(name):
    s = safe_slug(name)
    assert s and "/" not in s and "\\" not in s and not s.startswith(".")
    assert s not in (".", "..") and not os.path.isabs(s)
    assert all(c.isprintable() for c in s)
    assert len(s.encode("utf-8")) <= MAX_SLUG_BYTES
    assert Path(s).name == s


def test_confined_path(tmp_path):
    assert confined_path(tmp_path, "a.png") == tmp_path / "a.png"
    for bad in ("../a.png", "/etc/passwd", "..", ".", "sub/../../a"):
        with pytest.raises(InputError) as exc:
            confined_path(tmp_path, bad, flag="--plot-dir")
        assert exc.value.field == "--plot-dir" and exc.value.source == "<cli>"


def test_confined_path_refuses_a_planted_symlink(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.png").symlink_to(tmp_path / "victim")
    with pytest.raises(InputError, match="outside"):
        confined_path(out, "a.png")


def test_check_writable_output(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    ok = tmp_path / "new" / "deeper" / "t.CSV"
    assert check_writable_output(ok, "--csv", CSV_SUFFIXES) == ok
    assert not (tmp_path / "new").exists()  # checking creates nothing
    cases = {
        str(tmp_path / "d"): "is a directory",
        str(tmp_path / "x.xyz"): "unsupported file type '.xyz'",
        str(tmp_path / "f" / "t.png"): "is not a directory",
        "": "empty path",
    }
    for path, needle in cases.items():
        with pytest.raises(InputError) as exc:
            check_writable_output(path, "--plot", PLOT_SUFFIXES)
        assert exc.value.field == "--plot" and needle in exc.value.message


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_check_writable_output_refuses_devices():
    with pytest.raises(InputError, match="not a regular file"):
        check_writable_output("/dev/null", "--csv", ("",))


def test_check_output_dir(tmp_path):
    (tmp_path / "f").write_text("x")
    assert check_output_dir(tmp_path / "new" / "dir") == tmp_path / "new" / "dir"
    for bad in (tmp_path / "f", tmp_path / "f" / "sub"):
        with pytest.raises(InputError, match="not a directory") as exc:
            check_output_dir(bad)
        assert exc.value.field is None and exc.value.source is None  # raised unlabelled
        with pytest.raises(InputError) as exc, option_context("--export"):
            check_output_dir(bad)
        assert (exc.value.source, exc.value.field) == ("<cli>", "--export")


def test_atomic_writers_write_and_leave_no_temp(tmp_path):
    write_text_atomic(tmp_path / "sub" / "a.txt", "hello")
    write_bytes_atomic(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "sub" / "a.txt").read_text() == "hello"
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.txt", "b.bin"]


def test_new_files_get_the_usual_permissions(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644


class _Fig:
    def __init__(self, fail=False):
        self.fail, self.calls = fail, []

    def savefig(self, path, format=None, **kwargs):
        self.calls.append((Path(path), format, kwargs))
        with open(path, "wb") as fh:
            fh.write(b"partial")
            if self.fail:
                raise RuntimeError("renderer crashed")
            fh.write(b" and complete")


class _Frame:
    def __init__(self, fail=False):
        self.fail = fail

    def to_csv(self, path, index=True):
        with open(path, "w") as fh:
            fh.write("a,b\n")
            if self.fail:
                raise OSError(28, "No space left on device", str(path))
            fh.write(f"1,{index}\n")


def test_save_figure_atomic_uses_the_final_suffix(tmp_path):
    fig = _Fig()
    save_figure_atomic(fig, tmp_path / "p.SVG", dpi=130)
    (written, fmt, kwargs), = fig.calls
    assert fmt == "svg" and kwargs == {"dpi": 130}
    # drawn under its own name in a staging folder beside the target, then moved in
    assert written.parent.parent == tmp_path and written.parent.name.startswith(STAGE_PREFIX)
    assert written.name == "p.SVG"
    assert (tmp_path / "p.SVG").read_bytes() == b"partial and complete"
    assert [p.name for p in tmp_path.iterdir()] == ["p.SVG"]


def test_write_csv_atomic(tmp_path):
    write_csv_atomic(_Frame(), tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text() == "a,b\n1,False\n"


@pytest.mark.parametrize("existing", [None, b"old complete contents"])
def test_a_writer_failing_midway_leaves_no_truncated_target(tmp_path, existing):
    fig_path, csv_path = tmp_path / "p.png", tmp_path / "t.csv"
    if existing is not None:
        fig_path.write_bytes(existing)
        csv_path.write_bytes(existing)
    with pytest.raises(RuntimeError, match="renderer crashed"):
        save_figure_atomic(_Fig(fail=True), fig_path)
    with pytest.raises(InputError, match="No space left") as exc, option_context("--csv"):
        write_csv_atomic(_Frame(fail=True), csv_path)
    assert exc.value.field == "--csv"
    names = sorted(p.name for p in tmp_path.iterdir())
    if existing is None:
        assert names == []
    else:
        assert names == ["p.png", "t.csv"]
        assert fig_path.read_bytes() == existing and csv_path.read_bytes() == existing


def test_a_symlink_target_is_replaced_not_written_through(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    link = tmp_path / "out.txt"
    link.symlink_to(victim)
    write_text_atomic(link, "new")
    assert victim.read_text() == "keep"
    assert not link.is_symlink() and link.read_text() == "new"


def test_replacing_a_file_keeps_its_permissions(tmp_path):
    from libra_opt.io.output import write_text_atomic

    target = tmp_path / "t.csv"
    target.write_text("old")
    os.chmod(target, 0o640)
    write_text_atomic(target, "new")
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_staged_outputs_move_all_files_or_none(tmp_path):
    from libra_opt.io.output import staged_outputs

    out = tmp_path / "plots"
    with pytest.raises(RuntimeError), staged_outputs(out, ["a.png", "b.png"]) as staged:
        staged["a.png"].write_bytes(b"one")
        raise RuntimeError("the second plot failed")
    assert list(out.iterdir()) == []  # nothing moved, no staging folder left
    (out / "a.png").write_bytes(b"stale")
    with staged_outputs(out, ["a.png", "b.png"]) as staged:
        staged["a.png"].write_bytes(b"one")
        staged["b.png"].write_bytes(b"two")
        assert not (out / "b.png").exists()  # not before the block succeeds
    assert (out / "a.png").read_bytes() == b"one" and (out / "b.png").read_bytes() == b"two"
    assert sorted(p.name for p in out.iterdir()) == ["a.png", "b.png"]
    with staged_outputs(out, ["a.png", "c.png"]) as staged:  # a file not written is not moved
        staged["a.png"].write_bytes(b"again")
    assert sorted(p.name for p in out.iterdir()) == ["a.png", "b.png"]


def test_an_error_of_the_block_is_not_relabelled(tmp_path):
    """``flag`` blames the option for the writer's own errors, not for the block's."""
    from libra_opt.io.output import staged_outputs

    with pytest.raises(InputError) as exc, staged_outputs(tmp_path, ["a.png"], flag="--out"):
        raise InputError("expected a positive budget", field="budget_usd")
    assert (exc.value.source, exc.value.field) == (None, "budget_usd")
    with pytest.raises(InputError) as exc, staged_outputs(tmp_path, ["../a.png"], flag="--out"):
        pass
    assert (exc.value.source, exc.value.field) == ("<cli>", "--out")


def test_prepare_output_dir_checks_every_file_before_creating_anything(tmp_path):
    from libra_opt.io.output import prepare_output_dir

    out = tmp_path / "new" / "run"
    assert prepare_output_dir(out, ["results.csv"], "--out", create=False) == out
    assert not (tmp_path / "new").exists()  # checked, not created
    with pytest.raises(InputError, match="longer than 255 bytes"):
        prepare_output_dir(tmp_path, ["r" * 256 + ".csv"], "--out", create=False)
    with pytest.raises(InputError, match="too long"):
        prepare_output_dir(tmp_path / "/".join(["d" * 200] * 21), ["results.csv"], "--out",
                           create=False)
    (tmp_path / "results.csv").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        prepare_output_dir(tmp_path, ["results.csv"], "--out")
    link_dir = tmp_path / "l"
    link_dir.mkdir()
    (link_dir / "results.csv").symlink_to(tmp_path.parent / "outside.csv")
    with pytest.raises(InputError, match="outside"):
        prepare_output_dir(link_dir, ["results.csv"], "--out")
    os.mkfifo(tmp_path / "fifo.csv")
    with pytest.raises(InputError, match="not a regular file"):
        prepare_output_dir(tmp_path, ["fifo.csv"], "--out")
