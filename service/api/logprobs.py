"""Log probabilities, the one place for their rules and shapes: what a request asks, and the protobuf it gets.

What each API asks (validated here, naming its fields):
- chat: ``logprobs`` (the chosen tokens'), ``top_logprobs`` 0-20 (alternatives, needs ``logprobs``);
- completions: ``logprobs`` 0-5 (the chosen tokens' and that many alternatives), ``echo`` with it (the prompt's
  tokens too), ``max_tokens`` 0 (score the prompt alone);
- Responses: ``include: ["message.output_text.logprobs"]`` (or ``logprobs``) and ``top_logprobs`` 0-20;
- chat and completions: vLLM's ``prompt_logprobs`` 0-20 (the prompt's tokens, their ranks and alternatives).

The chosen tokens' logprobs come from the sampler for free; anything more (alternatives, the prompt) is a
``Scoring`` for the engine's scoring copy of the model (service.engine.scoring). All of them are the model's raw
distribution (log-softmax of its logits: no temperature, penalties or top-p), as vLLM's default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from clients.v1 import common_pb2, completion_pb2
from service.api.common import token_texts
from service.engine import MAX_ALTERNATIVES, Alternatives, Scoring, TokenScores
from service.errors import FieldViolation
from service.models import ServedModel

MAX_COMPLETION_LOGPROBS = 5  # OpenAI's completions range
# Most prompt positions x (alternatives + 1) one prompt may have scored: each is an entry of the answer (~60 bytes
# of JSON, and a Python tuple on the way), so 20 alternatives allow ~12,000 prompt tokens, the chosen token alone
# 262,144. Past that the request is refused naming its prompt field, before any work.
MAX_PROMPT_SCORES = 262_144


@dataclass(frozen=True)
class LogprobAsk:
    """What a request asks for: the chosen tokens' logprobs, alternatives per output token, the prompt scored."""

    chosen: bool = False  # the output tokens' own logprobs
    top: int = 0  # alternatives per output token
    prompt: int | None = None  # alternatives per prompt token (0: the prompt's own token only); None: not asked
    generate: bool = True  # False: max_tokens 0, the prompt is scored and nothing generated

    def scoring(self) -> Scoring | None:
        """What the engine's scoring copy computes for it; None when the sampler's logprobs are enough."""
        if self.top == 0 and self.prompt is None and self.generate:
            return None
        top = max(self.top, self.prompt or 0)
        return Scoring(top=top, prompt=self.prompt is not None, output=self.top > 0, generate=self.generate)


def ranged(request: Any, name: str, most: int, violations: list[FieldViolation]) -> int | None:
    """``request.name`` if set and within 0..most (else a violation naming it, and None)."""
    if not request.HasField(name):
        return None
    value = getattr(request, name)
    if not 0 <= value <= most:
        violations.append(FieldViolation(name, f"must be between 0 and {most}; got {value}"))
        return None
    return value


def top_logprobs(request: Any, violations: list[FieldViolation], *, needs_logprobs: bool) -> int:
    """``top_logprobs`` (chat and Responses): 0-20; chat also needs ``logprobs`` true."""
    if request.HasField("top_logprobs") and needs_logprobs and not request.logprobs:
        violations.append(FieldViolation("top_logprobs", "requires logprobs to be true"))
        return 0
    return ranged(request, "top_logprobs", MAX_ALTERNATIVES, violations) or 0


def prompt_logprobs(request: Any, violations: list[FieldViolation]) -> int | None:
    """vLLM's ``prompt_logprobs``: 0-20 alternatives per prompt token, None when not asked."""
    return ranged(request, "prompt_logprobs", MAX_ALTERNATIVES, violations)


def prompt_score_violations(ask: LogprobAsk, prompt_tokens: int, field: str) -> list[FieldViolation]:
    """A prompt too long to have its tokens scored (echo with logprobs, prompt_logprobs): refused naming it."""
    if ask.prompt is None or prompt_tokens * (ask.prompt + 1) <= MAX_PROMPT_SCORES:
        return []
    most = MAX_PROMPT_SCORES // (ask.prompt + 1)
    return [
        FieldViolation(
            field,
            f"the prompt is {prompt_tokens} tokens; its tokens' logprobs are returned for at most {most} tokens "
            f"with {ask.prompt} alternatives each",
        )
    ]


def vision_violations(model: ServedModel, ask: LogprobAsk) -> list[FieldViolation]:
    """A vision model's language model takes embeddings, not token ids: its logits cannot be read by the scorer."""
    if model.vision is None or ask.scoring() is None:
        return []
    field = "prompt_logprobs" if ask.prompt is not None else "top_logprobs"
    return [
        FieldViolation(
            field,
            f"model {model.name!r} is a vision model: only the chosen tokens' logprobs are available "
            "(its language model reads image embeddings, which the logprobs scorer does not build)",
        )
    ]


def _finite(value: float) -> float:
    return value if math.isfinite(value) else -math.inf


def token_logprobs(
    model: ServedModel, token_ids: list[int], logprobs: list[float], alternatives: Sequence[Alternatives], top: int
) -> list[common_pb2.TokenLogprob]:
    """OpenAI's logprobs entries (token, logprob, bytes, top_logprobs) of generated tokens, in order (chat and
    Responses); ``alternatives`` holds the scored ones per token when ``top`` > 0."""
    texts = token_texts(model, token_ids)
    entries = []
    for position, (text, logprob) in enumerate(zip(texts, logprobs, strict=True)):
        entry = common_pb2.TokenLogprob(token=text, logprob=logprob, bytes=list(text.encode()))
        if top:
            best = alternatives[position][:top]
            for best_text, (_, value) in zip(token_texts(model, [t for t, _ in best]), best, strict=True):
                entry.top_logprobs.add(token=best_text, logprob=value, bytes=list(best_text.encode()))
        entries.append(entry)
    return entries


def completion_logprobs(
    model: ServedModel,
    token_ids: list[int],
    logprobs: list[float],
    alternatives: Sequence[Alternatives],
    *,
    top: int,
    offset: int,
    into: completion_pb2.CompletionLogprobs | None = None,
) -> completion_pb2.CompletionLogprobs:
    """OpenAI's legacy parallel lists for ``token_ids`` (appended to ``into`` if given), text offsets from
    ``offset``. ``top_logprobs`` holds the ``top`` most likely tokens and the chosen one (OpenAI: up to
    logprobs+1 entries); a NaN logprob (the prompt's first token) has no alternatives (null in JSON)."""
    result = into if into is not None else completion_pb2.CompletionLogprobs()
    texts = token_texts(model, token_ids)
    for position, (token, text, logprob) in enumerate(zip(token_ids, texts, logprobs, strict=True)):
        result.tokens.append(text)
        result.token_logprobs.append(logprob)
        result.text_offset.append(offset)
        offset += len(text)
        entry = result.top_logprobs.add()
        if math.isnan(logprob):
            continue
        best = alternatives[position][:top] if top else ()
        for best_text, (_, value) in zip(token_texts(model, [t for t, _ in best]), best, strict=True):
            entry.logprobs[best_text] = value
        if top and token not in {t for t, _ in best}:
            entry.logprobs.setdefault(text, logprob)
    return result


def prompt_entries(model: ServedModel, prompt_ids: list[int], scores: TokenScores, top: int) -> list[Any]:
    """vLLM's prompt_logprobs: per prompt token, the token itself (logprob, rank, text) and the ``top`` most
    likely there; the first position is empty (null)."""
    texts = token_texts(model, prompt_ids)
    entries = []
    for position, token in enumerate(prompt_ids):
        entry = common_pb2.PromptLogprobs()
        if position > 0:
            entry.tokens.add(
                token_id=token,
                logprob=_finite(scores.logprobs[position]),
                rank=scores.ranks[position],
                decoded_token=texts[position],
            )
            best = scores.top[position][:top]
            for rank, ((alternative, value), text) in enumerate(
                zip(best, token_texts(model, [t for t, _ in best]), strict=True), start=1
            ):
                if alternative != token:
                    entry.tokens.add(token_id=alternative, logprob=value, rank=rank, decoded_token=text)
        entries.append(entry)
    return entries
