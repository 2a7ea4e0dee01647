"""Every file the tool writes: safe names, confined paths, up-front checks, atomic writes.

:func:`staged_outputs` is the one way a file is written (a hidden staging folder beside the
targets, ``fsync``, then renames), so a crash never leaves a truncated file nor half a set.
A ``flag`` keyword names the option an error blames (:func:`libra_opt.errors.option_context`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError, option_context, short_repr

logger = logging.getLogger(__name__)

__all__ = [
    "PLOT_SUFFIXES",
    "CSV_SUFFIXES",
    "MAX_SLUG_BYTES",
    "safe_slug",
    "confined_path",
    "check_writable_output",
    "check_output_dir",
    "write_content",
    "write_text_atomic",
    "write_bytes_atomic",
    "save_figure_atomic",
    "write_csv_atomic",
    "fsync_directory",
    "prepare_output_dir",
    "staged_outputs",
    "remove_scratch",
    "write_bundle",
]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")
CSV_SUFFIXES = (".csv",)
#: Longest slug in UTF-8 bytes (file systems allow 255 per name; suffixes are added).
MAX_SLUG_BYTES = 100
#: Longest file name (bytes) and path (bytes) accepted (POSIX NAME_MAX and PATH_MAX - 1).
NAME_MAX_BYTES = 255
PATH_MAX_BYTES = 4095
#: Start of the name of a staging folder :func:`staged_outputs` makes beside its targets
#: (short, hidden, unique: a target's own name may already be near the 255-byte limit).
STAGE_PREFIX = ".libra-opt-stage-"


def safe_slug(name: object, *, max_bytes: int = MAX_SLUG_BYTES) -> str:
    """A file-name part made from ``name`` that cannot name another directory: path
    components joined with ``_`` (``.`` and ``..`` dropped), every character but a letter,
    digit, ``-``, ``_`` or ``.`` made ``_``, cut to ``max_bytes`` UTF-8 bytes; ``"unnamed"``
    when nothing is left.

    Examples
    --------
    >>> safe_slug("../../escaped"), safe_slug("GPT 3 (175B)"), safe_slug("..")
    ('escaped', 'GPT_3_175B', 'unnamed')
    """
    text = unicodedata.normalize("NFC", str(name))
    parts = [p for p in text.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    slug = "".join(c if (c.isalnum() or c in "-_.") else "_" for c in "_".join(parts))
    slug = re.sub("_+", "_", slug).strip("._-")
    slug = slug.encode("utf-8")[:max_bytes].decode("utf-8", "ignore").rstrip("._-")
    return slug or "unnamed"


def confined_path(directory: str | os.PathLike[str], filename: str, *,
                  flag: str | None = None) -> Path:
    """``directory / filename``, after checking it resolves (symlinks too) to a path inside
    ``directory``, not ``directory`` itself (else an :class:`InputError` blaming ``flag``).

    Examples
    --------
    >>> confined_path("out", "a.png").as_posix()
    'out/a.png'
    >>> confined_path("out", "../a.png", flag="--plot-dir")
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --plot-dir: file name '../a.png' would be written outside 'out'
    """
    base = Path(directory).resolve()
    target = (base / filename).resolve()
    if target == base or not target.is_relative_to(base):
        with option_context(flag):
            raise InputError(f"file name {filename!r} would be written outside "
                             f"{str(directory)!r}")
    return Path(directory) / filename


def check_output_dir(directory: str | os.PathLike[str]) -> Path:
    """Check, before any work and without creating it, that ``directory`` is or can be
    made a writable directory; an :class:`InputError` for an empty path, a path (or an
    ancestor) that is a file, or an existing directory that cannot be written."""
    if not str(directory).strip():
        raise InputError("expected a directory, got an empty path")
    path = existing = Path(directory)
    while not os.path.lexists(existing) and existing.parent != existing:
        existing = existing.parent  # the nearest existing ancestor (a dangling link counts)
    if os.path.islink(existing) and not existing.exists():
        raise InputError(f"{str(existing)!r} is a dangling symbolic link")
    if existing.exists() and not existing.is_dir():
        if existing == path:
            raise InputError(f"{str(directory)!r} is not a directory")
        raise InputError(f"{str(directory)!r} cannot be created: {str(existing)!r} is not a "
                         "directory")
    if existing.is_dir() and not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"cannot write in {str(existing)!r} (permission denied)")
    _check_lengths(path, ())
    _probe(existing if existing.is_dir() else existing.parent)
    return path


def _check_lengths(path: Path, names: Sequence[str]) -> None:
    """Every component of ``path`` (and each of ``names``) fits in 255 bytes, the whole in
    4095."""
    full = os.path.abspath(path)
    for part in [*Path(full).parts, *names]:
        if len(part.encode("utf-8", "surrogateescape")) > NAME_MAX_BYTES:
            raise InputError(f"{short_repr(part, 40)} is longer than {NAME_MAX_BYTES} bytes, "
                             "the longest file name the file system takes")
    longest = max((len(n.encode("utf-8")) for n in names), default=0)
    if len(full.encode("utf-8", "surrogateescape")) + 1 + longest > PATH_MAX_BYTES:
        raise InputError(f"path of {len(full):,} characters is too long (at most "
                         f"{PATH_MAX_BYTES} bytes with its file names)")


def _probe(where: Path) -> None:
    """Prove ``where`` writable by creating and removing a file in it (``os.access``
    says yes to root on read-only and virtual file systems)."""
    probe = where / f".libra-opt-probe-{secrets.token_hex(6)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"cannot write in {str(where)!r} ({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def check_writable_output(path: str | os.PathLike[str], flag: str | None,
                          suffixes: Sequence[str]) -> Path:
    """Check, before any work, that ``path`` can be written as one of ``suffixes``
    (case-insensitive) in a directory that is or can be made writable (else an
    :class:`InputError` blaming ``flag``).

    Examples
    --------
    >>> check_writable_output("plot.xyz", "--plot", PLOT_SUFFIXES)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --plot: unsupported file type '.xyz' in 'plot.xyz'; expected one of .png, .svg, .pdf
    """
    text = str(path)
    p = Path(path)
    with option_context(flag):
        if not text.strip():
            raise InputError("expected a file name, got an empty path")
        if text.endswith(("/", os.sep)) or p.is_dir():
            raise InputError(f"{text!r} is a directory; expected a file name")
        suffix = p.suffix.lower()
        if suffix not in {s.lower() for s in suffixes}:
            shown = repr(suffix) if suffix else "no file type"
            raise InputError(f"unsupported file type {shown} in {text!r}; expected one of "
                             f"{', '.join(suffixes)}")
        prepare_output_dir(p.parent, [p.name], create=False)
    return p


def remove_scratch(directory: str | os.PathLike[str]) -> list[Path]:
    """Remove the staging folders (:data:`STAGE_PREFIX`) a stopped run left in
    ``directory``; the paths removed. Call it only while holding the folder's lock, so
    what is left then is a stopped run's. A symbolic link named like one is left.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> (d / (STAGE_PREFIX + "ab12")).mkdir(); _ = (d / "notes.txt").write_text("kept")
    >>> [p.name for p in remove_scratch(d)], sorted(p.name for p in d.iterdir())
    (['.libra-opt-stage-ab12'], ['notes.txt'])
    """
    import shutil

    removed = []
    for p in sorted(Path(directory).glob(STAGE_PREFIX + "*")):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
            removed.append(p)
            logger.info("removed %s, left by a run that was stopped", p)
    return removed


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """``fsync`` a folder, so that a rename or a new file in it survives a crash (a no-op
    where folders cannot be opened, as on Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def prepare_output_dir(directory: str | os.PathLike[str], names: Sequence[str],
                       flag: str | None = None, *, create: bool = True) -> Path:
    """Check, before any work, that ``directory`` can hold the files ``names`` (inside it,
    not directories nor other non-regular files, within the file system's name and path
    lengths, writable: proved by creating a file); create it when ``create``.

    Raises
    ------
    InputError
        Saying what is wrong; ``flag`` names the option blamed (``None``: none).

    Examples
    --------
    >>> prepare_output_dir("/proc/x", ["results.csv"], "--out", create=False)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <cli>: --out: cannot write in '/proc' (...)
    """
    with option_context(flag):
        path = check_output_dir(directory)
        _check_lengths(path, names)
        if create:
            try:
                path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise InputError(f"cannot create {str(directory)!r}: {exc.strerror or exc}"
                                 ) from None
        for name in names:
            target = confined_path(path, name)
            if target.is_dir():
                raise InputError(f"{str(target)!r} is a directory; the file {name!r} would be "
                                 "written there")
            if target.exists() and not stat.S_ISREG(target.stat().st_mode):
                raise InputError(f"{str(target)!r} exists and is not a regular file")
        if create:
            _probe(path)
        return path


@contextlib.contextmanager
def staged_outputs(directory: str | os.PathLike[str], names: Sequence[str], *,
                   flag: str | None = None) -> Iterator[dict[str, Path]]:
    """Yield ``{name: staging path}`` in a hidden folder made inside ``directory``; when the
    block succeeds every file it wrote is ``fsync``-ed and moved onto ``directory/name``
    together (a replaced file keeps its permissions, a symlink at a target is replaced, not
    written through); when it fails nothing in ``directory`` changes.

    Raises
    ------
    InputError
        When a file cannot be written (an ``OSError`` of the block, too) or moved, or the
        staging folder was removed under the block; ``flag`` names the option blamed. The
        block's other errors pass unchanged.
    """
    import shutil

    with option_context(flag):
        base = Path(directory)
        targets = {n: confined_path(base, n) for n in names}
        try:
            base.mkdir(parents=True, exist_ok=True)
            stage = base / f"{STAGE_PREFIX}{secrets.token_hex(6)}"
            stage.mkdir()
        except OSError as exc:
            raise InputError(f"cannot write in {str(directory)!r}: {exc.strerror or exc}"
                             ) from None
    try:
        yield {n: stage / n for n in names}
        with option_context(flag):
            _move_in(stage, targets)
    except OSError as exc:  # a full disk, say: named by its target
        where = exc.filename and targets.get(Path(exc.filename).name, exc.filename)
        with option_context(flag):
            raise InputError(f"cannot write {str(where or '')!r}: {exc.strerror or exc}"
                             ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _move_in(stage: Path, targets: dict[str, Path]) -> None:
    """Move the files written in ``stage`` onto their ``targets`` (see :func:`staged_outputs`)."""
    if not stage.is_dir():  # removed under us: never report files that were lost
        raise InputError(f"the staging folder {str(stage)!r} was removed while this run wrote "
                         "into it (another run cleaning the folder?); nothing was written")
    written = [n for n in targets if (stage / n).is_file()]
    for n in written:
        with contextlib.suppress(OSError):  # a replaced file keeps its permissions
            if targets[n].is_file() and not targets[n].is_symlink():
                os.chmod(stage / n, stat.S_IMODE(targets[n].stat().st_mode))
        with open(stage / n, "rb") as f:
            os.fsync(f.fileno())
    for n in written:
        os.replace(stage / n, targets[n])
    fsync_directory(stage.parent)


def _write_with(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    p = Path(path)
    with staged_outputs(p.parent, [p.name]) as staged:
        write(staged[p.name])
    return p


def write_content(path: Path, content: str | bytes | Callable[[Path], Any]) -> None:
    """Write ``content`` to ``path``: text (UTF-8), bytes, or a writer called with the path."""
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        content(path)


def write_text_atomic(path: str | os.PathLike[str], text: str, *,
                      encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (:func:`staged_outputs`); returns ``path``."""
    return _write_with(path, lambda t: t.write_text(text, encoding=encoding))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (:func:`staged_outputs`); returns ``path``."""
    return _write_with(path, lambda t: t.write_bytes(data))


def save_figure_atomic(fig: Any, path: str | os.PathLike[str], *, flag: str | None = None,
                       **savefig_kwargs: Any) -> Path:
    """``fig.savefig`` to ``path`` atomically, in the format named by its suffix; ``flag``
    names the option blamed for an error (``None``: none)."""
    fmt = Path(path).suffix.lower().lstrip(".") or None
    with option_context(flag):
        return _write_with(path, lambda t: fig.savefig(t, format=fmt, **savefig_kwargs))


def write_csv_atomic(df: Any, path: str | os.PathLike[str], **to_csv_kwargs: Any) -> Path:
    """``df.to_csv`` to ``path`` atomically (``index=False`` unless given)."""
    to_csv_kwargs.setdefault("index", False)
    return _write_with(path, lambda t: df.to_csv(t, **to_csv_kwargs))


def write_bundle(out_dir: str | os.PathLike[str], files: Mapping[str, str | bytes]
                 ) -> dict[str, Path]:
    """Write ``files`` (relative name to text, written as UTF-8, or bytes) into ``out_dir``
    together (:func:`staged_outputs`), creating it if missing; each name and its path. An
    :class:`InputError` (``field="out_dir"``) when ``out_dir`` cannot be a directory, or a
    name would leave it.

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
            write_content(staged[name], content)
    return {name: Path(out_dir) / name for name in files}
