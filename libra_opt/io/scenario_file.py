"""The scenario YAML: schema (pydantic, strict) and loader into a frozen :class:`Scenario`.

Example::

    name: gpt3_4d
    fabric:
      dims:
        - {name: chiplet, topology: ring, size: 4, tier: InterChiplet}
        - {name: package, topology: fully_connected, size: 8, tier: InterPackage,
           members: {fraction: [1.0, 0.5], share: [0.75, 0.25]}}   # optional: NPUs with
                                                    # slower NICs (fabric.heterogeneous)
      # or: libra_network: path/to/network.yml      (paths relative to this file)
      # members: {package: {fraction: [1.0, 0.5], share: [0.5, 0.5], size: [8, 6]}}
      #   (members by dimension name: beside libra_network or a builder as well)
    cost_model: path/to/cost_model.yml              # LIBRA format, or an inline mapping
    power_model: {InterChiplet: {Link: 0.01}}       # optional, W per GB/s, same shape
    workloads:
      - name: gpt3
        astra_sim: path/to/workload.txt
        communicator: path/to/communicator.yml
        weight: 1.0
    constraints:
      linear: ["sum(bw) == 1000", "bw[0] >= bw[1]"]
      bounds: {chiplet: [100, null]}                # per-dimension [min, max] GB/s
      budget_usd: 2.0e7
      power_w: 5.0e5
    objective: perf                                  # or perf_per_cost
    collective_model: pipelined                      # or sequential, topology_aware
    collectives:                                     # topology_aware settings, all optional
      algorithm: {package: direct}                   # ring | direct | halving_doubling
      chunks: 4                                      # chunks per collective
      active_chunks: 2                               # chunks in flight (default unlimited)
      endpoint_delay_s: 1.0e-8                       # per message
      local_memory_gbps: 1600                        # reductions: 3 n / M per step
      all_reduce: hierarchical                       # or full
      efficiency: {chiplet: 0.9, package: h100_nvlink}   # fraction of line rate or preset
      link_latency_s: {chiplet: 5.0e-7}              # per hop (default: the dim's latency_s)
      # or: astra_sim_system: path/to/system.json    (ASTRA-sim 2.0 system configuration)
      #     with backend: congestion_aware           (or congestion_unaware, the default)
      #     and queues_per_dim: 1                     (ASTRA-sim's --num-queues-per-dim)
    training_loop: no_overlap                        # or overlap
    in_network_reduction: [package]                  # switch dims reducing in the network
    compression:                                     # bytes per element of collectives
      baseline: bf16                                 # what the workload's sizes assume
      groups: {dp: fp8, tp: {forward: bf16, input_grad: fp8}}   # fp32 bf16 fp16 fp8 int8 int4
    fine_grained_overlap:                            # needs training_loop: overlap
      presets: [dp_backward, tp_layer, moe_all_to_all]
      groups: {tp: 0.3, ep: {forward: 0.6}}          # fraction of a collective hidden
    in_network_optimizer:                            # aggregators of dp_mode in_network_optimizer
      dims: [pod]                                    # where their ports attach (default: the
                                                     # outermost dim the DP group spans)
      usd_per_port_gbps: 119                         # estimates by default (cost.aggregators)
      usd_per_state_gb: 4.6875
    diloco:                                          # DiLoCo across the sites of a dim
      site_dim: site                                 # the datacenter interconnect dimension
      params_per_npu: 1.4e9                          # parameters each NPU holds
      sync_every_steps: 100                          # H
      fragments: 1                                   # F (streaming)
      delta_bits: 4                                  # b
      overlap_steps: 0                               # tau (<= H / F; 0: blocking sync)
      dp_group: dp
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import ValidationError

from libra_opt.cost.aggregators import Aggregators
from libra_opt.cost.prices import CostModel
from libra_opt.cost.tco import TcoModel
from libra_opt.errors import InputError, short_repr
from libra_opt.fabric.builders import fabric_from_spec
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.heterogeneous import attach_members, members_from_mapping
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.in_network_optimizer import (
    IN_NETWORK_OPTIMIZER,
    aggregator_state_bytes,
)
from libra_opt.generators.parallelism import parallelism_from_dict
from libra_opt.generators.transformer_counts import total_params
from libra_opt.io.astra_sim import read_astra_sim
from libra_opt.io.astra_sim_network import read_astra_sim_system
from libra_opt.io.example_files import example_names, example_path, is_example_name
from libra_opt.io.files import ParseCache
from libra_opt.io.libra import (
    LIBRA_PHASE_GROUPS,
    parse_libra_prices,
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
)
from libra_opt.io.model_entry import generated_from_entry
from libra_opt.io.presets import load_catalog, load_model
from libra_opt.io.scenario_schema import (
    CollectivesSpec,
    CompressionSpec,
    FabricSpec,
    InNetworkOptimizerSpec,
    OverlapSpec,
    ScenarioFile,
    WorkloadSpec,
)
from libra_opt.io.yaml_util import load_yaml
from libra_opt.scenario.constraints import LinearConstraint, parse_constraint
from libra_opt.scenario.scenario import Scenario
from libra_opt.schema import input_error_from_pydantic
from libra_opt.traffic.astra_sim_model import BACKENDS
from libra_opt.traffic.compression import Compression, compress_workload
from libra_opt.traffic.diloco import DiLoCoSettings, diloco_workloads
from libra_opt.traffic.overlap import OverlapPolicy, overlap_workload
from libra_opt.traffic.topology_aware import CollectiveSettings
from libra_opt.traffic.workload import StepMetrics, Workload

__all__ = ["ScenarioFile", "load_scenario", "load_scenario_with_models", "scenario_from_dict"]


def _compression(spec: CompressionSpec | None, source: str) -> Compression | None:
    """``compression:`` as :class:`Compression` (``None`` when absent or empty)."""
    if spec is None or not spec.groups:
        return None
    rules = []
    for group, value in spec.groups.items():
        items = value.items() if isinstance(value, dict) else [("all", value)]
        rules += [(group, phase, dtype) for phase, dtype in items]
    try:
        return Compression(tuple(rules), spec.baseline)
    except InputError as exc:
        raise InputError(exc.message, source=source, field=exc.field) from None


def _overlap(spec: OverlapSpec | None, training_loop: str, source: str) -> OverlapPolicy | None:
    """``fine_grained_overlap:`` as :class:`OverlapPolicy` (``None`` when absent)."""
    if spec is None:
        return None
    if training_loop != "overlap":
        raise InputError("fine_grained_overlap needs training_loop: overlap", source=source,
                         field="fine_grained_overlap")
    rules = []
    for group, value in spec.groups.items():
        items = value.items() if isinstance(value, dict) else [("all", value)]
        rules += [(group, phase, frac) for phase, frac in items]
    try:
        return OverlapPolicy.from_presets(spec.presets, tuple(rules))
    except InputError as exc:
        raise InputError(exc.message, source=source, field=exc.field) from None


def _collectives(
    spec: CollectivesSpec | None, fabric: Fabric, source: str, base: Path
) -> CollectiveSettings | None:
    """``collectives:`` as :class:`CollectiveSettings` (an ASTRA-sim system file, or keys)."""
    if spec is None:
        return None
    if spec.astra_sim_system is not None:
        # the backend and the queues are not in ASTRA-sim's system file
        outside = {"astra_sim_system", "backend", "queues_per_dim"}
        given = sorted(k for k in spec.model_fields_set if k not in outside)
        if given:
            raise InputError(
                f"give either astra_sim_system or the settings ({', '.join(given)}), not both",
                source=source,
                field="collectives",
            )
        path = _resolve(base, spec.astra_sim_system, source, "collectives.astra_sim_system")
        backend = spec.backend or "congestion_unaware"
        if backend not in BACKENDS:
            raise InputError(f"{backend!r} is not one of {', '.join(BACKENDS)}",
                             source=source, field="collectives.backend")
        return read_astra_sim_system(path, fabric.names, backend=backend,
                                     queues_per_dim=spec.queues_per_dim)
    try:
        return CollectiveSettings(
            algorithm=tuple(spec.algorithm.items()),
            chunks=spec.chunks,
            active_chunks=spec.active_chunks,
            endpoint_delay_s=spec.endpoint_delay_s,
            local_memory_gbps=spec.local_memory_gbps,
            all_reduce=spec.all_reduce,
            efficiency=tuple(spec.efficiency.items()),
            link_latency_s=tuple(spec.link_latency_s.items()),
            backend=spec.backend,  # type: ignore[arg-type]  # checked by CollectiveSettings
            queues_per_dim=spec.queues_per_dim,
            active_chunks_per_dim=spec.active_chunks_per_dim,
            collective_algorithm=tuple(((kind, dim), a) for kind, per in
                                       spec.collective_algorithm.items()
                                       for dim, a in per.items()),
        )
    except InputError as exc:
        raise InputError(exc.message, source=source, field=exc.field) from None


def _resolve(base: Path, rel: str, source: str, field: str) -> Path:
    """``rel`` relative to the scenario's directory; an empty path is an error of ``field``
    (``Path("")`` would silently be the directory itself)."""
    if not rel.strip():
        raise InputError("empty path; expected the name of a file", source=source, field=field)
    p = Path(rel)
    return p if p.is_absolute() else base / p


def _reraise(exc: InputError, source: str, field: str) -> InputError:
    if exc.source:
        return exc
    return InputError(exc.message, source=source, field=f"{field}.{exc.field}" if exc.field else field)


def _fabric(
    data: dict[str, Any], source: str, base: Path, cache: ParseCache | None = None
) -> Fabric:
    """``fabric:``: inline ``dims``, a LIBRA ``libra_network`` file, or a ``builder``;
    ``members:`` (by dimension name) beside any of them."""
    if "members" in data:
        rest = {k: v for k, v in data.items() if k != "members"}
        try:
            return attach_members(_fabric(rest, source, base, cache), data["members"])
        except InputError as exc:
            raise InputError(exc.message, source=source, field=exc.field) from None
    if "builder" in data:
        return fabric_from_spec(data, source)
    try:
        spec = FabricSpec.model_validate(data)
    except ValidationError as exc:
        err = input_error_from_pydantic(exc, source)
        raise InputError(
            err.message, source=source, field=f"fabric.{err.field}" if err.field else "fabric"
        ) from None
    if (spec.dims is None) == (spec.libra_network is None):
        raise InputError(
            "give exactly one of 'dims' (inline), 'libra_network' (path) or 'builder' "
            "(multi_dim, fat_tree, rail_only)",
            source=source,
            field="fabric",
        )
    if spec.libra_network is not None:
        return read_libra_network(
            _resolve(base, spec.libra_network, source, "fabric.libra_network"), cache=cache
        )
    assert spec.dims is not None
    dims = []
    for i, d in enumerate(spec.dims):
        try:
            dims.append(Dim(name=d.name, topology=d.topology, size=d.size, tier=d.tier,
                            latency_s=d.latency_s, switch_radix=d.switch_radix,
                            switch_scope=d.switch_scope, switch_pricing=d.switch_pricing,
                            copper_levels=d.copper_levels,
                            members=members_from_mapping(
                                None if d.members is None else d.members.model_dump())))
        except InputError as exc:
            prefix = f"dim '{d.name}'."
            fld = exc.field or ""
            leaf = (fld[len(prefix):] if fld.startswith(prefix) else fld
                    if fld.startswith("members") else fld.rsplit(".", 1)[-1])
            raise InputError(exc.message, source=source, field=f"fabric.dims[{i}].{leaf}") from None
    try:
        return Fabric(tuple(dims))
    except InputError as exc:
        raise InputError(exc.message, source=source, field="fabric.dims") from None


def _cost_model(spec: ScenarioFile, source: str, base: Path, cache: ParseCache) -> CostModel:
    """``cost_model:`` (LIBRA file, inline tiers or ``{catalog, overrides}``) + ``power_model:``."""
    data = spec.cost_model
    if isinstance(data, dict) and "catalog" in data:
        unknown = sorted(set(data) - {"catalog", "overrides"})
        if unknown:
            raise InputError(
                f"unknown key(s) {', '.join(unknown)}; expected catalog, overrides",
                source=source,
                field="cost_model",
            )
        ref = data["catalog"]
        if not isinstance(ref, str):
            raise InputError(
                f"expected a catalog name or path, got {type(ref).__name__}",
                source=source,
                field="cost_model.catalog",
            )
        path = _resolve(base, ref, source, "cost_model.catalog")
        try:
            cm = load_catalog(path if path.suffix in (".yaml", ".yml") else ref,
                              data.get("overrides") or {}, cache=cache).cost_model()
        except InputError as exc:
            raise _reraise(exc, source, "cost_model") from None
        if spec.power_model is not None:
            if cm.has_power:
                raise InputError(
                    "the catalog already gives power; override its parts instead of power_model",
                    source=source,
                    field="power_model",
                )
            prices = {t: dict(v.usd_per_gbps) for t, v in cm.tiers.items()}
            return CostModel.from_tables(prices, _power_tables(spec, source, base, cache))
        return cm
    if isinstance(data, str):
        prices = read_libra_cost_model(_resolve(base, data, source, "cost_model"), cache=cache)
    else:
        prices = parse_libra_prices(data, source, "cost_model")
    try:
        return CostModel.from_tables(prices, _power_tables(spec, source, base, cache))
    except InputError as exc:
        raise _reraise(exc, source, "cost_model") from None


def _power_tables(
    spec: ScenarioFile, source: str, base: Path, cache: ParseCache
) -> dict[str, dict[str, float]] | None:
    if isinstance(spec.power_model, str):
        path = _resolve(base, spec.power_model, source, "power_model")
        return parse_libra_prices(load_yaml(path, cache=cache), str(path), "power_model")
    if spec.power_model is not None:
        return parse_libra_prices(spec.power_model, source, "power_model")
    return None


def _workload(
    w: WorkloadSpec, i: int, fabric: Fabric, source: str, base: Path, cache: ParseCache
) -> tuple[Workload, GeneratedWorkload | None]:
    """One ``workloads:`` entry: ASTRA-sim files or a model-based description."""
    # the given fields, shallow (no model_dump: never copy or format a whole user value)
    given = {k: getattr(w, k) for k in WorkloadSpec.model_fields if getattr(w, k) is not None}
    model_keys = {"model", "parallelism", "device", "mapping", "efficiency", "check_memory"}
    if w.model is not None:
        stray = sorted(set(given) & {"astra_sim", "communicator"})
        if stray:
            raise InputError(
                f"a model-based workload takes no {', '.join(stray)}",
                source=source,
                field=f"workloads[{i}]",
            )
        g = generated_from_entry(given, fabric, base, source)
        metrics = StepMetrics(
            tokens_per_step=g.tokens_per_step,
            samples_per_step=g.samples_per_step,
            model_flops_per_step=g.model_flops_per_step,
            n_npus=g.n_npus,
            peak_flops_per_npu=g.device.peak_flops_for(g.compute_dtype),
            memory_per_npu_bytes=g.memory.total_bytes,
            memory_capacity_bytes=g.memory.capacity_bytes,
        )
        return dataclasses.replace(g.workload, name=w.name, metrics=metrics), g
    stray = sorted(set(given) & model_keys)
    if stray or w.astra_sim is None or w.communicator is None:
        raise InputError(
            "give either astra_sim + communicator files, or model + parallelism + device"
            + (f" (found {', '.join(stray)} without model)" if stray else ""),
            source=source,
            field=f"workloads[{i}]",
        )
    comm_path = _resolve(base, w.communicator, source, f"workloads[{i}].communicator")
    astra_path = _resolve(base, w.astra_sim, source, f"workloads[{i}].astra_sim")
    groups = read_libra_communicator(comm_path, cache=cache)
    _check_communicator(groups, fabric, str(comm_path))
    try:
        return read_astra_sim(astra_path, groups, name=w.name, cache=cache), None
    except InputError as exc:  # e.g. a Workload check: blame the workload file
        if exc.source:
            raise
        raise InputError(exc.message, source=str(astra_path), field=exc.field) from None


def _with_aggregators(
    spec: ScenarioFile, built: list[tuple[Workload, GeneratedWorkload | None]],
    cost_model: CostModel, fabric: Fabric, source: str, base: Path,
) -> CostModel:
    """``cost_model`` with the in-network optimizer's aggregators priced
    (:mod:`libra_opt.cost.aggregators`) when a model-based workload uses
    ``dp_mode: in_network_optimizer``; unchanged otherwise.

    Ports on the ``in_network_optimizer.dims`` (default: the outermost dimension each such
    workload's data-parallel group spans); state: the largest of the workloads' optimizer
    state (one cluster runs one workload at a time).
    """
    opts = spec.in_network_optimizer or InNetworkOptimizerSpec()
    dims: list[str] = []
    state = 0.0
    used = named = False
    for w, (wl, g) in zip(spec.workloads, built, strict=True):
        if g is None or w.parallelism is None or w.model is None:
            continue
        par = parallelism_from_dict(w.parallelism, source, "parallelism")
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
        model = load_model(w.model, base_dir=base)
        assert isinstance(model, TransformerSpec)  # the generator refuses other models
        state = max(state, aggregator_state_bytes(total_params(model), par.precision,
                                                  par.optimizer_state))
    if opts.dims is not None:
        for name in opts.dims:
            if name not in fabric.names:
                raise InputError(f"no dimension named {short_repr(name, 80)}; names: "
                                 f"{', '.join(fabric.names)}", source=source,
                                 field="in_network_optimizer.dims")
        dims = list(dict.fromkeys(opts.dims))
    if not used:
        if spec.in_network_optimizer is not None and not named:
            raise InputError(
                "the in_network_optimizer section prices aggregators, but no model-based "
                "workload uses parallelism.dp_mode: in_network_optimizer with data "
                "parallelism (remove the section, or set dp_mode)",
                source=source, field="in_network_optimizer")
        return cost_model
    try:
        agg = Aggregators(tuple(dims), state, opts.usd_per_port_gbps, opts.w_per_port_gbps,
                          opts.usd_per_state_gb, opts.w_per_state_gb)
    except InputError as exc:
        raise InputError(exc.message, source=source, field=exc.field) from None
    return dataclasses.replace(cost_model, aggregators=agg)


def _check_communicator(groups: Mapping[str, tuple[int, ...]], fabric: Fabric, src: str) -> None:
    """Every phase group of a LIBRA communicator fits ``fabric``: one entry per dimension,
    each a divisor of the dimension's size. Errors name the communicator file and its key
    (``Forward``, ``InputGrad``, ``WeightGrad``), not the scenario."""
    key_of = {g: k for k, g in LIBRA_PHASE_GROUPS.items()}
    for g_name, span in groups.items():
        key = key_of.get(g_name, g_name)
        if len(span) != fabric.n_dims:
            raise InputError(
                f"the {g_name} group lists {len(span)} dimensions, the fabric has {fabric.n_dims} "
                f"({', '.join(fabric.names)})",
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


def scenario_from_dict(data: Any, source: str = "<dict>", base_dir: str | Path = ".") -> Scenario:
    """Validate a scenario mapping (as read from YAML) and build the :class:`Scenario`.

    Paths inside are resolved relative to ``base_dir``; each file they name is read once.
    """
    return _build(data, source, base_dir, ParseCache())[0]


def _build(
    data: Any, source: str, base_dir: str | Path, cache: ParseCache
) -> tuple[Scenario, Mapping[str, GeneratedWorkload]]:
    """The scenario of ``data``; ``cache`` is this load's (every file read and parsed once)."""
    if not isinstance(data, dict):
        raise InputError("expected a mapping at the top of the scenario", source=source)
    try:
        spec = ScenarioFile.model_validate(data)
    except ValidationError as exc:
        raise input_error_from_pydantic(exc, source) from None
    base = Path(base_dir)

    fabric = _fabric(spec.fabric, source, base, cache)
    cost_model = _cost_model(spec, source, base, cache)
    built = [_workload(w, i, fabric, source, base, cache) for i, w in enumerate(spec.workloads)]
    cost_model = _with_aggregators(spec, built, cost_model, fabric, source, base)
    workloads = [wl for wl, _ in built]
    compression = _compression(spec.compression, source)
    if compression is not None:
        try:
            workloads = [compress_workload(wl, compression) for wl in workloads]
        except InputError as exc:
            raise InputError(exc.message, source=source, field=exc.field) from None
    policy = _overlap(spec.fine_grained_overlap, spec.training_loop, source)
    if policy is not None:
        try:
            workloads = [overlap_workload(wl, policy) for wl in workloads]
        except InputError as exc:
            raise InputError(exc.message, source=source, field=exc.field) from None
    weights = [w.weight for w in spec.workloads]
    if spec.diloco is not None:
        d = spec.diloco
        try:
            settings = DiLoCoSettings(d.sync_every_steps, d.fragments, d.delta_bits,
                                      d.overlap_steps)
            ws, wts = diloco_workloads(workloads, weights, fabric, d.site_dim, settings,
                                       d.params_per_npu, d.dp_group)
        except InputError as exc:
            raise InputError(exc.message, source=source, field=exc.field) from None
        workloads, weights = list(ws), list(wts)
    generated = MappingProxyType({wl.name: g for wl, g in built if g is not None})

    # Constraints
    cons: list[LinearConstraint] = []
    for i, text in enumerate(spec.constraints.linear):
        cons.append(parse_constraint(text, fabric, field=f"constraints.linear[{i}]", source=source))
    for key, (lo, hi) in spec.constraints.bounds.items():
        fld = f"constraints.bounds.{key}"
        if key not in fabric.names:
            raise InputError(
                f"no dimension named {short_repr(key, 80)}; names: {', '.join(fabric.names)}",
                source=source,
                field=fld,
            )
        if lo is not None and hi is not None and lo > hi:
            raise InputError(f"min {lo} exceeds max {hi}", source=source, field=fld)
        if lo is not None:
            cons.append(parse_constraint(f"bw.{key} >= {lo!r}", fabric, field=fld, source=source))
        if hi is not None:
            cons.append(parse_constraint(f"bw.{key} <= {hi!r}", fabric, field=fld, source=source))
    try:
        scenario = Scenario(
            fabric=fabric,
            cost_model=cost_model,
            workloads=tuple(workloads),
            weights=tuple(weights),
            constraints=tuple(cons),
            budget_usd=spec.constraints.budget_usd,
            power_w=spec.constraints.power_w,
            objective=spec.objective,
            collective_model=spec.collective_model,
            training_loop=spec.training_loop,
            traffic_model=spec.traffic_model,
            collectives=_collectives(spec.collectives, fabric, source, base),
            in_network_reduction=tuple(spec.in_network_reduction),
            tco=None if spec.tco is None else TcoModel.from_mapping(spec.tco, source),
            name=spec.name or Path(source).stem,
            source=source,
        )
    except InputError as exc:
        raise _reraise(exc, source, "scenario") from None
    return scenario, generated


def _scenario_file(ref: str | Path) -> Path:
    """An existing file wins over an example of the same name; a bare name (no directory,
    no suffix) that is neither a file nor an example is reported with the examples' names."""
    if str(ref) == "":
        raise InputError("empty path; expected a scenario file or an example name",
                         field="scenario")
    p = Path(ref)
    try:
        exists, is_file = p.exists(), p.is_file()
    except OSError:  # e.g. a name too long for the file system: load_yaml reports it
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


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file, or a shipped example by name.

    Parameters
    ----------
    path : str or pathlib.Path
        A scenario file, or the name of an example (:mod:`libra_opt.io.examples`), e.g.
        ``"gpt3_175b_4d"``.

    Raises
    ------
    InputError
        Naming the file, the field and what was expected.

    Examples
    --------
    >>> load_scenario("gpt3_175b_4d").objective
    'perf'
    """
    return load_scenario_with_models(path)[0]


def load_scenario_with_models(
    path: str | Path,
) -> tuple[Scenario, Mapping[str, GeneratedWorkload]]:
    """:func:`load_scenario`, and the generator output of each model-based workload.

    Returns
    -------
    scenario : Scenario
    generated : mapping
        Workload name -> :class:`~libra_opt.generators.generated.GeneratedWorkload` for the
        workloads described by ``model``/``parallelism``/``device`` (memory, FLOPs,
        placement: what ``libra-opt workload`` reports); ASTRA-sim workloads are absent.
    """
    p = _scenario_file(path)
    cache = ParseCache()  # this load's: each file it refers to is read and parsed once
    return _build(load_yaml(p, cache=cache), str(p), p.parent, cache)
