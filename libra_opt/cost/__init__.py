"""What it costs: unit prices turned into linear cost and power coefficients, catalogs, TCO."""

from libra_opt.cost.catalog import Catalog, catalog_from_dict
from libra_opt.cost.prices import (
    CostBreakdown,
    CostCoefficients,
    CostModel,
    TierPrices,
    cost_coefficients,
    network_cost_breakdown,
)
from libra_opt.cost.tco import TcoBreakdown, TcoModel, tco_breakdown, training_run_cost_usd

__all__ = [
    "Catalog",
    "CostBreakdown",
    "CostCoefficients",
    "CostModel",
    "TcoBreakdown",
    "TcoModel",
    "TierPrices",
    "catalog_from_dict",
    "cost_coefficients",
    "network_cost_breakdown",
    "tco_breakdown",
    "training_run_cost_usd",
]
