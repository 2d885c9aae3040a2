"""The runner shape of the pipelines that take one job per call (Whisper, image and speech pipelines)."""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from ovserve.service.pipelines.messages import Done, Failed


def failure_text(error: Exception) -> str:
    """What a failed job or load tells the server: the exception's type and message."""
    return f"{type(error).__name__}: {error}"


class OneJobRunner:
    """Takes one job at a time and leaves no room for another; ``run`` sends each job's ``answer`` (Done) or its
    failure (Failed), then ``recover``s. Subclasses write ``answer`` (and ``recover`` when a failed call leaves their
    pipeline unusable)."""

    def take(self, queue: collections.deque[Any]) -> list[Any]:
        return [queue.popleft()]

    def room(self, queue: collections.deque[Any]) -> bool:
        return False  # one job per call

    def run(self, jobs: list[Any], send: Callable[[Any], None]) -> None:
        for job in jobs:
            try:
                send(Done(job.job_id, self.answer(job, send)))
            except Exception as error:
                send(Failed(job.job_id, failure_text(error)))
                self.recover()

    def answer(self, job: Any, send: Callable[[Any], None]) -> Any:
        """The job's result; ``send`` carries what it reports on the way (partial output, progress)."""
        raise NotImplementedError

    def recover(self) -> None:
        """After a failed call: nothing, unless the pipeline is left unusable."""
