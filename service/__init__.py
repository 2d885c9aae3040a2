"""ovserve's gRPC service: API semantics, the OpenVINO GenAI engine, and the CLI."""
