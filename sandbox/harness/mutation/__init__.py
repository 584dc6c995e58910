"""Bug injection: mutants and equivalent copies of the engine, and the probe that runs them."""
