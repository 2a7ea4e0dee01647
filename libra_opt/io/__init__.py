"""File formats: the scenario YAML, LIBRA's YAML inputs and ASTRA-sim 1.0 workload text.

Only this package reads or writes files.
"""

from libra_opt.io.astra_sim import read_astra_sim, write_astra_sim
from libra_opt.io.libra import (
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
    write_libra_communicator,
    write_libra_cost_model,
    write_libra_network,
)
from libra_opt.io.scenario import load_scenario

__all__ = [
    "load_scenario",
    "read_astra_sim",
    "read_libra_communicator",
    "read_libra_cost_model",
    "read_libra_network",
    "write_astra_sim",
    "write_libra_communicator",
    "write_libra_cost_model",
    "write_libra_network",
]
