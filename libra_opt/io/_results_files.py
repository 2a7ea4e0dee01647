"""Results files: the results table (CSV with a metadata sidecar, or Parquet with its
metadata in the schema), a results folder's manifest, and the names and format they share.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from libra_opt.errors import InputError, option_context
from libra_opt.io.output import staged_outputs

if TYPE_CHECKING:
    import pandas as pd

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


def exact_csv_options() -> dict[str, str]:
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
    stays text, :data:`NULLABLE_INT_COLUMNS` are ``Int64`` with their gaps. An
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
    """Write a results table with its metadata, atomically.

    ``.parquet``: one Parquet file whose schema metadata holds ``metadata`` as JSON under
    the key ``libra_opt`` (``pyarrow.parquet.read_schema(path).metadata``). ``.csv``: the
    CSV (read back by :func:`read_results` or plain ``pandas.read_csv``) and a sidecar
    ``<name>.meta.json`` beside it, moved in together. :func:`read_metadata` reads either.

    Raises
    ------
    InputError
        An unsupported suffix or a file that cannot be written; ``flag`` names the option
        blamed (``None``: none).
    """
    p = Path(path)
    text = json.dumps(dict(metadata), indent=2, default=str) + "\n"
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


def fsync_write(path: Path, text: str, mode: str = "a") -> None:
    with open(path, mode, encoding="utf-8", newline="") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {str(path)!r}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{str(path)!r} is not a {FORMAT} manifest")
    return data
