"""The pipeline process's loop over a socketpair, with a scripted runner: what it tells the server, in order."""

from __future__ import annotations

import collections
import socket
import threading
from multiprocessing.connection import Connection

from ovserve.service.pipelines.messages import Done, Embed, Started
from ovserve.service.pipelines.worker import Job, Send, serve
from ovserve.service.workers.messages import Stop


class TwoAtOnce:
    """Takes up to two jobs per call and answers each with its texts, once ``go`` is set."""

    def __init__(self) -> None:
        self.go = threading.Event()

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        return [queue.popleft() for _ in range(min(2, len(queue)))]

    def room(self, queue: collections.deque[Job]) -> bool:
        return len(queue) < 2

    def run(self, jobs: list[Job], send: Send) -> None:
        assert self.go.wait(timeout=30)
        for job in jobs:
            assert isinstance(job, Embed)
            send(Done(job.job_id, job.texts))


def test_each_call_is_announced_with_its_jobs_before_they_are_answered() -> None:
    ours, theirs = socket.socketpair()
    server, process = Connection(ours.detach()), Connection(theirs.detach())
    runner = TwoAtOnce()
    for job_id in range(3):
        server.send(Embed(job_id, [[job_id]], [f"text {job_id}"]))
    loop = threading.Thread(target=serve, args=(process, runner), daemon=True)
    loop.start()
    # While the first call runs, the server already knows which jobs left the queue: two run, one waits.
    assert server.poll(30) and server.recv() == Started([0, 1])
    runner.go.set()
    told = [server.recv() for _ in range(4)]
    assert told == [Done(0, ["text 0"]), Done(1, ["text 1"]), Started([2]), Done(2, ["text 2"])]
    server.send(Stop())
    loop.join(timeout=30)
    assert not loop.is_alive()


def _serving(runner: object, delay_s: float) -> tuple[Connection, threading.Thread]:
    ours, theirs = socket.socketpair()
    server, process = Connection(ours.detach()), Connection(theirs.detach())
    loop = threading.Thread(target=serve, args=(process, runner, delay_s), daemon=True)
    loop.start()
    return server, loop


def _stop(server: Connection, loop: threading.Thread) -> None:
    server.send(Stop())
    loop.join(timeout=30)
    assert not loop.is_alive()


def test_a_call_with_room_waits_its_delay_for_other_requests() -> None:
    """With a batch delay, a job alone waits while the runner has room: jobs sent one by one, seconds apart in
    the process's time (far within the 60 s delay), go into one call once the runner is full."""
    runner = TwoAtOnce()
    runner.go.set()
    server, loop = _serving(runner, 60.0)
    server.send(Embed(0, [[0]], ["text 0"]))
    assert not server.poll(0.5)  # held: room for one more, and the delay has not passed
    server.send(Embed(1, [[1]], ["text 1"]))
    assert server.poll(30) and server.recv() == Started([0, 1])  # full: no waiting out the delay
    assert [server.recv(), server.recv()] == [Done(0, ["text 0"]), Done(1, ["text 1"])]
    _stop(server, loop)


def test_a_lone_job_runs_once_its_delay_has_passed() -> None:
    runner = TwoAtOnce()
    runner.go.set()
    server, loop = _serving(runner, 0.05)
    server.send(Embed(0, [[0]], ["text 0"]))
    assert server.poll(30) and server.recv() == Started([0])
    assert server.recv() == Done(0, ["text 0"])
    _stop(server, loop)
