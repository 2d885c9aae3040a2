"""EngineCore: a ContinuousBatchingPipeline and the requests it runs, one step at a time.

No threads and no I/O: a runner calls ``add``/``cancel`` and, while ``busy``,
``step``, and ships what ``step`` returns. The engine process runs it (see
worker.py): ``step()``, ``add_request`` and ``GenerationHandle.read`` hold the
GIL, so the core lives where no event loop waits on that GIL.

Output is read from the pipeline after every step but handed over (detokenised
and shipped) only when a flush is due: a request's first tokens, a request's
end, or ``flush_interval`` seconds since the last flush. On a fast model the
per-step detokenise + pickle + send cost as much as a quarter of the step
itself and woke the server for every step; on a model slower than one step per
interval every step flushes, so nothing waits. With ``update_rate`` the
interval also grows with the requests running (running / update_rate), so
the hand-overs per second stay within that budget however many streams share
the engine: each one costs the server and its client per request, not per token.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import openvino as ov
import openvino_genai as ov_genai

from ovserve.service.engine.biased_lane import MAX_LANE_SEQUENCES, BiasedDecode, LaneOutput
from ovserve.service.engine.detokenizer import Pending, SequenceText, WindowDecoder, detokenize_step
from ovserve.service.engine.generation_config import generation_config
from ovserve.service.engine.messages import Outcome
from ovserve.service.engine.salting import salted_prompt
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.scoring import ScoredSequence, Scoring
from ovserve.service.engine.stops import StopText
from ovserve.service.engine.types import EngineStats, FinishReason, SequenceDelta, Update
from ovserve.service.workers.errors import EngineError, EngineOverloaded, EngineRejected

log = logging.getLogger(__name__)

# The engine's finish reasons -> ours; NONE means "still running".
_FINISH_REASONS = {
    ov_genai.GenerationFinishReason.STOP: FinishReason.STOP,
    ov_genai.GenerationFinishReason.LENGTH: FinishReason.LENGTH,
    ov_genai.GenerationFinishReason.TOOL_CALL: FinishReason.STOP,
}


@dataclass(frozen=True)
class Submission:
    """A request for the engine; picklable, so it can cross into the engine process."""

    request_id: int
    prompt_ids: list[int]  # with images: the prompt as the model sees it, image tokens included (for counts)
    params: SamplingParams
    skip_special_tokens: bool = True
    images: tuple[np.ndarray, ...] = ()  # RGB uint8 (height, width, 3): a vision model's images, in prompt order
    prompt_text: str = ""  # a vision model's request: the rendered prompt, an <ov_genai_image_N> tag per image
    scoring: Scoring | None = None  # logprobs beyond the sampler's: scored by the ScoringLane (scoring_lane.py)
    adapter: str = ""  # the LoRA adapter it runs with ("": the base model)
    cache_namespace: int = 0  # its prefix-cache namespace (salting.py): 0 shares raw ids


@dataclass
class _Running:
    """State of one admitted request."""

    handle: ov_genai.GenerationHandle | BiasedDecode  # BiasedDecode: it decodes on the biased lane, not the pipeline
    submission: Submission
    want_logprobs: bool
    keep_best: int | None = None  # beam search: return only this many, best score first
    single: bool = False  # one sequence, no beams: it can be resumed from its tokens on a new pipeline
    generated: list[int] = field(default_factory=list)  # a single sequence's tokens so far
    resumed: bool = False  # already resumed once after a failed step
    indices: dict[int, int] = field(default_factory=dict)  # engine sequence id -> choice index
    texts: dict[int, SequenceText] = field(default_factory=dict)  # engine sequence id -> detokenizer state
    stops: dict[int, StopText] = field(default_factory=dict)  # engine sequence id -> stop-string state
    finished: set[int] = field(default_factory=set)  # engine sequence ids that ended
    unsent: dict[int, SequenceDelta] = field(default_factory=dict)  # engine sequence id -> output since last flush
    status: object = None  # the GenerationStatus it ended with; None while running
    started: bool = False  # some text was flushed already (until then, new tokens flush at once)

    def sequence(self, sequence_id: int) -> tuple[int, SequenceText]:
        """Choice index and text state of an engine sequence (numbered in order of appearance)."""
        if sequence_id not in self.indices:
            self.indices[sequence_id] = len(self.indices)
            self.texts[sequence_id] = SequenceText(self.submission.skip_special_tokens)
            params = self.submission.params
            stops = tuple(sorted(params.stop_strings))
            self.stops[sequence_id] = StopText(stops, keep=bool(params.include_stop_str_in_output))
        return self.indices[sequence_id], self.texts[sequence_id]


@dataclass
class _Pending(Pending):
    """A Pending item that remembers which delta its text belongs to, and its stop strings."""

    delta: SequenceDelta = field(default_factory=lambda: SequenceDelta(0))
    stop: StopText | None = None


PipelineFactory = Callable[[], ov_genai.ContinuousBatchingPipeline]
#: How long a request for another adapter waits before requests of the running one stop being admitted (the
#: pipeline then drains and switches): adapters take turns, none starves.
ADAPTER_TURN_SECONDS = 1.0


class EngineCore:
    """Admits, cancels and steps requests on one pipeline; hands over output per request at each flush.

    ``speculative``: the pipeline has a draft model. openvino-genai 2026.4
    corrupts some outputs when several speculative requests share a batch
    (reproduced with 16 greedy requests), so such a pipeline runs one request
    at a time and the others wait here, in order.

    ``adapters``: the LoRA adapters the pipeline was built with (name -> (Adapter, alpha)). openvino-genai 2026.4
    applies one adapter set to a whole step and ignores a request's own (``add_request`` never reads
    ``GenerationConfig.adapters``); the set changes only through ``generate()`` on an idle pipeline, and stays for
    the steps after it. So requests of one adapter batch together, and adapters take turns: while requests of the
    running adapter (or the base model) run, those of another wait, and once the oldest of them has waited
    ADAPTER_TURN_SECONDS no more of the running one are admitted; when the pipeline is empty it switches.
    """

    def __init__(
        self,
        factory: PipelineFactory,
        decode: WindowDecoder,
        *,
        speculative: bool = False,
        adapters: dict[str, tuple[ov_genai.Adapter, float]] | None = None,
        rebuild: Callable[[dict[str, tuple[ov_genai.Adapter, float]]], ov_genai.ContinuousBatchingPipeline]
        | None = None,
        flush_interval: float = 0.0,
        update_rate: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        lane: Callable[[], ScoredSequence] | None = None,
        salted: bool = False,
    ) -> None:
        self._factory = factory
        self._salted = salted  # prompts go in their prefix-cache namespace (salting.py)
        self._pipeline = factory()
        self._decode = decode
        self._speculative = speculative
        self._running: dict[int, _Running] = {}
        self._adapters = adapters or {}
        self._active: str | None = None if self._adapters else ""  # the adapter the pipeline applies (None: unknown)
        self._rebuild = rebuild  # a pipeline with another adapter set (``set_adapters``)
        self._next_adapters: tuple[int, dict[str, tuple[ov_genai.Adapter, float]]] | None = None  # (token, set)
        self._adapters_set: list[tuple[int, str | None]] = []  # (token, error or None) of changes made
        # Each waiting request with its generation settings and when it came (for the adapters' turns).
        self._waiting: deque[tuple[Submission, ov_genai.GenerationConfig, float]] = deque()
        self._steps_owed = 0
        self._flush_interval = flush_interval
        self._update_rate = update_rate
        self._clock = clock
        self._flushed_at = clock()
        self._urgent = False  # something must go out at this step: a first token or an end
        self._unsent = False  # some output waits for the next flush
        # The biased lane (biased_lane.py): a new sequence of the model's scoring copy per choice; requests with a
        # logit bias or bad words wait here for room on it (MAX_LANE_SEQUENCES), then run in _running.
        self._lane = lane
        self._lane_waiting: deque[Submission] = deque()

    @property
    def busy(self) -> bool:
        """Whether a step has work to do."""
        return (
            bool(self._running)
            or bool(self._lane_waiting)
            or self._steps_owed > 0
            or self._next_adapters is not None
            or self._pipeline.has_non_finished_requests()
        )

    @property
    def adapters(self) -> dict[str, tuple[ov_genai.Adapter, float]]:
        """The adapters served now (name -> (Adapter, alpha))."""
        return dict(self._adapters)

    def set_adapters(self, token: int, adapters: dict[str, tuple[ov_genai.Adapter, float]]) -> None:
        """Serve these adapters from now on: once the requests running end (none is admitted meanwhile), the
        pipeline is built again with them (openvino-genai hooks an adapter's layers when a pipeline is built).
        ``take_adapters_set`` then says the change is made (or why not), under ``token``."""
        self._next_adapters = (token, adapters)

    def take_adapters_set(self) -> list[tuple[int, str | None]]:
        """The adapter changes made since the last call: (token, None), or (token, why it failed)."""
        made, self._adapters_set = self._adapters_set, []
        return made

    def _change_adapters(self) -> list[Outcome]:
        """Build the pipeline with the next adapter set (the pipeline idle); fail the requests waiting for an
        adapter no longer served."""
        assert self._next_adapters is not None and self._rebuild is not None
        (token, adapters), self._next_adapters = self._next_adapters, None
        try:
            self._pipeline = self._rebuild(adapters)
        except Exception as error:
            log.exception("building the pipeline with the new adapters failed; the old ones stay")
            self._adapters_set.append((token, _engine_message(error)))
            return self._admit()
        self._adapters = adapters
        self._factory = functools.partial(self._rebuild, adapters)
        self._active = None if adapters else ""
        self._adapters_set.append((token, None))
        gone = EngineRejected("the LoRA adapter it names was unloaded")
        failed: list[Outcome] = [
            (queued.request_id, gone)
            for queued, _, _ in self._waiting
            if queued.adapter and queued.adapter not in adapters
        ]
        self._waiting = deque(entry for entry in self._waiting if not entry[0].adapter or entry[0].adapter in adapters)
        return failed + self._admit()

    def add(self, submission: Submission) -> list[Outcome]:
        """Admit (or queue) a request; returns its failure if the engine refuses it."""
        try:
            config = generation_config(submission.params)
            # The pipeline keeps stop strings in its output (streamed text cannot be taken back);
            # StopText cuts them off, or keeps them, as the request asked (see stops.py).
            config.include_stop_str_in_output = True
            config.validate()
            if self._speculative and not (config.num_assistant_tokens or config.assistant_confidence_threshold):
                # Such a request would make every later step() fail (a draft model
                # needs one of the two), so it never reaches the pipeline.
                raise ValueError("a speculative pipeline needs num_assistant_tokens or assistant_confidence_threshold")
            served = self._next_adapters[1] if self._next_adapters is not None else self._adapters
            if submission.adapter and submission.adapter not in served:
                raise ValueError(f"no LoRA adapter {submission.adapter!r} on this pipeline")
        except Exception as error:
            return [(submission.request_id, EngineRejected(f"invalid generation settings: {_engine_message(error)}"))]
        if submission.params.biased:
            if self._lane is None:
                return [(submission.request_id, EngineRejected("logit_bias: this engine has no biased lane"))]
            self._lane_waiting.append(submission)
            return []  # admitted at the next step
        self._waiting.append((submission, config, self._clock()))
        return self._admit()

    def _add_request(self, submission: Submission, config: ov_genai.GenerationConfig) -> ov_genai.GenerationHandle:
        if submission.prompt_text:
            # A vision model's pipeline takes every request as text (token ids beside an image request fail its
            # step): it tokenizes the prompt and puts each image's embeddings where its tag is. The prompt is
            # rendered already (the chat template ran in the server).
            images = [ov.Tensor(np.ascontiguousarray(image[np.newaxis])) for image in submission.images]
            config.apply_chat_template = False
            return self._pipeline.add_request(submission.request_id, submission.prompt_text, images, config)
        return self._pipeline.add_request(submission.request_id, self._prompt(submission, [], config), config)

    def _prompt(self, submission: Submission, generated: list[int], config: ov_genai.GenerationConfig) -> ov.Tensor:
        """The request's prompt (and ``generated`` after it, when resumed) in its prefix-cache namespace."""
        space = submission.cache_namespace if self._salted else 0
        return ov.Tensor(salted_prompt([*submission.prompt_ids, *generated], space, config.repetition_penalty))

    def _next(self) -> int | None:
        """Where in the queue the next request to admit is (None: none now), switching adapters when due."""
        if self._next_adapters is not None:
            return None  # the pipeline drains to be built with other adapters
        head = self._waiting[0][0]
        if head.adapter == self._active:
            return 0
        if not self._running and not self._pipeline.has_non_finished_requests():
            self._switch(head.adapter)
            return 0
        if self._clock() - self._waiting[0][2] >= ADAPTER_TURN_SECONDS:
            return None  # the running adapter's turn is over: let the pipeline drain
        return next((i for i, (queued, _, _) in enumerate(self._waiting) if queued.adapter == self._active), None)

    def _switch(self, adapter: str) -> None:
        """Make the (idle) pipeline apply ``adapter`` ("": none) from its next step: a one-token generate()."""
        chosen = ov_genai.AdapterConfig()
        if adapter:
            chosen = ov_genai.AdapterConfig(*self._adapters[adapter])
        config = ov_genai.GenerationConfig()
        config.max_new_tokens = 1
        config.adapters = chosen
        self._pipeline.generate([ov.Tensor(np.zeros((1, 1), dtype=np.int64))], [config])
        self._active = adapter

    def _admit(self) -> list[Outcome]:
        failed: list[Outcome] = []
        while self._waiting and not (self._speculative and self._running):
            index = self._next()
            if index is None:
                break
            submission, config, _ = self._waiting[index]
            del self._waiting[index]
            try:
                handle = self._add_request(submission, config)
            except Exception as error:
                failed.append((submission.request_id, EngineError(f"engine refused the request: {error}")))
                continue
            self._running[submission.request_id] = _Running(
                handle,
                submission,
                want_logprobs=config.logprobs > 0,
                # Beam search hands back every beam at the end; OpenAI wants the n best.
                keep_best=config.num_return_sequences if config.num_beams > 1 else None,
                # (a request sent as text cannot be resumed from token ids: a vision pipeline takes no ids)
                single=config.num_beams == 1 and config.num_return_sequences == 1 and not submission.prompt_text,
            )
        return failed

    def _admit_lane(self) -> None:
        """Start the biased requests that fit on the lane, in order (one needing more than the lane holds starts
        when it is idle)."""
        assert self._lane is not None
        held = sum(state.handle.choices for state in self._running.values() if isinstance(state.handle, BiasedDecode))
        while self._lane_waiting:
            submission = self._lane_waiting[0]
            params = submission.params
            needs = params.num_return_sequences or 1
            if held and held + needs > MAX_LANE_SEQUENCES:
                return
            self._lane_waiting.popleft()
            decode = BiasedDecode(
                submission.prompt_ids, params, self._lane, self._decode, submission.skip_special_tokens
            )
            self._running[submission.request_id] = _Running(decode, submission, want_logprobs=params.logprobs > 0)
            held += needs

    def _advance_lane(self, *, wait: bool) -> list[Outcome]:
        """Each request on the lane advanced (``BiasedDecode.advance``); the ones that failed, failed (and dropped)."""
        failed: list[Outcome] = []
        for request_id, state in list(self._running.items()):
            if not isinstance(state.handle, BiasedDecode):
                continue
            try:
                state.handle.advance(wait=wait)
            except Exception as error:
                log.exception("biased lane request %d failed", request_id)
                state.handle.cancel()
                del self._running[request_id]
                why = f"logit_bias: the biased lane failed: {_engine_message(error)}"
                failed.append((request_id, EngineError(why)))
        return failed

    def cancel(self, request_id: int) -> None:
        """Stop a request; its KV cache is freed by the next step."""
        for queued in self._waiting:
            if queued[0].request_id == request_id:
                self._waiting.remove(queued)
                return
        for submission in self._lane_waiting:
            if submission.request_id == request_id:
                self._lane_waiting.remove(submission)
                return
        state = self._running.pop(request_id, None)
        if state is not None and isinstance(state.handle, BiasedDecode):
            state.handle.cancel()  # its sequences are freed now; the pipeline has nothing to free
            return
        if state is not None:
            state.handle.cancel()
            # has_non_finished_requests() turns false at once, but the pipeline
            # frees the request's KV blocks in its next step, and its metrics
            # show that one step later.
            self._steps_owed = 2

    def step(self) -> list[Outcome]:
        """One engine step; when a flush is due, every request's output since the last one (one Update each)."""
        owed, self._steps_owed = self._steps_owed, max(0, self._steps_owed - 1)
        if self._next_adapters is not None and not self._running and not self._pipeline.has_non_finished_requests():
            return self._change_adapters()
        if self._lane_waiting:
            self._admit_lane()
        lane = sum(isinstance(state.handle, BiasedDecode) for state in self._running.values())
        pipeline_work = owed > 0 or len(self._running) > lane or self._pipeline.has_non_finished_requests()
        # Each biased request's forward passes run beside the pipeline's step; with no step to take, wait for them.
        failed = self._advance_lane(wait=not pipeline_work) if lane else []
        try:
            if pipeline_work:  # (a step of an empty pipeline is not free: the lane alone does not pay for it)
                self._pipeline.step()
        except Exception as error:
            # A request the pipeline cannot run makes every later step() fail too,
            # and cancelling it does not help: start over with a fresh pipeline,
            # resume on it what can be resumed, and admit the ones waiting.
            log.exception("engine step failed; rebuilding the pipeline")
            self._steps_owed = 0
            self._pipeline = self._factory()
            self._active = None if self._adapters else ""  # a new pipeline applies no adapter yet
            return failed + self._resume_after(error) + self._admit()
        self._read()
        outcomes = failed + (self._flush() if self._flush_due() else [])
        return outcomes + self._admit() if self._waiting else outcomes

    def _resume_after(self, error: Exception) -> list[Outcome]:
        """Put the running requests on the new pipeline, from the tokens they have; fail the rest.

        Which request made the step fail is not known, so each single-sequence
        request gets one second chance: its prompt plus what it generated so
        far, for the tokens it has left; its stream goes on without a break.
        Beam search and n > 1 cannot be resumed that way, and a request that
        was already resumed once (possibly the culprit) is failed.
        """
        failed: list[Outcome] = []
        for request_id, state in list(self._running.items()):
            if isinstance(state.handle, BiasedDecode):
                continue  # not the pipeline's: it goes on
            params = state.submission.params
            left = (params.max_new_tokens or 0) - len(state.generated) if params.max_new_tokens else None
            # (an adapter's request is not resumed: the new pipeline applies no adapter until it switches)
            if not state.single or state.resumed or state.submission.adapter or (left is not None and left < 1):
                del self._running[request_id]
                failed.append((request_id, EngineError(f"engine step failed: {_engine_message(error)}")))
                continue
            resumed = params.continued(len(state.generated), max_new_tokens=left)
            try:
                config = generation_config(resumed)
                tensor = self._prompt(state.submission, state.generated, config)
                state.handle = self._pipeline.add_request(request_id, tensor, config)
            except Exception as refused:
                del self._running[request_id]
                failed.append((request_id, EngineError(f"engine step failed: {_engine_message(refused)}")))
                continue
            state.resumed = True
        if self._running:
            log.warning("resumed %d requests on the rebuilt pipeline", len(self._running))
        return failed

    def _flush_due(self) -> bool:
        if self._urgent:
            return True
        interval = self._flush_interval
        if self._update_rate > 0:
            interval = max(interval, len(self._running) / self._update_rate)
        return self._unsent and self._clock() - self._flushed_at >= interval

    def fail_all(self, error: EngineError) -> list[Outcome]:
        """Cancel every request, running or waiting, each getting ``error``."""
        failed: list[Outcome] = [(request_id, error) for request_id in self._running]
        failed += [(submission.request_id, error) for submission, _, _ in self._waiting]
        failed += [(submission.request_id, error) for submission in self._lane_waiting]
        self._waiting.clear()
        self._lane_waiting.clear()
        for request_id in list(self._running):
            self.cancel(request_id)
        return failed

    def stats(self) -> EngineStats:
        """What the engine holds now."""
        metrics = self._pipeline.get_metrics()
        return EngineStats(
            running=len(self._running) + len(self._waiting) + len(self._lane_waiting),
            engine_requests=metrics.requests,
            unfinished=self._pipeline.has_non_finished_requests(),
            cache_usage=metrics.cache_usage,
            kv_cache_bytes=metrics.kv_cache_size_in_bytes,
            waiting=len(self._waiting) + len(self._lane_waiting),
        )

    def _read(self) -> None:
        """Take every request's new tokens from the pipeline into its unsent output; note the ones that ended."""
        for state in self._running.values():
            status = state.handle.get_status()
            if state.handle.can_read():
                outputs = state.handle.read()
                if state.keep_best is not None:
                    best = sorted(outputs.items(), key=lambda item: item[1].score, reverse=True)
                    outputs = dict(best[: state.keep_best])
                for sequence_id, output in outputs.items():
                    self._add_output(state, sequence_id, output)
            if status != ov_genai.GenerationStatus.RUNNING:
                state.status = status
                self._urgent = True
                # As after a cancel: the pipeline frees the blocks in its next step and reports it one
                # later, so two more steps keep the stats true when no other request comes.
                self._steps_owed = 2

    def _add_output(self, state: _Running, sequence_id: int, output: ov_genai.GenerationOutput | LaneOutput) -> None:
        if state.single and state.indices:  # a resumed request's sequence has a new id: it is the same one
            sequence_id = next(iter(state.indices))
        index, _ = state.sequence(sequence_id)
        delta = state.unsent.setdefault(sequence_id, SequenceDelta(index))
        token_ids = list(output.generated_ids)
        if state.single:
            state.generated += token_ids
        delta.token_ids += token_ids
        if state.want_logprobs:
            delta.logprobs += output.generated_log_probs
        delta.finish_reason = _FINISH_REASONS.get(output.finish_reason) or delta.finish_reason
        if delta.finish_reason is not None:
            state.finished.add(sequence_id)
        if token_ids:
            self._unsent = True
            self._urgent = self._urgent or not state.started  # the first token goes out at once

    def _flush(self) -> list[Outcome]:
        """Detokenise all unsent output at once and build one Update per request; ended requests let go."""
        self._urgent = self._unsent = False
        self._flushed_at = self._clock()
        ready: list[tuple[int, _Running, list[SequenceDelta]]] = []
        pending: list[_Pending] = []
        for request_id, state in list(self._running.items()):
            deltas = state.unsent
            state.unsent = {}
            for sequence_id, delta in deltas.items():
                text, stop = state.texts[sequence_id], state.stops[sequence_id]
                final = delta.finish_reason is not None
                pending.append(_Pending(text, delta.token_ids, final=final, delta=delta, stop=stop))
            if state.status is not None:
                del self._running[request_id]
                self._close_sequences(state, deltas, pending)
            if deltas or state.status is not None:
                ready.append((request_id, state, list(deltas.values())))
        detokenize_step(self._decode, pending)
        for item in pending:
            item.delta.text = item.text if item.stop is None else item.stop.feed(item.text, item.final)
        outcomes: list[Outcome] = []
        for request_id, state, flushed in ready:
            # Held-back text (half a character) does not count: the next token stays urgent.
            state.started = state.started or any(delta.text for delta in flushed)
            if state.status is None:
                outcomes.append((request_id, Update(flushed)))
            elif state.status == ov_genai.GenerationStatus.IGNORED:
                outcomes.append((request_id, EngineOverloaded("the engine dropped the request: its KV cache is full")))
            else:
                outcomes.append((request_id, Update(sorted(flushed, key=lambda d: d.index), finished=True)))
        return outcomes

    def _close_sequences(self, state: _Running, deltas: dict[int, SequenceDelta], pending: list[_Pending]) -> None:
        """The request ended: every sequence gets a finish reason and its held-back text."""
        default = FinishReason.CANCELLED if state.status == ov_genai.GenerationStatus.CANCEL else FinishReason.STOP
        waiting = {id(item.delta): item for item in pending}
        for sequence_id, index in state.indices.items():
            if sequence_id in state.finished:
                continue
            delta = deltas.get(sequence_id)
            if delta is None:
                delta = deltas[sequence_id] = SequenceDelta(index)
                stop = state.stops[sequence_id]
                pending.append(_Pending(state.texts[sequence_id], [], final=True, delta=delta, stop=stop))
            else:
                waiting[id(delta)].final = True
            delta.finish_reason = delta.finish_reason or default


def _engine_message(error: Exception) -> str:
    """openvino_genai's messages start with "Check '...' failed at <path>:<line>:"; keep the human part."""
    text = str(error).strip()
    return text.splitlines()[-1] if "\n" in text else text
