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

import dataclasses
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
    spec_hash,
    utc_now,
    write_results,
)
from libra_opt.io._run_folder import (
    check_run_folder,
    flock_folder,
    hold_results_folder,
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
from libra_opt.scenario.fingerprint import canonical

if TYPE_CHECKING:
    import pandas as pd

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

def _study_hash(study: Mapping[str, Any]) -> str:
    return spec_hash({k: study.get(k) for k in ("kind", "spec_hash", "axes", "zip")})


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
        self.manifest["updated_utc"] = utc_now()
        self.manifest["kept"] = len(self.done)
        write_text_atomic(self.path / MANIFEST, json.dumps(self.manifest, indent=2,
                                                           default=str) + "\n")

    def append(self, frame: pd.DataFrame) -> None:
        """Append ``frame``'s rows (it has a ``point`` column) to ``results.csv``, fsync-ed.

        New columns (a later point's fabric has another dimension) rewrite the file with
        the wider header first.
        """
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

    def finish(self, release: bool = True) -> pd.DataFrame:
        """Rewrite ``results.csv`` in grid order (atomically), mark the manifest complete
        and return the table as read back; then release the folder, unless ``release`` is
        false (the caller writes more files into it, then calls :meth:`close`)."""
        df = read_results(self.csv)
        df = df.drop_duplicates(POINT_COLUMN).sort_values(POINT_COLUMN, kind="stable")
        df = df.reset_index(drop=True)
        with option_context(self.flag):
            write_text_atomic(self.csv, df.to_csv(index=False))
        self.done = frozenset(int(p) for p in df[POINT_COLUMN])
        self.manifest["complete"] = len(self.done) == self.manifest.get("points")
        with option_context(self.flag):
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
        Saying what to do instead; ``flag`` names the option blamed
        (:func:`~libra_opt.errors.option_context`; ``None``: none).
    """
    with option_context(flag):
        _check_results_folder(Path(directory), resume, overwrite)


def _check_results_folder(path: Path, resume: bool, overwrite: bool) -> None:
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
        raise InputError(f"{str(path)!r} is not empty ({shown}): give resume=True to continue "
                         "its run, overwrite=True to replace it, or another folder")
    refuse_held(path)


def open_results(directory: str | os.PathLike[str], study: Mapping[str, Any], *,
                 resume: bool = False, overwrite: bool = False,
                 flag: str | None = "--out") -> ResultsFolder:
    """Check and open a results folder for ``study`` before any point is solved.

    ``study`` holds ``kind``, ``scenario``, ``spec_hash``, ``axes``, ``zip`` and ``points``.

    Raises
    ------
    InputError
        The folder cannot be written; it is not empty and neither ``resume`` nor
        ``overwrite`` is given; ``resume`` finds a different study (or files that are not a
        run's); ``resume`` and ``overwrite`` together. ``flag`` names the option blamed.
    """
    check_results_folder(directory, resume=resume, overwrite=overwrite, flag=flag)
    path = prepare_output_dir(directory, (MANIFEST, RESULTS_CSV, RESULTS_PARQUET), flag)
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, **dict(study),
                "study_hash": _study_hash(study), "library_version": library_version(),
                "created_utc": utc_now(), "complete": False, "files": [RESULTS_CSV]}
    entries = sorted(p.name for p in path.iterdir())
    folder = ResultsFolder(path, manifest, flag=flag)
    try:
        with option_context(flag):
            _lock(folder)
            return _open_locked(folder, path, directory, study, manifest, entries, resume,
                                overwrite)
    except BaseException:
        folder.close()   # a refused or failed open never keeps the folder held
        raise


def _open_locked(folder: ResultsFolder, path: Path, directory: Any, study: Mapping[str, Any],
                 manifest: dict[str, Any], entries: list[str], resume: bool, overwrite: bool
                 ) -> ResultsFolder:
    """The rest of :func:`open_results`, with the folder's lock held."""
    old = load_manifest(path / MANIFEST) if MANIFEST in entries else None
    if resume and old is not None:
        if old.get("study_hash") != manifest["study_hash"]:
            raise InputError(f"{str(directory)!r} holds a different study (scenario "
                             f"{old.get('scenario')!r}, axes "
                             f"{', '.join(map(str, old.get('axes') or {}))}): resume it with "
                             "its own scenario and axes, or use another folder")
        manifest["created_utc"] = old.get("created_utc", manifest["created_utc"])
        if (path / RESULTS_CSV).is_file():
            df = _read_intact(path / RESULTS_CSV)
            if df is not None:
                folder.columns = list(df.columns)
                folder.done = frozenset(int(p) for p in df[POINT_COLUMN]
                                        if 0 <= int(p) < int(study["points"]))
        folder._write_manifest()
        return folder
    if entries and overwrite:
        remove_run_files(path, set())   # the earlier run's files, its manifest's too
        fsync_directory(path)
    folder._write_manifest()
    return folder


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
    (``sweep(..., out=results_stream(DIR))``). The folder rules that need no study
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


def _lock(folder: ResultsFolder) -> None:
    """Hold the folder's lock while the run is open (released by
    :meth:`ResultsFolder.close`, when the folder object goes, or when the process ends, a
    kill included): a second run into the same folder (a ``--resume`` started twice) is
    refused instead of mixing its rows in."""
    fd = flock_folder(folder.path)
    if fd is not None:
        folder._release = weakref.finalize(folder, os.close, fd)
