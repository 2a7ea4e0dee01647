"""Strict, bounded YAML reading, private to ``libra_opt.io``: one function, :func:`read_yaml`
(the rules are in :mod:`.strict`). Other packages read YAML through ``libra_opt.io.read_yaml``
only.
"""

from libra_opt.io._yaml.strict import (
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    dump_yaml,
    read_yaml,
)

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "dump_yaml", "read_yaml"]
