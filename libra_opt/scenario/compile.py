"""Compile a :class:`~libra_opt.scenario.spec.ScenarioSpec` into a
:class:`~libra_opt.scenario.scenario.Scenario`: pure, no file access.

Every file-backed entry must hold its parsed value already (:func:`libra_opt.compile` reads
them through :mod:`libra_opt.io`). Errors name the spec's ``source`` (the scenario file, or
``<api>``) and the field. The steps: fabric, cost model, workloads, in-network aggregators,
compression, fine-grained overlap, DiLoCo, constraints, TCO and failure model, then the
scenario's own checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import PurePath
from types import MappingProxyType
from typing import Any

from libra_opt.cost.aggregators import Aggregators
from libra_opt.cost.catalog import catalog_from_dict
from libra_opt.cost.goodput import ReliabilityModel
from libra_opt.cost.prices import CostModel
from libra_opt.cost.tco import TcoModel
from libra_opt.errors import InputError, input_context, short_repr
from libra_opt.fabric.builders import fabric_from_spec
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.heterogeneous import attach_members, members_from_mapping
from libra_opt.fabric.topology import topology_of
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.device_links import device_link_efficiency
from libra_opt.generators.devices import efficiency_from_value
from libra_opt.generators.generated import GeneratedWorkload, step_metrics
from libra_opt.generators.generator import generate_workload, model_checkpoint_bytes
from libra_opt.generators.in_network_optimizer import IN_NETWORK_OPTIMIZER, aggregator_state_bytes
from libra_opt.generators.mapping import place_groups
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.generators.transformer_counts import total_params
from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
from libra_opt.scenario.scenario import Scenario, unique_labels
from libra_opt.scenario.spec import (
    API_SOURCE,
    CatalogSpec,
    CollectivesSpec,
    CompressionSpec,
    FabricSpec,
    InNetworkOptimizerSpec,
    OverlapSpec,
    Ref,
    ScenarioSpec,
    WorkloadSpec,
    thaw,
)
from libra_opt.traffic.collective_settings import link_efficiency_value
from libra_opt.traffic.compression import Compression, compress_workload
from libra_opt.traffic.diloco import DiLoCoSettings, diloco_workloads
from libra_opt.traffic.overlap import OverlapPolicy, overlap_workload
from libra_opt.traffic.timing import TimingModel
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import Workload

__all__ = ["compile", "compile_fabric", "compile_with_models", "generate_entry"]

#: LIBRA communicator keys of the phase groups (for messages).
_COMMUNICATOR_KEYS = {"forward": "Forward", "input_grad": "InputGrad",
                      "weight_grad": "WeightGrad"}


def compile(spec: ScenarioSpec, previous: Scenario | None = None  # noqa: A001
            ) -> Scenario:
    """The :class:`Scenario` of ``spec`` (pure: reads no file); it keeps ``spec``.

    ``previous``: a scenario compiled earlier (an edit's base); the parts of ``spec`` equal
    to its spec's (the fabric, the prices, a workload entry on the same fabric) are taken
    from it instead of built again, so an edit of one field rebuilds only what depends on it.
    The result is the same either way.

    Raises
    ------
    InputError
        Naming the spec's source and the field; an unresolved file-backed entry is named
        with what reads it.

    Examples
    --------
    >>> from libra_opt.scenario.spec import DimSpec, FabricSpec, ScenarioSpec, WorkloadSpec
    >>> from libra_opt.scenario.examples import toy_scenario
    >>> spec = ScenarioSpec(
    ...     fabric=FabricSpec(dims=(DimSpec("node", "ring", 4, "NVLink"),)),
    ...     cost_model={"NVLink": {"link": 1.0}},
    ...     workloads=(WorkloadSpec("w", model=Ref("gpt3_175b"), parallelism={"tp": 4},
    ...                             device=Ref("h100_sxm")),))
    >>> compile(spec)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: <api>: workloads[0].model: 'gpt3_175b' is not read yet: compile with libra_opt.compile, which reads files and presets
    """
    return compile_with_models(spec, previous)[0]


def _reusable(spec: ScenarioSpec, previous: Scenario | None) -> tuple[Any, ...] | None:
    """The compiled parts of ``previous`` (fabric, prices, workloads, checkpoint sizes) and
    its spec."""
    if previous is None or previous.spec is None:
        return None
    parts = previous.__dict__.get("_compiled_parts")
    return None if parts is None else (previous.spec, *parts)


def _reused(w: WorkloadSpec, i: int, old: tuple[Any, ...]) -> Any:
    """The compiled workload of an equal entry of the previous spec (same fabric), if any."""
    entries, built = old[0].workloads, old[3]
    if i < len(entries) and entries[i] == w:
        return built[i]
    return next((b for e, b in zip(entries, built, strict=True) if e == w), None)


def compile_with_models(
    spec: ScenarioSpec, previous: Scenario | None = None,
) -> tuple[Scenario, Mapping[str, GeneratedWorkload]]:
    """:func:`compile`, and the generator output of each model-based workload (name ->
    :class:`~libra_opt.generators.generated.GeneratedWorkload`)."""
    with input_context(spec.source or API_SOURCE):
        return _compile(spec, previous)


def _compile(
    spec: ScenarioSpec, previous: Scenario | None,
) -> tuple[Scenario, Mapping[str, GeneratedWorkload]]:
    """:func:`compile_with_models` inside its error context (the spec's file)."""
    from libra_opt.scenario.spec import iter_refs

    for path, ref in iter_refs(spec):
        if not ref.resolved:
            raise InputError(f"{short_repr(ref.ref, 80)} is not read yet: compile with "
                             "libra_opt.compile, which reads files and presets", field=path)
    old = _reusable(spec, previous)
    built: list[tuple[Workload, GeneratedWorkload | None]]
    same_fabric = old is not None and old[0].fabric == spec.fabric
    sizes: list = [] if old is None else list(old[4])  # checkpoint sizes, the previous's first
    if old is not None and same_fabric:
        fabric = old[1]
        if (old[0].cost_model, old[0].power_model) == (spec.cost_model, spec.power_model):
            priced = old[2]
        else:
            priced = _cost_model(spec)
        built = [_reused(w, i, old) or _workload(w, i, fabric, sizes)
                 for i, w in enumerate(spec.workloads)]
    else:
        fabric = compile_fabric(spec.fabric)
        priced = _cost_model(spec)
        built = [_workload(w, i, fabric, sizes) for i, w in enumerate(spec.workloads)]
    cost_model = _with_aggregators(spec, built, priced, fabric)
    workloads = [wl for wl, _ in built]
    compression = _compression(spec.compression)
    if compression is not None:
        workloads = [compress_workload(wl, compression) for wl in workloads]
    policy = _overlap(spec.fine_grained_overlap, spec.training_loop)
    if policy is not None:
        workloads = [overlap_workload(wl, policy) for wl in workloads]
    weights = [w.weight for w in spec.workloads]
    if spec.diloco is not None:
        d = spec.diloco
        settings = DiLoCoSettings(d.sync_every_steps, d.fragments, d.delta_bits,
                                  d.overlap_steps)
        ws, wts = diloco_workloads(workloads, weights, fabric, d.site_dim, settings,
                                   d.params_per_npu, d.dp_group)
        workloads, weights = list(ws), list(wts)
    generated = MappingProxyType({wl.name: g for wl, g in built if g is not None})
    if (old is not None and previous is not None and same_fabric
            and old[0].constraints == spec.constraints):
        cons = list(previous.constraints)  # the same rows on the same fabric
    else:
        cons = _constraints(spec, fabric)
    c = spec.constraints
    collectives = _with_device_links(_collectives(spec.collectives), fabric,
                                     [g.device for _, g in built if g is not None])
    tco = None if spec.tco is None else TcoModel.from_mapping(thaw(spec.tco),
                                                              spec.source or API_SOURCE)
    reliability = None if spec.reliability is None else ReliabilityModel.from_mapping(
        thaw(spec.reliability), spec.source or API_SOURCE)
    # a scenario read from a file names it in its own errors; one built in Python is "<api>"
    with input_context(None if spec.source else API_SOURCE, None if spec.source else "scenario"):
        scenario = Scenario(
            fabric=fabric,
            cost_model=cost_model,
            workloads=tuple(workloads),
            weights=tuple(weights),
            constraints=tuple(cons),
            budget_usd=c.budget_usd,
            power_w=c.power_w,
            objective=spec.objective,
            collective_model=spec.collective_model,
            training_loop=spec.training_loop,
            traffic_model=spec.traffic_model,
            collectives=collectives,
            in_network_reduction=spec.in_network_reduction,
            tco=tco,
            reliability=reliability,
            name=spec.name or (PurePath(spec.source).stem if spec.source else "scenario"),
            source=spec.source,
        )
    object.__setattr__(scenario, "spec", spec)
    # what a later compile from an edit of ``spec`` may take over (not pickled)
    scenario.__dict__["_compiled_parts"] = (fabric, priced, tuple(built), sizes)
    return scenario, generated


def compile_fabric(f: FabricSpec, source: str | None = None) -> Fabric:
    """The :class:`Fabric` of a ``fabric:`` spec: inline ``dims``, a LIBRA network (read
    already), or a ``builder`` call; then ``members``. Errors name ``source`` (the file the
    spec was read from) when given, else the enclosing :func:`~libra_opt.errors.input_context`
    (``"<api>"`` at the top)."""
    with input_context(source or API_SOURCE):
        return _fabric(f)


def _fabric(f: FabricSpec) -> Fabric:
    if f.builder is not None:
        fabric = fabric_from_spec({"builder": f.builder, **thaw(f.args)})
    elif f.libra_network is not None:
        fabric = f.libra_network.value
    else:
        assert f.dims is not None
        dims = []
        for i, d in enumerate(f.dims):
            try:
                dims.append(Dim(name=d.name, topology=topology_of(d.topology), size=d.size,
                                tier=d.tier, latency_s=d.latency_s, switch_radix=d.switch_radix,
                                switch_scope=d.switch_scope, switch_pricing=d.switch_pricing,
                                copper_levels=d.copper_levels,
                                members=members_from_mapping(
                                    None if d.members is None else thaw(d.members))))
            except InputError as exc:
                prefix = f"dim '{d.name}'."
                fld = exc.field or ""
                leaf = (fld[len(prefix):] if fld.startswith(prefix) else fld
                        if fld.startswith("members") else fld.rsplit(".", 1)[-1])
                raise InputError(exc.message, field=f"fabric.dims[{i}].{leaf}") from None
        try:
            fabric = Fabric(tuple(dims))
        except InputError as exc:  # every fabric-wide check is about the list of dims
            raise InputError(exc.message, field="fabric.dims") from None
    if f.members is not None:
        fabric = attach_members(fabric, thaw(f.members))
    return fabric


def _tables(value: Any) -> dict[str, dict[str, float]]:
    return {str(t): {str(k): thaw(v) for k, v in comps.items()} for t, comps in value.items()}


def _cost_model(spec: ScenarioSpec) -> CostModel:
    """``cost_model:`` (price tables, a LIBRA file or a catalog) + ``power_model:``."""
    data = spec.cost_model
    pm = spec.power_model
    power = None if pm is None else _tables(pm.value if isinstance(pm, Ref) else pm)
    if isinstance(data, CatalogSpec):
        cat = data.catalog
        where = cat.path or f"libra_opt/data/catalog/{cat.ref}.yaml"  # a file, or a preset
        with input_context(None, "cost_model"):
            cm = catalog_from_dict(thaw(cat.value), where, thaw(data.overrides) or {},
                                   name=PurePath(str(cat.ref)).stem).cost_model()
        if power is not None:
            if cm.has_power:
                raise InputError(
                    "the catalog already gives power; override its parts instead of power_model",
                    field="power_model",
                )
            prices = {t: dict(v.usd_per_gbps) for t, v in cm.tiers.items()}
            return CostModel.from_tables(prices, power)
        return cm
    prices = _tables(data.value if isinstance(data, Ref) else data)
    with input_context(None, "cost_model"):
        return CostModel.from_tables(prices, power)


def generate_entry(w: WorkloadSpec, fabric: Fabric, source: str | None = API_SOURCE
                   ) -> GeneratedWorkload:
    """A model-based workload entry (model and device resolved), generated on ``fabric``;
    errors name ``source`` (``None``: the enclosing :func:`~libra_opt.errors.input_context`)
    and ``workloads[<name>].<field>``."""
    with input_context(source, f"workloads[{w.name[:60]}]"):
        return _generate(w, fabric)


def _generate(w: WorkloadSpec, fabric: Fabric) -> GeneratedWorkload:
    missing = [k for k in ("parallelism", "device") if getattr(w, k) is None]
    if missing:
        raise InputError(f"missing {', '.join(missing)}")
    assert w.model is not None and w.parallelism is not None and w.device is not None
    par = parallelism_from_dict(thaw(w.parallelism), None, "parallelism")
    eff = None
    if w.efficiency is not None:
        eff = efficiency_from_value(thaw(w.efficiency))
    mapping = None if w.mapping is None else thaw(w.mapping)
    # validate the mapping here so its errors name the scenario's field
    place_groups(fabric, par.degrees(), mapping)
    return generate_workload(
        w.model.value,
        par,
        w.device.value,
        fabric,
        mapping=mapping,
        efficiency=eff,
        name=w.name,
        check_memory=True if w.check_memory is None else w.check_memory,
    )


def _workload(
    w: WorkloadSpec, i: int, fabric: Fabric, sizes: list
) -> tuple[Workload, GeneratedWorkload | None]:
    """One ``workloads:`` entry: ASTRA-sim files or a model-based description (``sizes``:
    the checkpoint sizes known, ``(model, precision, bytes)``; a new one is added)."""
    given = [k for k in ("astra_sim", "communicator", "model", "parallelism", "device",
                         "mapping", "efficiency", "check_memory") if getattr(w, k) is not None]
    model_keys = {"model", "parallelism", "device", "mapping", "efficiency", "check_memory"}
    if w.model is not None:
        stray = sorted(set(given) & {"astra_sim", "communicator"})
        if stray:
            raise InputError(f"a model-based workload takes no {', '.join(stray)}",
                             field=f"workloads[{i}]")
        g = generate_entry(w, fabric, None)
        assert w.parallelism is not None
        precision = parallelism_from_dict(thaw(w.parallelism)).precision
        model = w.model.value
        size = next((b for m, p, b in sizes if m is model and p == precision), None)
        if size is None:
            size = model_checkpoint_bytes(model, precision)
            sizes.append((model, precision, size))
        metrics = step_metrics(g, size)
        return dataclasses.replace(g.workload, name=w.name, metrics=metrics), g
    stray = sorted(set(given) & model_keys)
    if stray or w.astra_sim is None or w.communicator is None:
        raise InputError(
            "give either astra_sim + communicator files, or model + parallelism + device"
            + (f" (found {', '.join(stray)} without model)" if stray else ""),
            field=f"workloads[{i}]",
        )
    _check_communicator(w.communicator.value, fabric, w.communicator.path)
    wl = w.astra_sim.value
    return (wl if wl.name == w.name else dataclasses.replace(wl, name=w.name)), None


def _check_communicator(groups: Mapping[str, tuple[int, ...]], fabric: Fabric,
                        src: str | None) -> None:
    """Every phase group of a LIBRA communicator fits ``fabric`` (one divisor of each
    dimension's size); errors name the communicator file and its key (``Forward``, ...)."""
    for g_name, span in groups.items():
        key = _COMMUNICATOR_KEYS.get(g_name, g_name)
        if len(span) != fabric.n_dims:
            raise InputError(
                f"the {g_name} group lists {len(span)} dimensions, the fabric has "
                f"{fabric.n_dims} ({', '.join(fabric.names)})",
                source=src,
                field=key,
            )
        for d, (k, dim) in enumerate(zip(span, fabric.dims, strict=True)):
            if k > dim.size or dim.size % k:
                raise InputError(
                    f"the {g_name} group takes {k} NPUs of dimension {dim.name!r} (size "
                    f"{dim.size}); expected -1 or a divisor of {dim.size}",
                    source=src,
                    field=f"{key}[{d}]",
                )


def _with_aggregators(
    spec: ScenarioSpec, built: list[tuple[Workload, GeneratedWorkload | None]],
    cost_model: CostModel, fabric: Fabric,
) -> CostModel:
    """``cost_model`` with the in-network optimizer's aggregators priced when a model-based
    workload uses ``dp_mode: in_network_optimizer``: ports on ``in_network_optimizer.dims``
    (default: the outermost dimension each such workload's data-parallel group spans), state
    the largest of the workloads' (one cluster runs one workload at a time)."""
    opts = spec.in_network_optimizer or InNetworkOptimizerSpec()
    dims: list[str] = []
    state = 0.0
    used = named = False
    for w, (wl, g) in zip(spec.workloads, built, strict=True):
        if g is None or w.parallelism is None or w.model is None:
            continue
        par = parallelism_from_dict(thaw(w.parallelism), None, "parallelism")
        if par.dp_mode != IN_NETWORK_OPTIMIZER:
            continue
        named = True
        spanned = [d for group in ("dp", "edp") if group in wl.groups
                   for d, k in enumerate(wl.groups[group]) if k > 1]
        if not spanned:
            continue  # one replica: nothing pushed, no aggregator
        used = True
        if opts.dims is None:
            name = fabric.names[max(spanned)]
            dims += [] if name in dims else [name]
        model = w.model.value
        assert isinstance(model, TransformerSpec)  # the generator refuses other models
        state = max(state, aggregator_state_bytes(total_params(model), par.precision,
                                                  par.optimizer_state))
    if opts.dims is not None:
        for name in opts.dims:
            if name not in fabric.names:
                raise InputError(f"no dimension named {short_repr(name, 80)}; names: "
                                 f"{', '.join(fabric.names)}", field="in_network_optimizer.dims")
        dims = list(dict.fromkeys(opts.dims))
    if not used:
        if spec.in_network_optimizer is not None and not named:
            raise InputError(
                "the in_network_optimizer section prices aggregators, but no model-based "
                "workload uses parallelism.dp_mode: in_network_optimizer with data "
                "parallelism (remove the section, or set dp_mode)",
                field="in_network_optimizer")
        return cost_model
    agg = Aggregators(tuple(dims), state, opts.usd_per_port_gbps, opts.w_per_port_gbps,
                      opts.usd_per_state_gb, opts.w_per_state_gb)
    return dataclasses.replace(cost_model, aggregators=agg)


def _compression(spec: CompressionSpec | None) -> Compression | None:
    """``compression:`` as :class:`Compression` (``None`` when absent or empty)."""
    if spec is None:
        return None
    rules = []
    for group, value in spec.groups.items():
        items = value.items() if isinstance(value, Mapping) else [("all", value)]
        rules += [(group, phase, dtype) for phase, dtype in items]
    compression = Compression(tuple(rules), spec.baseline)  # checked, rules or none
    return compression if rules else None


def _overlap(spec: OverlapSpec | None, training_loop: str) -> OverlapPolicy | None:
    """``fine_grained_overlap:`` as :class:`OverlapPolicy` (``None`` when absent)."""
    if spec is None:
        return None
    overlapped = TimingModel(training_loop=training_loop).overlapped  # type: ignore[arg-type]
    if not overlapped:
        raise InputError("fine_grained_overlap needs training_loop: overlap",
                         field="fine_grained_overlap")
    rules = []
    for group, value in spec.groups.items():
        items = value.items() if isinstance(value, Mapping) else [("all", value)]
        rules += [(group, phase, frac) for phase, frac in items]
    return OverlapPolicy.from_presets(list(spec.presets), tuple(rules))


def _collectives(spec: CollectivesSpec | None) -> CollectiveSettings | None:
    """``collectives:`` as :class:`CollectiveSettings`: an ASTRA-sim system file's, run on
    the ``backend`` (required: the two backends time the same file differently) and
    ``queues_per_dim`` given beside it (they are not in the file), or the keys'."""
    if spec is None:
        return None
    if spec.astra_sim_system is not None:  # alone but for BESIDE_SYSTEM (CollectivesSpec)
        if spec.backend is None:
            raise InputError(
                "astra_sim_system needs the backend beside it: congestion_aware or "
                "congestion_unaware (which ASTRA-sim binary ran the configuration; the system "
                "file does not say, and the two time it differently)",
                field="collectives.backend")
        system: CollectiveSettings = spec.astra_sim_system.value
        return dataclasses.replace(system, backend=spec.backend,
                                   queues_per_dim=spec.queues_per_dim)
    return CollectiveSettings(
        algorithm=tuple(spec.algorithm.items()),
        chunks=spec.chunks,
        active_chunks=spec.active_chunks,
        endpoint_delay_s=spec.endpoint_delay_s,
        local_memory_gbps=spec.local_memory_gbps,
        all_reduce=spec.all_reduce,
        efficiency=tuple(spec.efficiency.items()),
        link_latency_s=tuple(spec.link_latency_s.items()),
        backend=spec.backend,
        queues_per_dim=spec.queues_per_dim,
        active_chunks_per_dim=spec.active_chunks_per_dim,
        collective_algorithm=_per_kind(spec.collective_algorithm),
    )


def _with_device_links(settings: CollectiveSettings | None, fabric: Fabric,
                       devices: list[Any]) -> CollectiveSettings | None:
    """``settings`` with what the devices' links reach on each dimension
    (:func:`~libra_opt.generators.device_links.device_link_efficiency`) under the
    dimensions ``collectives.efficiency`` names (which win; ``none``: the line rate)."""
    given = {} if settings is None else dict(settings.efficiency)
    defaults = {k: v for k, v in device_link_efficiency(fabric, devices).items()
                if k not in given}
    if not defaults:
        return settings
    own = {} if settings is None else dict(settings.link_latency_s)
    for name, v in defaults.items():
        d = fabric.dims[fabric.index(name)]
        latency = own.get(name, d.latency_s)
        if isinstance(link_efficiency_value(v, name), str) and latency > 0:  # a curve
            raise InputError(
                f"dimension {name!r} has a latency of {latency:g} s of its own and the "
                f"workloads' device prices its collectives with the measured NCCL curve "
                f"{v!r}, whose measurement includes the latency: give {name!r} latency 0, "
                f"or collectives.efficiency.{name}: none (the line rate and your latency) "
                "or a fraction", field=f"collectives.efficiency.{name}")
    merged = tuple({**defaults, **given}.items())
    if settings is None:
        return CollectiveSettings(efficiency=merged)
    return dataclasses.replace(settings, efficiency=merged)


def _per_kind(table: Mapping[str, Any]) -> tuple[tuple[tuple[str, str], Any], ...]:
    """``{kind: {dim: algorithm}}`` as ``((kind, dim), algorithm)`` pairs."""
    out = []
    for kind, per in table.items():
        if not isinstance(per, Mapping):
            raise InputError(f"expected a mapping dim name -> algorithm, got "
                             f"{short_repr(per, 60)}", field=f"collectives.collective_algorithm.{kind}")
        out += [((kind, dim), a) for dim, a in per.items()]
    return tuple(out)


def _constraints(spec: ScenarioSpec, fabric: Fabric) -> list[LinearConstraint]:
    """Linear constraints and bounds, with right-hand sides replaced by label."""
    c = spec.constraints
    cons = [parse_constraint(text, fabric, field=f"constraints.linear[{i}]")
            for i, text in enumerate(c.linear)]
    for key, (lo, hi) in c.bounds.items():
        fld = f"constraints.bounds.{key}"
        if key not in fabric.names:
            raise InputError(
                f"no dimension named {short_repr(key, 80)}; names: {', '.join(fabric.names)}",
                field=fld,
            )
        lo = None if lo is None else float(lo)
        hi = None if hi is None else float(hi)
        if lo is not None and hi is not None and lo > hi:
            raise InputError(f"min {lo} exceeds max {hi}", field=fld)
        if lo is not None:
            cons.append(parse_constraint(f"bw.{key} >= {lo!r}", fabric, field=fld))
        if hi is not None:
            cons.append(parse_constraint(f"bw.{key} <= {hi!r}", fabric, field=fld))
    if c.rhs:
        labels = unique_labels([x.label for x in cons])
        for label, value in c.rhs.items():
            if label not in labels:
                raise InputError(f"no constraint labelled {short_repr(label, 80)}",
                                 field=f"constraints.rhs.{label}")
            j = labels.index(label)
            cons[j] = dataclasses.replace(cons[j], rhs=float(value))
    return cons
