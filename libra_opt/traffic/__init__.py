"""What moves and how long it takes: workloads, collectives, routing, step time of a workload."""
