"""Results on disk: a study's folder streamed point by point, its manifest, and resume.

A results folder (``libra-opt sweep --out DIR``, ``sweep(..., out=DIR)``) holds:

* ``results.csv``: one row per finished point, with a ``point`` column first (the point's
  index in grid order). Rows are appended batch by batch as batches finish, each batch
  written with one ``write``, flushed and ``fsync``-ed, so a run killed at any moment keeps
  every batch written before it. When the run completes the file is rewritten (atomically)
  in grid order.
* ``manifest.json``: what the folder holds (the metadata sidecar of ``results.csv``):
  ``kind``, ``scenario`` (name), ``spec_hash`` (SHA-256 of the canonical form of the
  scenario's spec, :func:`libra_opt.explore.sink.spec_fingerprint`),
  ``axes`` (name -> values), ``zip``, ``points`` (total), ``study_hash`` (SHA-256 of the
  kind, spec hash, axes and zip: the identity checked on resume), ``library_version``,
  ``created_utc``, ``updated_utc``, ``complete``, ``kept`` (points on disk) and ``files``.
  It is a sidecar rather than comment lines in the CSV so that ``pandas.read_csv`` reads the
  table back with its defaults (a ``#`` cannot be used as a comment character: constraint
  labels in column names hold it).

:func:`open_results` checks the folder before any work: a new run needs an empty (or
missing) folder, or ``overwrite`` (which deletes the earlier run's files first); ``resume``
continues the run recorded by the manifest, refusing a folder that holds a different study.
A batch torn by a kill (a last line without its newline) is dropped on resume and solved
again. :func:`read_results` reads a results file back exactly (floats round-trip).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import errno
import json
import logging
import math
import os
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError
from libra_opt.io.output import (
    confined_path,
    fsync_directory,
    prepare_output_dir,
    remove_scratch,
)
from libra_opt.scenario.fingerprint import canonical, fingerprint

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

__all__ = [
    "MANIFEST",
    "RESULTS_CSV",
    "RESULTS_PARQUET",
    "ResultsFolder",
    "ResultsStream",
    "results_stream",
    "canonical",
    "spec_hash",
    "library_version",
    "open_results",
    "read_results",
    "check_results_folder",
    "results_metadata",
    "write_results",
    "read_metadata",
    "read_json_document",
    "check_run_folder",
    "write_run_folder",
    "hold_results_folder",
    "record_run_files",
]

MANIFEST = "manifest.json"
RESULTS_CSV = "results.csv"
RESULTS_PARQUET = "results.parquet"
#: Files an earlier run may have left in its folder (removed by ``overwrite``).
RUN_FILES = (MANIFEST, RESULTS_CSV, RESULTS_PARQUET, "sweep.png", "pareto.png",
             "bandwidth.png", "search.png")
FORMAT = "libra-opt results"
FORMAT_VERSION = 1
#: Values read as missing in a results CSV (``None``/``NA`` text stays text).
_NA = ["", "NaN", "nan"]


def library_version() -> str:
    """The installed ``libra_opt`` version (package metadata; ``"unknown"`` when the
    package is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("libra_opt")
    except PackageNotFoundError:
        return "unknown"


def _utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def spec_hash(obj: Any) -> str:
    """SHA-256 (hex) of ``obj``'s canonical JSON
    (:func:`libra_opt.scenario.fingerprint.fingerprint`): equal for equal specs and
    scenarios, in any process.

    Examples
    --------
    >>> spec_hash({"a": 1}) == spec_hash({"a": 1}), spec_hash({"a": 1}) == spec_hash({"a": 2})
    (True, False)
    """
    return fingerprint(obj)


def _study_hash(study: Mapping[str, Any]) -> str:
    return spec_hash({k: study.get(k) for k in ("kind", "spec_hash", "axes", "zip")})


def _err(message: str, flag: str | None) -> InputError:
    cli = bool(flag) and str(flag).startswith("--")
    return InputError(message, source="<cli>" if cli else None, field=flag)


def _opt(name: str, flag: str | None) -> str:
    """How the caller says ``name``: ``--resume`` on the command line (a ``--`` flag),
    ``resume=True`` in Python."""
    return f"--{name}" if flag and str(flag).startswith("--") else f"{name}=True"


def _exact() -> dict[str, str]:
    """``read_csv`` options that read floats back exactly (pandas >= 3 does by default and
    deprecates the option)."""
    import pandas as pd

    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


#: Integer columns of results tables that may have gaps (pandas ``Int64``: the search's
#: ``rank``, empty for candidates not solved): read back as ``Int64`` from CSV too.
NULLABLE_INT_COLUMNS = ("rank",)


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A results table written here (``.csv`` or ``.parquet``; a folder: its results file),
    read back exactly: floats round-trip, empty messages are ``""``, text such as ``None``
    stays text, :data:`NULLABLE_INT_COLUMNS` are ``Int64`` with their gaps.

    Raises
    ------
    InputError
        When the file is missing or not a results table.
    """
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        p = p / (RESULTS_PARQUET if (p / RESULTS_PARQUET).is_file() and not
                 (p / RESULTS_CSV).is_file() else RESULTS_CSV)
    try:
        if p.suffix.lower() == ".parquet":
            df = pd.read_parquet(p)
        else:
            df = pd.read_csv(p, keep_default_na=False, na_values=_NA, **_exact())
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read results: {exc}", source=str(p)) from None
    for col in ("status", "message"):
        if col in df.columns:
            df[col] = ["" if isinstance(v, float) and math.isnan(v) else str(v)
                       for v in df[col]]
    for col in NULLABLE_INT_COLUMNS:  # a CSV reads an integer column with gaps as floats
        if col in df.columns and df[col].dtype.kind == "f":
            vals = df[col].dropna()
            if (vals == vals.round()).all():
                df[col] = df[col].astype("Int64")
    return df


def results_metadata(kind: str, scenario: str, spec: str, **extra: Any) -> dict[str, Any]:
    """The metadata every results file carries: ``kind``, ``scenario`` (name),
    ``spec_hash``, ``library_version`` and ``created_utc`` (plus ``extra``)."""
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "kind": kind,
            "scenario": scenario, "spec_hash": spec, "library_version": library_version(),
            "created_utc": _utc_now(), **extra}


#: Key of the metadata in a Parquet file's schema.
PARQUET_KEY = b"libra_opt"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def write_results(df: pd.DataFrame, path: str | os.PathLike[str], metadata: Mapping[str, Any],
                  *, flag: str | None = None) -> Path:
    """Write a results table with its metadata, atomically.

    ``.parquet``: one Parquet file whose schema metadata holds ``metadata`` as JSON under
    the key ``libra_opt`` (``pyarrow.parquet.read_schema(path).metadata``). ``.csv``: the
    CSV (read back by :func:`read_results` or plain ``pandas.read_csv``) and a sidecar
    ``<name>.meta.json`` beside it. :func:`read_metadata` reads either.

    Raises
    ------
    InputError
        ``field=flag``: an unsupported suffix or a file that cannot be written.
    """
    from libra_opt.io.output import atomic_outputs

    p = Path(path)
    text = json.dumps(dict(metadata), indent=2, default=str) + "\n"
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(df, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               PARQUET_KEY: text.encode("utf-8")})
        with atomic_outputs(p, flag=flag) as (tmp,):
            pq.write_table(table, tmp)
        return p
    if suffix != ".csv":
        raise _err(f"unsupported results file type {suffix or 'none'!r} in {str(p)!r}; "
                   "expected .csv or .parquet", flag)
    with atomic_outputs(p, _sidecar(p), flag=flag) as (tmp, tmp_meta):
        df.to_csv(tmp, index=False)
        tmp_meta.write_text(text, encoding="utf-8")
    return p


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a results file (Parquet schema, CSV sidecar, or a results folder's
    manifest).

    Raises
    ------
    InputError
        When there is none.
    """
    p = Path(path)
    try:
        if p.is_dir():
            return _load_manifest(p / MANIFEST, None)
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            meta = pq.read_schema(p).metadata or {}
            return json.loads(meta[PARQUET_KEY].decode("utf-8"))
        return json.loads(_sidecar(p).read_text(encoding="utf-8"))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"no results metadata: {exc}", source=str(p)) from None


def read_json_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON object from ``path`` (a saved solution, say).

    Raises
    ------
    InputError
        When the file cannot be read or holds no JSON object.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read a JSON document: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", source=str(path))
    return data


def _fsync_write(path: Path, text: str, mode: str = "a") -> None:
    with open(path, mode, encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _atomic_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` by a temporary file, fsync and rename (and fsync the
    folder)."""
    tmp = path.parent / f".{path.name}.{os.getpid()}.tmp"
    try:
        _fsync_write(tmp, text, "w")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    fsync_directory(path.parent)


def _read_intact(path: Path) -> pd.DataFrame | None:
    """The rows of a streamed CSV, dropping a batch torn by a kill (the file is truncated
    to its last intact row); ``None`` when not even the header is intact."""
    import pandas as pd

    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    while end > 0:
        try:
            from io import BytesIO

            df = pd.read_csv(BytesIO(data[:end]), keep_default_na=False, na_values=_NA,
                             **_exact())
        except (ValueError, pd.errors.ParserError):
            end = data.rfind(b"\n", 0, end - 1) + 1
            continue
        if "point" not in df.columns:
            break
        if end < len(data):
            with open(path, "r+b") as f:
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())
        return df
    with open(path, "wb") as f:
        os.fsync(f.fileno())
    return None


@dataclasses.dataclass
class ResultsFolder:
    """An open results folder (made by :func:`open_results`): append batches, then
    :meth:`finish`."""

    path: Path
    manifest: dict[str, Any]
    done: frozenset[int] = frozenset()
    columns: list[str] | None = None
    flag: str | None = None
    _release: Any = dataclasses.field(default=None, repr=False, compare=False)

    def close(self) -> None:
        """Release the folder (its lock)."""
        if self._release is not None:
            self._release()

    @property
    def locked(self) -> bool:
        """Whether this run holds the folder's lock (``False`` where it cannot lock)."""
        return self._release is not None and self._release.alive

    @property
    def csv(self) -> Path:
        return self.path / RESULTS_CSV

    def _write_manifest(self) -> None:
        self.manifest["updated_utc"] = _utc_now()
        self.manifest["kept"] = len(self.done)
        _atomic_text(self.path / MANIFEST, json.dumps(self.manifest, indent=2,
                                                      default=str) + "\n")

    def append(self, frame: pd.DataFrame) -> None:
        """Append ``frame``'s rows (it has a ``point`` column) to ``results.csv``, fsync-ed.

        New columns (a later point's fabric has another dimension) rewrite the file with
        the wider header first.
        """
        cols = ["point", *[c for c in frame.columns if c != "point"]]
        try:
            if self.columns is not None and cols != self.columns:
                if set(self.columns) - set(cols):
                    cols = [*cols, *[c for c in self.columns if c not in cols]]
                old = read_results(self.csv)
                _atomic_text(self.csv, old.reindex(columns=cols).to_csv(index=False))
                self.columns = cols
            header = self.columns is None
            _fsync_write(self.csv, frame.to_csv(index=False, header=header, columns=cols))
        except OSError as exc:
            raise _err(f"cannot write {str(self.csv)!r}: {exc.strerror or exc}",
                       self.flag) from None
        self.columns = cols
        self.done = self.done | {int(p) for p in frame["point"]}

    def finish(self, release: bool = True) -> pd.DataFrame:
        """Rewrite ``results.csv`` in grid order (atomically), mark the manifest complete
        and return the table as read back; then release the folder, unless ``release`` is
        false (the caller writes more files into it, then calls :meth:`close`)."""
        df = read_results(self.csv)
        df = df.drop_duplicates("point").sort_values("point", kind="stable")
        df = df.reset_index(drop=True)
        _atomic_text(self.csv, df.to_csv(index=False))
        self.done = frozenset(int(p) for p in df["point"])
        self.manifest["complete"] = len(self.done) == self.manifest.get("points")
        self._write_manifest()
        df = read_results(self.csv)
        if release:
            self.close()
        return df


def check_results_folder(directory: str | os.PathLike[str], *, resume: bool = False,
                         overwrite: bool = False, flag: str | None = "--out") -> None:
    """The folder rules of :func:`open_results` that need no study (checked before the
    scenario is loaded): ``resume`` and ``overwrite`` exclude each other; without either, an
    existing folder must be empty; ``resume`` needs a manifest in a non-empty folder.

    Raises
    ------
    InputError
        ``field=flag``, saying what to do instead.
    """
    if resume and overwrite:
        raise _err(f"{_opt('resume', flag)} continues the run in the folder, "
                   f"{_opt('overwrite', flag)} replaces it: give one", flag)
    path = Path(directory)
    entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if not entries:
        return
    if resume:
        if MANIFEST not in entries:
            raise _err(f"{str(directory)!r} holds no {MANIFEST}: nothing to resume there",
                       flag)
        _load_manifest(path / MANIFEST, flag)
    elif not overwrite:
        shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
        raise _err(f"{str(directory)!r} is not empty ({shown}): give {_opt('resume', flag)} "
                   f"to continue its run, {_opt('overwrite', flag)} to replace it, or another "
                   "folder", flag)
    _not_held(path, flag)


def open_results(directory: str | os.PathLike[str], study: Mapping[str, Any], *,
                 resume: bool = False, overwrite: bool = False,
                 flag: str | None = "--out") -> ResultsFolder:
    """Check and open a results folder for ``study`` before any point is solved.

    ``study`` holds ``kind``, ``scenario``, ``spec_hash``, ``axes``, ``zip`` and ``points``.

    Raises
    ------
    InputError
        ``field=flag``: the folder cannot be written; it is not empty and neither
        ``resume`` nor ``overwrite`` is given; ``resume`` finds a different study (or
        files that are not a run's); ``resume`` and ``overwrite`` together.
    """
    check_results_folder(directory, resume=resume, overwrite=overwrite, flag=flag)
    path = prepare_output_dir(directory, (MANIFEST, RESULTS_CSV, RESULTS_PARQUET), flag)
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **dict(study),
                "study_hash": _study_hash(study), "library_version": library_version(),
                "created_utc": _utc_now(), "complete": False, "files": [RESULTS_CSV]}
    entries = sorted(p.name for p in path.iterdir())
    folder = ResultsFolder(path, manifest, flag=flag)
    _lock(folder, directory, flag)
    try:
        return _open_locked(folder, path, directory, study, manifest, entries, resume,
                            overwrite, flag)
    except BaseException:
        folder.close()   # a refused or failed open never keeps the folder held
        raise


def _open_locked(folder: ResultsFolder, path: Path, directory: Any, study: Mapping[str, Any],
                 manifest: dict[str, Any], entries: list[str], resume: bool, overwrite: bool,
                 flag: str | None) -> ResultsFolder:
    """The rest of :func:`open_results`, with the folder's lock held."""
    old = _load_manifest(path / MANIFEST, flag) if MANIFEST in entries else None
    if resume and old is not None:
        if old.get("study_hash") != manifest["study_hash"]:
            raise _err(f"{str(directory)!r} holds a different study (scenario "
                       f"{old.get('scenario')!r}, axes {', '.join(map(str, old.get('axes') or {}))}"
                       "): resume it with its own scenario and axes, or use another folder",
                       flag)
        manifest["created_utc"] = old.get("created_utc", manifest["created_utc"])
        if (path / RESULTS_CSV).is_file():
            df = _read_intact(path / RESULTS_CSV)
            if df is not None:
                folder.columns = list(df.columns)
                folder.done = frozenset(int(p) for p in df["point"]
                                        if 0 <= int(p) < int(study["points"]))
        folder._write_manifest()
        return folder
    if entries and overwrite:
        names = set(RUN_FILES) | set((old or {}).get("files") or ())
        for name in sorted(names):
            target = confined_path(path, name, flag=flag) if "/" not in name else None
            if target is not None and (target.is_symlink() or target.is_file()):
                try:
                    target.unlink()
                except OSError as exc:
                    raise _err(f"cannot remove {str(target)!r}: {exc.strerror}", flag) from None
        fsync_directory(path)
    folder._write_manifest()
    return folder


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
        raise _err(f"{str(directory)!r} is not empty ({shown}): give "
                   f"{_opt('overwrite', flag)} to replace its run, or another folder", flag)
    if entries:
        _not_held(path, flag)
    return path


def write_run_folder(directory: str | os.PathLike[str],
                     writers: Mapping[str, Callable[[Path], object]],
                     metadata: Mapping[str, Any], *, overwrite: bool = False,
                     flag: str | None = "--out") -> list[Path]:
    """Write a one-shot run's files into ``directory`` together, with ``manifest.json``.

    Each ``writers[name](path)`` writes one file into a hidden staging folder inside
    ``directory``; ``metadata`` (:func:`results_metadata`), with ``files`` (the names
    written) and ``complete: true``, becomes ``manifest.json``. Only when every file is
    written, and after the earlier run's files are removed (``overwrite``: the names of
    :data:`RUN_FILES` and of the old manifest's ``files``), are they moved into place
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
            raise _err(f"cannot create {str(path)!r}: {exc.strerror or exc}", flag) from None
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
                _remove_run_files(path, set(names), flag)
    except BaseException:
        if not existed:
            with contextlib.suppress(OSError):
                path.rmdir()
        raise
    return [path / n for n in names]


def _remove_run_files(path: Path, keep: set[str], flag: str | None) -> None:
    """Remove the earlier run's files from ``path`` (those ``keep`` names are replaced by
    the renames that follow)."""
    old: dict[str, Any] = {}
    if (path / MANIFEST).is_file():
        with contextlib.suppress(InputError):
            old = _load_manifest(path / MANIFEST, flag)
    names = set(RUN_FILES) | {str(n) for n in old.get("files") or ()}
    for name in sorted(names - keep):
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            continue
        target = path / name  # a symlink is removed itself, never followed
        if target.is_symlink() or target.is_file():
            try:
                target.unlink()
            except OSError as exc:
                raise _err(f"cannot remove {str(target)!r}: {exc.strerror}", flag) from None


class ResultsStream:
    """A results folder as a sweep's sink (:class:`libra_opt.explore.sink.ResultsSink`):
    made by :func:`results_stream`, opened by the sweep for its study
    (:func:`open_results`), then appended to batch by batch and finished."""

    def __init__(self, directory: str | os.PathLike[str], *, resume: bool = False,
                 overwrite: bool = False, flag: str | None = "--out",
                 hold_after_finish: bool = False) -> None:
        self.directory, self.resume, self.overwrite, self.flag = (directory, resume,
                                                                   overwrite, flag)
        #: Keep the folder held after :meth:`finish` until :meth:`close` (a caller that
        #: writes more files into it: ``libra-opt sweep --out`` with its plots).
        self.hold_after_finish = hold_after_finish
        self.folder: ResultsFolder | None = None
        #: Points an earlier run had kept when the folder was opened (``resume``).
        self.kept_at_open = 0

    @property
    def location(self) -> str:
        return str(self.folder.path if self.folder is not None else Path(self.directory))

    def _open_folder(self) -> ResultsFolder:
        if self.folder is None:
            raise RuntimeError("the results folder is not open: call open(study) first")
        return self.folder

    def open(self, study: Mapping[str, Any]) -> frozenset[int]:
        """Open the folder for ``study`` (:func:`open_results`); the points kept there.

        Holding the folder's lock, it removes the staging folders and temporary files a
        killed run left there (:func:`~libra_opt.io.output.remove_scratch`); where the file
        system cannot lock, it removes nothing. The folder stays held until :meth:`finish`
        (or, with ``hold_after_finish``, until :meth:`close`)."""
        self.folder = open_results(self.directory, study, resume=self.resume,
                                   overwrite=self.overwrite, flag=self.flag)
        if self.folder.locked:  # no live run can own scratch in a folder we hold
            remove_scratch(self.folder.path)
        self.kept_at_open = len(self.folder.done)
        return self.folder.done

    def append(self, frame: pd.DataFrame) -> None:
        self._open_folder().append(frame)

    def done_points(self) -> frozenset[int]:
        return frozenset() if self.folder is None else self.folder.done

    def finish(self) -> pd.DataFrame:
        return self._open_folder().finish(release=not self.hold_after_finish)

    def close(self) -> None:
        if self.folder is not None:
            self.folder.close()


def results_stream(directory: str | os.PathLike[str], *, resume: bool = False,
                   overwrite: bool = False, flag: str | None = "--out",
                   hold_after_finish: bool = False) -> ResultsStream:
    """The sink that streams a sweep into the results folder ``directory``
    (``sweep_grid(..., out=results_stream(DIR))``). The folder rules that need no study
    (:func:`check_results_folder`) are checked here, before any work; the study's own
    (another study's folder, a lock held by another run) when the sweep opens it.

    Raises
    ------
    InputError
        ``field=flag``, as :func:`check_results_folder`.
    """
    check_results_folder(directory, resume=resume, overwrite=overwrite, flag=flag)
    return ResultsStream(directory, resume=resume, overwrite=overwrite, flag=flag,
                         hold_after_finish=hold_after_finish)


def _flock_folder(directory: str | os.PathLike[str], busy: str,
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
        raise _err(f"cannot open {str(directory)!r}: {exc.strerror or exc}", flag) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise _err(busy, flag) from None
        logger.warning("cannot lock %s (%s): going on without a lock, so another run into "
                       "it is not refused meanwhile", directory, exc.strerror or exc)
        return None
    return fd


def _busy(directory: Any) -> str:
    return (f"another run is writing into {str(directory)!r} (or an open results stream of "
            "this process holds it): wait for it, stop it or close() it first")


def _not_held(path: Path, flag: str | None) -> None:
    """Refuse, before any work, a folder a run is writing into (its lock taken and released
    at once; the run's own writing takes it again)."""
    with hold_results_folder(path, flag):
        pass


@contextlib.contextmanager
def hold_results_folder(directory: str | os.PathLike[str],
                        flag: str | None = "--out") -> Iterator[bool]:
    """Hold ``directory``'s lock (the ``flock`` :func:`open_results` takes) for the block,
    so another run into the folder is refused meanwhile; yields whether the lock is held
    (``False`` where the file system cannot lock: :func:`_flock_folder`).

    Raises
    ------
    InputError
        ``field=flag``, when another run holds the folder.
    """
    fd = _flock_folder(directory, _busy(directory), flag)
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
    manifest = _load_manifest(path, flag)
    if manifest.get("files") != files:
        manifest["files"] = files
        manifest["updated_utc"] = _utc_now()
        try:
            _atomic_text(path, json.dumps(manifest, indent=2, default=str) + "\n")
        except OSError as exc:
            raise _err(f"cannot write {str(path)!r}: {exc.strerror or exc}", flag) from None
    return files


def _lock(folder: ResultsFolder, directory: Any, flag: str | None) -> None:
    """Hold an exclusive lock on the folder while the run is open (released by
    :meth:`ResultsFolder.close`, when the folder object goes, or when the process ends, a
    kill included): a second run into the same folder (a ``--resume`` started twice) is
    refused instead of mixing its rows in."""
    fd = _flock_folder(folder.path, _busy(directory), flag)
    if fd is not None:
        folder._release = weakref.finalize(folder, os.close, fd)


def _load_manifest(path: Path, flag: str | None) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _err(f"cannot read {str(path)!r}: {exc}", flag) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _err(f"{str(path)!r} is not a {FORMAT} manifest", flag)
    return data
