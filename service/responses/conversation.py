"""Responses input -> chat history: items become the messages the chat template renders.

``input`` is a string (one user message) or items: messages (text and image parts; images
are refused on text-only models), ``function_call`` and ``function_call_output``
(an assistant tool call and its result), and ``reasoning`` (kept on the next
assistant message). Consecutive function calls are one assistant turn, as a
model that makes parallel calls writes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.api.media_parts import MediaParts
from ovserve.service.errors import FieldViolation, quote
from ovserve.service.ids import new_id
from ovserve.service.responses import compaction
from ovserve.service.structured.custom_input import INPUT

MESSAGE_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
TEXT_PARTS = {"input_text", "output_text", "text", "refusal"}
PHASES = ("commentary", "final_answer")  # Open Responses' labels of assistant messages
ID_PREFIXES = {
    "message": "msg_", "function_call": "fc_", "function_call_output": "fco_", "reasoning": "rs_", "compaction": "cmp_",
    "mcp_approval_response": "mcpa_", "mcp_list_tools": "mcpl_", "mcp_call": "mcp_", "mcp_approval_request": "mcpr_",
    "custom_tool_call": "ctc_", "custom_tool_call_output": "ctco_",
}  # fmt: skip
# Items the chat never shows: the tools listed (the tools themselves are in the prompt) and the answers to approval
# requests (preparation.py makes the approved calls; their results or the refusals are the tool messages).
UNSHOWN = {"mcp_list_tools", "mcp_approval_response"}


@dataclass
class Turn:
    """One request's input as chat messages, and its items as stored (each with an id)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    items: list[objects_pb2.InputItem] = field(default_factory=list)


def input_turn(request: Any, *, images: MediaParts, violations: list[FieldViolation]) -> Turn:
    """The request's ``input`` / ``input_items`` as a Turn; what is wrong goes to ``violations``."""
    turn = Turn()
    if request.input and len(request.input_items):
        violations.append(FieldViolation("input_items", "set either input or input_items, not both"))
        return turn
    if request.input:
        item = objects_pb2.InputItem(type="message", id=new_id("msg_"), role="user", content=request.input)
        turn.items.append(item)
        turn.messages.append({"role": "user", "content": request.input})
        return turn
    continued = request.HasField("previous_response_id") or request.HasField("conversation")
    if not len(request.input_items) and not continued:
        violations.append(FieldViolation("input", "required: a string or a list of input items"))
    return items_turn(request.input_items, "input_items", images=images, violations=violations)


def items_turn(
    items: Iterable[objects_pb2.InputItem], field_name: str, *, images: MediaParts, violations: list[FieldViolation]
) -> Turn:
    """Input items (of the request field ``field_name``) as a Turn, each with an id; image parts go to ``images``
    (a tag in their message's text marks each), problems to ``violations``."""
    turn = Turn()
    reasoning: list[str] = []  # summaries waiting for the assistant message they belong to
    for position, source in enumerate(items):
        item = objects_pb2.InputItem()
        item.CopyFrom(source)
        where = f"{field_name}[{position}]"
        kind = item.type or ("message" if item.role else "")
        item.type = kind
        if kind == "item_reference":  # resolved from the store by preparation; here only if it was not
            violations.append(
                FieldViolation(f"{where}.id", "an item reference is resolved only in a Responses request")
            )
            continue
        if kind not in ID_PREFIXES:
            expected = ", ".join(ID_PREFIXES)
            described = f"unknown item type {quote(item.type)}; expected {expected}"
            violations.append(FieldViolation(f"{where}.type", described))
            continue
        item.id = item.id or new_id(ID_PREFIXES[kind])
        turn.items.append(item)
        if kind == "message":
            _message(item, where, images, turn, reasoning, violations)
        elif kind == "function_call":
            _function_call(item, where, turn, reasoning, violations)
        elif kind == "custom_tool_call":  # the template's function call of one string, input
            _function_call(_as_function_call(item), where, turn, reasoning, violations, kind=kind)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            _function_call_output(item, where, turn, violations)
        elif kind == "compaction":
            summary = compaction.as_message(item, where, violations)
            turn.messages += [summary] if summary is not None else []
        elif kind in ("mcp_call", "mcp_approval_request"):  # replayed: a call (and the result the server got)
            _mcp_call(item, where, turn, reasoning, violations)
        elif kind in UNSHOWN:
            continue
        else:
            reasoning += [part.text for part in item.summary if part.text]
    return turn


def _message(
    item: objects_pb2.InputItem,
    where: str,
    images: MediaParts,
    turn: Turn,
    reasoning: list[str],
    violations: list[FieldViolation],
) -> None:
    role = MESSAGE_ROLES.get(item.role)
    if role is None:
        violations.append(
            FieldViolation(f"{where}.role", f"unknown role {quote(item.role)}; expected {', '.join(MESSAGE_ROLES)}")
        )
        return
    if item.phase and (role != "assistant" or item.phase not in PHASES):
        described = (
            f"{quote(item.phase)} is not one of {', '.join(PHASES)}"
            if role == "assistant"
            else ("only assistant messages have a phase")
        )
        violations.append(FieldViolation(f"{where}.phase", described))
    if item.HasField("content") and len(item.content_parts):
        violations.append(FieldViolation(f"{where}.content_parts", "set either content or content_parts, not both"))
    texts = [item.content] if item.HasField("content") else []
    for index, part in enumerate(item.content_parts):
        if part.type in TEXT_PARTS:
            texts.append(part.text or part.refusal)
        elif part.type == "input_image":
            field = f"{where}.content_parts[{index}].image_url"
            texts.append(images.add(field, part.image_url, part.image_data, violations))
        elif part.type == "input_file":
            field = f"{where}.content_parts[{index}]"
            texts.append(images.add_file(field, part.file_data, part.file_url, part.file_id, part.filename, violations))
        else:
            violations.append(
                FieldViolation(
                    f"{where}.content_parts[{index}].type",
                    f"unknown part type {quote(part.type)}; expected input_text, input_image or input_file",
                )
            )
    if not texts:
        violations.append(FieldViolation(f"{where}.content", "a message needs content"))
    message: dict[str, Any] = {"role": role, "content": "\n".join(texts)}
    if role == "assistant" and reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
        reasoning.clear()
    turn.messages.append(message)


def _function_call(
    item: objects_pb2.InputItem,
    where: str,
    turn: Turn,
    reasoning: list[str],
    violations: list[FieldViolation],
    *,
    kind: str = "function_call",
) -> None:
    for name in ("call_id", "name"):
        if not getattr(item, name):
            violations.append(FieldViolation(f"{where}.{name}", f"required on {kind} items"))
    try:
        arguments = json.loads(item.arguments or "{}")
    except json.JSONDecodeError as error:
        violations.append(FieldViolation(f"{where}.arguments", f"not valid JSON: {error}"))
        arguments = {}
    call = {"id": item.call_id, "type": "function", "function": {"name": item.name, "arguments": arguments}}
    last = turn.messages[-1] if turn.messages else None
    if last is not None and last["role"] == "assistant" and "tool_calls" in last:
        last["tool_calls"].append(call)  # parallel calls: one assistant turn
        return
    message: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": [call]}
    if reasoning:
        message["reasoning_content"] = "\n".join(reasoning)
        reasoning.clear()
    turn.messages.append(message)


def _as_function_call(item: objects_pb2.InputItem) -> objects_pb2.InputItem:
    """A custom_tool_call item as the function call the chat template sees (arguments {"input": ...})."""
    arguments = json.dumps({INPUT: item.input}, ensure_ascii=False)
    return objects_pb2.InputItem(type="function_call", call_id=item.call_id, name=item.name, arguments=arguments)


def _mcp_call(
    item: objects_pb2.InputItem, where: str, turn: Turn, reasoning: list[str], violations: list[FieldViolation]
) -> None:
    """A replayed mcp_call (a call and its result) or mcp_approval_request (a call the caller answers next),
    under the item's own id as the call's id."""
    call = objects_pb2.InputItem(type="function_call", call_id=item.id, name=item.name, arguments=item.arguments)
    _function_call(call, where, turn, reasoning, violations)
    if item.type == "mcp_call":
        result = item.output if not item.HasField("error") else f"Error: {item.error}"
        turn.messages.append({"role": "tool", "tool_call_id": item.id, "content": result})


def _function_call_output(
    item: objects_pb2.InputItem, where: str, turn: Turn, violations: list[FieldViolation]
) -> None:
    if not item.call_id:
        violations.append(FieldViolation(f"{where}.call_id", f"required on {item.type} items"))
    output = item.output or "\n".join(part.text for part in item.output_parts)
    turn.messages.append({"role": "tool", "tool_call_id": item.call_id, "content": output})
