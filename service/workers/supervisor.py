"""Supervisor: a served model's worker process (an engine, a pipeline) kept running while the server serves.

If the process dies, sends no heartbeat for ``heartbeat_timeout_s`` (stopped or wedged: see child.py), or
makes no progress for ``stall_timeout_s`` while work waits on it (it is then killed), its owner hears
``on_lost`` (to fail what the process held), a new process is started, again and again with growing pauses
until one loads, and listeners given to ``watch`` hear when it goes down and comes back. Meanwhile ``send``
raises EngineUnavailable: the caller gets a retriable error.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from ovserve.service.workers.errors import EngineError, EngineUnavailable
from ovserve.service.workers.process import GONE, WorkerProcess

# /proc states of a process at work: running, sleeping, in uninterruptible I/O (not T stopped, not Z dead).
RUNNING = frozenset("RSD")

log = logging.getLogger(__name__)

# Pauses between attempts to start a dead process's replacement: the first, and the longest.
RESTART_FIRST_PAUSE_S = 1.0
RESTART_MAX_PAUSE_S = 30.0


class Supervisor:
    """Owns one worker process at a time; hands its messages to ``on_message`` on the event loop."""

    def __init__(
        self,
        what: str,
        start: Callable[[], WorkerProcess],
        on_message: Callable[[object], None],
        on_lost: Callable[[EngineUnavailable], None],
        *,
        waiting: Callable[[], int],
        stall_timeout_s: float,
        heartbeat_timeout_s: float = 10.0,
    ) -> None:
        """Start the first process now (blocking until it loads; EngineError if it does not).

        ``what`` names the process in messages ("the engine of 'tiny-chat'"); ``waiting`` says how much work
        waits on it (a silent process is only a stalled one while something waits).
        """
        self.what = what
        self._start = start
        self._on_message = on_message
        self._on_lost = on_lost
        self._waiting = waiting
        self._stall_timeout_s = stall_timeout_s
        self._heartbeat_timeout_s = heartbeat_timeout_s
        #: Why the last try to start a replacement failed, while none runs (None: none failed since the last
        #: load): requests refused meanwhile and /health say it.
        self.load_failure: str | None = None
        try:
            self._process: WorkerProcess | None = start()
        except EngineError as error:
            log.error("%s", error)  # the server ends; its log says why
            raise
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._listeners: list[Callable[[bool], None]] = []
        self.closed = False
        self.restarts = 0  # processes replaced after dying or stalling
        self._busy_since: float | None = None  # when work began waiting on the process, as the watch saw it

    @property
    def up(self) -> bool:
        """Whether a process is running and taking work."""
        return self._process is not None and not self.closed

    @property
    def started(self) -> bool:
        """Whether ``start`` ran: messages reach the event loop."""
        return self._loop is not None

    @property
    def pid(self) -> int | None:
        """The process id, while one runs."""
        return self._process.pid if self._process is not None else None

    def watch(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(up)`` on the event loop whenever the process goes down or comes back."""
        self._listeners.append(listener)

    def start(self) -> None:
        """Start delivering the process's messages to the running event loop, and watching it."""
        self._loop = asyncio.get_running_loop()
        assert self._process is not None
        self._process.start_reading(self._loop, self._dispatch_all)
        self._spawn_task(self._watch_progress())

    def unavailable(self) -> EngineUnavailable:
        """The retriable error for work sent while no process runs."""
        state = "is restarting" if self.started and not self.closed else "is not running"
        failed = f" (the last try failed: {self.load_failure})" if self.load_failure else ""
        return EngineUnavailable(f"{self.what} {state}{failed}; retry shortly")

    def send(self, message: object) -> None:
        """Send a message to the process (thread-safe); EngineUnavailable while none runs, OSError if it just died."""
        if self._process is None or self.closed:
            raise self.unavailable()
        self._process.send(message)

    def close(self) -> None:
        """Stop watching and end the process; callable from another thread (an unload ends the process there, so
        that waiting for its exit holds up no event loop)."""
        if self.closed:
            return
        self.closed = True
        for task in list(self._tasks):  # (cancelled on their loop, whichever thread closes)
            task.get_loop().call_soon_threadsafe(task.cancel)
        if self._process is not None:
            self._process.stop()

    def _dispatch_all(self, batch: list[object]) -> None:
        for message in batch:
            if message is GONE:
                self._lost()
            else:
                self._on_message(message)

    def _lost(self) -> None:
        """The process ended: the owner fails what it held; unless we are closing, start another."""
        self._process = None
        if not self.closed:
            log.error("%s ended unexpectedly; restarting it", self.what)
            self._notify(up=False)
            self._spawn_task(self._restart())
        self._on_lost(EngineUnavailable(f"{self.what} stopped; retry shortly"))

    async def _restart(self) -> None:
        """Start processes until one loads, pausing longer after each failure."""
        assert self._loop is not None
        pause = RESTART_FIRST_PAUSE_S
        while not self.closed:
            started = time.monotonic()
            try:
                process = await self._loop.run_in_executor(None, self._start)
            except EngineError as error:
                self.load_failure = str(error)
                log.error("restarting %s failed: %s; trying again in %.0f s", self.what, error, pause)
                await asyncio.sleep(pause)
                pause = min(pause * 2, RESTART_MAX_PAUSE_S)
                continue
            if self.closed:
                process.stop()
                return
            self._process = process
            self.load_failure = None
            process.start_reading(self._loop, self._dispatch_all)
            self.restarts += 1
            log.warning("%s is back after %.1f s (restart %d)", self.what, time.monotonic() - started, self.restarts)
            self._notify(up=True)
            return

    async def _watch_progress(self) -> None:
        """Kill a process that sends no heartbeat for heartbeat_timeout_s, or makes no progress for
        stall_timeout_s while work waits on it."""
        while not self.closed:
            stall, beat = self._stall_timeout_s, self._heartbeat_timeout_s  # read each round: tests shorten them
            await asyncio.sleep(max(min(stall, beat) / 4, 0.1))
            process = self._process
            if process is None:
                continue
            fault = self._fault(process, time.monotonic())
            if fault is None:
                continue
            log.error("%s %s; killing it", self.what, fault)
            await asyncio.to_thread(process.kill)  # its reader then hands over GONE: see _lost

    def _fault(self, process: WorkerProcess, now: float) -> str | None:
        """Why ``process`` must be killed at ``now``, or None; called once a watch round.

        Progress is owed from when work began waiting, not from the process's last word: a process idle
        for longer than stall_timeout_s before a request came had nothing to say, and is not stalled.
        """
        waiting = self._waiting()
        if not waiting:
            self._busy_since = None
        elif self._busy_since is None:
            self._busy_since = now  # up to one round late: the stall is noticed at most a round later
        # An engine step holds the GIL, and the heartbeat thread waits for it (measured: a 300-token prefill of a
        # 0.5B model, 2.4 s on 2 AVX2 cores; longer on a loaded machine): while work waits on a process that the
        # kernel says is running (not stopped), its silence is a long step, and only the stall timeout applies.
        if now - process.last_beat >= self._heartbeat_timeout_s and not (waiting and process.state() in RUNNING):
            return f"sent no heartbeat for {self._heartbeat_timeout_s:.0f} s (stopped or wedged)"
        if self._busy_since is not None and now - max(process.last_heard, self._busy_since) >= self._stall_timeout_s:
            return f"made no progress for {self._stall_timeout_s:.0f} s with {waiting} waiting on it"
        return None

    def _notify(self, *, up: bool) -> None:
        for listener in self._listeners:
            try:
                listener(up)
            except Exception:
                log.exception("a process state listener failed")

    def _spawn_task(self, coroutine: Coroutine[Any, Any, None]) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


class Supervised:
    """The members of ``Served`` that only the supervisor knows, for a served model that sets ``_supervisor``."""

    _supervisor: Supervisor

    @property
    def up(self) -> bool:
        """Whether its process runs and takes work."""
        return self._supervisor.up

    @property
    def pid(self) -> int | None:
        """The process's id, while one runs."""
        return self._supervisor.pid

    @property
    def restarts(self) -> int:
        """Processes replaced after dying or stalling."""
        return self._supervisor.restarts

    @property
    def load_failure(self) -> str | None:
        """Why the last try to start its replacement failed, while none runs; None otherwise."""
        return self._supervisor.load_failure

    def watch(self, listener: Callable[[bool], None]) -> None:
        """Call ``listener(up)`` on the event loop whenever the process goes down or comes back."""
        self._supervisor.watch(listener)

    def start(self) -> None:
        """Start delivering the process's messages to the running event loop, and watching the process."""
        self._supervisor.start()
