"""Only ``libra_opt.io`` reads or writes files: no other module calls ``open`` or a
file-writing method (``savefig``, ``to_csv``, ``write_text``, ...) on a path.

The calls below that look like file access but are not are listed with the reason; any new
one outside ``io`` fails this test until it goes through an ``io`` helper."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "libra_opt"

FILE_METHODS = {"savefig", "to_csv", "to_json", "to_parquet", "to_excel", "write_text",
                "write_bytes", "read_text", "read_bytes", "open", "savez", "save", "load",
                "loadtxt", "savetxt", "read_csv", "read_parquet"}

NOT_FILE_ACCESS = {
    ("__init__.py", "solution.to_json"),        # a string, written by io.write_text_atomic
    ("cli/main.py", "os.open"),                 # os.devnull onto stdout (a broken pipe)
    ("cli/search.py", "table.to_parquet"),      # to bytes (path None), written through io
    ("explore/worker_process.py", "os.open"),   # os.devnull onto a worker's stdio
    ("explore/dask_scratch.py", "os.open"),     # a scratch folder's fd, for its flock only
    ("explore/sweep.py", "store.open"),         # a result store's method (io-owned store)
    ("report/html.py", "fig.savefig"),          # into an in-memory BytesIO
}


def file_calls(path: Path) -> list[tuple[int, str]]:
    """(line, call) of every ``open(...)`` and file-method call in ``path``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id == "open":
            out.append((node.lineno, "open"))
        elif isinstance(f, ast.Attribute) and f.attr in FILE_METHODS:
            out.append((node.lineno, ast.unparse(f)))
    return sorted(out)


def test_the_scan_sees_open_and_savefig(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("with open('/proc/1/stat') as f:\n    pass\nfig.savefig(p)\nx.y(1)\n")
    assert file_calls(src) == [(1, "open"), (3, "fig.savefig")]


def test_only_io_reads_or_writes_files():
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("io/"):
            continue
        found += [f"{rel}:{line} {call}" for line, call in file_calls(path)
                  if (rel, call) not in NOT_FILE_ACCESS]
    assert found == []
