"""The README's benchmark figures are the ones the scripts wrote to benchmarks/RESULTS.md.

A figure is quoted in the README between markers,
``<!-- results:diloco.dp_site_gbit_s -->2,370<!-- /results -->``; each benchmark script
rewrites its section of RESULTS.md (``make bench``). This test fails when a quoted value
differs from the file, when a key is missing from it, or when a section is empty; and the
scripts whose figures are model outputs are re-run, so the file cannot lag the model.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

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


#: Scripts whose figures are model outputs (no wall-clock timing): re-run here, their
#: figures must equal RESULTS.md, so a model change cannot leave the README quoting an
#: older model (the comm_overlap figures once lagged a model change by 1.3 %).
MODEL_FIGURE_SCRIPTS = ("comm_overlap", "diloco", "luwu", "in_network", "rail_only",
                        "small_messages", "calibration_runs", "failures", "astra_sim_parity",
                        "validation_figures")
#: Figures that are solver round-off, not model outputs (they differ run to run by ulps).
ROUND_OFF = {"diloco.optimizer_vs_closed_form"}


@pytest.mark.parametrize("script", MODEL_FIGURE_SCRIPTS)
def test_results_file_holds_what_the_current_model_gives(script, tmp_path):
    fresh = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / f"{script}.py"), "--out", str(tmp_path),
         "--results", str(fresh)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    got = bench_results.read_results(fresh)
    recorded = {k: v for k, v in bench_results.read_results(
        ROOT / "benchmarks" / "RESULTS.md").items() if k.startswith(f"{script}.")}
    assert got and set(got) == set(recorded)
    stale = [(k, recorded[k], got[k]) for k in sorted(got)
             if k not in ROUND_OFF and got[k] != recorded[k]]
    assert not stale, ("RESULTS.md is older than the model (key, recorded, now); run "
                       f"python benchmarks/{script}.py --out out/bench and "
                       "python benchmarks/bench_results.py: " + repr(stale))
