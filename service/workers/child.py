"""The child's end of a worker process's pipe: sends from any thread, and a heartbeat the work cannot block.

A worker process (engine or pipeline) sends its answers from its main loop; a daemon thread sends a Heartbeat
every HEARTBEAT_INTERVAL_S beside it. The pipelines' ``generate`` and encoders' inference let go of the GIL (a
1 ms ticker thread was never more than 4 ms late during a second of generation or a batch of embeddings), but
``ContinuousBatchingPipeline.step()`` holds it for the whole step (the ticker was 2.4 s late across a
300-token prefill of a 0.5B model on 2 cores): an engine is silent for its longest step. So the supervisor
takes silence past the heartbeat timeout for stopped or wedged only when the process is idle or the kernel
says it is stopped (see Supervisor._fault); a long step is bounded by ``stall_timeout_s`` instead.
"""

from __future__ import annotations

import pickle
import threading
import time
from multiprocessing.connection import Connection
from typing import Any, Protocol

from ovserve.service.workers.messages import Heartbeat, OutOfBand

HEARTBEAT_INTERVAL_S = 0.5


class Channel(Protocol):
    """What a worker's loop needs of its pipe (a ChildConnection; a bare Connection in tests)."""

    def send(self, message: Any, /) -> None:
        """Send one message."""

    def recv(self) -> Any:
        """The next message (blocking)."""

    def poll(self, timeout: float | None = 0.0, /) -> bool:
        """Whether a message waits, waiting up to ``timeout`` seconds."""


class ChildConnection:
    """A worker process's connection to the server, safe to send on from several threads."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._lock = threading.Lock()

    def send(self, message: Any, /) -> None:
        """Send ``message`` whole, never interleaved with another thread's."""
        with self._lock:
            self._connection.send(message)

    def recv(self) -> Any:
        """The next message from the server (blocking), its arrays read after it when they came out of band."""
        message = self._connection.recv()
        if not isinstance(message, OutOfBand):
            return message
        buffers = []
        for size in message.sizes:
            buffer = bytearray(size)  # writable, as the arrays were
            self._connection.recv_bytes_into(buffer)
            buffers.append(buffer)
        return pickle.loads(message.head, buffers=buffers)

    def poll(self, timeout: float | None = 0.0, /) -> bool:
        """Whether a message waits, waiting up to ``timeout`` seconds (None: until one does)."""
        return self._connection.poll(timeout)

    def start_heartbeat(self, interval_s: float = HEARTBEAT_INTERVAL_S) -> None:
        """Send a Heartbeat every ``interval_s`` from a daemon thread, until the pipe closes."""
        threading.Thread(target=self._beat, args=(interval_s,), name="heartbeat", daemon=True).start()

    def _beat(self, interval_s: float) -> None:
        while True:
            time.sleep(interval_s)
            try:
                self.send(Heartbeat())
            except OSError:  # the server closed the pipe: the process is ending
                return
