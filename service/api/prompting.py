"""What chat completions and the Responses API share on the way to the engine: the chat template's prompt.

Both end in the model's chat template: tools in the template's form, a template
context (``chat_template_kwargs``, with the reasoning effort as ``enable_thinking``),
the conversation rendered and tokenised. They also share the option sets both
accept and the logprobs rules. Each API keeps only how its request names things.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from google.protobuf import json_format

from ovserve.service.api.generic_tools import generic_conversation
from ovserve.service.api.prefill import NO_PREFILL, Prefill, cut_after_final_message
from ovserve.service.engine import TemplateError
from ovserve.service.errors import FieldViolation, InvalidArgument, quote
from ovserve.service.models import ServedModel
from ovserve.service.parsing.detection import REASONING
from ovserve.service.parsing.markup import ThinkMarkup
from ovserve.service.structured.canonical import canonical

T = TypeVar("T")

REASONING_EFFORTS = {"none", "minimal", "low", "medium", "high"}
TOOL_CHOICES = {"none", "auto", "required"}  # "required" and a named tool: constrained decoding (structured.py)
FUNCTION_KEYS = ("name", "description", "parameters")  # a flat (Responses) function tool's own keys
# Prompts up to this many characters are rendered and tokenised on the event loop (well under a
# millisecond); larger ones in a worker thread, so other streams keep their pace.
INLINE_PROMPT_CHARS = 16_384
INLINE_MESSAGES = 64  # minja takes ~50 us a message
# A request with more messages (or input items) than INLINE_MESSAGES, or larger than this, is read into the
# form templates take in a worker thread: 100,000 Responses input items held the event loop 1.9 s.
INLINE_REQUEST_BYTES = 64 * 1024
CUSTOM_TOOLS = "custom_tools"  # Meta's Llama templates' name for the user's tools (see render_for_model)
SYSTEM_ROLES = ("system", "developer")


def unsupported(field: str, value: str, allowed: Iterable[str]) -> FieldViolation:
    """The violation for a value outside an option's set, listing the set."""
    return FieldViolation(field, f"{quote(value)} is not supported; use one of {sorted(allowed)}")


def template_tool(definition: dict[str, Any]) -> dict[str, Any]:
    """A function tool as the chat template wants it: ``{"type": "function", "function": {...}}``.

    ``definition`` is chat's nested form (``function`` holds the definition) or
    the Responses API's flat one (name, description and parameters beside ``type``).
    """
    function = definition.get("function") or {key: definition[key] for key in FUNCTION_KEYS if key in definition}
    return {"type": "function", "function": function}


def template_context(request: Any, violations: list[FieldViolation], *, effort: str | None) -> dict[str, Any]:
    """``chat_template_kwargs``, with the thinking switches set from the reasoning ``effort`` (None: not asked).

    An explicit ``chat_template_kwargs`` value wins over the effort.
    """
    context = (
        json_object(request.chat_template_kwargs, "chat_template_kwargs", violations)
        if request.HasField("chat_template_kwargs")
        else {}
    )
    if effort is not None:
        # The switch under the names the published templates read it by: Qwen3, QwQ, GLM and Gemma 4
        # (enable_thinking), DeepSeek V3.1 and Granite 3.x (thinking), gpt-oss (reasoning_effort).
        for name, value in (("enable_thinking", effort != "none"), ("thinking", effort != "none")):
            context.setdefault(name, value)
        if effort != "none":
            context.setdefault("reasoning_effort", "low" if effort == "minimal" else effort)
    return context


async def render_prompt(
    model: ServedModel,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    *,
    field: str,
    prefill: Prefill = NO_PREFILL,
) -> list[int]:
    """Token ids of the conversation rendered by the model's chat template, ready for the assistant's turn
    (or, with a ``prefill``, inside its final message).

    A conversation surely longer than the model allows is refused before any work (``check_length``);
    a large one is rendered and tokenised in a worker thread, off the event loop.
    """
    return await _sized(
        model, history, tools, context, field,
        lambda: _encode(model, render_for_model(model, history, tools, context, field=field, prefill=prefill)),
    )  # fmt: skip


async def render_text(
    model: ServedModel,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    *,
    field: str,
    prefill: Prefill = NO_PREFILL,
) -> str:
    """The conversation rendered by the model's chat template as text (a vision model's pipeline takes text),
    checked and rendered as ``render_prompt`` does."""
    return await _sized(
        model, history, tools, context, field,
        lambda: render_for_model(model, history, tools, context, field=field, prefill=prefill),
    )  # fmt: skip


async def _sized(
    model: ServedModel,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    context: dict[str, Any],
    field: str,
    work: Callable[[], T],
) -> T:
    """``work`` after the length check: on the event loop for a small conversation (``renders_inline``), else
    in a thread (tool definitions are rendered as JSON by the template: a megabyte of schema held the loop 2 s)."""
    text = sum(len(message["content"]) for message in history if isinstance(message.get("content"), str))
    check_length(model, text, field)
    return work() if renders_inline(history, tools, context) else await asyncio.to_thread(work)


async def read_off_the_loop_if_large(request: Any, items: int, work: Callable[[], T]) -> T:
    """``work()`` (reading ``request``'s ``items`` messages or input items): on the event loop when the request
    is small, else in a worker thread, so that other streams keep their pace."""
    if items <= INLINE_MESSAGES and request.ByteSize() <= INLINE_REQUEST_BYTES:
        return work()
    return await asyncio.to_thread(work)


def renders_inline(history: list[dict[str, Any]], tools: list[dict[str, Any]] | None, context: dict[str, Any]) -> bool:
    """Whether a conversation is small enough to render on the event loop: no tools, at most INLINE_MESSAGES
    messages and INLINE_PROMPT_CHARS characters in all (its strings, keys and containers counted, the count
    stopped once past). Anything larger is rendered in a thread (and the largest in the template's helper
    process), which the event loop must not wait on."""
    if tools or len(history) > INLINE_MESSAGES:
        return False
    budget, stack = INLINE_PROMPT_CHARS, [history, context]
    while stack:
        value = stack.pop()
        budget -= len(value) if isinstance(value, (str, list, dict)) else 1
        if budget < 0:
            return False
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return True


def render_for_model(
    model: ServedModel,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    context: dict[str, Any],
    *,
    field: str,
    prefill: Prefill = NO_PREFILL,
) -> str:
    """The conversation as the model's template writes it, its messages first put in the form templates
    expect (``template_messages``); a template's refusal, or a prompt it leaves empty (vLLM's Kimi-Audio
    template reads ``conversations``, not ``messages``: the engine would refuse it), is INVALID_ARGUMENT naming
    ``field``. ``prefill``: whether it ends with the assistant turn's opening, or inside the final assistant
    message (``prefill.py``)."""
    if prefill.drop_final:
        history = history[:-1]
    try:
        history, tools = generic_conversation(model, history, tools)  # a template that shows no tool format
        if tools:
            # The tools under Meta's other name too: Llama templates read the user's tools as custom_tools
            # (``set tools = custom_tools``), and some (vLLM's Llama 4 pythonic) list them only from there.
            context = {CUSTOM_TOOLS: tools, **context}
            if model.engine.message_form.system_for_tools and not any(
                message.get("role") in SYSTEM_ROLES for message in history
            ):
                history = [{"role": "system", "content": ""}, *history]  # where the template describes the tools
        prompt = model.engine.render_chat(
            template_messages(model, history), tools, context, add_generation_prompt=prefill.generation_prompt
        )
    except TemplateError as error:
        raise InvalidArgument.of(field, f"the chat template could not render the conversation: {error}") from error
    if not prompt:
        raise InvalidArgument.of(field, "the chat template rendered an empty prompt from the conversation")
    return cut_after_final_message(prompt, prefill, field) if prefill.continues else prompt


def template_messages(model: ServedModel, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the model's chat template expects them.

    - An assistant turn that only calls tools has ``content: null`` in OpenAI's API, and a call's arguments
      are an object here: each in the form the template was found at load to keep the call in
      (``Engine.message_form``: ``null`` for templates that test ``is none``, ``""`` for those that
      concatenate or trim it; arguments as text for templates that concatenate them). Any other
      ``content: null`` is ``""``.
    - Call ids in the form the model's format requires (Mistral: 9 letters and digits), whatever form
      the client sends back; the same id maps to the same id in a call and in its tool result.
    - For a template that drops ``tool_calls`` although it shows a format (LFM2, Granite 3.3, Phi-4-mini),
      the calls written into the turn's content in the model's own markup
      (``OutputFormat.with_calls_in_content``), so the model still sees what it called.
    - A tool result without a ``name`` (OpenAI's API has none) named for the function of the call it answers:
      templates that write results under the function's name read it (vLLM's Hermes refuses one without).
    - A past reply whose content still holds its reasoning block (clients that keep it there send it back so)
      with the block moved to ``reasoning_content`` (``reasoning_apart``); for a template that handles blocks in
      the content itself, the other way round (``reasoning_inline``).
    - A past turn's reasoning also under the name the template reads it by (``MessageForm.reasoning_key``:
      gpt-oss's ``thinking``, MiniCPM3's ``thought``), found at load by rendering.
    """
    output, form = model.output_format, model.engine.message_form
    fit = output.fit_call_id
    called: dict[str, str] = {}  # a call's id as the client sent it -> its function's name
    messages = []
    for message in history:
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(function.get("name"), str):
                called[str(call.get("id") or "")] = function["name"]
        message = (reasoning_inline if form.reasoning_inline else reasoning_apart)(output.think_markup, message)
        if message.get("content") is None or {"tool_calls", "tool_call_id", REASONING} & message.keys():
            message = form.apply(output.with_calls_in_content(message))
            if "tool_call_id" in message:
                if "name" not in message and message["tool_call_id"] in called:
                    message["name"] = called[message["tool_call_id"]]
                message["tool_call_id"] = fit(message["tool_call_id"])
            if "tool_calls" in message:
                message["tool_calls"] = [{**call, "id": fit(call.get("id") or "")} for call in message["tool_calls"]]
        messages.append(message)
    return messages


def reasoning_apart(think: ThinkMarkup | None, message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with the reasoning block its content still holds moved to ``reasoning_content``, where it is
    an assistant turn written as text, without reasoning of its own, and holding the block's end (``think``).

    Templates cut that block out themselves in their own way (Qwen3's ``split('</think>')``, DeepSeek V3.1's
    ``content.split('</think>', 1)``, which minja cannot run: every such history was refused), or render
    ``reasoning_content`` in their markup; given the block apart, each does what it does with past reasoning.
    The block is what comes before its first end; its opening (if written) and the blank lines around it go.
    """
    content = message.get("content")
    if think is None or message.get("role") != "assistant" or not isinstance(content, str) or message.get(REASONING):
        return message
    ends = [(at, end) for end in think.ends if (at := content.find(end)) >= 0]
    if not ends:
        return message
    at, end = min(ends)
    block, reply = content[:at], content[at + len(end) :]
    for begin in think.begins:
        if begin and begin in block:
            block = block.split(begin, 1)[1]
            break
    return {**message, REASONING: block.strip("\n"), "content": reply.lstrip("\n")}


def reasoning_inline(think: ThinkMarkup | None, message: dict[str, Any]) -> dict[str, Any]:
    """``message`` with its ``reasoning_content`` written into its content as the model writes it (``think``'s
    block, then the reply), for a template that reads reasoning from no field but cuts or keeps blocks in the
    content itself (``MessageForm.reasoning_inline``: LFM2.5-Instruct keeps the last reply's); a content that
    already holds a block's end is left as sent."""
    content, reasoning = message.get("content"), message.get(REASONING)
    if think is None or message.get("role") != "assistant" or not reasoning or not isinstance(content or "", str):
        return message
    if any(end in (content or "") for end in think.ends):
        return message
    rest = {key: value for key, value in message.items() if key != REASONING}
    return {**rest, "content": f"{think.begin}{reasoning}{think.end}{content or ''}"}


def _encode(model: ServedModel, prompt: str) -> list[int]:
    return model.engine.encode(prompt, add_special_tokens=False)


def check_length(model: ServedModel, characters: int, field: str) -> None:
    """Refuse a prompt of this many characters if it must be longer than the model allows.

    A lower bound from the length alone (see Engine.min_tokens): a megabyte of text is refused in
    microseconds, not after seconds of templating and tokenising.
    """
    at_least = model.engine.min_tokens(characters)
    if at_least > model.limits.max_model_len:
        raise InvalidArgument.of(
            field,
            f"the prompt is at least {at_least} tokens; model {model.name!r} allows "
            f"{model.limits.max_model_len} tokens in all, prompt and output",
        )


def json_object(message: Any, where: str, violations: list[FieldViolation]) -> dict[str, Any]:
    """A message holding google.protobuf.Struct values as plain JSON, keys in canonical order.

    NaN and Infinity are not JSON: they are a violation at ``where``.
    """
    try:
        return canonical(json_format.MessageToDict(message, preserving_proto_field_name=True))
    except (ValueError, json_format.Error) as error:  # nested Structs raise json_format's own error
        violations.append(FieldViolation(where, f"must be valid JSON: {error}"))
        return {}
