"""The bare embeddings or rerank pipeline in a process of its own, started as ovserve starts its pipeline workers.

``ovserve bench --endpoint embeddings|rerank --engine`` measures the service against the bare OpenVINO GenAI
pipeline. As for the LLM engine (engine_process.py, which says why), that pipeline runs in a child started by
``process.start_child``, the service's own start path and environment (glibc's malloc asking for huge pages), not
in a thread of the bench's process beside its clients: the baseline differs from the service's pipeline process
only by what the service adds.

The pipe carries pickled calls: the bench sends ``(model_dir, endpoint)``, the child answers Ready or LoadFailed,
then each ``(batches, concurrency)`` is answered with the seconds the pipeline took, or a Failed naming why.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from ovserve.service.bench.embeddings import Batch
from ovserve.service.bench.engine_process import end_alone, start_alone
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.load_failure import how_it_ended
from ovserve.service.workers.messages import LoadFailed, Ready


@dataclass(frozen=True)
class Failed:
    """A call the child's pipeline raised on."""

    message: str


class PipelineProcess:
    """The bench's runner for the bare pipeline of ``endpoint`` ("embeddings" or "rerank"), in its child."""

    name = "engine"

    def __init__(self, model_dir: Path, endpoint: str) -> None:
        """Start the child and wait (blocking) until its pipeline is compiled; EngineError if it fails."""
        self.process, self._connection = start_alone(__name__, model_dir, endpoint)

    async def run(self, batches: list[Batch], concurrency: int) -> float:
        """The seconds the child's pipeline took for ``batches`` at ``concurrency`` (see the endpoint's module)."""
        return await asyncio.to_thread(self._call, batches, concurrency)

    def _call(self, batches: list[Batch], concurrency: int) -> float:
        self._connection.send((batches, concurrency))
        try:
            answer = self._connection.recv()
        except (EOFError, OSError) as error:
            raise EngineError(f"the pipeline process {how_it_ended(self.process)} during a run") from error
        if isinstance(answer, Failed):
            raise EngineError(f"the bare pipeline failed: {answer.message}")
        seconds: float = answer
        return seconds

    async def close(self) -> None:
        """End the child."""
        await asyncio.to_thread(end_alone, self.process, self._connection)


def main() -> None:
    """Entry point of the child: ``python -m ovserve.service.bench.pipeline_process FD``."""
    from ovserve.service.bench.embeddings import EMBEDDINGS
    from ovserve.service.bench.rerank import RERANK

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the bench ends its child
    connection = Connection(int(sys.argv[1]))
    model_dir, endpoint = connection.recv()
    try:
        pipeline = {each.name: each.pipeline for each in (EMBEDDINGS, RERANK)}[endpoint](model_dir)
    except Exception as error:
        connection.send(LoadFailed(f"{type(error).__name__}: {error}"))
        return
    connection.send(Ready())
    while True:
        try:
            batches, concurrency = connection.recv()
        except (EOFError, OSError):  # the bench closed the pipe: done
            return
        try:
            answer: float | Failed = pipeline.seconds(batches, concurrency)
        except Exception as error:
            answer = Failed(f"{type(error).__name__}: {error}")
        connection.send(answer)


if __name__ == "__main__":
    # From the module by its own name, not __main__: what the child pickles must unpickle in the bench as this
    # module's classes.
    from ovserve.service.bench.pipeline_process import main as entry_point

    entry_point()
