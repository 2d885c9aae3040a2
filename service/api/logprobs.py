"""Log probabilities, the one place for their rules and shapes: what a request asks, and the protobuf it gets.

What each API asks (validated here, naming its fields):
- chat: ``logprobs`` (the chosen tokens'), ``top_logprobs`` 0-20 (alternatives, needs ``logprobs``);
- completions: ``logprobs`` 0-5 (the chosen tokens' and that many alternatives), ``echo`` with it (the prompt's
  tokens too), ``max_tokens`` 0 (score the prompt alone);
- Responses: ``include: ["message.output_text.logprobs"]`` (or ``logprobs``) and ``top_logprobs`` 0-20;
- chat and completions: vLLM's ``prompt_logprobs`` 0-20 (the prompt's tokens, their ranks and alternatives).

The chosen tokens' logprobs come from the sampler for free; anything more (alternatives, the prompt) is a
``Scoring`` for the engine's scoring copy of the model (ovserve.service.engine.scoring). All of them are the model's raw
distribution (log-softmax of its logits: no temperature, penalties or top-p), as vLLM's default.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ovserve.clients.v1 import common_pb2, completion_pb2
from ovserve.service.api.common import token_texts
from ovserve.service.engine import MAX_ALTERNATIVES, Alternatives, Scoring, TokenScores
from ovserve.service.errors import FieldViolation
from ovserve.service.models import ServedModel

T = TypeVar("T")

MAX_COMPLETION_LOGPROBS = 5  # OpenAI's completions range
# Most scores one request's answer may hold, over all its prompts and choices: a score is a token's own logprob or
# one of its alternatives, an entry of the answer (~77 bytes of JSON: ~19 MB at the bound, well under the 64 MiB
# gRPC message; a protobuf entry and Python objects on the way, ~1 s of building). 20 alternatives allow ~12,000
# prompt tokens, the chosen token alone 262,144. Past that the request is refused before any work, naming the
# field that takes it over (see score_violations).
MAX_REQUEST_SCORES = 262_144


@dataclass(frozen=True)
class LogprobAsk:
    """What a request asks for: the chosen tokens' logprobs, alternatives per output token, the prompt scored;
    and how its answer carries them (what ``count_scores`` counts)."""

    chosen: bool = False  # the output tokens' own logprobs
    top: int = 0  # alternatives per output token
    prompt: int | None = None  # alternatives per prompt token (0: the prompt's own token only); None: not asked
    generate: bool = True  # False: max_tokens 0, the prompt is scored and nothing generated
    # How the answer carries them: vLLM's prompt_logprobs as asked (None: not asked), the prompt's tokens opening
    # each choice's logprobs (completions' echo), the prompt's scores once per choice (completions) or once.
    prompt_logprobs: int | None = None
    echoed: bool = False
    per_choice: bool = False
    output_field: str = "top_logprobs"  # the field asking for alternatives per output token

    def scoring(self) -> Scoring | None:
        """What the engine's scoring copy computes for it; None when the sampler's logprobs are enough."""
        if self.top == 0 and self.prompt is None and self.generate:
            return None
        top = max(self.top, self.prompt or 0)
        return Scoring(top=top, prompt=self.prompt is not None, output=self.top > 0, generate=self.generate)

    @property
    def per_prompt_token(self) -> int:
        """Scores the answer holds per prompt token, in each copy of the prompt's."""
        asked = 0 if self.prompt_logprobs is None else self.prompt_logprobs + 1
        return asked + (self.top + 1 if self.echoed else 0)

    @property
    def per_output_token(self) -> int:
        """Scores the answer holds per output token: its own logprob and its alternatives."""
        return self.top + 1 if self.chosen else 0

    @property
    def returned(self) -> bool:
        """Whether the answer holds any score."""
        return bool(self.per_prompt_token or self.per_output_token)

    @property
    def prompt_field(self) -> str:
        """The field that has the prompt's tokens scored."""
        return "prompt_logprobs" if self.prompt_logprobs is not None else "echo"


@dataclass(frozen=True)
class ScoredPrompt:
    """One prompt of a request, as ``count_scores`` sees it."""

    tokens: int
    field: str  # the request field it comes from: prompt, prompts[i], messages, input
    choices: int  # the choices generated from it (n)
    max_output: int  # the most tokens each choice may generate (max_tokens, or the room the prompt leaves)


@dataclass(frozen=True)
class ScoreCount:
    """A request's scores over all its prompts and choices: its prompts' tokens' and its outputs'."""

    prompt: int
    output: int

    @property
    def total(self) -> int:
        """Every score of the answer."""
        return self.prompt + self.output


def count_scores(ask: LogprobAsk, prompts: Sequence[ScoredPrompt]) -> ScoreCount:
    """The most scores ``ask``'s answer holds for ``prompts``: per prompt, its tokens x their scores (once, or
    once per choice), and every choice's output tokens x theirs."""
    prompt = sum(p.tokens * ask.per_prompt_token * (p.choices if ask.per_choice else 1) for p in prompts)
    output = sum(p.choices * p.max_output * ask.per_output_token for p in prompts)
    return ScoreCount(prompt, output)


def score_violations(ask: LogprobAsk, prompts: Sequence[ScoredPrompt], length_field: str) -> list[FieldViolation]:
    """More than MAX_REQUEST_SCORES scores, refused naming the field that takes the request over: a prompt too long
    alone, else ``n`` when one choice per prompt would fit, else the larger part's field (the prompt's scoring
    field, or the output's: its alternatives' field, ``length_field`` when it asks for none)."""
    count = count_scores(ask, prompts)
    if count.total <= MAX_REQUEST_SCORES:
        return []
    for prompt in prompts:
        if prompt.tokens * ask.per_prompt_token > MAX_REQUEST_SCORES:
            most = MAX_REQUEST_SCORES // ask.per_prompt_token
            message = (
                f"the prompt is {prompt.tokens} tokens; its tokens' logprobs are returned for at most {most} tokens "
                f"with {ask.per_prompt_token - 1} alternatives each"
            )
            return [FieldViolation(prompt.field, message)]
    choices = sum(p.choices for p in prompts)
    longest = max(p.max_output for p in prompts)
    message = (
        f"the answer would hold up to {count.total:,} logprobs ({count.prompt:,} for the tokens of {len(prompts)} "
        f"prompt(s), {count.output:,} for {choices} choice(s) of up to {longest} tokens); a request may have at "
        f"most {MAX_REQUEST_SCORES:,}"
    )
    if count_scores(ask, [dataclasses.replace(p, choices=1) for p in prompts]).total <= MAX_REQUEST_SCORES:
        return [FieldViolation("n", message)]
    if count.prompt >= count.output:
        return [FieldViolation(ask.prompt_field, message)]
    fits = (MAX_REQUEST_SCORES - count.prompt) // (choices * ask.per_output_token)  # output tokens per choice
    return [FieldViolation(ask.output_field if ask.top else length_field, f"{message} ({length_field} {fits} fits)")]


def output_cap(ask: LogprobAsk, prompts: Sequence[ScoredPrompt]) -> int | None:
    """The most output tokens per choice that the answer's scores leave room for, for a request that sets no
    length: its outputs end there (finish_reason ``length``), as they would at the room their prompt leaves, rather
    than the request being refused for a length it never asked for. At least 1 (a prompt whose own scores pass the
    bound is refused by ``score_violations``); None when the outputs carry no scores."""
    if not ask.per_output_token:
        return None
    room = MAX_REQUEST_SCORES - count_scores(ask, prompts).prompt
    choices = sum(p.choices for p in prompts)
    return max(1, room // (choices * ask.per_output_token))


async def built(ask: LogprobAsk, work: Callable[[], T]) -> T:
    """``work()``, building (part of) an answer holding ``ask``'s scores: in a thread when it holds any, so the event
    loop serves others meanwhile (an answer at MAX_REQUEST_SCORES takes ~1 s to build, ~4 us a score)."""
    return await asyncio.to_thread(work) if ask.returned else work()


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
    written: str,
    into: completion_pb2.CompletionLogprobs | None = None,
) -> completion_pb2.CompletionLogprobs:
    """OpenAI's legacy parallel lists for ``token_ids`` (appended to ``into`` if given), text offsets from
    ``offset``, where ``written`` (the text these tokens wrote) begins. ``top_logprobs`` holds the ``top`` most
    likely tokens and the chosen one (OpenAI: up to logprobs+1 entries); a NaN logprob (the prompt's first token)
    has no alternatives (null in JSON)."""
    result = into if into is not None else completion_pb2.CompletionLogprobs()
    texts = token_texts(model, token_ids)
    offsets = text_offsets(texts, written)
    for position, (token, text, logprob) in enumerate(zip(token_ids, texts, logprobs, strict=True)):
        result.tokens.append(text)
        result.token_logprobs.append(logprob)
        result.text_offset.append(offset + offsets[position])
        entry = result.top_logprobs.add()
        if math.isnan(logprob):
            continue
        best = alternatives[position][:top] if top else ()
        for best_text, (_, value) in zip(token_texts(model, [t for t, _ in best]), best, strict=True):
            entry.logprobs[best_text] = value
        if token not in {t for t, _ in best}:  # logprobs 0 too: the chosen token alone ("up to logprobs+1")
            entry.logprobs.setdefault(text, logprob)
    return result


HELD_BACK_CHARS = 8  # the most text of earlier tokens a chunk may start with (a character's bytes, held back)


def text_offsets(texts: list[str], written: str) -> list[int]:
    """Where each token's text starts in ``written``, the text the tokens wrote.

    A token the text leaves out (a special token skip_special_tokens drops, the part of a character the
    detokenizer holds back for the next chunk, what a stop string cut) has no place of its own: it takes the
    place where the text goes on. A token is found from the end of the one before, so text held back from an
    earlier chunk is passed over (a few characters at most: the search looks no further, so a long text with
    many left-out tokens costs no more than a short one)."""
    offsets, place = [], 0
    for text in texts:
        found = written.find(text, place, place + len(text) + HELD_BACK_CHARS) if text else -1
        offsets.append(place if found < 0 else found)
        if found >= 0:
            place = found + len(text)
    return offsets


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
