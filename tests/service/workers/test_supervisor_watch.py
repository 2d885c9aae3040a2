"""The supervisor's watch: what makes it kill a worker process, at given instants (no clocks raced).

A process that was idle for longer than the stall timeout before a request arrived is not stalled: it owes
progress from when the work began waiting. (Seen in CI: a families-server engine idle for over a minute was
killed within a watch round of its next request, which then failed with 503.)
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import dataclass

from ovserve.service.workers.process import WorkerProcess
from ovserve.service.workers.supervisor import Supervisor

STALL_S = 60.0
BEAT_S = 10.0


@dataclass
class Quiet:
    """A process that last said something (``last_heard``) and last beat (``last_beat``) at given instants, in a
    given /proc state (None: unreadable)."""

    last_heard: float
    last_beat: float
    proc_state: str | None = "S"

    def state(self) -> str | None:
        return self.proc_state


def supervisor(process: Quiet, waiting: list[int]) -> Supervisor:
    """A supervisor of ``process``; ``waiting[0]`` is how much work waits on it."""
    return Supervisor(
        "the engine of 'm'",
        lambda: process,  # type: ignore[arg-type,return-value]
        on_message=lambda message: None,
        on_lost=lambda error: None,
        waiting=lambda: waiting[0],
        stall_timeout_s=STALL_S,
        heartbeat_timeout_s=BEAT_S,
    )


def test_a_long_idle_process_is_not_stalled_when_work_arrives() -> None:
    process, waiting = Quiet(last_heard=0.0, last_beat=0.0), [0]
    watch = supervisor(process, waiting)
    for now in (100.0, 200.0, 300.0):  # idle for minutes, beating
        process.last_beat = now
        assert watch._fault(process, now) is None  # type: ignore[arg-type]
    waiting[0] = 1  # a request arrives at 300 s; the process last spoke at 0 s
    for now in (302.5, 330.0, 362.0):  # the watch sees the work first at 302.5 s
        process.last_beat = now
        assert watch._fault(process, now) is None  # type: ignore[arg-type]
    process.last_beat = 362.5
    assert watch._fault(process, 362.5) == "made no progress for 60 s with 1 waiting on it"  # type: ignore[arg-type]


def test_progress_owed_runs_from_the_last_word_while_busy() -> None:
    process, waiting = Quiet(last_heard=0.0, last_beat=0.0), [1]
    watch = supervisor(process, waiting)
    assert watch._fault(process, 1.0) is None  # type: ignore[arg-type]
    process.last_heard = process.last_beat = 50.0  # it spoke, then fell silent with work still waiting
    for now in (55.0, 109.0):
        process.last_beat = now
        assert watch._fault(process, now) is None  # type: ignore[arg-type]
    process.last_beat = 110.0
    assert watch._fault(process, 110.0) is not None  # type: ignore[arg-type]


def test_work_done_and_new_work_restart_the_clock() -> None:
    process, waiting = Quiet(last_heard=0.0, last_beat=0.0), [1]
    watch = supervisor(process, waiting)
    assert watch._fault(process, 0.0) is None  # type: ignore[arg-type]
    waiting[0] = 0
    process.last_beat = 100.0
    assert watch._fault(process, 100.0) is None  # type: ignore[arg-type]
    waiting[0] = 2
    process.last_beat = 150.0
    assert watch._fault(process, 150.0) is None  # type: ignore[arg-type]


def test_a_silent_process_is_killed_for_its_heartbeat_busy_or_not() -> None:
    process, waiting = Quiet(last_heard=0.0, last_beat=0.0), [0]
    watch = supervisor(process, waiting)
    assert watch._fault(process, 9.0) is None  # type: ignore[arg-type]
    assert watch._fault(process, 10.0) == "sent no heartbeat for 10 s (stopped or wedged)"  # type: ignore[arg-type]


def test_a_running_process_silent_in_a_long_step_is_given_the_stall_timeout() -> None:
    """An engine step holds the GIL, heartbeat thread included: while work waits and the kernel says the process
    runs, silence is a long step (up to the stall timeout); stopped (T) or unreadable, it is the heartbeat's."""
    process, waiting = Quiet(last_heard=0.0, last_beat=0.0, proc_state="R"), [1]
    watch = supervisor(process, waiting)
    assert watch._fault(process, 0.0) is None  # type: ignore[arg-type]
    assert watch._fault(process, 30.0) is None  # type: ignore[arg-type]
    assert watch._fault(process, 60.0) == "made no progress for 60 s with 1 waiting on it"  # type: ignore[arg-type]
    for stopped in ("T", None):
        process.proc_state = stopped
        assert watch._fault(process, 10.0) == "sent no heartbeat for 10 s (stopped or wedged)"  # type: ignore[arg-type]


def test_a_worker_process_reads_its_own_state() -> None:
    """The state letter is read from /proc/<pid>/stat: S while the child sleeps, T once stopped."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        process = WorkerProcess.__new__(WorkerProcess)
        process.process = child
        deadline = time.monotonic() + 30
        while process.state() != "S" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.state() == "S"
        child.send_signal(signal.SIGSTOP)
        while process.state() != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert process.state() == "T"
    finally:
        child.kill()
        child.wait()
    assert process.state() is None  # reaped: no /proc entry
