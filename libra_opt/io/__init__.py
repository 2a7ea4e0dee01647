"""Every file read or written (only this package reads or writes files): scenario YAML,
LIBRA's YAML inputs, ASTRA-sim text, presets, examples, results.
"""

from libra_opt.io._yaml import read_yaml
from libra_opt.io.astra_sim import export_astra_sim, read_astra_sim, write_astra_sim
from libra_opt.io.libra import (
    read_libra_communicator,
    read_libra_cost_model,
    read_libra_network,
    write_libra_communicator,
    write_libra_cost_model,
    write_libra_network,
)
from libra_opt.io.output import (
    CSV_SUFFIXES,
    PLOT_SUFFIXES,
    check_output_dir,
    check_writable_output,
    confined_path,
    safe_slug,
    save_figure_atomic,
    write_bundle,
    write_bytes_atomic,
    write_csv_atomic,
    write_text_atomic,
)
from libra_opt.io.presets import (
    available_catalogs,
    catalog_cost_model,
    device_names,
    load_catalog,
    load_device,
    load_model,
    model_presets,
)
from libra_opt.io.scenario_file import (
    load_scenario,
    load_scenario_with_models,
    load_spec,
    resolve_spec,
    save_spec,
    spec_to_yaml,
)

__all__ = [
    "CSV_SUFFIXES",
    "PLOT_SUFFIXES",
    "check_output_dir",
    "check_writable_output",
    "confined_path",
    "safe_slug",
    "save_figure_atomic",
    "write_bytes_atomic",
    "write_csv_atomic",
    "write_text_atomic",
    "available_catalogs",
    "catalog_cost_model",
    "device_names",
    "export_astra_sim",
    "load_catalog",
    "load_device",
    "load_model",
    "load_scenario",
    "load_scenario_with_models",
    "load_spec",
    "resolve_spec",
    "save_spec",
    "spec_to_yaml",
    "model_presets",
    "read_astra_sim",
    "read_yaml",
    "read_libra_communicator",
    "read_libra_cost_model",
    "read_libra_network",
    "write_astra_sim",
    "write_bundle",
    "write_libra_communicator",
    "write_libra_cost_model",
    "write_libra_network",
]
