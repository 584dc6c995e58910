"""How one child runs: the fork server, a run's limits and records, and the child's own defences."""
