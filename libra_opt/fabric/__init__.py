"""What is built: dimensions and fabrics, the topology classes, fabric builders, component
counts, networkx graphs (import from the modules)."""
