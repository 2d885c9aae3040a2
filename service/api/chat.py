"""ChatService semantics: a conversation in, the assistant's next message out."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.service.api import logprobs
from ovserve.service.api.chat_output import (
    fill_message,
    finish_reason,
    output_parser,
    reasoning_tokens,
    stream_deltas,
)
from ovserve.service.api.common import FINISH_REASONS, usage
from ovserve.service.api.custom_tools import custom_names, custom_tool, history_call, template_form
from ovserve.service.api.logprobs import LogprobAsk
from ovserve.service.api.media_parts import MediaParts
from ovserve.service.api.prefill import FIELD as PREFILL_FIELD
from ovserve.service.api.prefill import Prefill, prefill_of
from ovserve.service.api.prepare import (
    CHAT,
    PreparedRuns,
    begin,
    build_runs,
    choice_count,
    includes_usage,
    refuse_invalid,
    render,
    skips_special_tokens,
    templated_constraint,
    templated_prompt,
)
from ovserve.service.api.prompting import (
    REASONING_EFFORTS,
    TOOL_CHOICES,
    json_object,
    read_off_the_loop_if_large,
    template_context,
    template_tool,
    unsupported,
)
from ovserve.service.api.runs import DeltaStream, collect_choices
from ovserve.service.engine import SequenceDelta, TokenScores
from ovserve.service.errors import FieldViolation, quote
from ovserve.service.ids import new_id, now
from ovserve.service.models import ModelRegistry, ServedModel
from ovserve.service.parsing import TurnParser
from ovserve.service.structured.output import Guide

# Request role -> the role the chat template sees. Templates written for
# OpenAI's older roles know no "developer": it is a system message to them.
# OpenAI's deprecated "function" role is the result of the last call of its name: a tool message to them.
TEMPLATE_ROLES = {
    "system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool",
    "function": "tool",
}  # fmt: skip
MAX_TOOLS = 128

Request = chat_pb2.CreateChatCompletionRequest | chat_pb2.StreamChatCompletionRequest


@dataclass(frozen=True)
class PreparedChat(PreparedRuns):
    """A validated chat request, split into engine runs."""

    prefill: str = ""  # the final assistant message's text the answer begins with (continue_final_message)


async def prepare(models: ModelRegistry, request: Request, *, streaming: bool) -> PreparedChat:
    """Validate ``request``, render its conversation with the chat template, build its engine run."""
    model, violations = begin(models, request, CHAT, streaming=streaming)
    media = MediaParts(model)
    history, tools, context = await read_off_the_loop_if_large(
        request,
        len(request.messages),
        lambda: (_history(model, request, media, violations), _tools(request, violations),
                 _template_context(request, violations)),
    )  # fmt: skip
    prefill = prefill_of(request, history, violations)
    plan = await templated_constraint(model, request, violations, tools, context)  # custom tools' formats guide
    plan = _prefilled_plan(plan, prefill, violations)
    tools = [template_form(tool) for tool in tools]
    top = logprobs.top_logprobs(request, violations, needs_logprobs=True)
    scored = logprobs.prompt_logprobs(request, violations)  # once, on the answer's top level
    ask = LogprobAsk(chosen=request.logprobs, top=top, prompt=scored, prompt_logprobs=scored)
    violations += logprobs.vision_violations(model, ask)
    refuse_invalid(request, model, violations, streaming=streaming)

    history = await media.with_files(history, models.media, models.files)
    rendered = await render(model, history, tools, context, CHAT.prompt_field, prefill)
    prompt = await templated_prompt(model, rendered, media, models.media, CHAT.prompt_field)
    n = choice_count(request)
    runs = await build_runs(model, request, [prompt], plan, CHAT, streaming=streaming, ask=ask, n=n)
    return PreparedChat(
        model,
        runs,
        n=n,
        prompt_tokens=len(prompt.ids),
        ask=ask,
        skip_special_tokens=skips_special_tokens(request),
        include_usage=includes_usage(request, streaming=streaming),
        prefill=prefill.text,
    )


def _prefilled_plan(plan: Guide | None, prefill: Prefill, violations: list[FieldViolation]) -> Guide | None:
    """An output constraint beside a prefill: a grammar applies from the answer's start, which the prefill already
    began, so the default tool guidance is left off and any other constraint is refused."""
    if plan is None or not prefill.continues:
        return plan
    if not plan.optional:
        violations.append(
            FieldViolation(
                PREFILL_FIELD,
                "cannot be combined with an output constraint (response_format, guided_*, tool_choice required or "
                "a named tool): the constraint would apply from the start of the answer, which the prefill began",
            )
        )
    return None


def _history(
    model: ServedModel, request: Request, media: MediaParts, violations: list[FieldViolation]
) -> list[dict[str, Any]]:
    """The conversation as the chat template wants it; appends what is wrong to ``violations``."""
    if not len(request.messages):
        violations.append(FieldViolation("messages", "at least one message is required"))
    history = []
    last_calls: dict[str, str] = {}  # function name -> the id of its last call so far (the function role's answer)
    for position, message in enumerate(request.messages):
        where = f"messages[{position}]"
        role = TEMPLATE_ROLES.get(message.role)
        if role is None:
            expected = ", ".join(TEMPLATE_ROLES)
            violations.append(
                FieldViolation(f"{where}.role", f"unknown role {quote(message.role)}; expected {expected}")
            )
            continue
        entry: dict[str, Any] = {"role": role, "content": _content(message, where, media, violations)}
        if message.HasField("name"):
            entry["name"] = message.name
        if message.role == "tool":
            if not message.tool_call_id:
                violations.append(FieldViolation(f"{where}.tool_call_id", "required on tool messages"))
            entry["tool_call_id"] = message.tool_call_id
        if message.role == "function":
            entry["tool_call_id"] = _function_result(message, where, last_calls, violations)
        if len(message.tool_calls):
            if message.role != "assistant":
                violations.append(FieldViolation(f"{where}.tool_calls", "only assistant messages carry tool calls"))
            entry["tool_calls"] = [
                _tool_call(call, f"{where}.tool_calls[{i}]", violations) for i, call in enumerate(message.tool_calls)
            ]
            last_calls.update((call["function"]["name"], call["id"]) for call in entry["tool_calls"])
        if message.HasField("reasoning_content"):
            entry["reasoning_content"] = message.reasoning_content
        if entry["content"] is None and not (message.role == "assistant" and len(message.tool_calls)):
            violations.append(FieldViolation(f"{where}.content", f"required on {message.role} messages"))
        history.append(entry)
    return history


def _function_result(
    message: chat_pb2.ChatMessage, where: str, last_calls: dict[str, str], violations: list[FieldViolation]
) -> str:
    """The call a ``function`` role message answers: the last earlier call of its ``name`` (OpenAI's deprecated
    form has no call ids)."""
    if not message.name:
        violations.append(FieldViolation(f"{where}.name", "required on function messages: the function it answers"))
        return ""
    if message.name not in last_calls:
        violations.append(
            FieldViolation(
                f"{where}.name", f"no earlier assistant message calls a function named {quote(message.name)}"
            )
        )
        return ""
    return last_calls[message.name]


def _content(
    message: chat_pb2.ChatMessage, where: str, media: MediaParts, violations: list[FieldViolation]
) -> str | None:
    if not len(message.content_parts):
        return message.content if message.HasField("content") else None
    if message.HasField("content"):
        violations.append(FieldViolation(f"{where}.content_parts", "set either content or content_parts, not both"))
    texts = []
    for i, part in enumerate(message.content_parts):
        if part.type == "text":
            texts.append(part.text)
        elif part.type == "image_url":
            # (an image in a message other than a user's reaches the template too; the model decides)
            field = f"{where}.content_parts[{i}].image_url"
            texts.append(media.add(field, part.image_url.url, part.image_url.data, violations))
        elif part.type == "file":
            file = part.file
            field = f"{where}.content_parts[{i}].file"
            texts.append(media.add_file(field, file.file_data, file.file_url, file.file_id, file.filename, violations))
        else:
            violations.append(
                FieldViolation(
                    f"{where}.content_parts[{i}].type",
                    f"unknown part type {quote(part.type)}; expected text, image_url or file",
                )
            )
    return "\n".join(texts)


def _tool_call(call: common_pb2.ToolCall, where: str, violations: list[FieldViolation]) -> dict[str, Any]:
    if call.type == "custom":
        if not call.custom.name:
            violations.append(FieldViolation(f"{where}.custom.name", "required"))
        return history_call(call)
    if call.type not in ("", "function"):
        violations.append(
            FieldViolation(f"{where}.type", f"unknown tool call type {quote(call.type)}; expected function or custom")
        )
    if not call.function.name:
        violations.append(FieldViolation(f"{where}.function.name", "required"))
    try:
        # Templates render arguments as a JSON object (Qwen's `tojson`), not a string.
        arguments: Any = json.loads(call.function.arguments or "{}")
    except json.JSONDecodeError as error:
        violations.append(FieldViolation(f"{where}.function.arguments", f"not valid JSON: {error}"))
        arguments = {}
    return {"id": call.id, "type": "function", "function": {"name": call.function.name, "arguments": arguments}}


def _tools(request: Request, violations: list[FieldViolation]) -> list[dict[str, Any]]:
    if request.HasField("tool_choice") and request.tool_choice not in TOOL_CHOICES:
        violations.append(unsupported("tool_choice", request.tool_choice, TOOL_CHOICES))
    elif request.HasField("tool_choice") and request.tool_choice != "required" and not request.tools:
        # ("required" without tools is refused where calls are forced: structured.forced_calls)
        violations.append(FieldViolation("tool_choice", "only allowed when tools are given (as OpenAI answers)"))
    if len(request.tools) > MAX_TOOLS:
        violations.append(FieldViolation("tools", f"at most {MAX_TOOLS} tools; got {len(request.tools)}"))
    tools = []
    for i, tool in enumerate(request.tools):
        if tool.type == "custom":
            tools.append(custom_tool(tool.custom, f"tools[{i}].custom", violations))
            continue
        if tool.type != "function":
            violations.append(
                FieldViolation(f"tools[{i}].type", f"unknown tool type {quote(tool.type)}; expected function or custom")
            )
        if not tool.function.name:
            violations.append(FieldViolation(f"tools[{i}].function.name", "required"))
        tools.append(template_tool(json_object(tool, f"tools[{i}]", violations)))
    names = [tool["function"].get("name") for tool in tools]
    for i, tool in enumerate(request.tools):
        if tool.type == "custom" and names.count(tool.custom.name) > 1:
            violations.append(FieldViolation(f"tools[{i}].custom.name", "another tool has this name"))
    if request.HasField("tool_choice") and request.tool_choice == "none":
        return []  # the model is not told about tools it may not call
    return tools


def _template_context(request: Request, violations: list[FieldViolation]) -> dict[str, Any]:
    effort = request.reasoning_effort if request.HasField("reasoning_effort") else None
    if effort is not None and effort not in REASONING_EFFORTS:
        violations.append(unsupported("reasoning_effort", effort, REASONING_EFFORTS))
    return template_context(request, violations, effort=effort)


def _logprobs(prep: PreparedRuns, delta: SequenceDelta) -> chat_pb2.ChatLogprobs:
    entries = logprobs.token_logprobs(prep.model, delta.token_ids, delta.logprobs, delta.top_logprobs, prep.ask.top)
    return chat_pb2.ChatLogprobs(content=entries)


def _prompt_logprobs(prep: PreparedRuns, prompts: dict[int, TokenScores]) -> list[common_pb2.PromptLogprobs]:
    """The scored prompt (vLLM's prompt_logprobs), when asked and scored: every run's prompt is the same one."""
    if prep.ask.prompt is None or not prompts:
        return []
    return logprobs.prompt_entries(prep.model, prep.runs[0].prompt_ids, next(iter(prompts.values())), prep.ask.prompt)


async def _streamed_prompt_logprobs(
    prep: PreparedRuns, prompts: dict[int, TokenScores]
) -> list[common_pb2.PromptLogprobs]:
    """``_prompt_logprobs``, built off the event loop when there are any (up to MAX_REQUEST_SCORES entries)."""
    if prep.ask.prompt is None or not prompts:
        return []
    return await asyncio.to_thread(_prompt_logprobs, prep, prompts)


async def create_chat_completion(
    models: ModelRegistry, request: chat_pb2.CreateChatCompletionRequest
) -> chat_pb2.CreateChatCompletionResponse:
    """ChatService.CreateChatCompletion: generate every choice to the end."""
    prep = await prepare(models, request, streaming=False)
    prompts: dict[int, TokenScores] = {}
    choices = await collect_choices(
        prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens, prompts=prompts
    )
    response = chat_pb2.CreateChatCompletionResponse(
        id=new_id("chatcmpl-"), object="chat.completion", created=now(), model=prep.model.name
    )
    # The scores (up to MAX_REQUEST_SCORES entries) built off the event loop
    response.prompt_logprobs.extend(await logprobs.built(prep.ask, lambda: _prompt_logprobs(prep, prompts)))
    scored = await logprobs.built(prep.ask, lambda: {c.index: _logprobs(prep, c) for c in choices if prep.logprobs})
    parsers = []
    for choice in choices:
        out = response.choices.add(index=choice.index, finish_reason=FINISH_REASONS[choice.finish_reason])
        out.message.role = common_pb2.ROLE_ASSISTANT
        parser = output_parser(
            prep.model, prep.runs[0].prompt_ids, request, raw=not prep.skip_special_tokens, prefill=prep.prefill
        )
        parsers.append(parser)
        if parser is None:
            out.message.content = prep.prefill + choice.text
        else:  # reasoning and tool calls split out of the text (a prefill's too: the answer begins with it)
            parser.feed(prep.prefill + choice.text)
            parser.finish()
            fill_message(out.message, parser.result, custom_names(request.tools))
            out.finish_reason = finish_reason(out.finish_reason, parser.result)
        if prep.logprobs:
            out.logprobs.CopyFrom(scored[choice.index])
    response.usage.CopyFrom(usage(prep.prompt_tokens, sum(len(c.token_ids) for c in choices)))
    if reasoning := reasoning_tokens(prep.model, parsers):  # the details appear only when there is reasoning
        response.usage.completion_tokens_details.reasoning_tokens = reasoning
    return response


async def stream_chat_completion(
    models: ModelRegistry, request: chat_pb2.StreamChatCompletionRequest
) -> AsyncIterator[chat_pb2.StreamChatCompletionResponse]:
    """ChatService.StreamChatCompletion: a role chunk, then a chunk per hand-over of output, then usage."""
    prep = await prepare(models, request, streaming=True)
    completion_id, created = new_id("chatcmpl-"), now()

    def chunk() -> chat_pb2.StreamChatCompletionResponse:
        return chat_pb2.StreamChatCompletionResponse(
            id=completion_id, object="chat.completion.chunk", created=created, model=prep.model.name
        )

    first = chunk()
    for index in range(prep.n):
        first.choices.add(index=index, delta=chat_pb2.ChatCompletionDelta(role=common_pb2.ROLE_ASSISTANT, content=""))
    raw, custom = not prep.skip_special_tokens, custom_names(request.tools)
    parsers = {
        index: output_parser(prep.model, prep.runs[0].prompt_ids, request, raw=raw, prefill=prep.prefill)
        for index in range(prep.n)
    }
    # Submitted here, so the engine starts while the role chunk goes out.
    deltas = DeltaStream(prep.model, prep.runs, skip_special_tokens=prep.skip_special_tokens, logprobs=prep.logprobs)
    try:
        yield first
        if prep.prefill:  # the answer begins with the prefilled text, parsed as the model's own
            prefilled = [(index, SequenceDelta(index, text=prep.prefill)) for index in range(prep.n)]
            for out in _delta_chunks(prep, parsers, prefilled, chunk, custom):
                yield out
        prompt_sent = False
        async for ready in deltas:
            chunks = _delta_chunks(prep, parsers, ready, chunk, custom)
            if chunks and not prompt_sent and (scored := await _streamed_prompt_logprobs(prep, deltas.prompts)):
                chunks[0].prompt_logprobs.extend(scored)
                prompt_sent = True
            for out in chunks:
                yield out
    finally:
        deltas.close()
    if prep.include_usage:
        last = chunk()
        last.usage.CopyFrom(usage(prep.prompt_tokens, deltas.completion_tokens))
        if reasoning := reasoning_tokens(prep.model, parsers.values()):
            last.usage.completion_tokens_details.reasoning_tokens = reasoning
        yield last


def _delta_chunks(
    prep: PreparedRuns,
    parsers: dict[int, TurnParser | None],
    ready: list[tuple[int, SequenceDelta]],
    chunk: Callable[[], chat_pb2.StreamChatCompletionResponse],
    custom: frozenset[str],
) -> list[chat_pb2.StreamChatCompletionResponse]:
    """The chunks for one hand-over of deltas: usually one; a tool call's name and arguments need two (name first).
    ``custom``: the request's custom tools, whose calls come whole (stream_deltas)."""
    chunks: list[chat_pb2.StreamChatCompletionResponse] = []
    for index, delta in ready:
        parser, ends = parsers[index], delta.finish_reason is not None
        if parser is None:
            parts = [chat_pb2.ChatCompletionDelta(content=delta.text)] if delta.text else []
        else:
            pieces = parser.feed(delta.text) + (parser.finish() if ends else [])
            parts = stream_deltas(pieces, custom, parser.result)
        if not (parts or ends or (prep.logprobs and delta.token_ids)):
            continue  # the parser holds this text back (a tag may be starting)
        for position, part in enumerate(parts or [chat_pb2.ChatCompletionDelta()]):
            if position == len(chunks):
                chunks.append(chunk())
            choice = chunks[position].choices.add(index=index, delta=part)
        if ends:
            reason = FINISH_REASONS[delta.finish_reason]
            choice.finish_reason = finish_reason(reason, parser.result if parser else None)
        if prep.logprobs:
            choice.logprobs.CopyFrom(_logprobs(prep, delta))
    return chunks
