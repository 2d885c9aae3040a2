"""Repository tools: the stub generator, the README generators, probes and the test-model builder (not installed)."""
