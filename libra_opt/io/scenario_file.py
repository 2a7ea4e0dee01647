"""The scenario YAML (the README's "Scenario file" section): read into a
:class:`~libra_opt.scenario.spec.ScenarioSpec`, its files and presets read
(:func:`resolve_spec`), compiled (:func:`load_scenario`), and written back (:func:`save_spec`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.fabric.builders import FABRIC_FAMILIES
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.io._yaml import dump_yaml, read_yaml
from libra_opt.io.astra_sim import read_astra_sim
from libra_opt.io.astra_sim_network import read_astra_sim_system
from libra_opt.io.example_files import example_names, example_path, is_example_name
from libra_opt.io.files import ParseCache
from libra_opt.io.libra import (
    parse_libra_prices,
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
)
from libra_opt.io.model_entry import resolve_model_refs
from libra_opt.io.presets import catalog_document
from libra_opt.scenario.compile import compile, compile_fabric, compile_with_models
from libra_opt.scenario.scenario import Scenario
from libra_opt.scenario.spec import (
    API_SOURCE,
    CatalogSpec,
    CollectivesSpec,
    FabricSpec,
    FrozenMap,
    Ref,
    ScenarioSpec,
    WorkloadSpec,
    from_mapping,
    thaw,
    with_read,
)

__all__ = [
    "load_scenario",
    "load_scenario_with_models",
    "load_spec",
    "resolve_spec",
    "save_spec",
    "scenario_from_dict",
    "spec_from_dict",
    "spec_to_document",
    "spec_to_yaml",
]


def _resolve(base: Path, rel: str, source: str, field: str) -> Path:
    """``rel`` relative to the scenario's directory; an empty path is an error of ``field``."""
    if not str(rel).strip():
        raise InputError("empty path; expected the name of a file", source=source, field=field)
    p = Path(rel)
    return p if p.is_absolute() else base / p


# --------------------------------------------------------------------------- reading


def _priced(value: Any, source: str, field: str) -> Any:
    """``cost_model:`` / ``power_model:`` as the spec holds it: a file's name (read later), a
    catalog with overrides, or inline LIBRA price tables (checked here)."""
    if not isinstance(value, Mapping):
        return value
    if "catalog" in value:
        return from_mapping(CatalogSpec, value, field, strict=True)
    return FrozenMap(parse_libra_prices(value, source, field))


def spec_from_dict(data: Any, source: str = "<dict>", base_dir: str | Path = ".",
                   *, resolve: bool = True, cache: ParseCache | None = None) -> ScenarioSpec:
    """Validate a scenario mapping (as read from YAML) into a :class:`ScenarioSpec`, its
    files and presets read (relative paths against ``base_dir``) unless ``resolve=False``.

    Raises
    ------
    InputError
        Naming ``source``, the field and what was expected.
    """
    if not isinstance(data, dict):
        raise InputError("expected a mapping at the top of the scenario", source=source)
    doc = dict(data)
    fabric = doc.get("fabric")
    if isinstance(fabric, Mapping) and "builder" in fabric:  # its parameters beside it
        if not isinstance(fabric["builder"], str):
            raise InputError(f"builder {short_repr(fabric['builder'])} is not one of "
                             f"{', '.join(FABRIC_FAMILIES)}", source=source,
                             field="fabric.builder")
        doc["fabric"] = {"builder": fabric["builder"], "members": fabric.get("members"),
                         "args": {k: v for k, v in fabric.items()
                                  if k not in ("builder", "members")}}
    coll = doc.get("collectives")
    if isinstance(coll, Mapping) and "astra_sim_system" in coll:  # keys written, defaults too
        given = sorted(str(k) for k in coll
                       if k not in ("astra_sim_system", *CollectivesSpec.BESIDE_SYSTEM))
        if given:
            raise InputError(f"give either astra_sim_system or the settings "
                             f"({', '.join(given)}), not both", source=source,
                             field="collectives")
    if isinstance(fabric, Mapping) and "args" in fabric and "builder" not in fabric:
        keys = [f.name for f in dataclasses.fields(FabricSpec) if f.name != "args"]
        raise InputError(f"unknown key(s) args; expected {', '.join(keys)}", source=source,
                         field="fabric")
    with input_context(source):
        for key in ("cost_model", "power_model"):
            if key in doc:
                doc[key] = _priced(doc[key], source, key)
        spec = from_mapping(ScenarioSpec, doc, strict=True, source=source,
                            base_dir=str(base_dir))
    if spec.fabric.dims is not None:  # the dimensions' own checks (Dim), at the boundary
        compile_fabric(spec.fabric, source)
    return resolve_spec(spec, cache=cache) if resolve else spec


def _catalog(ref: str, base: Path, source: str, cache: ParseCache) -> Ref:
    """A catalog by name or path: its document (validated when compiled)."""
    _resolve(base, ref, source, "cost_model.catalog")  # an empty path is an error
    with input_context(source, "cost_model"):
        doc, path = catalog_document(ref, base, cache=cache)
    if not isinstance(doc, Mapping):
        raise InputError("expected a mapping (a parts catalog)",
                         source=path or f"libra_opt/data/catalog/{ref}.yaml")
    return Ref(ref, FrozenMap(doc), path)


def resolve_spec(spec: ScenarioSpec, *, cache: ParseCache | None = None) -> ScenarioSpec:
    """``spec`` with every unresolved file or preset entry read (relative paths against
    ``spec.base_dir``); resolved entries are kept as they are.

    Raises
    ------
    InputError
        Naming the file (or the spec's source) and the field.
    """
    if not spec.unresolved:
        return spec
    cache = cache if cache is not None else ParseCache()
    source = spec.source or API_SOURCE
    base = Path(spec.base_dir or ".")
    changes: dict[str, Any] = {}
    fabric = spec.fabric
    if fabric.libra_network is not None and not fabric.libra_network.resolved:
        ref = fabric.libra_network.ref
        path = _resolve(base, ref, source, "fabric.libra_network")
        fabric = with_read(fabric, libra_network=Ref(
            ref, read_libra_network(path, cache=cache), str(path)))
        changes["fabric"] = fabric
    cm = spec.cost_model
    if isinstance(cm, CatalogSpec) and not cm.catalog.resolved:
        changes["cost_model"] = with_read(
            cm, catalog=_catalog(str(cm.catalog.ref), base, source, cache))
    elif isinstance(cm, Ref) and not cm.resolved:
        path = _resolve(base, cm.ref, source, "cost_model")
        changes["cost_model"] = Ref(cm.ref, FrozenMap(read_libra_cost_model(path, cache=cache)),
                                    str(path))
    pm = spec.power_model
    if isinstance(pm, Ref) and not pm.resolved:
        path = _resolve(base, pm.ref, source, "power_model")
        tables = parse_libra_prices(read_yaml(path, cache=cache), str(path), "power_model")
        changes["power_model"] = Ref(pm.ref, FrozenMap(tables), str(path))
    workloads = tuple(_resolve_workload(w, i, base, source, cache)
                      for i, w in enumerate(spec.workloads))
    if any(a is not b for a, b in zip(workloads, spec.workloads, strict=True)):
        changes["workloads"] = workloads
    coll = spec.collectives
    if coll is not None and coll.astra_sim_system is not None \
            and not coll.astra_sim_system.resolved:
        names = compile_fabric(fabric, source).names
        ref = coll.astra_sim_system.ref
        path = _resolve(base, ref, source, "collectives.astra_sim_system")
        # the file's settings; the compiler runs them on the spec's backend and queues, so
        # an edit of those takes effect without reading the file again
        changes["collectives"] = with_read(coll, astra_sim_system=Ref(
            ref, read_astra_sim_system(path, names, backend=None), str(path)))
    return with_read(spec, **changes) if changes else spec


def _resolve_workload(w: WorkloadSpec, i: int, base: Path, source: str,
                      cache: ParseCache) -> WorkloadSpec:
    w = resolve_model_refs(w, base, source, cache)
    changes: dict[str, Any] = {}
    comm = w.communicator
    if comm is not None and not comm.resolved:
        path = _resolve(base, comm.ref, source, f"workloads[{i}].communicator")
        comm = Ref(comm.ref, read_libra_communicator(path, cache=cache), str(path))
        changes["communicator"] = comm
    astra = w.astra_sim
    if astra is not None and comm is not None and (not astra.resolved or "communicator"
                                                   in changes):
        path = _resolve(base, astra.ref, source, f"workloads[{i}].astra_sim")
        with input_context(str(path)):  # e.g. a Workload check: blame the workload file
            wl = read_astra_sim(path, comm.value, name=w.name, cache=cache)
        changes["astra_sim"] = Ref(astra.ref, wl, str(path))
    return with_read(w, **changes) if changes else w


def scenario_from_dict(data: Any, source: str = "<dict>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario mapping (as read from YAML) and build the :class:`Scenario`.

    Paths inside are resolved relative to ``base_dir``; each file they name is read once.
    """
    return compile(spec_from_dict(data, source, base_dir))


def _scenario_file(ref: str | Path) -> Path:
    """An existing file wins over an example of the same name; a bare name (no directory,
    no suffix) that is neither a file nor an example is reported with the examples' names."""
    if str(ref) == "":
        raise InputError("empty path; expected a scenario file or an example name",
                         field="scenario")
    p = Path(ref)
    try:
        exists, is_file = p.exists(), p.is_file()
    except OSError:  # e.g. a name too long for the file system: read_yaml reports it
        exists = is_file = False
    if is_file:
        return p
    if is_example_name(ref):
        return example_path(str(ref))
    text = str(ref)
    if not exists and not isinstance(ref, Path) and text and not any(c in text for c in "/\\."):
        raise InputError(
            f"no scenario file or shipped example named {short_repr(text)}; examples: "
            f"{', '.join(example_names())}",
            field="scenario",
        )
    return p


def load_spec(path: str | Path) -> ScenarioSpec:
    """Read and validate a scenario YAML file (or a shipped example by name) into a
    :class:`ScenarioSpec`, every file it names read once.

    Examples
    --------
    >>> spec = load_spec("gpt3_175b_4d")
    >>> spec.fabric.dims[3].name, spec.replace("fabric.dims.pod.size", 16).fabric.dims[3].size
    ('pod', 16)
    """
    p = _scenario_file(path)
    cache = ParseCache()  # this load's: each file it refers to is read and parsed once
    return spec_from_dict(read_yaml(p, cache=cache), str(p), p.parent, cache=cache)


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file, or a shipped example by name
    (:mod:`libra_opt.io.examples`), into a :class:`Scenario` that keeps its spec.

    Raises
    ------
    InputError
        Naming the file, the field and what was expected.

    Examples
    --------
    >>> s = load_scenario("gpt3_175b_4d")
    >>> s.objective, s.spec.objective
    ('perf', 'perf')
    """
    return compile(load_spec(path))


def load_scenario_with_models(
    path: str | Path,
) -> tuple[Scenario, Mapping[str, GeneratedWorkload]]:
    """:func:`load_scenario`, and workload name ->
    :class:`~libra_opt.generators.generated.GeneratedWorkload` of each model-based workload
    (memory, FLOPs, placement: what ``libra-opt workload`` reports)."""
    return compile_with_models(load_spec(path))


# --------------------------------------------------------------------------- writing


def _ref_text(ref: Ref, relocate: Path | None) -> Any:
    """What a file-backed entry writes: its reference, relative to ``relocate`` (the
    directory the document is written to) when it was read from a file."""
    if relocate is not None and ref.path is not None:
        return os.path.relpath(os.path.abspath(ref.path), os.path.abspath(relocate))
    return thaw(ref.ref)


def _fields(node: Any, relocate: Path | None) -> dict[str, Any]:
    """A section's fields that differ from their defaults, as document values."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(node):
        v = getattr(node, f.name)
        if f.init and (f.default is dataclasses.MISSING or v != f.default):
            out[f.name] = _value(v, relocate)
    return out


def _value(v: Any, relocate: Path | None) -> Any:
    if isinstance(v, Ref):
        return _ref_text(v, relocate)
    if dataclasses.is_dataclass(v):
        return _fields(v, relocate)
    return thaw(v)


def spec_to_document(spec: ScenarioSpec, relocate: str | Path | None = None) -> dict[str, Any]:
    """The scenario YAML document of ``spec`` (plain dicts and lists), paths of the files it
    read rewritten relative to ``relocate`` (the directory the document will be read from)."""
    rel = None if relocate is None else Path(relocate)
    doc: dict[str, Any] = {}
    if spec.name is not None:
        doc["name"] = spec.name
    f = spec.fabric
    fab: dict[str, Any]
    if f.builder is not None:
        fab = {"builder": f.builder, **thaw(f.args)}
    elif f.libra_network is not None:
        fab = {"libra_network": _ref_text(f.libra_network, rel)}
    else:
        assert f.dims is not None
        fab = {"dims": [_fields(d, rel) for d in f.dims]}
    if f.members is not None:
        fab["members"] = thaw(f.members)
    doc["fabric"] = fab
    doc["cost_model"] = _value(spec.cost_model, rel)
    if spec.power_model is not None:
        doc["power_model"] = _value(spec.power_model, rel)
    doc["workloads"] = [_fields(w, rel) for w in spec.workloads]
    constraints = _fields(spec.constraints, rel)
    if constraints:
        doc["constraints"] = constraints
    for key in ("objective", "collective_model", "training_loop", "traffic_model"):
        doc[key] = getattr(spec, key)
    if spec.in_network_reduction:
        doc["in_network_reduction"] = list(spec.in_network_reduction)
    for key in ("collectives", "compression", "fine_grained_overlap", "diloco",
                "in_network_optimizer", "tco", "reliability"):
        v = getattr(spec, key)
        if v is not None:
            doc[key] = _value(v, rel)
    return doc


def spec_to_yaml(spec: ScenarioSpec, relocate: str | Path | None = None) -> str:
    """``spec`` as scenario YAML text (see :func:`spec_to_document`).

    Examples
    --------
    >>> spec = load_spec("gpt3_175b_4d")
    >>> import yaml
    >>> again = spec_from_dict(yaml.safe_load(spec_to_yaml(spec)), spec.source, spec.base_dir)
    >>> again == spec
    True
    """
    return dump_yaml(spec_to_document(spec, relocate), sort_keys=False,
                     default_flow_style=None, width=100)


def save_spec(spec: ScenarioSpec, path: str | Path) -> Path:
    """Write ``spec`` as a scenario YAML file at ``path`` (paths of the files it read are
    rewritten relative to the new file's directory); returns the path."""
    from libra_opt.io.output import write_text_atomic

    p = Path(path)
    write_text_atomic(p, spec_to_yaml(spec, relocate=p.parent))
    return p
