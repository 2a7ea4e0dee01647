"""The inputs of a co-design search, read from a scenario file or a shipped example.

The scenario gives the fabric family, prices, constraints, objective and TCO; its one
model-based workload gives the model, device, compute model, global batch, precision and
options. :func:`read_search_workload` reads and checks them;
:func:`libra_opt.explore.search_base.make_search_base` builds the search's base from them
without reading a file (``libra_opt.load_search_base`` does both).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from libra_opt.errors import InputError
from libra_opt.generators.descriptors import TransformerSpec
from libra_opt.generators.devices import ComputeEfficiency, Device
from libra_opt.generators.parallelism import Parallelism, parallelism_from_dict
from libra_opt.io.example_files import example_path, is_example_name
from libra_opt.io.presets import device_from_value, load_model
from libra_opt.io.scenario_file import load_scenario_with_models
from libra_opt.io.yaml_util import load_yaml
from libra_opt.scenario.scenario import Scenario

__all__ = ["SearchWorkload", "read_search_workload"]


@dataclass(frozen=True)
class SearchWorkload:
    """A scenario with one model-based transformer workload, as read for a search.

    Attributes
    ----------
    scenario : Scenario
    name : str
        The workload's name.
    model : TransformerSpec
    device : Device
    efficiency : ComputeEfficiency
        The resolved compute model of the generated workload.
    parallelism : Parallelism
    mapping : mapping, optional
        The workload's placement as written.
    source : str
        The file read (for messages).
    """

    scenario: Scenario
    name: str
    model: TransformerSpec
    device: Device
    efficiency: ComputeEfficiency
    parallelism: Parallelism
    mapping: Mapping[str, Any] | None
    source: str


def _resolve(ref: str | Path) -> Path:
    p = Path(ref)
    if p.is_file():
        return p
    if is_example_name(ref):
        return example_path(str(ref))
    return p


def read_search_workload(ref: str | Path) -> SearchWorkload:
    """The scenario file or example ``ref`` and its one model-based workload.

    Raises
    ------
    InputError
        When the scenario does not have exactly one workload, or the workload is not a
        transformer described by ``model`` + ``parallelism`` + ``device``.

    Examples
    --------
    >>> w = read_search_workload("llama3_405b_h100_tco")
    >>> w.model.name, w.parallelism.pp, w.scenario.fabric.n_npus
    ('llama3_405b', 16, 16384)
    """
    scenario, generated = load_scenario_with_models(ref)
    path = _resolve(ref)
    source = str(path)
    raw = load_yaml(path)
    entries = raw.get("workloads") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or len(entries) != 1 or len(scenario.workloads) != 1:
        raise InputError("the co-design search takes a scenario with exactly one workload",
                         source=source, field="workloads")
    entry = entries[0]
    name = scenario.workloads[0].name
    if not isinstance(entry, dict) or "model" not in entry or name not in generated:
        raise InputError("the co-design search needs a model-based workload (model, "
                         "parallelism, device)", source=source, field="workloads[0]")
    model = load_model(entry["model"], base_dir=path.parent)
    if not isinstance(model, TransformerSpec):
        raise InputError(f"the co-design search covers transformer models; {model.name!r} is "
                         f"a {model.kind}", source=source, field=f"workloads[{name}].model")
    par = parallelism_from_dict(entry["parallelism"], source, f"workloads[{name}].parallelism")
    device = device_from_value(entry["device"], source, f"workloads[{name}].device")
    return SearchWorkload(scenario, name, model, device, generated[name].efficiency, par,
                          entry.get("mapping"), source)
