"""notebooks/04_codesign_search.ipynb runs top to bottom, quickly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[2]


def test_codesign_notebook_runs(tmp_path) -> None:
    from tests.test_notebooks import run_notebook

    t0 = time.perf_counter()
    nb = run_notebook(ROOT / "notebooks" / "04_codesign_search.ipynb", tmp_path)
    elapsed = time.perf_counter() - t0
    text = "\n".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "search best" in text and "SearchResult(tco" in text
    assert "396 interruptions in 54 days (the paper: 419)" in text and "effective_objective" in text
    assert not any(o.get("output_type") == "error"
                   for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert elapsed < 60.0
