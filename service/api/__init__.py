"""API semantics: validation and translation between ovserve.v1 messages and the engine."""
