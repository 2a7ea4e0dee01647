"""Workload generators: model + parallelism + device (+ fabric mapping) -> Workload.

Typical use (presets are read by :mod:`libra_opt.io.presets`)::

    from libra_opt.io.presets import load_device, load_model
    from libra_opt.generators import generate_workload
    g = generate_workload(load_model("gpt3_175b"), {"tp": 8, "pp": 8, "dp": 16,
                          "global_batch_size": 1536}, load_device("a100_80gb"), fabric)
    g.workload            # a libra_opt.traffic.workload.Workload for the solver
    g.memory, g.model_flops_per_step, g.tokens_per_step
"""

from libra_opt.generators.descriptors import model_from_dict
from libra_opt.generators.generator import generate_workload
from libra_opt.generators.parallelism import Parallelism

__all__ = ["Parallelism", "generate_workload", "model_from_dict"]
