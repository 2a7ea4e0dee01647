"""Workload generators: model + parallelism + device (+ fabric mapping) -> Workload.

Typical use::

    from libra_opt.models import load_model, generate_workload
    g = generate_workload(load_model("gpt3_175b"), {"tp": 8, "pp": 8, "dp": 16,
                          "global_batch_size": 1536}, "a100_80gb", fabric)
    g.workload            # a libra_opt.workload.Workload for the solver
    g.memory, g.model_flops_per_step, g.tokens_per_step

Modules: :mod:`~libra_opt.models.descriptors` (model YAML), :mod:`~libra_opt.models.parallelism`,
:mod:`~libra_opt.models.devices`, :mod:`~libra_opt.models.mapping`,
:mod:`~libra_opt.models.transformer_counts` (parameters, FLOPs), :mod:`~libra_opt.models.memory`,
:mod:`~libra_opt.models.pipeline`, :mod:`~libra_opt.models.transformer_comm`,
:mod:`~libra_opt.models.transformer_workload`, :mod:`~libra_opt.models.dlrm`,
:mod:`~libra_opt.models.resnet`, :mod:`~libra_opt.models.generator`,
:mod:`~libra_opt.models.scenario_entry`, :mod:`~libra_opt.models.report`.
"""

from libra_opt.models.descriptors import (
    DLRMSpec,
    ResNetSpec,
    TransformerSpec,
    load_model,
    model_from_dict,
    model_presets,
)
from libra_opt.models.devices import ComputeEfficiency, Device, device_names, load_device
from libra_opt.models.generated import (
    GeneratedWorkload,
    achieved_flops_per_npu,
    model_flops_utilization,
    throughput_samples_per_s,
    throughput_tokens_per_s,
)
from libra_opt.models.generator import generate_workload
from libra_opt.models.mapping import Placement, place_groups
from libra_opt.models.parallelism import Parallelism, Precision, parallelism_from_dict

__all__ = [
    "ComputeEfficiency",
    "DLRMSpec",
    "Device",
    "GeneratedWorkload",
    "Parallelism",
    "Placement",
    "Precision",
    "ResNetSpec",
    "TransformerSpec",
    "achieved_flops_per_npu",
    "device_names",
    "generate_workload",
    "load_device",
    "load_model",
    "model_flops_utilization",
    "model_from_dict",
    "model_presets",
    "parallelism_from_dict",
    "place_groups",
    "throughput_samples_per_s",
    "throughput_tokens_per_s",
]
