"""Results on disk: a study's folder streamed point by point, its manifest, and resume.

A results folder (``libra-opt sweep --out DIR``, ``sweep(..., out=DIR)``) holds:

* ``results.csv``: one row per finished point, ``point`` (its index in grid order) first.
  Each finished batch is appended with one ``write``, flushed and ``fsync``-ed, so a run
  killed at any moment keeps every batch written before it; a completed run rewrites the
  file (atomically) in grid order.
* ``manifest.json``: ``kind``, ``scenario``, ``spec_hash``
  (:func:`libra_opt.explore.sink.spec_fingerprint`), ``axes``, ``zip``, ``points``,
  ``study_hash`` (of kind, spec hash, axes and zip: the identity checked on resume),
  ``library_version``, ``created_utc``, ``updated_utc``, ``complete``, ``kept`` and
  ``files``. A sidecar rather than CSV comment lines, so that ``pandas.read_csv`` reads the
  table with its defaults (constraint labels in column names hold ``#``).

A new run needs an empty (or missing) folder, or ``overwrite`` (which deletes the earlier
run's files first); ``resume`` continues the run the manifest records, refusing another
study's folder, and drops a batch torn by a kill (a last line without its newline).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError, option_context
from libra_opt.io._results_files import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    NA_VALUES,
    RESULTS_CSV,
    RESULTS_PARQUET,
    exact_csv_options,
    fsync_write,
    library_version,
    load_manifest,
    read_json_document,
    read_metadata,
    read_results,
    results_metadata,
    utc_now,
    write_results,
)
from libra_opt.io._run_folder import (
    check_run_folder,
    flock_folder,
    record_run_files,
    refuse_held,
    remove_run_files,
    write_run_folder,
)
from libra_opt.io.output import (
    fsync_directory,
    prepare_output_dir,
    remove_scratch,
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


def _read_intact(path: Path) -> pd.DataFrame | None:
    """The rows of a streamed CSV, dropping a batch torn by a kill (the file is truncated
    to its last intact row); ``None`` when not even the header is intact."""
    import pandas as pd

    data = path.read_bytes()
    end = data.rfind(b"\n") + 1
    while end > 0:
        try:
            from io import BytesIO

            df = pd.read_csv(BytesIO(data[:end]), keep_default_na=False, na_values=NA_VALUES,
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
    """The folder rules that need no study (checked before the scenario is loaded):
    ``resume`` and ``overwrite`` exclude each other; without either, an existing folder
    must be empty; ``resume`` needs a manifest in a non-empty folder.

    Raises
    ------
    InputError
        Saying what to do instead; ``flag`` names the option blamed (``None``: none).
    """
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
            shown = ", ".join(entries[:4]) + (", ..." if len(entries) > 4 else "")
            raise InputError(f"{str(path)!r} is not empty ({shown}): give resume=True to "
                             "continue its run, overwrite=True to replace it, or another "
                             "folder")
        refuse_held(path)


class ResultsStream:
    """A results folder as a sweep's sink (:class:`libra_opt.explore.sink.ResultsSink`):
    made by :func:`results_stream`, opened for a study, appended to batch by batch, then
    finished. While open it holds the folder's lock (released by :meth:`close`, when the
    object goes, or when the process ends, a kill included), so a second run into the
    folder is refused instead of mixing its rows in."""

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

        Holding the folder's lock, it removes the staging folders a killed run left there
        (:func:`~libra_opt.io.output.remove_scratch`); where the file system cannot lock,
        it removes nothing.

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
        write_text_atomic(self.path / MANIFEST, json.dumps(self.manifest, indent=2,
                                                           default=str) + "\n")

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
                fsync_write(self.csv, frame.to_csv(index=False, header=header, columns=cols))
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
    """The sink that streams a sweep into the results folder ``directory``
    (``sweep(..., out=results_stream(DIR))``). The folder rules that need no study
    (:func:`check_results_folder`) are checked here, before any work; the study's own
    (another study's folder, a lock held by another run) when the sweep opens it.
    """
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
