"""Human output only: text tables, JSON-ready dictionaries and plots (imported per module)."""
