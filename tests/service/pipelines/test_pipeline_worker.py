"""The pipeline process's loop over a socketpair, with a scripted runner: what it tells the server, in order."""

from __future__ import annotations

import collections
import socket
import threading
from multiprocessing.connection import Connection

from service.pipelines.messages import Done, Embed, Started
from service.pipelines.worker import Job, Send, serve
from service.workers.messages import Stop


class TwoAtOnce:
    """Takes up to two jobs per call and answers each with its texts, once ``go`` is set."""

    def __init__(self) -> None:
        self.go = threading.Event()

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        return [queue.popleft() for _ in range(min(2, len(queue)))]

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
        server.send(Embed(job_id, [f"text {job_id}"]))
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
