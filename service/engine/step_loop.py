"""The step loop: one thread drives a ContinuousBatchingPipeline and hands deltas to asyncio.

Why a thread and this shape (DESIGN.md, "Engine facts"): ``step()``,
``add_request`` and ``GenerationHandle.read`` hold the GIL, and ``generate()``
cannot run beside other requests. So one thread owns the pipeline: it admits
new requests and cancellations, steps, reads whatever every request has ready
without blocking, and hands the whole step's output to the event loop with ONE
``call_soon_threadsafe`` (coalescing: a request's tokens of one step travel
together). When nothing runs it sleeps on an Event instead of spinning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

from service.engine.detokenizer import IncrementalDetokenizer
from service.engine.types import EngineError, FinishReason, SequenceDelta, Update

log = logging.getLogger(__name__)

# The engine's finish reasons -> ours; NONE means "still running".
_FINISH_REASONS = {
    ov_genai.GenerationFinishReason.STOP: FinishReason.STOP,
    ov_genai.GenerationFinishReason.LENGTH: FinishReason.LENGTH,
    ov_genai.GenerationFinishReason.TOOL_CALL: FinishReason.STOP,
}

Deliver = Callable[[list[tuple[int, Update | BaseException]]], None]


@dataclass
class Submission:
    """A request waiting to be admitted by the step thread."""

    request_id: int
    prompt_ids: list[int]
    config: ov_genai.GenerationConfig
    skip_special_tokens: bool


@dataclass
class _Running:
    """Step-thread state of one admitted request."""

    handle: ov_genai.GenerationHandle
    tokenizer: ov_genai.Tokenizer
    skip_special_tokens: bool
    want_logprobs: bool
    indices: dict[int, int] = field(default_factory=dict)  # engine sequence id -> choice index
    detokenizers: dict[int, IncrementalDetokenizer] = field(default_factory=dict)
    finished: set[int] = field(default_factory=set)  # choice indices that ended
    keep_best: int | None = None  # beam search: return only this many, best score first

    def index_of(self, sequence_id: int) -> int:
        if sequence_id not in self.indices:
            self.indices[sequence_id] = len(self.indices)
            self.detokenizers[sequence_id] = IncrementalDetokenizer(
                self.tokenizer, skip_special_tokens=self.skip_special_tokens
            )
        return self.indices[sequence_id]


class StepLoop:
    """Owns a pipeline and its step thread; the event loop talks to it through submit/cancel."""

    def __init__(self, pipeline: ov_genai.ContinuousBatchingPipeline, tokenizer: ov_genai.Tokenizer) -> None:
        self._pipeline = pipeline
        self._tokenizer = tokenizer
        self._submissions: deque[Submission] = deque()
        self._cancellations: deque[int] = deque()
        self._running: dict[int, _Running] = {}
        self._wake = threading.Event()
        self._closing = False
        self._deliver: Deliver | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self, loop: asyncio.AbstractEventLoop, deliver: Deliver, name: str) -> None:
        """Start the step thread; ``deliver`` runs on ``loop`` with each step's updates."""
        self._loop, self._deliver = loop, deliver
        self._thread = threading.Thread(target=self._run, name=f"step-loop-{name}", daemon=True)
        self._thread.start()

    def submit(self, submission: Submission) -> None:
        """Queue a request; the step thread admits it before its next step."""
        self._submissions.append(submission)
        self._wake.set()

    def cancel(self, request_id: int) -> None:
        """Stop a request and free its KV cache at the next step (safe from any thread)."""
        self._cancellations.append(request_id)
        self._wake.set()

    def stop(self) -> None:
        """Cancel everything and end the thread (blocks until it has ended)."""
        self._closing = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def running(self) -> int:
        """Requests admitted and not yet finished (as the step thread sees them)."""
        return len(self._running)

    def has_unfinished_engine_requests(self) -> bool:
        """Whether the pipeline itself still holds requests (and so KV cache)."""
        return self._pipeline.has_non_finished_requests()

    # ---- the step thread ----

    def _run(self) -> None:
        while True:
            self._admit()
            if self._closing:
                self._cancel_all()
                break
            if not self._running and not self._pipeline.has_non_finished_requests():
                self._wake.wait()
                self._wake.clear()
                continue
            try:
                self._pipeline.step()
            except Exception as error:  # the engine broke: fail what it held, keep serving
                log.exception("engine step failed")
                self._fail_all(EngineError(f"engine step failed: {error}"))
                continue
            updates = self._collect()
            if updates:
                self._send(updates)

    def _admit(self) -> None:
        failed: list[tuple[int, Update | BaseException]] = []
        while self._submissions:
            sub = self._submissions.popleft()
            try:
                prompt = ov.Tensor(np.array([sub.prompt_ids], dtype=np.int64))
                handle = self._pipeline.add_request(sub.request_id, prompt, sub.config)
            except Exception as error:
                failed.append((sub.request_id, EngineError(f"engine refused the request: {error}")))
                continue
            self._running[sub.request_id] = _Running(
                handle,
                self._tokenizer,
                sub.skip_special_tokens,
                want_logprobs=sub.config.logprobs > 0,
                # Beam search hands back every beam at the end; OpenAI wants the n best.
                keep_best=sub.config.num_return_sequences if sub.config.num_beams > 1 else None,
            )
        while self._cancellations:
            state = self._running.pop(self._cancellations.popleft(), None)
            if state is not None:
                state.handle.cancel()  # the pipeline drops it and frees its blocks at the next step
        if failed:
            self._send(failed)

    def _collect(self) -> list[tuple[int, Update | BaseException]]:
        updates: list[tuple[int, Update | BaseException]] = []
        for request_id, state in list(self._running.items()):
            status = state.handle.get_status()
            deltas: dict[int, SequenceDelta] = {}
            if state.handle.can_read():
                outputs = state.handle.read()
                if state.keep_best is not None:
                    best = sorted(outputs.items(), key=lambda item: item[1].score, reverse=True)
                    outputs = dict(best[: state.keep_best])
                for sequence_id, output in outputs.items():
                    deltas[sequence_id] = self._delta(state, sequence_id, output)
            if status == ov_genai.GenerationStatus.RUNNING:
                if deltas:
                    updates.append((request_id, Update(list(deltas.values()))))
                continue
            del self._running[request_id]
            if status == ov_genai.GenerationStatus.IGNORED:
                updates.append((request_id, EngineError("the engine dropped the request (out of KV cache)")))
                continue
            updates.append((request_id, self._final(state, deltas, status)))
        return updates

    def _delta(self, state: _Running, sequence_id: int, output: ov_genai.GenerationOutput) -> SequenceDelta:
        index = state.index_of(sequence_id)
        token_ids = list(output.generated_ids)
        delta = SequenceDelta(index, token_ids, state.detokenizers[sequence_id].push(token_ids))
        if state.want_logprobs:
            delta.logprobs = list(output.generated_log_probs)
        reason = _FINISH_REASONS.get(output.finish_reason)
        if reason is not None:
            delta.finish_reason = reason
            delta.text += state.detokenizers[sequence_id].finish()
            state.finished.add(index)
        return delta

    def _final(self, state: _Running, deltas: dict[int, SequenceDelta], status: object) -> Update:
        """The last update of a request: every sequence gets a finish reason and its held-back text."""
        default = FinishReason.CANCELLED if status == ov_genai.GenerationStatus.CANCEL else FinishReason.STOP
        for sequence_id, index in state.indices.items():
            if index in state.finished:
                continue
            delta = deltas.setdefault(sequence_id, SequenceDelta(index))
            delta.text += state.detokenizers[sequence_id].finish()
            delta.finish_reason = delta.finish_reason or default
        return Update(sorted(deltas.values(), key=lambda d: d.index), finished=True)

    def _fail_all(self, error: EngineError) -> None:
        failed: list[tuple[int, Update | BaseException]] = [(rid, error) for rid in self._running]
        for state in self._running.values():
            state.handle.cancel()
        self._running.clear()
        self._send(failed)

    def _cancel_all(self) -> None:
        self._fail_all(EngineError("the engine is shutting down"))
        for sub in self._submissions:
            self._send([(sub.request_id, EngineError("the engine is shutting down"))])
        self._submissions.clear()

    def _send(self, updates: list[tuple[int, Update | BaseException]]) -> None:
        assert self._loop is not None and self._deliver is not None
        with contextlib.suppress(RuntimeError):  # the event loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(self._deliver, updates)
