"""Structured outputs: JSON Schema and regex to grammars, their limits, and the output constraint of a request."""
