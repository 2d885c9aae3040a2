"""ovserve's REST bridge: OpenAI JSON and server-sent events on /v3, served by calling the gRPC service."""
