"""CompletionService semantics: prompts in, text completions out (OpenAI's legacy completions API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from ovserve.clients.v1 import completion_pb2
from ovserve.service.api import logprobs
from ovserve.service.api.common import FINISH_REASONS, usage
from ovserve.service.api.logprobs import MAX_COMPLETION_LOGPROBS, LogprobAsk
from ovserve.service.api.prepare import (
    COMPLETIONS,
    PreparedRuns,
    Prompt,
    begin,
    build_runs,
    choice_count,
    includes_usage,
    refuse_invalid,
    skips_special_tokens,
)
from ovserve.service.api.prompting import INLINE_PROMPT_CHARS, check_length
from ovserve.service.api.runs import DeltaStream, collect_choices
from ovserve.service.engine import PromptImages, SequenceDelta, TokenScores
from ovserve.service.engine.infill import FIM_TOKENS, InfillTokens
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.ids import new_id, now
from ovserve.service.models import ModelRegistry, ServedModel
from ovserve.service.structured.output import output_constraint

MAX_PROMPTS = 64

Request = completion_pb2.CreateCompletionRequest | completion_pb2.StreamCompletionRequest


@dataclass(frozen=True)
class PreparedCompletion(PreparedRuns):
    """A validated completions request, split into engine runs."""

    echoes: list[str]  # per prompt: the text that opens each of its choices (echo), or ""
    # per prompt: its length in characters, where its output's text offsets start, echoed or not (OpenAI's
    # text_offset counts from the prompt's start: a choice's first token is at len(prompt) without echo too)
    prompt_chars: list[int]
    prompt_logprobs_asked: int | None  # the request's own prompt_logprobs (vLLM's), returned as such

    def prompt_logprobs(self, index: int, prompts: dict[int, TokenScores]) -> list[Any]:
        """vLLM's prompt_logprobs of choice ``index``, when the request set prompt_logprobs."""
        scored = self.scored_prompt(index, prompts)
        if self.prompt_logprobs_asked is None or scored is None:
            return []
        return logprobs.prompt_entries(self.model, *scored, self.prompt_logprobs_asked)

    def scored_prompt(self, index: int, prompts: dict[int, TokenScores]) -> tuple[list[int], TokenScores] | None:
        """Choice ``index``'s prompt and its scores (by the run it came from), if they are asked and arrived."""
        run = next((run for run in reversed(self.runs) if run.first_choice <= index), None)
        if run is None or run.first_choice not in prompts:
            return None
        return run.prompt_ids, prompts[run.first_choice]

    def choice_logprobs(
        self,
        index: int,
        delta: SequenceDelta,
        prompts: dict[int, TokenScores],
        *,
        echoed: bool,
        offset: int | None = None,
    ) -> completion_pb2.CompletionLogprobs:
        """A choice's logprobs: with ``echoed`` (the echo goes out with them) the prompt's tokens first; text
        offsets of the output from ``offset`` (by default the prompt's end, as OpenAI counts them)."""
        result = completion_pb2.CompletionLogprobs()
        scored = self.scored_prompt(index, prompts) if echoed else None
        if scored is not None:
            ids, scores = scored
            logprobs.completion_logprobs(
                self.model, ids, scores.logprobs, scores.top, top=self.ask.top, offset=0,
                written=self.echoes[index // self.n], into=result,
            )  # fmt: skip
        if offset is None:
            offset = self.prompt_chars[index // self.n]
        return logprobs.completion_logprobs(
            self.model, delta.token_ids, delta.logprobs, delta.top_logprobs, top=self.ask.top, offset=offset,
            written=delta.text, into=result,
        )  # fmt: skip


async def prepare(models: ModelRegistry, request: Request, *, streaming: bool) -> PreparedCompletion:
    """Validate ``request`` (INVALID_ARGUMENT / NOT_FOUND naming the field) and build its runs."""
    model, violations = begin(models, request, COMPLETIONS, streaming=streaming)
    characters = len(request.prompt) + sum(len(prompt.text) for prompt in request.prompts) + len(request.suffix)
    if characters <= INLINE_PROMPT_CHARS:
        prompts = _prompts(model, request, violations)
    else:  # tokenising a large text takes milliseconds: not on the event loop
        prompts = await asyncio.to_thread(_prompts, model, request, violations)
    # A completion's prompt is the client's own text; its grammar's literals are spelled for the vocabulary.
    plan = await output_constraint(request, violations, spellings=model.spellings)
    ask = _logprob_ask(request, violations)
    violations += logprobs.vision_violations(model, ask)
    refuse_invalid(request, model, violations, streaming=streaming)

    n = choice_count(request)
    engine_prompts = [prompt for prompt, _ in prompts]
    runs = await build_runs(model, request, engine_prompts, plan, COMPLETIONS, streaming=streaming, ask=ask, n=n)
    echo = request.HasField("echo") and request.echo
    return PreparedCompletion(
        model,
        runs,
        n,
        prompt_tokens=sum(len(prompt.ids) for prompt in engine_prompts),
        ask=ask,
        skip_special_tokens=skips_special_tokens(request),
        include_usage=includes_usage(request, streaming=streaming),
        echoes=[text if echo else "" for _, text in prompts],
        prompt_chars=[len(text) for _, text in prompts],
        prompt_logprobs_asked=request.prompt_logprobs if request.HasField("prompt_logprobs") else None,
    )


def _logprob_ask(request: Request, violations: list[FieldViolation]) -> LogprobAsk:
    """``logprobs`` 0-5 (any value, 0 included, returns the chosen tokens': OpenAI always does), ``echo`` with
    them (the prompt's tokens scored too), ``max_tokens`` 0 (nothing generated: the prompt scored, with echo),
    ``prompt_logprobs`` (vLLM's)."""
    top = logprobs.ranged(request, "logprobs", MAX_COMPLETION_LOGPROBS, violations)
    prompt = logprobs.prompt_logprobs(request, violations)
    echo = request.HasField("echo") and request.echo
    generate = not (request.HasField("max_tokens") and request.max_tokens == 0)
    if not generate and not echo:
        violations.append(FieldViolation("max_tokens", "0 is only valid with echo (the prompt scored, none generated)"))
    wanted = request.HasField("logprobs")
    asked = prompt
    if echo and wanted:  # the echoed prompt's tokens carry logprobs like the output's (OpenAI's legacy shape)
        prompt = max(prompt or 0, top or 0)
    return LogprobAsk(
        chosen=wanted, top=top or 0, prompt=prompt, generate=generate,
        # each choice carries its prompt's scores: prompt_logprobs, and with echo its logprobs' opening tokens
        prompt_logprobs=asked, echoed=echo and wanted, per_choice=True, output_field="logprobs",
    )  # fmt: skip


@dataclass(frozen=True)
class Infill:
    """A request to fill in the middle: the model's markup and the suffix's token ids."""

    tokens: InfillTokens
    suffix: str
    suffix_ids: list[int]


def _infill(model: ServedModel, request: Request, violations: list[FieldViolation]) -> Infill | None:
    """What a non-empty ``suffix`` asks for, or None (none asked, or a violation appended)."""
    if not (request.HasField("suffix") and request.suffix):
        return None
    tokens = model.engine.infill
    if tokens is None:
        names = ", ".join(prefix for prefix, _, _ in FIM_TOKENS[:3])
        reason = f"model {model.name!r} has no fill-in-the-middle tokens (a code model's, such as {names})"
    elif model.vision is not None:
        reason = f"model {model.name!r} takes prompts as text: its pipeline cannot be sent the infill markup"
    elif request.HasField("echo") and request.echo:
        violations.append(FieldViolation("echo", "cannot be combined with suffix: the prompt sent is not the echo"))
        return None
    else:
        try:
            check_length(model, len(request.suffix), "suffix")
        except InvalidArgument as error:
            violations += error.violations
            return None
        return Infill(tokens, request.suffix, model.engine.encode(request.suffix, add_special_tokens=False))
    violations.append(FieldViolation("suffix", reason))
    return None


def _encode(
    model: ServedModel, text: str, field: str, violations: list[FieldViolation], infill: Infill | None
) -> list[int] | None:
    """The token ids of one prompt text (with ``infill``: the prompt that fills in between it and the suffix),
    or None (and a violation) if it is surely too long to encode."""
    try:
        check_length(model, len(text) + (len(infill.suffix) if infill else 0), field)
    except InvalidArgument as error:
        violations += error.violations
        return None
    if infill is None:
        ids = model.engine.encode(text, add_special_tokens=True)
    else:
        ids = infill.tokens.prompt(model.engine.encode(text, add_special_tokens=False), infill.suffix_ids)
    if not ids:  # text the tokenizer drops whole: the engine would fail the request ("Prompt length cannot be 0")
        violations.append(FieldViolation(field, "the text tokenizes to no tokens: the model has nothing to continue"))
        return None
    return ids


def _prompt(model: ServedModel, ids: list[int], text: str, field: str) -> tuple[Prompt, str]:
    """One prompt for the engine, and its text (echoed)."""
    # A vision model's pipeline takes prompts as text, never token ids (see engine/core.py).
    images = PromptImages(text, ()) if model.vision is not None else None
    return Prompt(ids, field, images), text


def _prompts(model: ServedModel, request: Request, violations: list[FieldViolation]) -> list[tuple[Prompt, str]]:
    """Every prompt, with its text; appends what is wrong to ``violations``."""
    if request.prompt and len(request.prompts):
        violations.append(FieldViolation("prompts", "set either prompt or prompts, not both"))
        return []
    infill = _infill(model, request, violations)
    if request.prompt:
        ids = _encode(model, request.prompt, COMPLETIONS.prompt_field, violations, infill)
        return [] if ids is None else [_prompt(model, ids, request.prompt, COMPLETIONS.prompt_field)]
    if not len(request.prompts):
        violations.append(FieldViolation("prompt", "required: a non-empty prompt"))
        return []
    if len(request.prompts) > MAX_PROMPTS:
        violations.append(FieldViolation("prompts", f"at most {MAX_PROMPTS} prompts; got {len(request.prompts)}"))
        return []
    prompts = []
    for position, prompt in enumerate(request.prompts):
        kind = prompt.WhichOneof("prompt")
        if kind == "text" and prompt.text:
            ids = _encode(model, prompt.text, f"prompts[{position}]", violations, infill)
            if ids is not None:
                prompts.append(_prompt(model, ids, prompt.text, f"prompts[{position}]"))
        elif kind == "token_ids" and len(prompt.token_ids.ids) and infill is not None:
            message = "with a suffix the prompt is text: the middle is filled in between texts"
            violations.append(FieldViolation(f"prompts[{position}].token_ids", message))
        elif kind == "token_ids" and len(prompt.token_ids.ids) and model.vision is not None:
            message = f"model {model.name!r} takes prompts as text: a vision model's pipeline tokenizes them itself"
            violations.append(FieldViolation(f"prompts[{position}].token_ids", message))
        elif kind == "token_ids" and len(prompt.token_ids.ids):
            ids = list(prompt.token_ids.ids)
            bad = next((i for i, token in enumerate(ids) if not 0 <= token < model.vocab_size), None)
            if bad is not None:
                violations.append(
                    FieldViolation(
                        f"prompts[{position}].token_ids.ids[{bad}]",
                        f"token id {ids[bad]} is outside the vocabulary (0-{model.vocab_size - 1})",
                    )
                )
                continue
            text = model.engine.decode(ids, skip_special_tokens=False)
            prompts.append(_prompt(model, ids, text, f"prompts[{position}]"))
        else:
            violations.append(FieldViolation(f"prompts[{position}]", "must be a non-empty text or token id list"))
    return prompts


async def create_completion(
    models: ModelRegistry, request: completion_pb2.CreateCompletionRequest
) -> completion_pb2.CreateCompletionResponse:
    """CompletionService.CreateCompletion: generate every choice to the end."""
    prep = await prepare(models, request, streaming=False)
    prompts: dict[int, TokenScores] = {}
    choices = await collect_choices(
        prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens, prompts=prompts
    )
    return await logprobs.built(prep.ask, lambda: _response(prep, choices, prompts))


def _response(
    prep: PreparedCompletion, choices: list[SequenceDelta], prompts: dict[int, TokenScores]
) -> completion_pb2.CreateCompletionResponse:
    """The answer to a completions request whose ``choices`` (and scored ``prompts``) are in."""
    response = completion_pb2.CreateCompletionResponse(
        id=new_id("cmpl-"), object="text_completion", created=now(), model=prep.model.name
    )
    for choice in choices:
        echo = prep.echoes[choice.index // prep.n]
        out = response.choices.add(
            index=choice.index, text=echo + choice.text, finish_reason=FINISH_REASONS[choice.finish_reason]
        )
        if prep.logprobs:
            out.logprobs.CopyFrom(prep.choice_logprobs(choice.index, choice, prompts, echoed=bool(echo)))
        out.prompt_logprobs.extend(prep.prompt_logprobs(choice.index, prompts))
    response.usage.CopyFrom(usage(prep.prompt_tokens, sum(len(c.token_ids) for c in choices)))
    return response


async def stream_completion(
    models: ModelRegistry, request: completion_pb2.StreamCompletionRequest
) -> AsyncIterator[completion_pb2.StreamCompletionResponse]:
    """CompletionService.StreamCompletion: a chunk per hand-over of output with every choice's new text.

    With echo the prompt opens each choice: in a chunk of its own before the engine's first output, or, when
    its tokens carry logprobs, in the choice's first chunk, once the prompt is scored."""
    prep = await prepare(models, request, streaming=True)
    completion_id, created = new_id("cmpl-"), now()

    def chunk() -> completion_pb2.StreamCompletionResponse:
        return completion_pb2.StreamCompletionResponse(
            id=completion_id, object="text_completion", created=created, model=prep.model.name
        )

    # choice index -> the text offset of its next output character (logprobs.text_offset): from the prompt's end
    offsets = {index: prep.prompt_chars[index // prep.n] for index in range(len(prep.prompt_chars) * prep.n)}
    started: set[int] = set()  # choices whose prompt went out (echo, prompt_logprobs)

    def fill(ready: list[tuple[int, SequenceDelta]]) -> completion_pb2.StreamCompletionResponse:
        """The chunk of one hand-over of deltas; a choice's first one opens with its echo and prompt's scores."""
        out = chunk()
        for index, delta in ready:
            echo = "" if index in started else prep.echoes[index // prep.n]
            choice = out.choices.add(index=index, text=echo + delta.text)
            if delta.finish_reason is not None:
                choice.finish_reason = FINISH_REASONS[delta.finish_reason]
            if index not in started:
                choice.prompt_logprobs.extend(prep.prompt_logprobs(index, deltas.prompts))
                started.add(index)
            offset = offsets[index]
            if prep.logprobs:
                choice.logprobs.CopyFrom(
                    prep.choice_logprobs(index, delta, deltas.prompts, echoed=bool(echo), offset=offset)
                )
            offsets[index] = offset + len(delta.text)
        return out

    # Submitted here, so the engine starts while an echo chunk goes out.
    deltas = DeltaStream(prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens, logprobs=prep.logprobs)
    try:
        if any(prep.echoes) and not prep.logprobs and prep.prompt_logprobs_asked is None:
            first = chunk()
            for index in range(len(prep.echoes) * prep.n):
                first.choices.add(index=index, text=prep.echoes[index // prep.n])
                started.add(index)
            yield first
        async for ready in deltas:
            # A choice's first chunk carries its prompt's scores (up to MAX_REQUEST_SCORES): built off the loop
            opening = prep.ask.per_prompt_token and any(index not in started for index, _ in ready)
            yield await asyncio.to_thread(fill, ready) if opening else fill(ready)
    finally:
        deltas.close()
    if prep.include_usage:
        last = chunk()
        last.usage.CopyFrom(usage(prep.prompt_tokens, deltas.completion_tokens))
        yield last
