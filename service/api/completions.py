"""CompletionService semantics: prompts in, text completions out (OpenAI's legacy completions API)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

from clients.v1 import completion_pb2
from service.api.common import FINISH_REASONS, token_texts, usage
from service.api.prepare import (
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
from service.api.prompting import INLINE_PROMPT_CHARS, check_length
from service.api.runs import DeltaStream, collect_choices
from service.engine import PromptImages
from service.errors import FieldViolation, InvalidArgument
from service.ids import new_id, now
from service.models import ModelRegistry, ServedModel
from service.structured.output import output_constraint

MAX_PROMPTS = 64
MAX_LOGPROBS = 1  # the engine scores the chosen token only

Request = completion_pb2.CreateCompletionRequest | completion_pb2.StreamCompletionRequest


@dataclass(frozen=True)
class PreparedCompletion(PreparedRuns):
    """A validated completions request, split into engine runs."""

    echoes: list[str]  # per prompt: the text that opens each of its choices (echo), or ""
    top_logprobs: int  # alternatives asked for per position (0 or 1: the chosen token itself)


async def prepare(models: ModelRegistry, request: Request, *, streaming: bool) -> PreparedCompletion:
    """Validate ``request`` (INVALID_ARGUMENT / NOT_FOUND naming the field) and build its runs."""
    model, violations = begin(models, request, COMPLETIONS, streaming=streaming)
    characters = len(request.prompt) + sum(len(prompt.text) for prompt in request.prompts)
    if characters <= INLINE_PROMPT_CHARS:
        prompts = _prompts(model, request, violations)
    else:  # tokenising a large text takes milliseconds: not on the event loop
        prompts = await asyncio.to_thread(_prompts, model, request, violations)
    plan = await output_constraint(request, violations)  # a completion's prompt is the client's own text
    if request.HasField("suffix") and request.suffix:
        violations.append(FieldViolation("suffix", "not supported: the engine does not fill in the middle"))
    # Any logprobs, 0 included, returns the chosen tokens' logprobs: OpenAI's API always returns those.
    wanted = request.HasField("logprobs")
    logprobs = request.logprobs if wanted else 0
    if not 0 <= logprobs <= MAX_LOGPROBS:
        violations.append(
            FieldViolation("logprobs", f"must be 0 or 1 (the chosen token's log probability); got {logprobs}")
        )
    echo = request.HasField("echo") and request.echo
    if echo and wanted:
        violations.append(FieldViolation("echo", "echo with logprobs is not supported: prompt tokens are not scored"))
    refuse_invalid(request, model, violations, streaming=streaming)

    n = choice_count(request)
    engine_prompts = [prompt for prompt, _ in prompts]
    runs = await build_runs(
        model, request, engine_prompts, plan, COMPLETIONS, streaming=streaming, logprobs=wanted, n=n
    )
    return PreparedCompletion(
        model,
        runs,
        n,
        prompt_tokens=sum(len(prompt.ids) for prompt in engine_prompts),
        logprobs=wanted,
        skip_special_tokens=skips_special_tokens(request),
        include_usage=includes_usage(request, streaming=streaming),
        echoes=[text if echo else "" for _, text in prompts],
        top_logprobs=logprobs,
    )


def _encode(model: ServedModel, text: str, field: str, violations: list[FieldViolation]) -> list[int] | None:
    """The token ids of one prompt text, or None (and a violation) if it is surely too long to encode."""
    try:
        check_length(model, len(text), field)
    except InvalidArgument as error:
        violations += error.violations
        return None
    return model.engine.encode(text, add_special_tokens=True)


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
    if request.prompt:
        ids = _encode(model, request.prompt, COMPLETIONS.prompt_field, violations)
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
            ids = _encode(model, prompt.text, f"prompts[{position}]", violations)
            if ids is not None:
                prompts.append(_prompt(model, ids, prompt.text, f"prompts[{position}]"))
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


def _logprobs(
    model: ServedModel, token_ids: list[int], logprobs: list[float], offset: int, top: int
) -> completion_pb2.CompletionLogprobs:
    tokens = token_texts(model, token_ids)
    result = completion_pb2.CompletionLogprobs(tokens=tokens, token_logprobs=logprobs)
    for token, logprob in zip(tokens, logprobs, strict=True):
        alternatives = result.top_logprobs.add()
        if top:  # the one alternative the engine computes: the chosen token
            alternatives.logprobs[token] = logprob
        result.text_offset.append(offset)
        offset += len(token)
    return result


async def create_completion(
    models: ModelRegistry, request: completion_pb2.CreateCompletionRequest
) -> completion_pb2.CreateCompletionResponse:
    """CompletionService.CreateCompletion: generate every choice to the end."""
    prep = await prepare(models, request, streaming=False)
    choices = await collect_choices(prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens)
    response = completion_pb2.CreateCompletionResponse(
        id=new_id("cmpl-"), object="text_completion", created=now(), model=prep.model.name
    )
    for choice in choices:
        echo = prep.echoes[choice.index // prep.n]
        out = response.choices.add(
            index=choice.index, text=echo + choice.text, finish_reason=FINISH_REASONS[choice.finish_reason]
        )
        if prep.logprobs:
            out.logprobs.CopyFrom(
                _logprobs(prep.model, choice.token_ids, choice.logprobs, len(echo), prep.top_logprobs)
            )
    response.usage.CopyFrom(usage(prep.prompt_tokens, sum(len(c.token_ids) for c in choices)))
    return response


async def stream_completion(
    models: ModelRegistry, request: completion_pb2.StreamCompletionRequest
) -> AsyncIterator[completion_pb2.StreamCompletionResponse]:
    """CompletionService.StreamCompletion: a chunk per hand-over of output with every choice's new text."""
    prep = await prepare(models, request, streaming=True)
    completion_id, created = new_id("cmpl-"), now()

    def chunk() -> completion_pb2.StreamCompletionResponse:
        return completion_pb2.StreamCompletionResponse(
            id=completion_id, object="text_completion", created=created, model=prep.model.name
        )

    offsets: dict[int, int] = {}  # choice index -> characters sent, for logprobs.text_offset
    # Submitted here, so the engine starts while an echo chunk goes out.
    deltas = DeltaStream(prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens, logprobs=prep.logprobs)
    try:
        if any(prep.echoes):  # echo: the prompt opens each choice
            first = chunk()
            for position, echo in enumerate(prep.echoes):
                for index in range(position * prep.n, (position + 1) * prep.n):
                    first.choices.add(index=index, text=echo)
                    offsets[index] = len(echo)
            yield first
        async for ready in deltas:
            out = chunk()
            for index, delta in ready:
                choice = out.choices.add(index=index, text=delta.text)
                if delta.finish_reason is not None:
                    choice.finish_reason = FINISH_REASONS[delta.finish_reason]
                if prep.logprobs:
                    logprobs = _logprobs(
                        prep.model, delta.token_ids, delta.logprobs, offsets.get(index, 0), prep.top_logprobs
                    )
                    choice.logprobs.CopyFrom(logprobs)
                offsets[index] = offsets.get(index, 0) + len(delta.text)
            yield out
    finally:
        deltas.close()
    if prep.include_usage:
        last = chunk()
        last.usage.CopyFrom(usage(prep.prompt_tokens, deltas.completion_tokens))
        yield last
