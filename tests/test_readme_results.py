"""The README's benchmark figures are the ones the scripts wrote to benchmarks/RESULTS.md.

A figure is quoted in the README between markers,
``<!-- results:diloco.dp_site_gbit_s -->2,370<!-- /results -->``; each benchmark script
rewrites its section of RESULTS.md (``make bench``). This test fails when a quoted value
differs from the file, when a key is missing from it, or when a section is empty.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_results  # noqa: E402


def test_every_readme_figure_is_the_scripts_figure():
    spans = bench_results.readme_spans((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(spans) >= 40   # the README quotes its figures, it does not retype them
    results = bench_results.read_results(ROOT / "benchmarks" / "RESULTS.md")
    missing = sorted({k for k, _ in spans} - set(results))
    assert not missing, f"README quotes keys RESULTS.md does not have: {missing}"
    wrong = [(k, v, results[k]) for k, v in spans if results[k] != v]
    assert not wrong, "README figure != RESULTS.md (key, README, RESULTS): " + repr(wrong)


def test_record_replaces_its_section_and_keeps_the_others(tmp_path):
    p = tmp_path / "RESULTS.md"
    bench_results.record("b", {"b.x": "1"}, path=p, command="cmd b")
    bench_results.record("a", {"a.y": "2,370"}, path=p, command="cmd a")
    bench_results.record("b", {"b.x": "3", "b.z": "4x"}, path=p, command="cmd b")
    assert bench_results.read_results(p) == {"a.y": "2,370", "b.x": "3", "b.z": "4x"}
    text = p.read_text()
    assert text.startswith(bench_results.HEADER)
    assert text.index("## a") < text.index("## b") and text.count("## b") == 1
    readme = "x <!-- results:b.x -->3<!-- /results --> y <!-- results:a.y -->2,370<!-- /results -->"
    assert bench_results.readme_spans(readme) == [("b.x", "3"), ("a.y", "2,370")]


def test_keys_belong_to_their_section(tmp_path):
    import pytest

    with pytest.raises(ValueError, match="must start with"):
        bench_results.record("a", {"b.x": "1"}, path=tmp_path / "R.md", command="c")


def test_sync_readme_rewrites_the_quoted_figures(tmp_path):
    res = tmp_path / "RESULTS.md"
    bench_results.record("a", {"a.x": "2,379", "a.y": "8.42x"}, path=res, command="cmd")
    readme = tmp_path / "README.md"
    readme.write_text("p <!-- results:a.x -->2,370<!-- /results --> q "
                      "<!-- results:a.y -->8.42x<!-- /results -->", encoding="utf-8")
    assert bench_results.sync_readme(readme, res) == [("a.x", "2,370", "2,379")]
    assert bench_results.readme_spans(readme.read_text()) == [("a.x", "2,379"), ("a.y", "8.42x")]
    readme.write_text("<!-- results:a.z -->1<!-- /results -->", encoding="utf-8")
    import pytest

    with pytest.raises(KeyError, match="a.z"):
        bench_results.sync_readme(readme, res)
