"""WorkerProcess: a served model's child process, the pipe to it, and the thread that reads it.

Started with subprocess (not multiprocessing's spawn, which would re-run the
parent's ``__main__``) as ``python -m MODULE FD``, where MODULE is one of
``ENTRY_POINTS``; the first message on the pipe is the spec of what it loads,
the first answer Ready or LoadFailed (see messages.py). MessageWriter sends what follows (see its send).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import queue
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from pathlib import Path

from ovserve.clients.defaults import MIB
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.load_failure import LoadSpec, compile_settings, how_it_ended
from ovserve.service.workers.messages import Heartbeat, LoadFailed, OutOfBand, Ready, Stop

# The worker processes' entry points (``python -m MODULE FD``), by what they run.
ENTRY_POINTS = {
    "engine": "ovserve.service.engine",  # an LLM's continuous-batching engine (service/engine/worker.py)
    "pipeline": "ovserve.service.pipelines",  # an embedding, rerank or speech pipeline (service/pipelines/worker.py)
}
# A message carrying more array bytes than this is written by the sender thread (see WorkerProcess.send).
LARGE_MESSAGE_BYTES = MIB
GONE = object()  # what the reader hands over when the pipe closes: the process ended


# glibc's malloc asks for transparent huge pages (madvise) for what the worker allocates: OpenVINO's buffers for
# a model (the KV cache, its working memory). Measured on a 2-core Xeon with AMX, the Qwen2.5-1.5B-shaped int8
# model, one stream, each setting in fresh processes, 3 rounds: 76.6-79.6 ms a token against 84.5-91.7 without
# (docs/benchmarks/engine-settings.md). glibc before 2.35 ignores the tunable; a kernel with transparent huge pages
# "never" grants none.
MALLOC_TUNABLE = "glibc.malloc.hugetlb=1"


def child_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """A worker's environment: ``environ`` with this package importable and MALLOC_TUNABLE added to
    GLIBC_TUNABLES, unless the operator's GLIBC_TUNABLES already says what malloc's hugetlb is."""
    # The child must import this very package, wherever it came from.
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**environ, "PYTHONPATH": os.pathsep.join([package_root, environ.get("PYTHONPATH", "")])}
    tunables = environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" not in tunables:
        env["GLIBC_TUNABLES"] = ":".join(filter(None, [tunables, MALLOC_TUNABLE]))
    return env


def start_child(module: str) -> tuple[subprocess.Popen[bytes], Connection]:
    """Start ``python -m module FD`` with FD its end of a socketpair; the process and our end of the pipe."""
    ours, theirs = socket.socketpair()
    env = child_environment(os.environ)
    process = subprocess.Popen(
        [sys.executable, "-m", module, str(theirs.fileno())],
        pass_fds=[theirs.fileno()],
        stdin=subprocess.DEVNULL,
        env=env,
    )
    theirs.close()
    return process, Connection(ours.detach())


class WorkerProcess:
    """A loaded worker process; ``start_reading`` hands its messages to an event loop, in batches."""

    def __init__(self, spec: LoadSpec, name: str, runs: str, *, queued_writes: bool = False) -> None:
        """Start ``ENTRY_POINTS[runs]`` and wait (blocking) until its model is loaded; EngineError if it fails,
        naming why (the exception, the signal that killed it, its exit status) and the settings it compiled with.

        ``spec`` is what the process loads: a WorkerSpec for the engine, a PipelineSpec for a pipeline.
        ``queued_writes``: every message is written by the sender thread (see MessageWriter), for a process that
        reads its pipe only between calls lasting seconds.
        """
        self.name = name
        self.process, self._connection = start_child(ENTRY_POINTS[runs])
        self._writer = MessageWriter(self._connection, name, queued=queued_writes)
        self.last_heard = time.monotonic()  # when it last said something other than a heartbeat (progress)
        self.last_beat = self.last_heard  # when it last said anything, heartbeats included (alive)
        try:
            self._connection.send(spec)
            answer = self._connection.recv()  # blocks until the pipeline is compiled
        except (EOFError, OSError):  # it died (a signal while compiling, say): its exit status says how
            answer = LoadFailed(f"the {runs} process {how_it_ended(self.process)} while loading")
        if not isinstance(answer, Ready):
            self.kill()
            # OpenVINO's exceptions end in blank lines, which would part the message from the settings.
            detail = answer.message.strip() if isinstance(answer, LoadFailed) else repr(answer)
            raise EngineError(f"model {name!r} failed to load: {detail}; {compile_settings(spec)}")

    @property
    def pid(self) -> int:
        """The process id."""
        return self.process.pid

    def state(self) -> str | None:
        """The process's state letter in /proc/<pid>/stat (R running, S sleeping, D in I/O, T stopped, Z dead),
        or None where it cannot be read."""
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as stat:
                text = stat.read()
        except OSError:
            return None
        end = text.rfind(b")")  # the command before it is in parentheses and may hold spaces
        letter = text[end + 2 : end + 3].decode() if end >= 0 else ""
        return letter or None

    def start_reading(self, loop: asyncio.AbstractEventLoop, dispatch: Callable[[list[object]], None]) -> None:
        """Hand every message to ``dispatch`` on ``loop``, all that are waiting in one call; GONE last."""
        threading.Thread(
            target=self._read, args=(loop, dispatch), name=f"worker-reader-{self.name}", daemon=True
        ).start()

    def send(self, message: object) -> None:
        """Send a message (thread-safe, in order; see MessageWriter); OSError if the process is gone."""
        self._writer.send(message)

    def stop(self, timeout: float = 10.0) -> None:
        """Ask the process to fail what runs and end; kill it if it does not within ``timeout`` s."""
        with contextlib.suppress(BrokenPipeError, OSError):
            self.send(Stop())
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
        self._connection.close()

    def kill(self) -> None:
        """End the process at once (its reader then hands over GONE)."""
        self.process.kill()
        self.process.wait()

    def _read(self, loop: asyncio.AbstractEventLoop, dispatch: Callable[[list[object]], None]) -> None:
        # One wake-up of the loop per batch rather than per engine step: when the
        # loop is busy, the steps it missed arrive together and merge per request.
        gone = False
        while not gone:
            batch: list[object] = []
            try:
                batch.append(self._connection.recv())
                while self._connection.poll(0):
                    batch.append(self._connection.recv())
            except (EOFError, OSError):
                batch.append(GONE)
                gone = True
            self.last_beat = now = time.monotonic()
            said = [message for message in batch if not isinstance(message, Heartbeat)]
            if not said:
                continue
            self.last_heard = now
            batch = said
            try:
                loop.call_soon_threadsafe(dispatch, batch)
            except RuntimeError:  # the event loop is closed
                return


class MessageWriter:
    """Writes messages to a worker process's pipe: in order, from any thread, large ones from a thread of its own."""

    def __init__(self, connection: Connection, name: str, *, queued: bool = False) -> None:
        self._connection = connection
        self._name = name
        self._always_queued = queued  # every message written by the sender thread, none by the caller
        self._send_lock = threading.Lock()  # held for one message's write
        self._order_lock = threading.Lock()  # held while a message is written or queued: sends keep their order
        self._queued = 0  # messages in the outbox not yet written
        self._outbox: queue.SimpleQueue[tuple[bytes, list[pickle.PickleBuffer]]] = queue.SimpleQueue()
        self._sender: threading.Thread | None = None

    def send(self, message: object) -> None:
        """Send a message (thread-safe, in order); OSError if the process is gone (a queued message that meets a
        broken pipe is dropped instead: the reader sees the process gone, and the supervisor fails its requests).

        Arrays travel out of band (pickle protocol 5: not copied into the pickle, which held the GIL 0.7 s for a
        request's 400 MB of image pixels), and a message of more than LARGE_MESSAGE_BYTES (its pickle and arrays) is
        written by a sender thread, as is every message after it until the outbox is empty (and every message with
        ``queued``): such a write waits for the process to read it, which the caller (the event loop) must not.
        """
        buffers: list[pickle.PickleBuffer] = []
        head = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
        size = len(head) + sum(buffer.raw().nbytes for buffer in buffers)
        with self._order_lock:
            if self._always_queued or self._queued or size > LARGE_MESSAGE_BYTES:
                self._queued += 1
                self._outbox.put((head, buffers))
                if self._sender is None:
                    self._sender = threading.Thread(target=self._send_queued, name=f"worker-sender-{self._name}",
                                                    daemon=True)  # fmt: skip
                    self._sender.start()
                return
            self._write(head, buffers)

    def _write(self, head: bytes, buffers: list[pickle.PickleBuffer]) -> None:
        with self._send_lock:
            if not buffers:
                self._connection.send_bytes(head)  # what Connection.send writes; recv reads it as ever
                return
            self._connection.send(OutOfBand(head, tuple(buffer.raw().nbytes for buffer in buffers)))
            for buffer in buffers:
                self._connection.send_bytes(buffer.raw())

    def _send_queued(self) -> None:
        """The sender thread: write the outbox in order; once the pipe fails, drop what is left (the reader sees
        the process gone and the supervisor fails its requests)."""
        broken = False
        while True:
            head, buffers = self._outbox.get()
            if not broken:
                try:
                    self._write(head, buffers)
                except (OSError, ValueError):  # ValueError: the connection was closed under it
                    broken = True
            with self._order_lock:
                self._queued -= 1
