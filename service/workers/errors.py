"""How a served model fails a request: one error type per cause, which the API layer maps to a status once.

The names are the engine's, as the API layer and the docs know them; the embedding, rerank and speech
pipelines fail their requests with the same ones (their supervisor is the engine's).
"""


class EngineError(RuntimeError):
    """The model failed the request (not the client's fault)."""


class EngineRejected(EngineError):
    """The model cannot run the request's settings (a combination the API's rules did not foresee)."""


class EngineUnavailable(EngineError):
    """The model's process is not running (stopped, or died); retrying later may succeed."""


class EngineOverloaded(EngineError):
    """The model had no room for the request (a full KV cache, a full queue); retrying later may succeed."""
