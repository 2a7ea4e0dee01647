"""Every file read or written (only this package reads or writes files): scenario YAML,
LIBRA's YAML inputs, ASTRA-sim text, presets, examples, results.
"""

from libra_opt.io._yaml import read_yaml
from libra_opt.io.astra_sim import read_astra_sim, write_astra_sim
from libra_opt.io.libra import (
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
    write_libra_communicator,
    write_libra_cost_model,
    write_libra_network,
)
from libra_opt.io.output import write_bundle
from libra_opt.io.scenario_file import load_scenario, load_spec, resolve_spec, spec_to_yaml

__all__ = [
    "load_scenario",
    "load_spec",
    "read_astra_sim",
    "read_libra_communicator",
    "read_libra_cost_model",
    "read_libra_network",
    "read_yaml",
    "resolve_spec",
    "spec_to_yaml",
    "write_astra_sim",
    "write_bundle",
    "write_libra_communicator",
    "write_libra_cost_model",
    "write_libra_network",
]
