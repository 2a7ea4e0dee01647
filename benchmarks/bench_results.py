"""``benchmarks/RESULTS.md``: the figures the benchmark scripts print, as the README quotes them.

Each script calls :func:`record` at the end of its run with its section name and a mapping
``key -> value text`` (formatted exactly as the README writes it: ``"2,370"``,
``"9.06x"``, ``"27.5-55.0%"``). :func:`record` replaces that script's section of the file
(or adds it), leaving the other sections as they are, so ``make bench`` rebuilds the file
script by script. The README quotes a value between markers::

    <!-- results:diloco.dp_site_gbit_s -->2,370<!-- /results -->

and ``tests/test_readme_results.py`` fails when a quoted value differs from the file.

The file format (Markdown, one section per script)::

    <!-- section:diloco -->
    ## diloco
    `python benchmarks/diloco.py`, libra_opt 0.1.0, 2026-11-26 02:30 UTC

    | key | value |
    | --- | --- |
    | diloco.dp_site_gbit_s | 2,370 |
    <!-- /section:diloco -->
"""

from __future__ import annotations

import datetime
import re
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["RESULTS", "record", "read_results", "readme_spans", "HEADER", "add_arguments",
           "record_from_args", "sync_readme", "parse_out_args"]

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")
HEADER = """# Benchmark results

Written by the scripts under `benchmarks/` (`make bench`; each script rewrites its own
section). The README quotes these values between `<!-- results:KEY -->` markers;
`tests/test_readme_results.py` fails when a quoted value differs from this file.
"""
_SECTION = re.compile(r"<!-- section:([\w.-]+) -->\n.*?<!-- /section:\1 -->\n", re.S)
_ROW = re.compile(r"^\| ([\w.-]+) \| (.*) \|$", re.M)
_SPAN = re.compile(r"<!-- results:([\w.-]+) -->(.*?)<!-- /results -->", re.S)


def _section(name: str, values: Mapping[str, str], command: str) -> str:
    from importlib.metadata import version

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"<!-- section:{name} -->", f"## {name}", "",
             f"`{command}`, libra_opt {version('libra_opt')}, {when}", "",
             "| key | value |", "| --- | --- |"]
    for key, value in values.items():
        if not key.startswith(f"{name}."):
            raise ValueError(f"key {key!r} of section {name!r} must start with {name + '.'!r}")
        if "|" in value or "\n" in value:
            raise ValueError(f"value of {key!r} must be one line without '|': {value!r}")
        lines.append(f"| {key} | {value} |")
    lines.append(f"<!-- /section:{name} -->")
    return "\n".join(lines) + "\n"


def record(name: str, values: Mapping[str, str], *, path: str | Path | None = None,
           command: str | None = None) -> Path:
    """Write section ``name`` of the results file (``RESULTS.md`` beside this module unless
    ``path``), replacing the previous one; the sections stay sorted by name. Returns the
    path."""
    p = Path(path) if path is not None else RESULTS
    cmd = command if command is not None else " ".join(
        ["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])
    text = p.read_text(encoding="utf-8") if p.exists() else HEADER
    sections = {m.group(1): m.group(0) for m in _SECTION.finditer(text)}
    sections[name] = _section(name, values, cmd)
    head = _SECTION.sub("", text).rstrip("\n") + "\n"
    body = "\n".join(sections[k] for k in sorted(sections))
    p.write_text(head + "\n" + body, encoding="utf-8")
    return p


def read_results(path: str | Path | None = None) -> dict[str, str]:
    """Every ``key -> value`` of the results file."""
    p = Path(path) if path is not None else RESULTS
    text = p.read_text(encoding="utf-8")
    out: dict[str, str] = {}
    for m in _SECTION.finditer(text):
        out.update({k: v for k, v in _ROW.findall(m.group(0)) if k not in ("key", "---")})
    return out


def readme_spans(text: str) -> list[tuple[str, str]]:
    """``(key, quoted value)`` of every ``<!-- results:KEY -->VALUE<!-- /results -->``."""
    return [(k, " ".join(v.split())) for k, v in _SPAN.findall(text)]


def add_arguments(parser) -> None:
    """``--results PATH`` (default ``benchmarks/RESULTS.md``) and ``--no-results``."""
    parser.add_argument("--results", default=str(RESULTS), metavar="PATH",
                        help="results file whose section this script rewrites "
                        "(default benchmarks/RESULTS.md)")
    parser.add_argument("--no-results", action="store_true",
                        help="do not write the results file")


def parse_out_args(doc: str, argv=None):
    """The arguments of a script with no options of its own: ``--out DIR`` (default
    ``out``, created) and the results options; returns ``(args, out directory)``."""
    import argparse

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", default="out", help="output directory (default out/)")
    add_arguments(p)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    return args, out


def record_from_args(args, name: str, values: Mapping[str, str]) -> None:
    """:func:`record` unless ``--no-results``; prints where it wrote."""
    if getattr(args, "no_results", False):
        return
    path = record(name, values, path=args.results)
    print(f"recorded {len(values)} figures in {path} (section {name})")


def sync_readme(readme: str | Path, path: str | Path | None = None) -> list[tuple[str, str, str]]:
    """Rewrite every quoted figure of ``readme`` with its value in the results file; return
    ``(key, old, new)`` for each figure that changed. A key the results file lacks is an
    error (the README would quote a figure no script wrote)."""
    results = read_results(path)
    r = Path(readme)
    text = r.read_text(encoding="utf-8")
    missing = sorted({k for k, _ in readme_spans(text)} - set(results))
    if missing:
        raise KeyError(f"{r} quotes figures the results file lacks: {missing}")
    changed: list[tuple[str, str, str]] = []

    def put(m: re.Match) -> str:
        key, old = m.group(1), " ".join(m.group(2).split())
        if old != results[key]:
            changed.append((key, old, results[key]))
        return f"<!-- results:{key} -->{results[key]}<!-- /results -->"

    new = _SPAN.sub(put, text)
    if new != text:
        r.write_text(new, encoding="utf-8")
    return changed


if __name__ == "__main__":  # make bench: the README quotes what the scripts just wrote
    import argparse

    ap = argparse.ArgumentParser(description="Rewrite the README's quoted benchmark figures "
                                 "from benchmarks/RESULTS.md.")
    ap.add_argument("--readme", default=str(RESULTS.parents[1] / "README.md"))
    ap.add_argument("--results", default=str(RESULTS))
    a = ap.parse_args()
    for key, old, new in sync_readme(a.readme, a.results):
        print(f"{key}: {old} -> {new}")
