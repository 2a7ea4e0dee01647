"""Results on disk: the results table, a study's folder streamed point by point with its
manifest and resume, and one-shot run folders.

A results folder (``sweep --out DIR``) holds ``results.csv``, one row per finished point
(``point`` first), each batch appended with one ``fsync``-ed write so a killed run keeps every
batch before it, and ``manifest.json`` (its ``study_hash`` is the identity checked on
resume). A new run needs an empty folder or ``overwrite``; ``resume`` refuses another study's
folder and drops a batch torn by a kill. A run holds its folder's lock
(:mod:`libra_opt.io.folder_lock`) while it writes into it; a file system that cannot lock
is said in a warning.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import logging
import math
import os
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError, option_context
from libra_opt.io.folder_lock import lock_folder
from libra_opt.io.output import (
    confined_path,
    fsync_directory,
    prepare_output_dir,
    remove_scratch,
    staged_outputs,
    write_content,
    write_text_atomic,
)
from libra_opt.options import POINT_COLUMN
from libra_opt.scenario.fingerprint import fingerprint

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "MANIFEST",
    "RESULTS_CSV",
    "RESULTS_PARQUET",
    "ResultsStream",
    "results_stream",
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
    "record_run_files",
]

logger = logging.getLogger(__name__)

MANIFEST = "manifest.json"
RESULTS_CSV = "results.csv"
RESULTS_PARQUET = "results.parquet"
#: Files an earlier run may have left in its folder (removed by ``overwrite``).
RUN_FILES = (MANIFEST, RESULTS_CSV, RESULTS_PARQUET, "sweep.png", "pareto.png",
             "bandwidth.png", "search.png")
FORMAT = "libra-opt results"
FORMAT_VERSION = 1
#: Values read as missing in a results CSV (``None``/``NA`` text stays text).
NA_VALUES = ["", "NaN", "nan"]


def library_version() -> str:
    """The installed ``libra_opt`` version (package metadata; ``"unknown"`` when the
    package is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("libra_opt")
    except PackageNotFoundError:
        return "unknown"


def utc_now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_text(data: Mapping[str, Any]) -> str:
    return json.dumps(dict(data), indent=2, default=str) + "\n"


def _refuse_not_empty(path: Path, entries: list[str], advice: str) -> None:
    shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
    raise InputError(f"{str(path)!r} is not empty ({shown}): {advice}")


def exact_csv_options() -> dict[str, str]:
    """``read_csv`` options that read floats back exactly (pandas >= 3 does by default and
    deprecates the option)."""
    import pandas as pd

    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


#: Integer columns of results tables that may have gaps (pandas ``Int64``: the search's
#: ``rank``, empty for candidates not solved): read back as ``Int64`` from CSV too.
NULLABLE_INT_COLUMNS = ("rank",)


def read_results(path: str | os.PathLike[str]) -> pd.DataFrame:
    """A results table written here (``.csv``, ``.parquet`` or a folder's), read back exactly
    (floats round-trip, text stays text, :data:`NULLABLE_INT_COLUMNS` are ``Int64``); an
    :class:`InputError` when the file is missing or not a results table."""
    import pandas as pd

    p = Path(path)
    if p.is_dir():
        p = p / (RESULTS_PARQUET if (p / RESULTS_PARQUET).is_file() and not
                 (p / RESULTS_CSV).is_file() else RESULTS_CSV)
    try:
        if p.suffix.lower() == ".parquet":
            df = pd.read_parquet(p)
        else:
            df = pd.read_csv(p, keep_default_na=False, na_values=NA_VALUES, **exact_csv_options())
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
            "created_utc": utc_now(), **extra}


#: Key of the metadata in a Parquet file's schema.
PARQUET_KEY = b"libra_opt"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".meta.json")


def write_results(df: pd.DataFrame, path: str | os.PathLike[str], metadata: Mapping[str, Any],
                  *, flag: str | None = None) -> Path:
    """Write a results table with its metadata, atomically: ``.parquet``, the metadata as
    JSON under the key ``libra_opt`` of the schema's metadata; ``.csv``, a sidecar
    ``<name>.meta.json`` moved in with it (:func:`read_metadata` reads either). An
    :class:`InputError` blaming ``flag`` for another suffix or a file that cannot be written.
    """
    p = Path(path)
    text = _json_text(metadata)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        with option_context(flag):
            raise InputError(f"unsupported results file type {suffix or 'none'!r} in "
                             f"{str(p)!r}; expected .csv or .parquet")
    names = [p.name] if suffix == ".parquet" else [p.name, _sidecar(p).name]
    with staged_outputs(p.parent, names, flag=flag) as staged:
        if suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(df, preserve_index=False)
            table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                   PARQUET_KEY: text.encode("utf-8")})
            pq.write_table(table, staged[p.name])
        else:
            df.to_csv(staged[p.name], index=False)
            staged[_sidecar(p).name].write_text(text, encoding="utf-8")
    return p


def read_metadata(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The metadata of a results file (Parquet schema, CSV sidecar, or a results folder's
    manifest); an :class:`InputError` when there is none."""
    p = Path(path)
    try:
        if p.is_dir():
            return load_manifest(p / MANIFEST)
        if p.suffix.lower() == ".parquet":
            import pyarrow.parquet as pq

            meta = pq.read_schema(p).metadata or {}
            return json.loads(meta[PARQUET_KEY].decode("utf-8"))
        return json.loads(_sidecar(p).read_text(encoding="utf-8"))
    except (OSError, KeyError, ValueError) as exc:
        raise InputError(f"no results metadata: {exc}", source=str(p)) from None


def read_json_document(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A JSON object from ``path`` (a saved solution, say); an :class:`InputError` when the
    file cannot be read or holds no JSON object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read a JSON document: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", source=str(path))
    return data


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{str(path)!r} is not a {FORMAT} manifest")
    return data


def check_run_folder(directory: str | os.PathLike[str], names: Sequence[str], *,
                     overwrite: bool = False) -> Path:
    """Check, before any work and creating nothing, a folder :func:`write_run_folder` will
    write ``names`` into (empty unless ``overwrite``); an :class:`InputError` if not."""
    prepare_output_dir(directory, (*names, MANIFEST), create=False)
    path = Path(directory)
    entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
    if entries and not overwrite:
        _refuse_not_empty(path, entries, "give overwrite=True to replace its run, or another "
                          "folder")
    if entries:  # refuse a folder a run is writing into (its lock taken and released)
        with hold_results_folder(path):
            pass
    return path


def write_run_folder(directory: str | os.PathLike[str],
                     writers: Mapping[str, Callable[[Path], object] | str | bytes],
                     metadata: Mapping[str, Any], *, overwrite: bool = False) -> list[Path]:
    """Write a one-shot run's files into ``directory`` together, with ``manifest.json``
    (``metadata`` with ``files`` and ``complete: true``); the paths written, the manifest last.

    Each ``writers[name](path)`` writes one file into a staging folder (a ``str`` or ``bytes``
    value is written as it is); only when every file is written, and the earlier run's are
    removed (``overwrite``), are they moved into place.

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
                write_content(staged[name], write)
            staged[MANIFEST].write_text(_json_text({**metadata, "complete": True,
                                                    "files": list(writers)}), encoding="utf-8")
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
    lock (a warning is logged); an :class:`InputError` when another run holds it."""
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
    there now; the list (an :class:`InputError` blaming ``flag`` on a manifest error)."""
    with option_context(flag):
        files = [n for n in names if confined_path(directory, n).is_file()]
        path = confined_path(directory, MANIFEST)
        manifest = load_manifest(path)
        if manifest.get("files") != files:
            manifest["files"] = files
            manifest["updated_utc"] = utc_now()
            write_text_atomic(path, _json_text(manifest))
    return files


def _read_intact(path: Path) -> pd.DataFrame | None:
    """The rows of a streamed CSV, dropping a batch torn by a kill (the file is truncated
    to its last intact row); ``None`` when not even the header is intact."""
    import pandas as pd

    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    while end > 0:
        try:
            df = pd.read_csv(io.BytesIO(data[:end]), keep_default_na=False, na_values=NA_VALUES,
                             **exact_csv_options())
        except (ValueError, pd.errors.ParserError):
            end = data.rfind(b"\n", 0, end - 1) + 1
            continue
        if POINT_COLUMN not in df.columns:
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


def check_results_folder(directory: str | os.PathLike[str], *, resume: bool = False,
                         overwrite: bool = False, flag: str | None = "--out") -> None:
    """The folder rules that need no study: ``resume`` and ``overwrite`` exclude each other;
    without either, the folder must be empty; ``resume`` needs a manifest there (else an
    :class:`InputError` blaming ``flag``)."""
    path = Path(directory)
    with option_context(flag):
        if resume and overwrite:
            raise InputError("resume=True continues the run in the folder, overwrite=True "
                             "replaces it: give one")
        entries = sorted(p.name for p in path.iterdir()) if path.is_dir() else []
        if not entries:
            return
        if resume:
            if MANIFEST not in entries:
                raise InputError(f"{str(path)!r} holds no {MANIFEST}: nothing to resume there")
            load_manifest(path / MANIFEST)
        elif not overwrite:
            _refuse_not_empty(path, entries, "give resume=True to continue its run, "
                              "overwrite=True to replace it, or another folder")
        with hold_results_folder(path):  # refused when a run is writing into it
            pass


class ResultsStream:
    """A results folder as a sweep's sink (:class:`libra_opt.explore.sink.ResultsSink`),
    opened for a study, appended to batch by batch, then finished. While open it holds the
    folder's lock (until :meth:`close`, the object goes or the process ends)."""

    def __init__(self, directory: str | os.PathLike[str], *, resume: bool = False,
                 overwrite: bool = False, flag: str | None = "--out",
                 hold_after_finish: bool = False) -> None:
        self.path = Path(directory)
        self.resume, self.overwrite, self.flag = resume, overwrite, flag
        #: Keep the folder held after :meth:`finish` until :meth:`close` (a caller that
        #: writes more files into it: ``libra-opt sweep --out`` with its plots).
        self.hold_after_finish = hold_after_finish
        self.manifest: dict[str, Any] | None = None
        #: Points on disk, and the CSV's columns (``None`` before its header is written).
        self.done: frozenset[int] = frozenset()
        self.columns: list[str] | None = None
        #: Points an earlier run had kept when the folder was opened (``resume``).
        self.kept_at_open = 0
        self._release: Any = None

    @property
    def location(self) -> str:
        return str(self.path)

    @property
    def csv(self) -> Path:
        return self.path / RESULTS_CSV

    def open(self, study: Mapping[str, Any]) -> frozenset[int]:
        """Check and open the folder for ``study`` (``kind``, ``scenario``, ``spec_hash``,
        ``axes``, ``zip``, ``points``) before any point is solved; the points kept there.
        Holding the lock, it removes the staging folders a killed run left there.

        Raises
        ------
        InputError
            As :func:`check_results_folder`; also a folder another run holds, or a
            ``resume`` of a different study (or of files that are not a run's).
        """
        check_results_folder(self.path, resume=self.resume, overwrite=self.overwrite,
                             flag=self.flag)
        path = prepare_output_dir(self.path, (MANIFEST, RESULTS_CSV, RESULTS_PARQUET),
                                  self.flag)
        key = fingerprint({k: study.get(k) for k in ("kind", "spec_hash", "axes", "zip")})
        self.manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **dict(study),
                         "study_hash": key, "library_version": library_version(),
                         "created_utc": utc_now(), "complete": False, "files": [RESULTS_CSV]}
        entries = sorted(p.name for p in path.iterdir())
        try:
            with option_context(self.flag):
                fd = flock_folder(path)
                if fd is not None:
                    self._release = weakref.finalize(self, os.close, fd)
                self._open_locked(study, entries)
        except BaseException:
            self.close()   # a refused or failed open never keeps the folder held
            raise
        if self._release is not None:  # no live run can own scratch in a folder we hold
            remove_scratch(path)
        self.kept_at_open = len(self.done)
        return self.done

    def _open_locked(self, study: Mapping[str, Any], entries: list[str]) -> None:
        assert self.manifest is not None
        path = self.path
        old = load_manifest(path / MANIFEST) if MANIFEST in entries else None
        if self.resume and old is not None:
            if old.get("study_hash") != self.manifest["study_hash"]:
                raise InputError(f"{str(path)!r} holds a different study (scenario "
                                 f"{old.get('scenario')!r}, axes "
                                 f"{', '.join(map(str, old.get('axes') or {}))}): resume it "
                                 "with its own scenario and axes, or use another folder")
            self.manifest["created_utc"] = old.get("created_utc", self.manifest["created_utc"])
            df = _read_intact(self.csv) if self.csv.is_file() else None
            if df is not None:
                self.columns = list(df.columns)
                self.done = frozenset(int(p) for p in df[POINT_COLUMN]
                                      if 0 <= int(p) < int(study["points"]))
        elif entries and self.overwrite:
            remove_run_files(path, set())   # the earlier run's files, its manifest's too
            fsync_directory(path)
        self._write_manifest()

    def _write_manifest(self) -> None:
        assert self.manifest is not None
        self.manifest["updated_utc"] = utc_now()
        self.manifest["kept"] = len(self.done)
        write_text_atomic(self.path / MANIFEST, _json_text(self.manifest))

    def append(self, frame: pd.DataFrame) -> None:
        """Append ``frame``'s rows (it has a ``point`` column) to ``results.csv``, fsync-ed.

        New columns (a later point's fabric has another dimension) rewrite the file with
        the wider header first.
        """
        if self.manifest is None:
            raise RuntimeError("the results folder is not open: call open(study) first")
        cols = [POINT_COLUMN, *[c for c in frame.columns if c != POINT_COLUMN]]
        with option_context(self.flag):
            if self.columns is not None and cols != self.columns:
                if set(self.columns) - set(cols):
                    cols = [*cols, *[c for c in self.columns if c not in cols]]
                old = read_results(self.csv)
                write_text_atomic(self.csv, old.reindex(columns=cols).to_csv(index=False))
                self.columns = cols
            header = self.columns is None
            try:
                with open(self.csv, "a", encoding="utf-8", newline="") as f:
                    f.write(frame.to_csv(index=False, header=header, columns=cols))
                    f.flush()
                    os.fsync(f.fileno())
            except OSError as exc:
                raise InputError(f"cannot write {str(self.csv)!r}: {exc.strerror or exc}"
                                 ) from None
        self.columns = cols
        self.done = self.done | {int(p) for p in frame[POINT_COLUMN]}

    def done_points(self) -> frozenset[int]:
        return self.done

    def finish(self) -> pd.DataFrame:
        """Rewrite ``results.csv`` in grid order (atomically), mark the manifest complete
        and return the table as read back; then release the folder, unless
        ``hold_after_finish`` (the caller writes more files into it, then calls
        :meth:`close`)."""
        if self.manifest is None:
            raise RuntimeError("the results folder is not open: call open(study) first")
        df = read_results(self.csv)
        df = df.drop_duplicates(POINT_COLUMN).sort_values(POINT_COLUMN, kind="stable")
        df = df.reset_index(drop=True)
        self.done = frozenset(int(p) for p in df[POINT_COLUMN])
        self.manifest["complete"] = len(self.done) == self.manifest.get("points")
        with option_context(self.flag):
            write_text_atomic(self.csv, df.to_csv(index=False))
            self._write_manifest()
        df = read_results(self.csv)
        if not self.hold_after_finish:
            self.close()
        return df

    def close(self) -> None:
        """Release the folder (its lock); safe to call twice."""
        if self._release is not None:
            self._release()


def results_stream(directory: str | os.PathLike[str], *, resume: bool = False,
                   overwrite: bool = False, flag: str | None = "--out",
                   hold_after_finish: bool = False) -> ResultsStream:
    """The sink that streams a sweep into the results folder ``directory``; the folder rules
    that need no study (:func:`check_results_folder`) are checked here, before any work."""
    check_results_folder(directory, resume=resume, overwrite=overwrite, flag=flag)
    return ResultsStream(directory, resume=resume, overwrite=overwrite, flag=flag,
                         hold_after_finish=hold_after_finish)


def open_results(directory: str | os.PathLike[str], study: Mapping[str, Any], *,
                 resume: bool = False, overwrite: bool = False,
                 flag: str | None = "--out") -> ResultsStream:
    """A :class:`ResultsStream` opened for ``study`` (:meth:`ResultsStream.open`)."""
    stream = ResultsStream(directory, resume=resume, overwrite=overwrite, flag=flag)
    stream.open(study)
    return stream
