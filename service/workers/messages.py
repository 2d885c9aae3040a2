"""What every worker process and the server say to each other, whatever the process runs.

server -> process: its spec (what to load) first, then its own messages, and ``Stop`` at the end;
process -> server: ``Ready`` or ``LoadFailed`` once, then its own messages (service/engine/messages.py,
service/pipelines/messages.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stop:
    """Fail what runs and end the process."""


@dataclass(frozen=True)
class Ready:
    """The model is loaded: work is welcome."""


@dataclass(frozen=True)
class LoadFailed:
    """The model could not be loaded; the process ends."""

    message: str


@dataclass(frozen=True)
class Heartbeat:
    """The process is alive (sent by a thread of its own: service/workers/child.py); never dispatched."""


@dataclass(frozen=True)
class OutOfBand:
    """A message whose arrays follow it as raw byte messages, one each, of these sizes (see process.py's send):
    ``head`` is the message pickled (protocol 5) without them."""

    head: bytes
    sizes: tuple[int, ...]
