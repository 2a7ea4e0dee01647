"""Workload generators: model + parallelism + device (+ fabric mapping) -> Workload.

Typical use (presets are read by :mod:`libra_opt.io.presets`)::

    from libra_opt.io.presets import load_device, load_model
    from libra_opt.generators import generate_workload
    g = generate_workload(load_model("gpt3_175b"), {"tp": 8, "pp": 8, "dp": 16,
                          "global_batch_size": 1536}, load_device("a100_80gb"), fabric)
    g.workload            # a libra_opt.traffic.workload.Workload for the solver
    g.memory, g.model_flops_per_step, g.tokens_per_step
"""

from libra_opt.generators.descriptors import DLRMSpec, ResNetSpec, TransformerSpec, model_from_dict
from libra_opt.generators.devices import ComputeEfficiency, Device, device_from_dict
from libra_opt.generators.generated import (
    GeneratedWorkload,
    achieved_flops_per_npu,
    model_flops_utilization,
    throughput_samples_per_s,
    throughput_tokens_per_s,
)
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.mapping import Placement, place_groups
from libra_opt.generators.parallelism import Parallelism, Precision, parallelism_from_dict

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
    "device_from_dict",
    "generate_workload",
    "model_flops_utilization",
    "model_from_dict",
    "parallelism_from_dict",
    "place_groups",
    "throughput_samples_per_s",
    "throughput_tokens_per_s",
]
