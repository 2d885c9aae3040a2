"""What the engine hands back for a request, step by step (its errors: service/workers/errors.py)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class FinishReason(enum.Enum):
    """Why a sequence ended (the engine's view; the API maps it to OpenAI's)."""

    STOP = "stop"  # end-of-turn token or a stop string
    LENGTH = "length"  # max_new_tokens or the model's length
    CANCELLED = "cancelled"  # the caller went away


@dataclass(frozen=True)
class PromptImages:
    """A vision request's images, and its prompt rendered as text with a ``<ov_genai_image_N>`` tag where each goes
    (the pipeline takes images only beside prompt text, never beside token ids)."""

    text: str
    pixels: tuple[np.ndarray, ...]  # RGB uint8 (height, width, 3), in tag order


Alternatives = tuple[tuple[int, float], ...]  # (token id, logprob) at one position, most likely first


@dataclass
class TokenScores:
    """Tokens scored by the model (ovserve.service.engine.scoring): per token its logprob given the tokens before it,
    its
    rank there (1: the most likely) and the most likely tokens there. A sequence's first token has none: NaN,
    rank 0, no alternatives."""

    logprobs: list[float] = field(default_factory=list)
    ranks: list[int] = field(default_factory=list)
    top: list[Alternatives] = field(default_factory=list)


@dataclass
class SequenceDelta:
    """What one output sequence gained in one engine step."""

    index: int  # 0..n-1, the OpenAI choice index
    token_ids: list[int] = field(default_factory=list)
    text: str = ""  # the newly printable text (incremental detokenisation)
    logprobs: list[float] = field(default_factory=list)  # one per token id, when requested
    finish_reason: FinishReason | None = None
    top_logprobs: list[Alternatives] = field(default_factory=list)  # one per token id, when alternatives are asked

    def extend(self, later: SequenceDelta) -> None:
        """Append what the same sequence gained after this delta."""
        self.token_ids += later.token_ids
        self.text += later.text
        self.logprobs += later.logprobs
        self.top_logprobs += later.top_logprobs
        self.finish_reason = later.finish_reason or self.finish_reason


@dataclass
class Update:
    """One step's worth of output for one request: all its sequences' deltas at once (coalesced)."""

    sequences: list[SequenceDelta]
    finished: bool = False  # the request is done; no more updates follow
    prompt: TokenScores | None = None  # the prompt's tokens scored, when asked (with the request's first update)

    def absorb(self, later: Update) -> None:
        """Append a later step's output to this one, as if both steps had been one."""
        by_index = {delta.index: delta for delta in self.sequences}
        for delta in later.sequences:
            earlier = by_index.get(delta.index)
            if earlier is None:
                by_index[delta.index] = delta
                self.sequences.append(delta)
            else:
                earlier.extend(delta)
        self.finished = later.finished
        self.prompt = self.prompt or later.prompt


@dataclass(frozen=True)
class EngineStats:
    """What an engine holds: for health, metrics and the tests that check nothing leaks."""

    running: int  # requests admitted and not finished
    engine_requests: int  # requests the pipeline reports (trails by one step)
    unfinished: bool  # the pipeline's has_non_finished_requests()
    cache_usage: float  # KV cache in use, percent
    kv_cache_bytes: int = 0  # KV cache allocated so far (the pipeline grows it as it is used, up to its size)
    waiting: int = 0  # requests not yet handed to the pipeline (a speculative pipeline takes one at a time)
    scoring: int = 0  # requests whose logprobs the scoring lane still computes (ovserve.service.engine.scoring_lane)

    @property
    def idle(self) -> bool:
        """Nothing running and no KV cache held."""
        return (
            not self.running
            and not self.scoring
            and not self.unfinished
            and not self.engine_requests
            and self.cache_usage == 0.0
        )
