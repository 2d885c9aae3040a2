"""HelperProcess: a child process that answers one request at a time, for work that must not hold our GIL.

Some C++ calls hold the GIL from start to end (openvino_genai's grammar compiler and chat-template
engine among them): run in a thread of the server they stop the event loop as surely as if run on
it. A helper runs them in a process of its own, started on first use (``python -m MODULE FD``, see
``start_child``), and costs only that process when one crashes or runs away: past its timeout a
request's process is killed, and started again for the next request.

Protocol (pickled over the socketpair): the server sends the load message once and the helper answers
("ready", None) or ("failed", why); then one answer per request. ``serve`` is the helper's side.
"""

from __future__ import annotations

import contextlib
import logging
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from ovserve.service.workers.process import start_child

log = logging.getLogger(__name__)

STARTUP_TIMEOUT = 120.0  # seconds for a helper to load (not counted against a request)
S = TypeVar("S")


class HelperTimeout(Exception):
    """The request ran past its timeout; the process was killed."""


class HelperDied(Exception):
    """The process died on the request (or before it); the next request starts a new one."""


class HelperStartError(Exception):
    """The process did not get ready."""


class HelperProcess:
    """One helper process running ``module``, loaded with ``load`` (any picklable message)."""

    def __init__(self, module: str, load: object) -> None:
        self._module = module
        self._load = load
        # Held by a caller's thread for a whole request: a caller that gives up mid-request must not
        # let the next request onto the same pipe before the answer is read.
        self._lock = threading.Lock()
        self.process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self.restarts = 0  # processes killed for running past a timeout or dying

    def ask(self, message: object, timeout: float) -> Any:
        """Blocking: the helper's answer to ``message``; HelperTimeout, HelperDied or HelperStartError."""
        return self.ask_pickled(pickle.dumps(message, pickle.HIGHEST_PROTOCOL), timeout)

    def ask_pickled(self, message: bytes, timeout: float) -> Any:
        """``ask`` with the message already pickled (a caller that measured it need not pickle it twice)."""
        with self._lock:
            if self.process is not None and self.process.poll() is not None:
                # It died since the last request (killed from outside): not this request's fault.
                self._stop(restart=True)
            try:
                connection = self._started()
                connection.send_bytes(message)
                if not connection.poll(timeout):
                    self._stop(restart=True)
                    raise HelperTimeout(f"it took longer than {timeout:g} s")
                return connection.recv()
            except (EOFError, OSError) as error:
                log.error("the helper process %s died: %s", self._module, error)
                self._stop(restart=True)
                raise HelperDied(str(error)) from error
            except HelperStartError:
                self._stop()
                raise

    def close(self) -> None:
        """End the process, if it runs (waits for a request under way)."""
        with self._lock:
            if self.process is not None:
                self._stop()

    def _started(self) -> Connection:
        if self._connection is not None:
            return self._connection
        self.process, connection = start_child(self._module)
        connection.send(self._load)
        if not connection.poll(STARTUP_TIMEOUT):
            raise HelperStartError("no answer")
        try:
            kind, detail = connection.recv()
        except EOFError:
            raise HelperStartError("it exited while loading") from None
        if kind != "ready":
            raise HelperStartError(detail)
        self._connection = connection
        return connection

    def _stop(self, *, restart: bool = False) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self.process is not None:
            self.process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=10)
            self.process = None
        if restart:
            self.restarts += 1


def serve(load: Callable[[Any], S], answer: Callable[[S, Any], object]) -> None:
    """The helper's side (its ``main``): ``load`` the first message, then ``answer`` each request until the
    server goes away. ``answer`` returns what goes back; an exception it raises ends the process."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when this process ends
    connection = Connection(int(sys.argv[1]))
    try:
        state = load(connection.recv())
    except Exception as error:
        connection.send(("failed", f"{type(error).__name__}: {error}"))
        return
    connection.send(("ready", None))
    with contextlib.suppress(EOFError, BrokenPipeError):
        while True:
            connection.send(answer(state, connection.recv()))
