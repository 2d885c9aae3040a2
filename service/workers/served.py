"""Served: what the server sees of any served model's process, an LLM engine's or a pipeline's, the same way.

Health follows ``up`` and ``watch``; metrics and ``/v1/loads`` read ``up``, ``restarts``, ``pid`` and
``load()``; shutdown calls ``end_requests`` and ``close``. ``Engine`` and ``Pipeline`` implement it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class ProcessSettings:
    """How a served model's process is started and watched, whatever it runs."""

    device: str
    stall_timeout_s: float  # silent this long while work waits on it: taken for wedged and replaced
    heartbeat_timeout_s: float = 10.0  # no heartbeat this long: stopped or wedged, replaced
    properties: dict[str, object] = field(default_factory=dict)  # the device's properties


@dataclass(frozen=True)
class KvCacheLoad:
    """A continuous-batching model's KV cache."""

    usage: float  # share in use, 0-1
    bytes: int  # allocated so far (it grows with use up to its size)
    capacity_tokens: int  # tokens it holds when full (0: sized in bytes, known only to the pipeline)


@dataclass(frozen=True)
class Load:
    """What a served model is working on now."""

    running: int  # requests its process is running
    waiting: int  # requests sent to it and not taken yet
    kv_cache: KvCacheLoad | None = None  # None: a model without one (embedding, rerank, speech)


class Served(Protocol):
    """One served model's process, as the server's health, metrics and shutdown see it."""

    @property
    def name(self) -> str:
        """The model's public name."""

    @property
    def up(self) -> bool:
        """Whether its process runs and takes work."""

    @property
    def restarts(self) -> int:
        """Processes replaced after dying or stalling."""

    @property
    def pid(self) -> int | None:
        """The process's id, while one runs."""

    @property
    def load_failure(self) -> str | None:
        """Why the last try to start its replacement failed, while none runs (signal or exception, settings);
        None otherwise."""

    async def load(self) -> Load:
        """What it works on now (raises EngineError while its process is not running)."""

    def watch(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(up)`` on the event loop whenever the process goes down or comes back."""

    def start(self) -> None:
        """Start delivering the process's messages to the running event loop, and watching the process."""

    def end_requests(self, reason: str) -> None:
        """Fail every open request now with a retriable EngineUnavailable(``reason``)."""

    def close(self) -> None:
        """End the process; what still runs fails."""
