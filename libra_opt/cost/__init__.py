"""What it costs: unit prices turned into linear cost and power coefficients, catalogs, TCO,
failures and goodput (import from the modules)."""
