"""Strict, bounded YAML reading, private to ``libra_opt.io``: one function, :func:`read_yaml`.

:mod:`.strict` holds the rules (duplicate keys refused, ``1e7`` a number, no Python tags,
bounded depth and alias expansion) and picks the reader; :mod:`.simple` reads plain block
documents quickly with exactly the reference loader's answer. Other packages read YAML
through ``libra_opt.io.read_yaml`` only.
"""

from libra_opt.io._yaml.strict import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES, read_yaml

__all__ = ["MAX_YAML_BYTES", "MAX_YAML_DEPTH", "MAX_YAML_NODES", "read_yaml"]
