"""Custom tools (OpenAI's ``{"type": "custom", "custom": {...}}``): offered to the chat template as functions of one
string parameter, ``input``; their calls read back as custom calls (``{"type": "custom", "custom": {name, input}}``).

A guided call's input follows the tool's format (ovserve.service.structured.custom_input); an unguided one is
whatever the model wrote. History carries custom calls back to the template as the same function calls.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ovserve.clients.v1 import common_pb2
from ovserve.service.errors import FieldViolation, quote
from ovserve.service.structured.custom_input import CUSTOM_FORMAT, INPUT, INPUT_SCHEMA, SYNTAXES, CustomFormat
from ovserve.service.structured.gbnf import MAX_FREE_GRAMMAR_BYTES

FORMAT_TYPES = ("text", "grammar")


def custom_tool(tool: common_pb2.CustomTool, where: str, violations: list[FieldViolation]) -> dict[str, Any]:
    """The function the chat template sees for a custom tool (``where``: its field, ``tools[2].custom``), with its
    format under CUSTOM_FORMAT (for output_plan; ``template_form`` drops it)."""
    if not tool.name:
        violations.append(FieldViolation(f"{where}.name", "required"))
    function: dict[str, Any] = {"name": tool.name, "parameters": INPUT_SCHEMA}
    if tool.HasField("description"):
        function["description"] = tool.description
    fmt = dataclasses.replace(_format(tool, f"{where}.format", violations), name_field=f"{where}.name")
    return {"type": "function", "function": function, CUSTOM_FORMAT: fmt}


def _format(tool: common_pb2.CustomTool, where: str, violations: list[FieldViolation]) -> CustomFormat:
    if not tool.HasField("format") or tool.format.type == "text":
        return CustomFormat("text")
    fmt = tool.format
    if fmt.type != "grammar":
        violations.append(
            FieldViolation(f"{where}.type", f"unknown format {quote(fmt.type)}; expected text or grammar")
        )
        return CustomFormat("text")
    grammar, field = fmt.grammar, f"{where}.grammar.definition"
    if grammar.syntax not in SYNTAXES:
        violations.append(
            FieldViolation(f"{where}.grammar.syntax", f"unknown syntax {quote(grammar.syntax)}; expected lark or regex")
        )
    elif not grammar.definition:
        violations.append(FieldViolation(field, "required"))
    elif len(grammar.definition.encode()) > MAX_FREE_GRAMMAR_BYTES:
        violations.append(FieldViolation(field, f"at most {MAX_FREE_GRAMMAR_BYTES} bytes are accepted"))
    return CustomFormat(grammar.syntax, grammar.definition, field)


def template_form(tool: dict[str, Any]) -> dict[str, Any]:
    """A tool as the chat template sees it (without a custom tool's format)."""
    return {key: value for key, value in tool.items() if key != CUSTOM_FORMAT}


def custom_names(tools: Any) -> frozenset[str]:
    """The names of a request's custom tools (its ``tools`` field: chat's nested form or the Responses API's flat
    one)."""
    return frozenset(
        tool.custom.name if "custom" in tool.DESCRIPTOR.fields_by_name else tool.name
        for tool in tools
        if tool.type == "custom"
    )


def custom_input(arguments: str) -> str:
    """A custom call's input from the function arguments the model wrote (``{"input": "..."}``); arguments of
    another shape (an unguided call) are the input as written."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get(INPUT), str) and len(value) == 1:
        return str(value[INPUT])
    return arguments


def history_call(call: common_pb2.ToolCall) -> dict[str, Any]:
    """A past custom call as the chat template sees it: the function call it was."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.custom.name, "arguments": {INPUT: call.custom.input}},
    }
