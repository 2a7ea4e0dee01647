"""Override any field of a scenario by a dotted path: ``--set PATH=VALUE`` and sweep axes.

Path grammar (the same for :func:`apply_overrides`, ``libra-opt solve|evaluate --set`` and
the axes of :func:`libra_opt.explore.grid.sweep`):

* **Right-hand sides** (re-solved without rebuilding the problem): ``budget_usd`` and
  ``power_w`` (also spelled ``constraints.budget_usd`` / ``constraints.power_w``; setting one
  on a scenario without it adds the cap, ``None`` removes it), and the label of a linear
  constraint, i.e. its text exactly as the scenario shows it (``"sum(bw) == 1000"``,
  ``"bw.hb >= 100.0"``).
* **Scenario fields**: ``objective``, ``collective_model``, ``training_loop``,
  ``traffic_model``, ``name``, ``in_network_reduction`` (a list of switch dimension names,
  ``[pod]``, ``[]``; a single name or ``none`` is also taken) and
  ``workloads.<name>.weight``.
* **Fields of the scenario's YAML document**, any path into it: mapping keys joined by
  dots, list items picked by ``[i]`` (0-based) or by their ``name`` (``.<name>`` or
  ``[<name>]`` for names with dots). Examples: ``fabric.dims.pod.size``,
  ``fabric.dims[3].latency_s``, ``fabric.hb_domain`` and ``fabric.n_npus`` of a builder
  fabric, ``workloads.gpt3.parallelism.tp``, ``workloads[0].device``,
  ``constraints.bounds.scaleout[1]``, ``constraints.linear[0]``, ``tco.pue``. The scenario is
  rebuilt from the edited document, so derived data follows (a communicator's ``-1`` spans,
  a model-generated workload's traffic and compute). A scenario object remembers its file
  (``Scenario.source``); a document path on a scenario that no longer equals that file
  (apart from the scenario fields above, the caps and the constraints, which are carried
  over) is refused. Without a file, ``fabric.dims.<name>.<field>`` edits the dimension
  in place (the workloads' group spans must still fit); other document paths need a file.

A value of a numeric field may be given as text (``"8"``, ``"2e7"``); a float with an integral
value is taken as an integer where the document holds an integer.

Examples
--------
>>> from libra_opt.scenario.examples import toy_scenario
>>> s = apply_overrides(toy_scenario(), {"budget_usd": 5e5, "fabric.dims.pod.size": 4,
...                                      "sum(bw) == 300": 600})
>>> s.budget_usd, s.fabric.sizes, s.constraints[0].rhs
(500000.0, (4, 4), 600.0)
>>> apply_overrides(toy_scenario(), {"objective": "fast"})
Traceback (most recent call last):
...
libra_opt.errors.InputError: <api>: objective: 'fast' is not one of perf, perf_per_cost, tco
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.io.scenario_file import load_scenario, scenario_from_dict
from libra_opt.io.yaml_util import load_yaml
from libra_opt.options import COLLECTIVE_MODELS, OBJECTIVES, TRAFFIC_MODELS, TRAINING_LOOPS
from libra_opt.scenario.scenario import Scenario, unique_labels

__all__ = [
    "CAP_PATHS",
    "SCENARIO_FIELDS",
    "ScenarioBase",
    "apply_overrides",
    "canonical_path",
    "parse_assignment",
    "parse_value",
    "rhs_labels",
]

#: Caps whose value is a right-hand side (aliases -> canonical name).
CAP_PATHS: dict[str, str] = {
    "budget_usd": "budget_usd",
    "power_w": "power_w",
    "constraints.budget_usd": "budget_usd",
    "constraints.power_w": "power_w",
}
#: Scenario fields set directly (not through the document).
SCENARIO_FIELDS = ("objective", "collective_model", "training_loop", "traffic_model", "name",
                   "in_network_reduction")
# Fields a document path may find changed in a scenario object and carries over.
_CARRIED = ("objective", "collective_model", "training_loop", "traffic_model", "name",
            "in_network_reduction",
            "budget_usd", "power_w", "weights", "constraints")
_DIM_FIELDS = tuple(f.name for f in dataclasses.fields(Dim))
_CHOICES: dict[str, tuple[str, ...]] = {
    "objective": OBJECTIVES, "collective_model": COLLECTIVE_MODELS,
    "training_loop": TRAINING_LOOPS, "traffic_model": TRAFFIC_MODELS,
}
_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")
_API = "<api>"


def parse_value(text: str) -> Any:
    """A value given as text on the command line: a number, ``true``/``false``, ``null``,
    a YAML list or mapping (``[1, 2]``, ``{tp: 8}``), else the text itself.

    Examples
    --------
    >>> parse_value("8"), parse_value("2e7"), parse_value("true"), parse_value("perf")
    (8, 20000000.0, True, 'perf')
    >>> parse_value("[100, null]"), parse_value("null")
    ([100, None], None)
    """
    s = text.strip()
    for conv in (int, float):
        try:
            return conv(s)
        except ValueError:
            pass
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("null", "none", "~"):
        return None
    if s[:1] in "[{":
        try:
            return yaml.safe_load(s)
        except yaml.YAMLError:
            raise InputError(f"malformed list or mapping {short_repr(s)}",
                             source="<cli>", field="--set") from None
    return s


def parse_assignment(text: str, flag: str = "--set") -> tuple[str, str]:
    """``PATH=VALUE`` split at the last ``=`` (a constraint label may hold ``==``, ``>=``).

    Examples
    --------
    >>> parse_assignment("fabric.hb_domain=16")
    ('fabric.hb_domain', '16')
    >>> parse_assignment("sum(bw) == 1000=1200")
    ('sum(bw) == 1000', '1200')
    """
    path, sep, value = text.rpartition("=")
    if not sep or not path.strip() or not value.strip() or path.rstrip()[-1:] in "=<>!":
        raise InputError(f"expected PATH=VALUE, got {short_repr(text)}", source="<cli>",
                         field=flag)
    return path.strip(), value.strip()


def canonical_path(path: str) -> str:
    """``constraints.budget_usd`` -> ``budget_usd`` (and ``power_w``); other paths unchanged."""
    return CAP_PATHS.get(path, path)


def rhs_labels(scenario: Scenario) -> list[str]:
    """Labels of the scenario's linear constraints (repeats numbered, as in the rows)."""
    return unique_labels([c.label for c in scenario.constraints])


def _segments(path: str) -> list[str | int]:
    """``fabric.dims[3].size`` -> ``['fabric', 'dims', 3, 'size']``."""
    out: list[str | int] = []
    pos = 0
    text = path.strip()
    while pos < len(text):
        if text[pos] == "." and out:
            pos += 1
        m = _SEGMENT.match(text, pos)
        if m is None or m.end() == pos:
            raise InputError(f"malformed path {short_repr(path)}: expected keys joined by "
                             "dots, list items as [i] or by name", source=_API, field=path)
        key = m.group(1) if m.group(1) is not None else m.group(2).strip()
        if m.group(2) is not None and re.fullmatch(r"-?\d+", key):
            out.append(int(key))
        elif not key:
            raise InputError(f"malformed path {short_repr(path)}: empty key", source=_API,
                             field=path)
        else:
            out.append(key)
        pos = m.end()
    if not out:
        raise InputError("empty path", source=_API, field=path)
    return out


def _compatible(old: Any, new: Any, path: str) -> Any:
    """``new`` checked against the kind of ``old`` (numbers stay numbers, text stays text)."""
    if old is None or new is None:
        return new
    if path.endswith(".device") and isinstance(old, str | dict) and isinstance(new, str | dict):
        return new  # a preset name or a {preset: ..., field: value} mapping, either way
    if isinstance(old, bool):
        if not isinstance(new, bool):
            raise InputError(f"expected true or false, got {short_repr(new)}", source=_API,
                             field=path)
        return new
    if isinstance(old, int | float):
        if isinstance(new, bool) or not isinstance(new, int | float):
            raise InputError(f"expected a number, got {short_repr(new)}", source=_API,
                             field=path)
        if isinstance(old, int) and isinstance(new, float) and new.is_integer():
            return int(new)
        return new
    if isinstance(old, str):
        if not isinstance(new, str):
            raise InputError(f"expected text, got {short_repr(new)}", source=_API, field=path)
    if isinstance(old, list) and not isinstance(new, list):
        raise InputError(f"expected a list, got {short_repr(new)}", source=_API, field=path)
    if isinstance(old, dict) and not isinstance(new, dict):
        raise InputError(f"expected a mapping, got {short_repr(new)}", source=_API, field=path)
    return new


def _child(node: Any, key: str | int, path: str, where: str) -> tuple[Any, str | int]:
    """The container index of ``key`` in ``node`` (list items also by ``name``)."""
    if isinstance(node, list):
        if isinstance(key, int):
            if not -len(node) <= key < len(node):
                raise InputError(f"index {key} is out of range under {where!r} "
                                 f"({len(node)} items)", source=_API, field=path)
            return node, key
        names = [item.get("name") for item in node if isinstance(item, dict)]
        if key not in names:
            shown = ", ".join(str(n) for n in names if n is not None) or "none"
            raise InputError(f"no item named {short_repr(key, 60)} under {where!r} "
                             f"(names: {shown})", source=_API, field=path)
        return node, names.index(key)
    if isinstance(node, dict):
        if isinstance(key, int):
            raise InputError(f"{where!r} is a mapping, not a list: use .key", source=_API,
                             field=path)
        return node, key
    raise InputError(f"{where!r} holds {short_repr(node, 60)}, not a mapping or list",
                     source=_API, field=path)


def _set_in_document(doc: dict, path: str, value: Any) -> bool:
    """Set ``path`` in ``doc`` (in place); new keys may be added to mappings, and missing
    mappings on the way are created (``collectives.chunks`` on a file without a
    ``collectives:`` block); the strict schema then rejects keys it does not know.
    Returns whether the key is new."""
    segs = _segments(path)
    node: Any = doc
    where = ""
    for i, key in enumerate(segs):
        container, k = _child(node, key, path, where or "the document")
        last = i == len(segs) - 1
        if isinstance(container, dict) and k not in container:
            if not last:
                if not isinstance(segs[i + 1], str):
                    keys = ", ".join(map(str, container)) or "none"
                    raise InputError(f"no key {short_repr(k, 60)} under "
                                     f"{where or 'the document'!r} (keys: {keys})",
                                     source=_API, field=path)
                container[k] = {}
                node = container[k]
                where = f"{where}.{key}" if where else str(key)
                continue
            container[k] = value
            return True
        if last:
            container[k] = _compatible(container[k], value, path)  # type: ignore[index]
            return False
        node = container[k]  # type: ignore[index]
        where = f"{where}.{key}" if where else str(key)
    return False  # not reached: the last segment returns


def _rewrap(exc: InputError, path: str) -> InputError:
    """An error of the rebuilt scenario, blamed on the override ``path``."""
    detail = f"{exc.field}: {exc.message}" if exc.field and exc.field != path else exc.message
    return InputError(detail, source=_API, field=path)


def _scenario_fields(scen: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """Set scenario fields, workload weights and caps; errors name the path."""
    kwargs: dict[str, Any] = {}
    weights = list(scen.weights or ())
    names = [w.name for w in scen.workloads]
    for path, value in changes.items():
        if path in CAP_PATHS:
            if value is not None:
                value = _number(value, path)
            kwargs[CAP_PATHS[path]] = value
        elif path == "in_network_reduction":
            kwargs[path] = _dim_names(value, path)
        elif path in SCENARIO_FIELDS:
            kwargs[path] = value
        else:  # workloads.<name>.weight
            segs = _segments(path)
            i = segs[1] if isinstance(segs[1], int) else names.index(str(segs[1]))
            weights[i] = _number(value, path)
            kwargs["weights"] = tuple(weights)
    try:
        return dataclasses.replace(scen, **kwargs)
    except InputError as exc:
        bad = next((p for p in changes if exc.field and CAP_PATHS.get(p, p).split(".")[-1]
                    in exc.field), next(iter(changes)))
        raise InputError(exc.message, source=_API, field=bad) from None


def _dim_names(value: Any, path: str) -> tuple[str, ...]:
    """A list of dimension names given as a list, a YAML list text, one name, or none.

    Examples
    --------
    >>> _dim_names("[pod, node]", "p"), _dim_names("pod", "p"), _dim_names("none", "p")
    (('node', 'pod'), ('pod',), ())
    """
    if isinstance(value, str):
        value = parse_value(value)
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(sorted(set(value)))
    raise InputError(f"expected a list of dimension names, got {short_repr(value)}",
                     source=_API, field=path)


def _number(value: Any, path: str) -> float:
    if isinstance(value, str):
        value = parse_value(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(f"expected a finite number, got {short_repr(value)}", source=_API,
                         field=path)
    return float(value)


def _set_rhs(scen: Scenario, label: str, value: Any) -> Scenario:
    labels = rhs_labels(scen)
    i = labels.index(label)
    cons = list(scen.constraints)
    cons[i] = dataclasses.replace(cons[i], rhs=_number(value, label))
    try:
        return dataclasses.replace(scen, constraints=tuple(cons))
    except InputError as exc:
        raise InputError(exc.message, source=_API, field=label) from None


def _is_weight(path: str, scen: Scenario) -> bool:
    segs = path.split(".")
    return (len(segs) == 3 and segs[0] == "workloads" and segs[2] == "weight"
            and segs[1] in {w.name for w in scen.workloads})


def _dim_of(fabric: Fabric, path: str) -> tuple[Dim, str]:
    """The dimension and field named by ``fabric.dims.<name|[i]>.<field>``."""
    segs = _segments(path)
    if len(segs) != 4 or segs[:2] != ["fabric", "dims"] or segs[3] not in _DIM_FIELDS:
        raise InputError(
            "this path needs the scenario's YAML document, and this scenario was not read "
            "from a file (in place: fabric.dims.<name>.<field>, with field one of "
            f"{', '.join(_DIM_FIELDS)})", source=_API, field=path)
    key, dims = segs[2], fabric.dims
    names = [d.name for d in dims]
    if isinstance(key, int):
        if not -len(dims) <= key < len(dims):
            raise InputError(f"index {key} is out of range ({len(dims)} dimensions)",
                             source=_API, field=path)
        return dims[key], str(segs[3])
    if key not in names:
        raise InputError(f"no dimension named {short_repr(key, 60)} (names: "
                         f"{', '.join(names)})", source=_API, field=path)
    return dims[names.index(key)], str(segs[3])


def _dims_in_place(scen: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """``fabric.dims.<name|[i]>.<field>`` applied to the scenario's own fabric."""
    dims = list(scen.fabric.dims)
    for path, value in changes.items():
        dim, field = _dim_of(Fabric(tuple(dims)), path)
        d = dims.index(dim)
        if isinstance(value, str) and field not in ("name", "topology", "tier", "switch_scope",
                                                     "switch_pricing"):
            value = parse_value(value)
        value = _compatible(getattr(dims[d], field), value, path)
        try:
            dims[d] = dataclasses.replace(dims[d], **{field: value})
        except InputError as exc:
            raise _rewrap(exc, path) from None
    try:
        return dataclasses.replace(scen, fabric=Fabric(tuple(dims)))
    except InputError as exc:
        raise _rewrap(exc, next(iter(changes))) from None


@dataclass(frozen=True)
class ScenarioBase:
    """A scenario, with its YAML document when it came from a file: what overrides apply to.

    Build with :meth:`of`; :meth:`apply` returns a new scenario. Picklable, so a sweep's
    workers rebuild their own scenarios from it.
    """

    scenario: Scenario
    document: dict | None = None
    base_dir: str = "."
    carried: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, scenario: Scenario | str | Path) -> ScenarioBase:
        """From a scenario object, a scenario file or the name of a shipped example.

        Raises
        ------
        InputError
            If the scenario cannot be loaded.
        """
        trusted = not isinstance(scenario, Scenario)
        scen = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        src = scen.source
        if not src or not Path(src).is_file():
            return cls(scen)
        try:
            doc = load_yaml(src)
        except InputError:
            return cls(scen)
        base_dir = str(Path(src).parent)
        if trusted:
            return cls(scen, doc, base_dir)
        try:
            fresh = scenario_from_dict(copy.deepcopy(doc), src, base_dir)
        except InputError:  # the file changed since: document paths are refused
            return cls(scen)
        diff = [f.name for f in dataclasses.fields(Scenario)
                if f.compare and getattr(fresh, f.name) != getattr(scen, f.name)]
        if set(diff) - set(_CARRIED):
            return cls(scen, None, base_dir, (("__differs__", tuple(diff)),))
        return cls(scen, doc, base_dir, tuple((k, getattr(scen, k)) for k in diff))

    def classify(self, path: str) -> str:
        """``rhs`` (a cap or a constraint label), ``field`` (a scenario field or a workload
        weight) or ``document`` (rebuilt from the YAML document)."""
        if path in CAP_PATHS or path in rhs_labels(self.scenario):
            return "rhs"
        if path in SCENARIO_FIELDS or _is_weight(path, self.scenario):
            return "field"
        return "document"

    def check(self, path: str, value: Any, fields: Mapping[str, Any] | None = None) -> Any:
        """Check that ``path`` exists and ``value`` fits its kind before anything is built;
        returns the value as it will be set (text parsed, integral floats as integers).

        ``fields``: scenario-field overrides made together with this one (checked values);
        a new document key is tried with them (``tp_comm_overlap`` needs
        ``training_loop: overlap`` in the same call, say).

        Raises
        ------
        InputError
            Naming ``path`` and what was expected.
        """
        kind = self.classify(path)
        if kind == "rhs":
            return None if value is None and path in CAP_PATHS else _number(value, path)
        if kind == "field":
            if _is_weight(path, self.scenario):
                v = _number(value, path)
                if v <= 0:
                    raise InputError(f"weight must be > 0, got {v:g}", source=_API, field=path)
                return v
            if path == "in_network_reduction":
                return _dim_names(value, path)
            allowed = _CHOICES.get(path)
            if allowed is not None and value not in allowed:
                raise InputError(f"{short_repr(value, 60)} is not one of {', '.join(allowed)}",
                                 source=_API, field=path)
            if path == "name" and not isinstance(value, str):
                raise InputError(f"expected text, got {short_repr(value)}", source=_API,
                                 field=path)
            return value
        if isinstance(value, str) and (
                not path.endswith(("name", "topology", "tier", "model", "device", "builder"))
                or (path.endswith("device") and value.lstrip().startswith("{"))):
            value = parse_value(value)  # a device may be {preset: ..., field: value}
        if self.document is None:
            self._no_document(path)
            dim, field = _dim_of(self.scenario.fabric, path)
            return _compatible(getattr(dim, field), value, path)
        probe = copy.deepcopy(self.document)
        if _set_in_document(probe, path, value):  # a new key: the schema must take it
            self._rebuilt({**_in_document(fields or {}), path: value})
        node: Any = probe
        for seg in _segments(path):  # read back what was set (type-adjusted)
            container, k = _child(node, seg, path, "")
            node = container[k]  # type: ignore[index]
        return node

    def _no_document(self, path: str) -> None:
        differs = dict(self.carried).get("__differs__")
        if differs:
            raise InputError(
                f"document paths need a scenario equal to its file {self.scenario.source}; this "
                f"one differs in {', '.join(differs)} (pass the file, or edit it in place)",
                source=_API, field=path)
        if _segments(path)[:2] != ["fabric", "dims"]:
            raise InputError(
                "this path needs the scenario's YAML document, and this scenario was not read "
                "from a file (scenario fields: " + ", ".join(SCENARIO_FIELDS)
                + ", workloads.<name>.weight, budget_usd, power_w, constraint labels, "
                "fabric.dims.<name>.<field>)", source=_API, field=path)

    def apply(self, overrides: Mapping[str, Any]) -> Scenario:
        """The scenario with ``overrides`` (path -> value) applied.

        Raises
        ------
        InputError
            Naming the path and what was expected; an override the rebuilt scenario
            rejects is blamed on its path.
        """
        doc_changes: dict[str, Any] = {}
        fields: dict[str, Any] = {}
        rhs: dict[str, Any] = {}
        for path in overrides:
            if not isinstance(path, str) or not path.strip():
                raise InputError(f"expected a path, got {short_repr(path)}", source=_API,
                                 field="overrides")
        kinds = {path: self.classify(path) for path in overrides}
        for path, value in overrides.items():  # fields first: document checks see them
            if kinds[path] == "field" or (kinds[path] == "rhs" and path in CAP_PATHS):
                fields[path] = self.check(path, value)
        for path, value in overrides.items():
            if kinds[path] == "document":
                doc_changes[path] = self.check(path, value, fields)
            elif kinds[path] == "rhs" and path not in CAP_PATHS:
                rhs[path] = self.check(path, value)
        scen = self.scenario
        if doc_changes:
            scen = self._rebuilt({**_in_document(fields), **doc_changes})
        if fields:
            scen = _scenario_fields(scen, fields)
        for label, value in rhs.items():
            if label not in rhs_labels(scen):
                raise InputError(f"no constraint labelled {short_repr(label, 80)} after the "
                                 "other overrides", source=_API, field=label)
            scen = _set_rhs(scen, label, value)
        return scen

    def derive(self, overrides: Mapping[str, Any]) -> ScenarioBase:
        """A base with ``overrides`` applied that keeps a document (for ``--set`` followed by
        sweep axes): document paths edit the document, the other changes are carried.

        Examples
        --------
        >>> b = ScenarioBase.of("deepseek_v3_rail_only").derive({"fabric.hb_domain": 16,
        ...                                                      "objective": "perf_per_cost"})
        >>> b.apply({"fabric.n_npus": 8192, "workloads.deepseek_v3.parallelism.dp": 512}
        ...         ).fabric.sizes, b.scenario.objective
        ((16, 512), 'perf_per_cost')
        """
        scen = self.apply(overrides)
        if self.document is None:
            return replace_base(self, scen, None, ())
        doc = copy.deepcopy(self.document)
        fields = {p: getattr(scen, p) for p in overrides if p in SCENARIO_FIELDS}
        documented = {p for p in overrides if self.classify(p) == "document"}
        if documented:  # the document alone must build: scenario fields go into it too
            for path, value in _in_document(fields).items():
                _set_in_document(doc, path, value)
        for path in documented:
            _set_in_document(doc, path, self.check(path, overrides[path], fields))
        fresh = scenario_from_dict(copy.deepcopy(doc), scen.source or _API, self.base_dir)
        carried = tuple((k, getattr(scen, k)) for k in _CARRIED
                        if getattr(scen, k) != getattr(fresh, k))
        return replace_base(self, scen, doc, carried)

    def _rebuilt(self, changes: Mapping[str, Any]) -> Scenario:
        if self.document is None:
            for path in changes:
                self._no_document(path)
            return _dims_in_place(self.scenario, changes)
        doc = copy.deepcopy(self.document)
        carried = {k: v for k, v in self.carried if k != "__differs__"}
        # carried scenario fields that are document keys go in first (a new document key
        # may need them, e.g. tp_comm_overlap needs training_loop: overlap)
        for path, value in {**_in_document(carried), **changes}.items():
            _set_in_document(doc, path, value)
        src = self.scenario.source or _API
        try:
            scen = scenario_from_dict(doc, src, self.base_dir)
        except InputError as exc:
            raise _rewrap(exc, next(iter(changes)) if len(changes) == 1
                          else ", ".join(changes)) from None
        if carried:
            try:
                scen = dataclasses.replace(scen, **carried)
            except InputError as exc:
                raise _rewrap(exc, ", ".join(changes)) from None
        return scen


def _in_document(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario-field overrides that are also top-level keys of the YAML document, as
    document values."""
    return {k: (list(v) if k == "in_network_reduction" else v)
            for k, v in fields.items() if k in SCENARIO_FIELDS}


def replace_base(
    base: ScenarioBase, scenario: Scenario, document: dict | None,
    carried: tuple[tuple[str, Any], ...],
) -> ScenarioBase:
    """``base`` with a new scenario, document and carried fields."""
    return dataclasses.replace(base, scenario=scenario, document=document, carried=carried)


def apply_overrides(
    scenario: Scenario | str | Path, overrides: Mapping[str, Any]
) -> Scenario:
    """A new scenario with fields overridden by dotted path (see the module notes).

    Parameters
    ----------
    scenario : Scenario, str or pathlib.Path
        A scenario, a scenario file or the name of a shipped example.
    overrides : mapping of str to value
        Path -> value; values may be given as text (``parse_value``).

    Returns
    -------
    Scenario

    Raises
    ------
    InputError
        Naming the path and what was expected.

    Examples
    --------
    >>> s = apply_overrides("deepseek_v3_rail_only", {"fabric.hb_domain": 16})
    >>> s.fabric.sizes
    (16, 256)
    >>> apply_overrides("gpt3_175b_4d", {"fabric.dims.pod.latency_s": "2e-6"}).fabric.dims[3]
    Dim(name='pod', topology='switch', size=32, tier='InterPod', latency_s=2e-06, switch_radix=None, switch_scope='block', switch_pricing='whole_switch', copper_levels=0)
    >>> apply_overrides("gpt3_175b_4d", {"fabric.dims.pod.colour": 3})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <api>: fabric.dims.pod.colour: fabric.dims[3]: unknown key 'colour'
    """
    return ScenarioBase.of(scenario).apply(overrides)
