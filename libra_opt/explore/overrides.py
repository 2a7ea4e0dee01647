"""Override any field of a scenario by a dotted path: ``--set PATH=VALUE`` and sweep axes.

A scenario compiled from a :class:`~libra_opt.scenario.spec.ScenarioSpec` is edited through
its spec (the path grammar of :mod:`libra_opt.scenario.edit`), which is compiled again, so
derived data follows. Nothing is read from a file unless the edit names one (``resolve``
reads it). A scenario built from objects has no spec; it takes the scenario fields
(:data:`SCENARIO_FIELDS`), ``workloads.<name>.weight``, the caps, constraint labels and
``fabric.dims.<name|[i]>.<field>`` (edited in place).

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

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.options import COLLECTIVE_MODELS, OBJECTIVES, TRAFFIC_MODELS, TRAINING_LOOPS
from libra_opt.scenario.compile import compile
from libra_opt.scenario.edit import (
    CAP_PATHS,
    _dim_names,
    _number,
    canonical_path,
    compatible,
    get_path,
    parse_value,
    segments,
)
from libra_opt.scenario.scenario import Scenario, unique_labels
from libra_opt.scenario.spec import API_SOURCE, ScenarioSpec

__all__ = [
    "CAP_PATHS",
    "SCENARIO_FIELDS",
    "Resolver",
    "ScenarioBase",
    "apply_overrides",
    "canonical_path",
    "edit_key",
    "parse_assignment",
    "parse_value",
    "rhs_labels",
]

#: Reads a spec's unresolved file-backed entries (:func:`libra_opt.io.resolve_spec`).
Resolver = Callable[[ScenarioSpec], ScenarioSpec]
#: Scenario fields a scenario without a spec takes directly.
SCENARIO_FIELDS = ("objective", "collective_model", "training_loop", "traffic_model", "name",
                   "in_network_reduction")
_DIM_FIELDS = tuple(f.name for f in dataclasses.fields(Dim))
_CHOICES: dict[str, tuple[str, ...]] = {
    "objective": OBJECTIVES, "collective_model": COLLECTIVE_MODELS,
    "training_loop": TRAINING_LOOPS, "traffic_model": TRAFFIC_MODELS,
}
_API = API_SOURCE
#: Most scenarios a base keeps compiled (a sweep's structural values beyond it are compiled
#: again when their points run).
_MEMO_SIZE = 256


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


def rhs_labels(scenario: Scenario) -> list[str]:
    """Labels of the scenario's linear constraints (repeats numbered, as in the rows)."""
    return unique_labels([c.label for c in scenario.constraints])


def _rewrap(exc: InputError, path: str) -> InputError:
    """An error of the edited scenario, blamed on the override ``path``."""
    detail = f"{exc.field}: {exc.message}" if exc.field and exc.field != path else exc.message
    return InputError(detail, source=_API, field=path)


# ------------------------------------------------------------ scenarios without a spec


def _is_weight(path: str, scen: Scenario) -> bool:
    segs = path.split(".")
    return (len(segs) == 3 and segs[0] == "workloads" and segs[2] == "weight"
            and segs[1] in {w.name for w in scen.workloads})


def _check_field(scen: Scenario, path: str, value: Any) -> Any:
    if _is_weight(path, scen):
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
        raise InputError(f"expected text, got {short_repr(value)}", source=_API, field=path)
    return value


def _scenario_fields(scen: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """Set scenario fields, workload weights and caps; errors name the path."""
    kwargs: dict[str, Any] = {}
    weights = list(scen.weights or ())
    names = [w.name for w in scen.workloads]
    for path, value in changes.items():
        if path in CAP_PATHS:
            kwargs[CAP_PATHS[path]] = value
        elif _is_weight(path, scen):
            weights[names.index(path.split(".")[1])] = value
            kwargs["weights"] = tuple(weights)
        else:
            kwargs[path] = value
    try:
        return dataclasses.replace(scen, **kwargs)
    except InputError as exc:
        bad = next((p for p in changes if exc.field and CAP_PATHS.get(p, p).split(".")[-1]
                    in exc.field), next(iter(changes)))
        raise InputError(exc.message, source=_API, field=bad) from None


def _dim_of(fabric: Fabric, path: str) -> tuple[Dim, str]:
    """The dimension and field named by ``fabric.dims.<name|[i]>.<field>``."""
    segs = segments(path)
    if len(segs) != 4 or segs[:2] != ["fabric", "dims"] or segs[3] not in _DIM_FIELDS:
        raise InputError(
            "this path needs the scenario's spec, and this scenario was built from objects "
            "(compile a ScenarioSpec, or read a file; here: scenario fields "
            + ", ".join(SCENARIO_FIELDS) + ", workloads.<name>.weight, budget_usd, power_w, "
            "constraint labels, fabric.dims.<name>.<field> with field one of "
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


def _check_dim(scen: Scenario, path: str, value: Any) -> Any:
    dim, field = _dim_of(scen.fabric, path)
    if isinstance(value, str) and field in ("name", "topology", "tier", "switch_scope",
                                            "switch_pricing"):
        return value
    return compatible(getattr(dim, field), value, path)


def _dims_in_place(scen: Scenario, changes: Mapping[str, Any]) -> Scenario:
    """``fabric.dims.<name|[i]>.<field>`` applied to the scenario's own fabric."""
    dims = list(scen.fabric.dims)
    for path, value in changes.items():
        dim, field = _dim_of(Fabric(tuple(dims)), path)
        d = dims.index(dim)
        try:
            dims[d] = dataclasses.replace(dims[d], **{field: value})
        except InputError as exc:
            raise _rewrap(exc, path) from None
    try:
        return dataclasses.replace(scen, fabric=Fabric(tuple(dims)))
    except InputError as exc:
        raise _rewrap(exc, next(iter(changes))) from None


def _set_rhs(scen: Scenario, label: str, value: float) -> Scenario:
    i = rhs_labels(scen).index(label)
    cons = list(scen.constraints)
    cons[i] = dataclasses.replace(cons[i], rhs=value)
    try:
        return dataclasses.replace(scen, constraints=tuple(cons))
    except InputError as exc:
        raise InputError(exc.message, source=_API, field=label) from None


# ------------------------------------------------------------------------- the base


@dataclass(frozen=True)
class ScenarioBase:
    """What overrides apply to: a scenario and, when it has one, its spec (picklable: a
    sweep's workers build their own scenarios from it).

    Parameters
    ----------
    scenario : Scenario
    spec : ScenarioSpec, optional
        The recipe edits apply to (``scenario.spec``); ``None`` for a scenario built from
        objects.
    resolve : callable, optional
        Reads a spec's unresolved file-backed entries (:func:`libra_opt.io.resolve_spec`),
        for edits that name a model, device or file; without it such an edit is refused.
    """

    scenario: Scenario
    spec: ScenarioSpec | None = None
    resolve: Resolver | None = None
    # scenarios compiled from this base, by edit, and specs edited by check, by (path,
    # value) (bounded, never pickled)
    _built: dict[Any, Scenario] = field(default_factory=dict, init=False, repr=False,
                                        compare=False)
    _checked: dict[Any, ScenarioSpec] = field(default_factory=dict, init=False, repr=False,
                                              compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_built": {}, "_checked": {}}

    @classmethod
    def of(cls, scenario: Scenario | ScenarioSpec, resolve: Resolver | None = None
           ) -> ScenarioBase:
        """From a scenario (its spec, if any) or a spec (compiled here).

        Raises
        ------
        InputError
            If ``scenario`` is neither, or the spec does not compile.
        """
        if isinstance(scenario, ScenarioSpec):
            spec = resolve(scenario) if resolve is not None else scenario
            return cls(compile(spec), spec, resolve)
        if not isinstance(scenario, Scenario):
            raise InputError(f"expected a Scenario or a ScenarioSpec, got "
                             f"{type(scenario).__name__} (a file or example name is read by "
                             "libra_opt.load_scenario)", source=_API, field="scenario")
        return cls(scenario, scenario.spec, resolve)

    def classify(self, path: str) -> str:
        """``rhs`` (a cap or a constraint label), ``field`` (a scenario field or a workload
        weight) or ``structural`` (any other path: the scenario is compiled again)."""
        if path in CAP_PATHS or path in rhs_labels(self.scenario):
            return "rhs"
        if path in SCENARIO_FIELDS or _is_weight(path, self.scenario):
            return "field"
        return "structural"

    def weight_of(self, path: str) -> str | None:
        """The workload whose weight ``path`` (``workloads.<name|[i]>.weight``) sets, when
        that weight is the compiled scenario's own (not under DiLoCo, whose outer sync weighs
        a share of it); ``None`` for any other path.

        Examples
        --------
        >>> from libra_opt.io import load_scenario
        >>> ScenarioBase.of(load_scenario("gpt3_175b_4d")).weight_of("workloads[0].weight")
        'gpt3_175b'
        """
        try:
            segs = segments(path)
        except InputError:
            return None
        if len(segs) != 3 or segs[0] != "workloads" or segs[2] != "weight":
            return None
        names = [w.name for w in self.scenario.workloads]
        if self.spec is not None and [w.name for w in self.spec.workloads] != names:
            return None
        key = segs[1]
        if isinstance(key, int):
            return names[key] if -len(names) <= key < len(names) else None
        return key if key in names else None

    def check(self, path: str, value: Any) -> Any:
        """``value`` as it will be set at ``path`` (text parsed, integral floats as
        integers), checked before anything is compiled.

        Raises
        ------
        InputError
            Naming ``path`` and what was expected.
        """
        if self.spec is not None:
            edited = self.spec.replace(path, value)
            if path in self.spec.rhs_labels() or path in CAP_PATHS:
                return get_path(edited, path)
            try:
                value = get_path(edited, path)
            except InputError:  # e.g. a whole section set to null
                pass
            if len(self._checked) < _MEMO_SIZE:  # a point's edit starts from it
                self._checked[(path, edit_key(value))] = edited
            return value
        kind = self.classify(path)
        if kind == "rhs":
            if value is None and path in CAP_PATHS:
                return None
            return _number(value, path)
        if kind == "field":
            return _check_field(self.scenario, path, value)
        return _check_dim(self.scenario, path, value)

    def _edited_spec(self, overrides: Mapping[str, Any]) -> ScenarioSpec:
        assert self.spec is not None
        (path, value), *rest = overrides.items()
        checked = self._checked.get((path, edit_key(value)))
        spec = self.spec.edit(overrides) if checked is None else checked.edit(dict(rest))
        if self.resolve is not None and spec.unresolved:
            try:
                spec = self.resolve(spec)
            except InputError as exc:
                raise _rewrap(exc, _blame(overrides)) from None
        return spec

    def apply(self, overrides: Mapping[str, Any]) -> Scenario:
        """The scenario with ``overrides`` (path -> value) applied.

        Raises
        ------
        InputError
            Naming the path and what was expected; an override the compiled scenario
            rejects is blamed on its path.
        """
        for path in overrides:
            if not isinstance(path, str) or not path.strip():
                raise InputError(f"expected a path, got {short_repr(path)}", source=_API,
                                 field="overrides")
        if not overrides:
            return self.scenario
        if self.spec is not None:
            key = edit_key(overrides)
            if key in self._built:
                return self._built[key]
            spec = self._edited_spec(overrides)
            try:
                scen = compile(spec, previous=self.scenario)
            except InputError as exc:
                raise _rewrap(exc, _blame(overrides)) from None
            if len(self._built) < _MEMO_SIZE:
                self._built[key] = scen
            return scen
        checked = {p: self.check(p, v) for p, v in overrides.items()}
        kinds = {p: self.classify(p) for p in checked}
        scen = self.scenario
        dims = {p: v for p, v in checked.items() if kinds[p] == "structural"}
        if dims:
            scen = _dims_in_place(scen, dims)
        fields = {p: v for p, v in checked.items()
                  if kinds[p] == "field" or (kinds[p] == "rhs" and p in CAP_PATHS)}
        if fields:
            scen = _scenario_fields(scen, fields)
        for label, value in checked.items():
            if kinds[label] == "rhs" and label not in CAP_PATHS:
                scen = _set_rhs(scen, label, value)
        return scen

    def derive(self, overrides: Mapping[str, Any]) -> ScenarioBase:
        """A base with ``overrides`` applied (``--set`` before sweep axes).

        Examples
        --------
        >>> from libra_opt.io import load_scenario
        >>> b = ScenarioBase.of(load_scenario("deepseek_v3_rail_only")).derive(
        ...     {"fabric.hb_domain": 16, "objective": "perf_per_cost"})
        >>> b.apply({"fabric.n_npus": 8192, "workloads.deepseek_v3.parallelism.dp": 512}
        ...         ).fabric.sizes, b.scenario.objective
        ((16, 512), 'perf_per_cost')
        """
        scen = self.apply(overrides)
        return ScenarioBase(scen, scen.spec, self.resolve)


def edit_key(value: Any) -> Any:
    """A hashable stand-in for overrides or a value (lists and mappings given as values)."""
    if isinstance(value, Mapping):
        return tuple((k, edit_key(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return ("__seq__", *(edit_key(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("__id__", id(value))
    return (type(value).__name__, value)


def _blame(overrides: Mapping[str, Any]) -> str:
    return next(iter(overrides)) if len(overrides) == 1 else ", ".join(overrides)


def apply_overrides(
    scenario: Scenario | ScenarioSpec, overrides: Mapping[str, Any],
    resolve: Resolver | None = None,
) -> Scenario:
    """A new scenario with fields overridden by dotted path (see the module notes).

    Parameters
    ----------
    scenario : Scenario or ScenarioSpec
        A scenario (edited through its spec when it has one) or a spec.
    overrides : mapping of str to value
        Path -> value; values may be given as text (``parse_value``).
    resolve : callable, optional
        Reads file-backed entries an edit names (:func:`libra_opt.io.resolve_spec`);
        :func:`libra_opt.apply_overrides` passes it and also takes a file or example name.

    Returns
    -------
    Scenario

    Raises
    ------
    InputError
        Naming the path and what was expected.

    Examples
    --------
    >>> from libra_opt.io import load_scenario
    >>> s = apply_overrides(load_scenario("deepseek_v3_rail_only"), {"fabric.hb_domain": 16})
    >>> s.fabric.sizes
    (16, 256)
    >>> apply_overrides(load_scenario("gpt3_175b_4d"), {"fabric.dims.pod.latency_s": "2e-6"}
    ...                 ).fabric.dims[3]
    Dim(name='pod', topology='switch', size=32, tier='InterPod', latency_s=2e-06, switch_radix=None, switch_scope='block', switch_pricing='whole_switch', copper_levels=0)
    >>> apply_overrides(load_scenario("gpt3_175b_4d"), {"fabric.dims.pod.colour": 3})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <api>: fabric.dims.pod.colour: no field 'colour' under 'fabric.dims.pod' (fields: name, topology, size, tier, latency_s, switch_radix, switch_scope, switch_pricing, copper_levels, members)
    """
    return ScenarioBase.of(scenario, resolve).apply(overrides)
