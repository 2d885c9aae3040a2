"""GrammarChecker: compiles a request's output constraint before the engine runs it, off the event loop.

Why check at all: a grammar the engine cannot compile fails the engine step
it is compiled in, and with it every request of that batch. Why here: the
check compiles with the served model's own tokenizer (see grammar_worker.py)
in a process of its own, started on the first check, so a compile that takes
long blocks neither the event loop nor the engine's steps, and one that
crashes or runs away costs only that process: past ``timeout`` seconds it is
killed (and started again for the next check) and the constraint refused.

Verdicts (not timeouts) are cached by constraint text: clients send the same schema again
and again. Checks run one at a time (a compile uses the cores it can get).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import subprocess
import threading
from collections import OrderedDict
from multiprocessing.connection import Connection
from pathlib import Path

from service.engine.sampling import OutputConstraint
from service.workers.process import start_child

log = logging.getLogger(__name__)

CACHE_SIZE = 512  # verdicts kept, least recently used dropped first
STARTUP_TIMEOUT = 120.0  # seconds for the checker process to load (not counted against a compile)


class GrammarChecker:
    """Compile checks for one model's constraints, in a child process started on first use."""

    def __init__(self, model_dir: Path, *, timeout: float) -> None:
        self._model_dir = model_dir
        self._timeout = timeout
        self._cache: OrderedDict[tuple[str, str], str | None] = OrderedDict()
        self._cache_lock = threading.Lock()  # held for dictionary operations only
        # Held by a worker thread for a whole compile: a caller cancelled mid-compile must not
        # let the next compile onto the same pipe before the answer is read.
        self._compile_lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: Connection | None = None
        self.restarts = 0  # processes killed for running past the timeout or dying

    async def check(self, constraint: OutputConstraint) -> str | None:
        """Why the engine cannot run ``constraint`` (the compiler's words), or None if it compiles."""
        key = (constraint.kind, constraint.value)
        with self._cache_lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        return await asyncio.to_thread(self._verdict, key)

    def close(self) -> None:
        """End the checker process, if it runs (waits for a compile under way)."""
        with self._compile_lock:
            if self._process is not None:
                self._stop()

    def _verdict(self, key: tuple[str, str]) -> str | None:
        """Blocking (a worker thread runs this): the cached verdict, or a compile's, cached."""
        with self._compile_lock:
            with self._cache_lock:
                if key in self._cache:  # another caller checked it meanwhile
                    return self._cache[key]
            verdict, final = self._check(*key)
            if not final:
                return verdict
            with self._cache_lock:
                self._cache[key] = verdict
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
            return verdict

    def _check(self, kind: str, value: str) -> tuple[str | None, bool]:
        """One compile in the child process: the verdict, and whether it is final (worth caching).

        A timeout is not final: on a busy machine the same grammar may compile in time later.
        """
        if self._process is not None and self._process.poll() is not None:
            # It died since the last check (killed from outside): not this constraint's fault.
            self._stop(restart=True)
        try:
            connection = self._started()
            connection.send((kind, value))
            if not connection.poll(self._timeout):
                self._stop(restart=True)
                return f"compiling it took longer than {self._timeout:g} s", False
            verdict: str | None = connection.recv()
            return verdict, True
        except (EOFError, OSError) as error:
            # The compiler crashed on it (a grammar it cannot handle); the next check starts afresh.
            log.error("the grammar checker of %s died: %s", self._model_dir, error)
            self._stop(restart=True)
            return "the grammar compiler failed on it", True
        except _StartupError as error:
            self._stop()
            raise RuntimeError(f"the grammar checker could not start: {error}") from error

    def _started(self) -> Connection:
        if self._connection is not None:
            return self._connection
        self._process, connection = start_child("service.engine.grammar_worker")
        connection.send(self._model_dir)
        if not connection.poll(STARTUP_TIMEOUT):
            raise _StartupError("no answer")
        try:
            kind, detail = connection.recv()
        except EOFError:
            raise _StartupError("it exited while loading") from None
        if kind != "ready":
            raise _StartupError(detail)
        self._connection = connection
        return connection

    def _stop(self, *, restart: bool = False) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        if self._process is not None:
            self._process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=10)
            self._process = None
        if restart:
            self.restarts += 1


class _StartupError(Exception):
    """The checker process did not get ready."""
