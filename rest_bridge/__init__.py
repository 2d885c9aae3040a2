"""ovserve's REST bridge: OpenAI JSON and server-sent events on /v3, served by calling the gRPC service.

``app`` puts the routes together: ``routes/`` holds one module per OpenAI resource (its handlers and paths),
over ``handler`` (the HTTP side every route shares: ids, metadata, errors, calls, event streams), ``translate/``
(request bodies and query strings -> proto requests) and ``render/`` (proto replies -> OpenAI JSON).
"""
