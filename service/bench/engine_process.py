"""The engine alone in a process of its own, started as ovserve starts its engine processes.

``ovserve bench --engine`` measures the service against a bare pipeline. That pipeline used to run in a thread of
the bench's own process, which differs from the service's engine process in ways the engine's speed shows: glibc's
malloc gave the thread's arena fewer transparent huge pages (166 MB against 340 MB for the Qwen2.5-0.5B shape,
measured), and the bench's client shared its process. Here the pipeline runs on the main thread of a child started
by ``process.start_child``, the service's own start path (its environment: ``child_environment``), so the baseline
differs from the service's engine only by what the service adds.

The pipe carries pickled calls: the bench sends ``(model_dir, endpoint)``, the child answers Ready or LoadFailed,
then each ``Call`` is answered by ``TICK`` once a request ends (for the progress bar) and one ``Done``.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ovserve.service.bench.conversation import ConversationLoad, Script, Turn
from ovserve.service.bench.kv_cache import KvCachePeak
from ovserve.service.bench.load import BenchRequest, Schedule
from ovserve.service.bench.metrics import RequestResult
from ovserve.service.bench.progress import Progress
from ovserve.service.observability.metrics import process_cpu_seconds
from ovserve.service.workers.codec import TokenCodec
from ovserve.service.workers.errors import EngineError
from ovserve.service.workers.load_failure import how_it_ended
from ovserve.service.workers.messages import LoadFailed, Ready
from ovserve.service.workers.process import start_child

TICK = "tick"  # one request (or turn) ended in the child


@dataclass(frozen=True)
class Call:
    """What the child runs: ``EngineRunner.run`` ("run") or ``conversation.run_engine`` ("converse"), with the
    arguments after the runner, progress and KV cache; ``kv_cache``: note the fullest KV cache (``--kv-cache``)."""

    kind: str
    arguments: tuple[Any, ...]
    kv_cache: bool


@dataclass(frozen=True)
class Done:
    """A call's outcome and the KV cache it noted (None unless asked)."""

    outcome: Any
    kv_cache: KvCachePeak | None


class EngineProcess:
    """The bench's handle on the engine alone (see the module docstring); ``run`` and ``converse`` block: call
    them from a worker thread, as the bench does."""

    name = "engine"

    def __init__(self, model_dir: Path, endpoint: str) -> None:
        """Start the child and wait (blocking) until its pipeline is compiled; EngineError if it fails."""
        self.process, self._connection = start_alone(__name__, model_dir, endpoint)
        self.codec = TokenCodec(model_dir)  # what the service encodes with, for the bench's prompts

    def run(
        self,
        requests: Sequence[BenchRequest],
        schedule: Schedule,
        progress: Progress | None = None,
        kv_cache: KvCachePeak | None = None,
    ) -> tuple[list[RequestResult], float]:
        """``EngineRunner.run``, in the child."""
        call = Call("run", (requests, schedule), kv_cache is not None)
        outcome: tuple[list[RequestResult], float] = self._call(call, progress, kv_cache)
        return outcome

    def converse(
        self,
        script: Script,
        load: ConversationLoad,
        slots: int,
        progress: Progress | None = None,
        kv_cache: KvCachePeak | None = None,
    ) -> tuple[list[Turn], float]:
        """``conversation.run_engine`` on the child's runner, in the child."""
        call = Call("converse", (script, load, slots), kv_cache is not None)
        outcome: tuple[list[Turn], float] = self._call(call, progress, kv_cache)
        return outcome

    def _call(self, call: Call, progress: Progress | None, kv_cache: KvCachePeak | None) -> Any:
        """Send ``call`` and wait for its outcome, advancing ``progress`` and filling ``kv_cache`` (when given)."""
        self._connection.send(call)
        while True:
            try:
                answer = self._connection.recv()
            except (EOFError, OSError) as error:
                raise EngineError(f"the engine process {how_it_ended(self.process)} during a run") from error
            if answer == TICK:
                if progress is not None:
                    progress.advance()
                continue
            assert isinstance(answer, Done)
            if kv_cache is not None and answer.kv_cache is not None:
                vars(kv_cache).update(vars(answer.kv_cache))
            return answer.outcome

    def cpu_seconds(self) -> float | None:
        """The CPU time the child has used so far (None if it cannot be read)."""
        return process_cpu_seconds(self.process.pid)

    def close(self) -> None:
        """End the child."""
        end_alone(self.process, self._connection)


def start_alone(module: str, model_dir: Path, endpoint: str) -> tuple[subprocess.Popen[bytes], Connection]:
    """Start ``module``'s child (``process.start_child``), send it ``(model_dir, endpoint)`` and wait (blocking)
    for its Ready; EngineError naming the model if it answers LoadFailed or dies. Shared with pipeline_process."""
    process, connection = start_child(module)
    try:
        connection.send((model_dir, endpoint))
        answer = connection.recv()
    except (EOFError, OSError):
        answer = LoadFailed(f"the engine process {how_it_ended(process)} while loading")
    if not isinstance(answer, Ready):
        end_alone(process, connection)
        raise EngineError(f"the engine alone failed to load {model_dir}: {getattr(answer, 'message', answer)}")
    return process, connection


def end_alone(process: subprocess.Popen[bytes], connection: Connection) -> None:
    """End a child started by start_alone: closing its pipe ends it; killed if it does not go within 10 s."""
    connection.close()
    try:
        process.wait(timeout=10)
    except Exception:
        process.kill()
        process.wait()


class _Ticks:
    """The child's stand-in for the bench's progress bar: each advance goes up the pipe."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    def advance(self) -> None:
        self._connection.send(TICK)


def main() -> None:
    """Entry point of the child: ``python -m ovserve.service.bench.engine_process FD``."""
    from ovserve.service.bench import conversation
    from ovserve.service.bench.engine import EngineRunner
    from ovserve.service.engine import EngineSettings

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the bench ends its child
    connection = Connection(int(sys.argv[1]))
    model_dir, endpoint = connection.recv()
    try:
        runner = EngineRunner(model_dir, EngineSettings(), endpoint)
    except Exception as error:
        connection.send(LoadFailed(f"{type(error).__name__}: {error}"))
        return
    connection.send(Ready())
    ticks = _Ticks(connection)
    while True:
        try:
            call: Call = connection.recv()
        except (EOFError, OSError):  # the bench closed the pipe: done
            return
        peak = KvCachePeak("bytes") if call.kv_cache else None
        outcome: Any
        if call.kind == "run":
            requests, schedule = call.arguments
            outcome = runner.run(requests, schedule, ticks, peak)
        else:
            script, load, slots = call.arguments
            outcome = conversation.run_engine(runner, script, load, slots, ticks, peak)
        connection.send(Done(outcome, peak))


if __name__ == "__main__":
    # From the module by its own name, not __main__: what the child pickles must unpickle in the bench as this
    # module's classes.
    from ovserve.service.bench.engine_process import main as entry_point

    entry_point()
