"""The runtime every served model shares: a child process per model, a pipe to it, and a supervisor that replaces it.

The LLM engine (``python -m ovserve.service.engine``) and the embedding, rerank and speech pipelines
(``python -m ovserve.service.pipelines``) each run in a ``WorkerProcess`` kept alive by a ``Supervisor``;
each served model shows itself to the server as a ``Served`` (health, restarts, load) and fails
requests with the errors of ``errors.py``. Nothing here knows what a process computes.
"""

from ovserve.service.workers.errors import EngineError, EngineOverloaded, EngineRejected, EngineUnavailable
from ovserve.service.workers.served import KvCacheLoad, Load, ProcessSettings, Served

__all__ = [
    "EngineError",
    "EngineOverloaded",
    "EngineRejected",
    "EngineUnavailable",
    "KvCacheLoad",
    "Load",
    "ProcessSettings",
    "Served",
]
