"""What is built: dimensions and fabrics, fabric builders, component counts, networkx graphs."""

from libra_opt.fabric.builders import (
    as_family,
    fabric_family,
    fabric_from_spec,
    multi_dim,
    rail_only,
    rail_optimized_fat_tree,
)
from libra_opt.fabric.dims import Dim, Fabric
from libra_opt.fabric.inventory import dimension_inventory
from libra_opt.fabric.topology import DimInventory, clos_tiers

__all__ = [
    "Dim",
    "DimInventory",
    "Fabric",
    "as_family",
    "clos_tiers",
    "dimension_inventory",
    "fabric_family",
    "fabric_from_spec",
    "multi_dim",
    "rail_only",
    "rail_optimized_fat_tree",
]
