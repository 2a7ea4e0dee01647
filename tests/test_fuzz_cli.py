"""Fuzzing the command line with hostile inputs, each run in its own subprocess.

Every run gets a fresh temporary directory ``root`` holding ``work/`` (the current directory,
with the shipped example ``gpt3_175b_4d`` and the files it references, some of them mutated)
and ``sentinel/``. The CLI runs under ``RLIMIT_AS`` (2 GiB) and ``RLIMIT_CPU`` (20 s) with a
wall-clock timeout; every output flag points inside ``work/``. Each run must:

* exit with 0, 1 or 2 (no crash, no signal, no timeout);
* on 1 or 2, print exactly one error line on stderr (sweep progress and "wrote" lines aside);
* print no ``Traceback``;
* write nothing outside ``work/`` (``root`` and ``sentinel/`` unchanged), and leave the
  repository's ``git status`` unchanged (checked once at the end of the module).

``LIBRA_FUZZ_EXAMPLES`` sets the number of generated cases across the module (default 20;
``make fuzz`` runs 500). Fixed nasty inputs found on the way are kept below as regression
cases (``CORPUS``).
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "libra_opt" / "data" / "examples"
SCENARIO = "gpt3_175b_4d.yaml"
FILES = (SCENARIO, "fabric_4d.yml", "cost_ispass24.yml", "gpt3_175b/workload.txt",
         "gpt3_175b/communicator.yml")
TOTAL = int(os.environ.get("LIBRA_FUZZ_EXAMPLES", "20"))
FUZZ = settings(
    max_examples=max(1, TOTAL // 2), deadline=None, derandomize=TOTAL <= 20,
    suppress_health_check=list(HealthCheck),
    phases=list(Phase) if TOTAL > 20 else [Phase.explicit, Phase.reuse, Phase.generate],
)
CLI = "import sys; from libra_opt.cli import main; sys.exit(main(sys.argv[1:]))"
MEMORY = 2 * 1024**3
CPU_S = 20
TIMEOUT_S = 60
_PROGRESS = re.compile(r"^\[\d+/\d+\] |^wrote ")

# Fixed cases that are known to fail (name -> reason); empty when every case passes.
XFAIL: dict[str, str] = {}

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _limits() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_S, CPU_S))


def _snapshot(path: Path, skip: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if skip not in (p, *p.parents)}


def run_case(files: dict[str, str], args: list[str]) -> tuple[int, str, str]:
    """Write ``files`` over the example in a fresh ``work/``, run ``libra-opt args`` there and
    check the contract; return (exit code, stdout, stderr)."""
    with tempfile.TemporaryDirectory(prefix="libra_fuzz_") as tmp:
        root = Path(tmp)
        work, sentinel = root / "work", root / "sentinel"
        (work / "gpt3_175b").mkdir(parents=True)
        sentinel.mkdir()
        (sentinel / "keep.txt").write_text("sentinel\n")
        for rel in FILES:
            shutil.copyfile(EXAMPLES / rel, work / rel)
        for rel, text in files.items():
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)
        before = _snapshot(root, work)
        env = {**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1",
               "OMP_NUM_THREADS": "1", "HOME": str(work), "MPLCONFIGDIR": str(work / ".mpl")}
        env.pop("PYTHONSTARTUP", None)
        try:
            proc = subprocess.run(
                [sys.executable, "-c", CLI, *args], cwd=work, env=env, preexec_fn=_limits,
                capture_output=True, text=True, errors="replace", timeout=TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"timeout after {TIMEOUT_S} s: libra-opt {_show(args)}")
        where = f"libra-opt {_show(args)} -> exit {proc.returncode}\nstderr: {proc.stderr[-2000:]}"
        assert proc.returncode in (0, 1, 2), where
        assert "Traceback" not in proc.stdout + proc.stderr, where
        if proc.returncode:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not _PROGRESS.match(ln)]
            assert len(lines) == 1, where
            assert lines[0].startswith("libra-opt"), where
        assert _snapshot(root, work) == before, f"wrote outside the work directory: {where}"
        assert (sentinel / "keep.txt").read_text() == "sentinel\n"
        return proc.returncode, proc.stdout, proc.stderr


def _show(args: list[str]) -> str:
    return " ".join(a if len(a) < 80 else a[:77] + "..." for a in args)


@pytest.fixture(scope="module", autouse=True)
def repo_untouched():
    """No run may change the repository: the shipped examples stay byte for byte, and no new
    untracked file appears (``.py`` and ``.md`` aside: other work may add those meanwhile)."""
    def state() -> tuple:
        examples = {str(p): p.read_bytes() for p in sorted(EXAMPLES.rglob("*")) if p.is_file()}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                                cwd=REPO, capture_output=True, text=True).stdout
        new = {ln for ln in status.splitlines()
               if ln.startswith("??") and not ln.endswith((".py", ".md"))}
        return examples, new
    before = state()
    yield
    assert state() == before


# ---------------------------------------------------------------------------- strategies

def _base_scenario() -> dict:
    return yaml.safe_load((EXAMPLES / SCENARIO).read_text())


NASTY_NUMBERS = st.sampled_from([
    0, -1, 1, 3, 2**31, 2**62, 2**64 + 1, 10**400, 1e300, -1e300, 1e-300, 1e18, 1e19,
    float("nan"), float("inf"), float("-inf"), 0.5, -0.0, True, 1e15, 1e16,
])
NASTY_SCALARS = st.one_of(
    NASTY_NUMBERS, st.none(), st.text(max_size=30), st.just([]), st.just({}),
    st.just([1, 2, 3]), st.just({"a": 1}), st.just("x" * 5000),
)
CONSTRAINT_TEXT = st.one_of(
    st.text(alphabet="bw[].0123456789+-*/()=<> sumcostpowerchipletpod eE", max_size=60),
    st.builds(lambda n, op, v: f"{n} {op} {v}",
              st.sampled_from(["sum(bw)", "bw.pod", "bw[0]", "cost", "power", "2*bw[3] - bw.node",
                               "bw[9]", "1e-300*bw[0]", "1e300*bw.pod", "sum(bw)*sum(bw)"]),
              st.sampled_from(["==", "<=", ">=", "=", "<", "!="]),
              st.sampled_from(["1000", "1e300", "-5", "0", "nan", "1e15", "1e16", "1e-9", "((1))"])),
)


def _paths(obj, prefix=()):
    """Every (path, value) in a nested dict/list."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _set(obj, path, value, delete=False):
    for k in path[:-1]:
        obj = obj[k]
    if delete:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value


@st.composite
def scenario_yaml(draw) -> str:
    """The example scenario with a few mutations, as YAML text (sometimes broken text)."""
    doc = _base_scenario()
    for _ in range(draw(st.integers(0, 3))):
        paths = [p for p, _ in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        action = draw(st.sampled_from(["delete", "replace", "replace", "constraint", "add"]))
        if action == "delete":
            _set(doc, path, None, delete=True)
        elif action == "replace":
            _set(doc, path, draw(NASTY_SCALARS))
        elif action == "constraint":
            doc.setdefault("constraints", {})
            if isinstance(doc["constraints"], dict):
                doc["constraints"]["linear"] = draw(st.lists(CONSTRAINT_TEXT, max_size=3))
        else:
            key = draw(st.sampled_from(["budget_usd", "power_w", "bounds", "junk"]))
            value = draw(st.one_of(NASTY_SCALARS, st.just({"pod": [None, 1e300]})))
            if isinstance(doc.get("constraints"), dict):
                doc["constraints"][key] = value
    if draw(st.booleans()) and isinstance(doc.get("fabric"), dict):
        doc["fabric"] = {"libra_network": "fabric_4d.yml"}
    try:
        text = yaml.safe_dump(doc, sort_keys=False)
    except (yaml.YAMLError, OverflowError, ValueError):
        text = "name: x\n"
    tweak = draw(st.sampled_from(["none", "none", "dup", "truncate", "garbage"]))
    if tweak == "dup":
        text += draw(st.sampled_from(["name: again\n", "objective: perf\n", "fabric: {}\n"]))
    elif tweak == "truncate":
        text = text[: draw(st.integers(0, len(text)))]
    elif tweak == "garbage":
        garbage = ["- [", "{{{", "&a [*a]", "!!python/object:os.system x", "key: !!binary AAAA"]
        text += draw(st.sampled_from(garbage + ([] if "nul_byte" in XFAIL else ["\t\x00"])))
    return text


def _mutate_lines(draw, text: str, tokens) -> str:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        parts = lines[i].split()
        action = draw(st.sampled_from(["token", "token", "drop_token", "dup_line", "del_line"]))
        if action == "token" and parts:
            parts[draw(st.integers(0, len(parts) - 1))] = draw(tokens)
            lines[i] = " ".join(parts)
        elif action == "drop_token" and parts:
            del parts[draw(st.integers(0, len(parts) - 1))]
            lines[i] = " ".join(parts)
        elif action == "dup_line":
            lines.insert(i, lines[i])
        else:
            del lines[i]
    return "\n".join(lines) + "\n"


TOKENS = st.one_of(
    st.sampled_from(["-1", "0", "1e300", "-5", "nan", "inf", "1e19", "4611686018427387904",
                     "ALLREDUCE", "ALLTOALL", "NONE", "FOO", "3", "[", "]", ":", "{", "''", "1.5"]),
    # Control characters in the random text unless the NUL-byte case is marked as failing.
    st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=12)
    if "nul_byte" in XFAIL else st.text(max_size=12),
)


@st.composite
def aux_file(draw) -> dict[str, str]:
    """One mutated referenced file (network, cost model, communicator or workload text)."""
    rel = draw(st.sampled_from(FILES[1:]))
    original = (EXAMPLES / rel).read_text()
    if rel.endswith("workload.txt"):
        lines = original.splitlines()
        original = "\n".join(lines[:12] + lines[-4:]) + "\n"  # keep it quick to parse
    return {rel: _mutate_lines(draw, original, TOKENS)}


GOOD_FLAGS = {
    "solve": [["--json"], ["--objective", "perf_per_cost"], ["--plot-dir", "plots"]],
    "evaluate": [["--bw", "500,300,150,50"], ["--json"]],
    "sweep": [["--axis", "sum(bw) == 1000=800,1000"], ["--axis", "budget_usd=1e7"],
              ["--out", "o"]],
    "workload": [["--bw", "1,2,3,4"]],
    "compare": [["--fabrics", "fat_tree,rail_only"], ["--csv", "c.csv"]],
}
GARBAGE_FLAGS = st.sampled_from([
    ["--bw", "nan,1,1,1"], ["--bw", "1e300,1,1,1"], ["--bw", "-1,2"], ["--bw", ""],
    ["--axis", "budget_usd=1:2:0"], ["--axis", "budget_usd=1:1e300:3"], ["--axis", "x=a,b"],
    ["--axis", "budget_usd=1:2:3:lin"], ["--axis", "budget_usd"], ["--axis", "(((((=1"],
    ["--axis", "power_w=1"], ["--objective", "x"],
    ["--fabrics", "nope"], ["--fabrics", ""], ["--plot", "p.xyz"], ["--csv", "dir/"],
    ["--unknown"], ["-v"], ["--json", "--json"], ["--plot-dir", "a/b/c"], ["--export", "exp"],
])


@st.composite
def cli_args(draw) -> list[str]:
    cmd = draw(st.sampled_from(sorted(GOOD_FLAGS)))
    args = [cmd, draw(st.sampled_from([SCENARIO, SCENARIO, "gpt3_175b_4d", "missing.yaml", "",
                                       "-", "gpt3_175b", "/dev/null"]))]
    for flags in GOOD_FLAGS[cmd]:
        if draw(st.integers(0, 3)):
            args += flags
    for _ in range(draw(st.integers(0, 2))):
        args += draw(GARBAGE_FLAGS)
    return args


# ---------------------------------------------------------------------------- fuzz tests

@FUZZ
@given(scenario=scenario_yaml(), aux=st.one_of(st.just({}), aux_file()),
       command=st.sampled_from(["solve", "evaluate", "sweep"]))
def test_fuzz_scenario_files(scenario, aux, command):
    extra = {"evaluate": ["--bw", "500,300,150,50"],
             "sweep": ["--axis", "sum(bw) == 1000=900,1000"]}.get(command, [])
    run_case({SCENARIO: scenario, **aux}, [command, SCENARIO, *extra])


@FUZZ
@given(args=cli_args())
def test_fuzz_cli_arguments(args):
    run_case({}, args)


# ---------------------------------------------------------------------------- regression corpus

def _edit(old: str, new: str, rel: str = SCENARIO) -> dict[str, str]:
    text = (EXAMPLES / rel).read_text()
    assert old in text
    return {rel: text.replace(old, new)}


CORPUS = {
    "rhs_1e300": (_edit("sum(bw) == 1000", "sum(bw) == 1e300"), ["solve", SCENARIO], 2),
    "cost_rhs_1e300": (_edit("sum(bw) == 1000", "cost <= 1e300"), ["solve", SCENARIO], 2),
    "tiny_coefficient": (_edit("sum(bw) == 1000", "1e-12*sum(bw) == 1e-9"), ["solve", SCENARIO], 2),
    "lower_bound_only": (_edit('"sum(bw) == 1000"', '"sum(bw) >= 1e5"'), ["solve", SCENARIO], 1),
    "absurd_bandwidth": (_edit('"sum(bw) == 1000"', '"sum(bw) >= 1e14"'), ["solve", SCENARIO], 2),
    "npus_2_62": (_edit("size: 32, tier: InterPod", "size: 4611686018427387904, tier: InterPod"),
                  ["solve", SCENARIO], 2),
    "collective_1e300": (_edit("75497472", "1e300", "gpt3_175b/workload.txt"), ["solve", SCENARIO], 2),
    "budget_1e300": (_edit('    - "sum(bw) == 1000"', '    - "sum(bw) == 1000"\n  budget_usd: 1.0e300'),
                     ["solve", SCENARIO], 2),
    "parens_20000": (_edit('"sum(bw) == 1000"', '"' + "(" * 20000 + '"'), ["solve", SCENARIO], 2),
    "sweep_count_1e12": ({}, ["sweep", SCENARIO, "--axis",
                              "sum(bw) == 1000=500:1000:1000000000000"], 2),
    "plot_xyz": ({}, ["compare", SCENARIO, "--fabrics", "fat_tree,rail_only", "--plot",
                      "x.xyz"], 2),
    "name_escape": (_edit("name: gpt3_175b_4d", "name: ../../escaped"),
                    ["solve", SCENARIO, "--plot-dir", "plots"], None),
    "python_tag": (_edit("name: gpt3_175b_4d", "name: !!python/object/apply:os.system [touch pwned]"),
                   ["solve", SCENARIO], 2),
    "nul_byte": ({SCENARIO: (EXAMPLES / SCENARIO).read_text() + "\t\x00"}, ["solve", SCENARIO], 2),
    "yaml_bomb": ({SCENARIO: "a: &a [x, x, x, x, x, x, x, x, x]\n"
                   + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
                             for p, c in zip("abcdefgh", "bcdefghi", strict=True))},
                  ["solve", SCENARIO], 2),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_regression_corpus(name):
    if name in XFAIL:
        pytest.xfail(XFAIL[name])
    files, args, want = CORPUS[name]
    code, _, err = run_case(files, args)
    if want is not None:
        assert code == want, err
    if name == "python_tag":
        assert "pwned" not in err


def test_valid_example_solves():
    """The unmutated example: exit 0 and a JSON answer (the baseline every mutation starts from)."""
    code, out, _ = run_case({}, ["solve", SCENARIO, "--json"])
    assert code == 0 and '"status"' in out
