"""An assistant turn's parsed output as chat messages and stream deltas (reasoning, content, tool calls)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.service.api.custom_tools import custom_input
from ovserve.service.models import ServedModel
from ovserve.service.parsing import (
    ContentDelta,
    ParsedCall,
    ParsedTurn,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
    TurnParser,
)
from ovserve.service.parsing.formats import tool_schemas

PROMPT_TAIL_TOKENS = 16  # enough to see whether the template left a <think> block open


def output_parser(
    model: ServedModel, prompt_ids: list[int], request: Any, *, raw: bool, prefill: str = ""
) -> TurnParser | None:
    """A parser for the reply to a chat or Responses ``request``; None with ``raw`` (skip_special_tokens false).

    Tool markup is parsed only when the request offered tools the model may
    call; ``parallel_tool_calls: false`` keeps the first call. ``prefill``: the text the prompt ends with that
    the reply continues (an assistant prefill): the parser reads the prompt before it, and is fed it first.
    """
    if raw:
        return None
    offered = len(request.tools) > 0 and not (request.HasField("tool_choice") and request.tool_choice == "none")
    single = request.HasField("parallel_tool_calls") and not request.parallel_tool_calls
    tail = prompt_tail(model, prompt_ids, before=prefill)
    # The tools' schemas type the values of formats that write arguments as untyped text (Qwen3-Coder, GLM).
    schemas = None
    if offered and model.output_format.types_arguments:
        schemas = tool_schemas(json_format.MessageToDict(tool) for tool in request.tools)
    return model.output_format.parser(prompt_tail=tail, tools=offered, max_calls=1 if single else None, schemas=schemas)


def prompt_tail(model: ServedModel, prompt_ids: list[int], before: str = "") -> str:
    """The end of a rendered prompt, special tokens included; with ``before``, the end of the part before that
    text (a prefill the prompt ends with: a token holds at least a character, so the tokens read cover it)."""
    text = model.engine.decode(prompt_ids[-(PROMPT_TAIL_TOKENS + len(before)) :], skip_special_tokens=False)
    at = text.rfind(before.strip()) if before else -1
    return text[:at] if at >= 0 else text


def opens_reasoning(model: ServedModel, prompt_ids: list[int]) -> bool:
    """Whether the prompt ends inside the model's reasoning block (QwQ's and DeepSeek-R1's templates open it):
    the reply then starts with reasoning, and an output constraint applies after the block."""
    return model.output_format.think_markup is not None and model.output_format.reasoning_opened(
        prompt_tail(model, prompt_ids)
    )


def finish_reason(engine_reason: common_pb2.FinishReason, turn: ParsedTurn | None) -> common_pb2.FinishReason:
    """``tool_calls`` when the model ended its turn after calling tools; otherwise the engine's reason."""
    if turn is not None and turn.calls and engine_reason == common_pb2.FINISH_REASON_STOP:
        return common_pb2.FINISH_REASON_TOOL_CALLS
    return engine_reason


def fill_message(message: chat_pb2.ChatCompletionMessage, turn: ParsedTurn, custom: frozenset[str]) -> None:
    """Content (unset when the reply is only tool calls), reasoning_content and tool_calls of a parsed turn;
    calls of the ``custom`` tools' names are custom calls."""
    if turn.content or not turn.calls:
        message.content = turn.content
    if turn.reasoning:
        message.reasoning_content = turn.reasoning
    for call in turn.calls:
        message.tool_calls.append(tool_call(call, custom))


def tool_call(call: ParsedCall, custom: frozenset[str]) -> common_pb2.ToolCall:
    """A parsed call as the reply's tool call: a function's, or a custom tool's with its input."""
    if call.name in custom:
        return common_pb2.ToolCall(
            id=call.id,
            type="custom",
            custom=common_pb2.CustomToolCall(name=call.name, input=custom_input(call.arguments)),
        )
    return common_pb2.ToolCall(
        id=call.id, type="function", function=common_pb2.FunctionCall(name=call.name, arguments=call.arguments)
    )


def stream_deltas(pieces: list[Piece], custom: frozenset[str], turn: ParsedTurn) -> list[chat_pb2.ChatCompletionDelta]:
    """One step's pieces as chat deltas, in order; a call's name and its arguments go in separate deltas.

    Text of one kind is joined into one delta; a new delta starts when the
    kind changes, so a client that applies deltas in order sees reasoning,
    content and calls in the order the model wrote them. A call of a ``custom`` tool comes in one delta once it
    is complete (its input is read out of the whole arguments; ``turn``: the turn so far).
    """
    deltas: list[chat_pb2.ChatCompletionDelta] = []
    last: type | None = None
    for piece in pieces:
        if isinstance(piece, ContentDelta | ReasoningDelta):
            if last is not type(piece):
                deltas.append(chat_pb2.ChatCompletionDelta())
            field = "content" if isinstance(piece, ContentDelta) else "reasoning_content"
            setattr(deltas[-1], field, getattr(deltas[-1], field) + piece.text)
        elif isinstance(piece, ToolCallStarted | ToolCallArguments | ToolCallFinished):
            call = turn.calls[piece.index]
            if call.name in custom and isinstance(piece, ToolCallFinished):
                whole = tool_call(call, custom)
                delta = chat_pb2.ToolCallDelta(index=piece.index, id=call.id, type="custom", custom=whole.custom)
                deltas.append(chat_pb2.ChatCompletionDelta(tool_calls=[delta]))
            elif call.name not in custom and isinstance(piece, ToolCallStarted):
                delta = chat_pb2.ToolCallDelta(index=piece.index, id=piece.id, type="function")
                delta.function.name = piece.name
                deltas.append(chat_pb2.ChatCompletionDelta(tool_calls=[delta]))
            elif call.name not in custom and isinstance(piece, ToolCallArguments):
                delta = chat_pb2.ToolCallDelta(index=piece.index)
                delta.function.arguments = piece.fragment
                deltas.append(chat_pb2.ChatCompletionDelta(tool_calls=[delta]))
        last = type(piece)
    return deltas


def reasoning_tokens(model: ServedModel, parsers: Iterable[TurnParser | None]) -> int:
    """Tokens of the reasoning the parsers split out, counted by the model's tokenizer (tags not included)."""
    texts = [parser.result.reasoning for parser in parsers if parser is not None and parser.result.reasoning]
    return sum(len(model.engine.encode(text, add_special_tokens=False)) for text in texts)
