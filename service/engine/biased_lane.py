"""The biased lane: requests with a logit bias or bad words, decoded token by token beside the pipeline.

openvino-genai 2026.4's ContinuousBatchingPipeline samples in C++ and offers no hook on the logits, so such a
request never reaches it. It runs on the scoring copy of the model instead (scoring.py: the same IR compiled with
the OpenVINO runtime, stateful, its KV cache in the infer request), and its tokens are chosen by TokenSampler
(token_sampler.py). A ``BiasedDecode`` looks like the pipeline's GenerationHandle to EngineCore (status, read,
cancel), so its output takes the pipeline's path: the same detokenising, stop-string cutting, flushes, usage and
finish reasons. EngineCore advances each one at every engine step: the forward pass of its next prompt chunk, or of each
choice's next token, is started asynchronously (OpenVINO runs it in its own threads, without the GIL) and collected
at a later step, so the pipeline's steps go on while the lane's passes run: a biased request never makes other
streams wait for its forward passes (it shares the CPU with them). With nothing in the pipeline the step waits for
the lane's passes instead of spinning. EngineCore also bounds how many decode at once (MAX_LANE_SEQUENCES).

The cost: each token is a forward pass of batch 1 outside the pipeline's batch, and its sampling is numpy over the
vocabulary (benchmarks/biased_lane.py measures it against the pipeline; docs/api/parameters.md has the numbers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import openvino_genai as ov_genai

from ovserve.service.engine.detokenizer import WindowDecoder
from ovserve.service.engine.sampling import SamplingParams
from ovserve.service.engine.scoring import CHUNK_TOKENS, ScoredSequence
from ovserve.service.engine.token_sampler import TokenSampler

#: Sequences (choices) decoding on the lane at once, over all its requests: each holds an infer request with its
#: own KV cache. A request whose choices do not fit waits (one that needs more alone starts when the lane is idle).
MAX_LANE_SEQUENCES = 16
_EXTRA_STOP_TOKENS = 4  # tokens decoded beyond the longest stop string's characters when looking for it


@dataclass
class LaneOutput:
    """New tokens of one choice since the last read: what EngineCore reads from a GenerationOutput."""

    generated_ids: list[int]
    generated_log_probs: list[float]
    finish_reason: ov_genai.GenerationFinishReason
    score: float = 0.0


@dataclass
class _Choice:
    """One output sequence: its model state (None once it ended: the KV cache goes) and its sampler."""

    sequence: ScoredSequence | None
    sampler: TokenSampler
    unread: list[int] = field(default_factory=list)
    unread_logprobs: list[float] = field(default_factory=list)
    finish: ov_genai.GenerationFinishReason = ov_genai.GenerationFinishReason.NONE
    read_finish: bool = False  # its finish reason was handed over


class BiasedDecode:
    """One request decoding on the lane; EngineCore calls ``advance`` once per engine step."""

    def __init__(
        self,
        prompt_ids: list[int],
        params: SamplingParams,
        sequence: Callable[[], ScoredSequence],
        decode: WindowDecoder,
        skip_special_tokens: bool,
    ) -> None:
        self._params = params
        self._prompt = prompt_ids
        self._fed = 0
        self._base: ScoredSequence | None = None  # the prompt's state; each choice's is a fork of it (or it, for one)
        self._new_sequence = sequence
        self._decode = decode
        self._skip_special = skip_special_tokens
        self._choices: list[_Choice] = []
        self._status = ov_genai.GenerationStatus.RUNNING
        stops = set(params.stop_token_ids)
        if params.eos_token_id is not None and params.eos_token_id >= 0:
            stops.add(params.eos_token_id)
        self._stop_ids = frozenset(stops)
        self._stop_window = max((len(stop) for stop in params.stop_strings), default=0) + _EXTRA_STOP_TOKENS
        seed = params.seed or 0
        self._seeds = [np.random.default_rng((seed, index)) for index in range(self.choices)]

    @property
    def choices(self) -> int:
        """How many sequences it decodes (n)."""
        return self._params.num_return_sequences or 1

    def advance(self, *, wait: bool = False) -> None:
        """One unit of work, started and not waited for: the next chunk of the prompt, or the next token of each
        choice whose last forward pass has finished (it is sampled now, and the pass for it started). ``wait``:
        block until the passes started at the last call finish first (nothing else would run meanwhile)."""
        if self._status != ov_genai.GenerationStatus.RUNNING:
            return
        if not self._choices:
            base = self._base = self._base or self._new_sequence()
            if not base.ready(wait=wait):
                return
            if self._fed < len(self._prompt):
                chunk = self._prompt[self._fed : self._fed + CHUNK_TOKENS]
                base.start(chunk)
                self._fed += len(chunk)
                return
            sequences = [base] if self.choices == 1 else [base.fork() for _ in range(self.choices)]
            self._base = None
            self._choices = [
                _Choice(sequence, TokenSampler(self._params, self._prompt, rng, self._stop_ids))
                for sequence, rng in zip(sequences, self._seeds, strict=True)
            ]
        for choice in self._choices:
            if choice.sequence is not None and choice.sequence.ready(wait=wait):
                self._next_token(choice)
        if all(choice.finish != ov_genai.GenerationFinishReason.NONE for choice in self._choices):
            self._status = ov_genai.GenerationStatus.FINISHED

    def _next_token(self, choice: _Choice) -> None:
        assert choice.sequence is not None
        logits = choice.sequence.next_logits
        assert logits is not None
        token = choice.sampler.choose(logits)
        choice.sampler.accept(token)
        choice.unread.append(token)
        if self._params.logprobs:  # the model's own logprob, as the pipeline's sampler reports it
            top = float(logits.max())
            choice.unread_logprobs.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
        generated = choice.sampler.generated
        params = self._params
        min_tokens = params.min_new_tokens or 0
        if token in self._stop_ids and not params.ignore_eos and len(generated) >= min_tokens:
            choice.finish = ov_genai.GenerationFinishReason.STOP
        elif params.max_new_tokens is not None and len(generated) >= params.max_new_tokens:
            choice.finish = ov_genai.GenerationFinishReason.LENGTH
        elif params.stop_strings and self._stop_found(generated):
            choice.finish = ov_genai.GenerationFinishReason.STOP
        else:
            choice.sequence.start([token])
            return
        choice.sequence = None  # ended: its KV cache goes now, not with the request

    def _stop_found(self, generated: list[int]) -> bool:
        """Whether the text of the last tokens holds a stop string (it ended with the newest token: the earlier
        tokens were checked when they came)."""
        (text,) = self._decode([generated[-self._stop_window :]], self._skip_special)
        return any(stop in text for stop in self._params.stop_strings)

    # GenerationHandle's interface, as EngineCore reads it.

    def get_status(self) -> ov_genai.GenerationStatus:
        """RUNNING until every choice ended (FINISHED) or the request was cancelled (CANCEL)."""
        return self._status

    def can_read(self) -> bool:
        """Whether some choice has output not yet read."""
        return any(choice.unread or self._unread_end(choice) for choice in self._choices)

    @staticmethod
    def _unread_end(choice: _Choice) -> bool:
        return choice.finish != ov_genai.GenerationFinishReason.NONE and not choice.read_finish

    def read(self) -> dict[int, LaneOutput]:
        """Each choice's new tokens (and finish reason) since the last read, by choice index."""
        outputs = {}
        for index, choice in enumerate(self._choices):
            ended = self._unread_end(choice)
            if choice.unread or ended:
                outputs[index] = LaneOutput(choice.unread, choice.unread_logprobs, choice.finish)
                choice.unread, choice.unread_logprobs = [], []
                choice.read_finish = choice.read_finish or ended
        return outputs

    def cancel(self) -> None:
        """Stop decoding; the infer requests (KV caches) go."""
        if self._status == ov_genai.GenerationStatus.RUNNING:
            self._status = ov_genai.GenerationStatus.CANCEL
        for sequence in [choice.sequence for choice in self._choices] + [self._base]:
            if sequence is not None:
                sequence.ready(wait=True)  # a forward pass still running finishes before its request goes
        for choice in self._choices:
            choice.sequence = None
        self._base = None
