"""What the server and the engine process say to each other over their pipe: one record type per message.

server -> engine: a ``Submission`` (see core.py), ``Cancel``, ``QueryStats``, ``Stop``
(ovserve.service.workers.messages); engine -> server: ``Ready`` or ``LoadFailed`` once at start
(ovserve.service.workers.messages), then ``Outcomes`` at each flush of output (see EngineCore), a
``StatsReport`` per ``QueryStats``, and ``Alive`` when it has worked for HEARTBEAT_S without saying anything (the
server's watchdog takes a busy engine that stays silent for long as wedged).
"""

from __future__ import annotations

from dataclasses import dataclass

from ovserve.service.engine.adapters import LoraAdapter
from ovserve.service.engine.types import EngineStats, Update
from ovserve.service.workers.errors import EngineError


@dataclass(frozen=True)
class Cancel:
    """Stop a request; its KV cache is freed by the next step."""

    request_id: int


@dataclass(frozen=True)
class QueryStats:
    """Ask for an EngineStats; the answer carries the same token."""

    token: int


@dataclass(frozen=True)
class SetAdapters:
    """Serve these LoRA adapters from now on (the pipeline is built again once idle); answered by AdaptersSet."""

    token: int
    adapters: tuple[LoraAdapter, ...]


@dataclass(frozen=True)
class AdaptersSet:
    """The answer to SetAdapters: ``error`` None once the pipeline serves them, else why it does not."""

    token: int
    error: str | None


@dataclass(frozen=True)
class Alive:
    """Still stepping: nothing to hand over yet (a long prefill, say)."""


HEARTBEAT_S = 1.0


@dataclass(frozen=True)
class Outcomes:
    """Per request: its output since the last flush, or the error that ends it."""

    items: list[tuple[int, Update | EngineError]]


@dataclass(frozen=True)
class StatsReport:
    """The answer to QueryStats."""

    token: int
    stats: EngineStats


Outcome = tuple[int, Update | EngineError]  # request id and what it gets
