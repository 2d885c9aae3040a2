"""The generic tool format, for a model whose chat template shows none: the tools described in the system turn,
calls written as one JSON object under a grammar (what llama.cpp does), read back as calls.

A reply that calls tools is ``{"tool_calls": [{"name": ..., "arguments": {...}}, ...]}`` (llama.cpp's shape;
its single ``{"tool_call": {...}}`` is read too). llama.cpp's third shape, ``{"response": "..."}``, is not
adopted: it exists there because llama.cpp holds every ``auto`` reply to JSON under a grammar. Here ``auto``
is free text, streamed as written, so an answer needs no wrapper, and reading ``"response"`` as the answer
would unwrap a client's own JSON answer that happens to have that key. How the conversation is written for
such a model (tools described, past calls and results) is ovserve.service.api.generic_tools'.

Each table here is merged into ovserve.service.parsing.formats' own (TOOL_PARSERS, REASONING_PARSERS, ALIASES and the
template markup tables), so a format is written once, here, and named on the command line like any other.
"""

from __future__ import annotations

import json
from typing import Any

from ovserve.service.parsing.calls import Call, named_call
from ovserve.service.parsing.markup import CallMarkup, ThinkMarkup
from ovserve.service.parsing.tool_format import ToolFormat
from ovserve.service.parsing.tools import TrailingCallParser

GENERIC_PARSER = "generic"
# The whole reply of a call: one JSON object listing the calls (a forced call's grammar writes it from this).
GENERIC = CallMarkup('{"tool_calls": [', '{"name": {name}, "arguments": ', "}", ", ", "]}")
# Where a call list may start: the reply's first "{" (or a ```json fence small models wrap JSON in); after text,
# only the object's own key (JSON amid prose is not a call unless it says so).
START_MARKERS = ("{", "```json")
ANYWHERE_MARKER = '{"tool_call'
FENCE_OPEN, FENCE_CLOSE = "```json", "```"
# The object's one key -> the calls it holds, as a list (llama.cpp writes "tool_call" when calls are not parallel).
LISTED_CALLS = {"tool_calls": lambda value: value, "tool_call": lambda value: [value]}


def generic_calls(text: str) -> list[Call] | None:
    """The calls of one ``{"tool_calls": [...]}`` object (or several, one after the other), optionally in a
    ```json fence, whitespace anywhere between; None when the text is anything else."""
    body = text.strip()
    if body.startswith(FENCE_OPEN) and body.endswith(FENCE_CLOSE) and len(body) >= len(FENCE_OPEN + FENCE_CLOSE):
        body = body[len(FENCE_OPEN) : -len(FENCE_CLOSE)].strip()
    decoder, position, found = json.JSONDecoder(), 0, []
    try:
        while position < len(body):
            value, position = decoder.raw_decode(body, position)
            listed = _listed(value)
            if listed is None:
                return None
            found += listed
            while position < len(body) and body[position].isspace():
                position += 1
    except (ValueError, RecursionError):  # RecursionError: JSON nested deeper than the interpreter's stack
        return None
    return found or None


def _listed(value: Any) -> list[Call] | None:
    """The calls of one decoded object, or None when it is not exactly a call list with at least one call."""
    if not isinstance(value, dict) or len(value) != 1:
        return None
    key, calls = next(iter(value.items()))
    if key not in LISTED_CALLS:
        return None
    items = LISTED_CALLS[key](calls)
    if not isinstance(items, list) or not items:
        return None
    decoded = [named_call(item) for item in items]
    return None if None in decoded else decoded  # type: ignore[return-value]


# --tool-parser name -> its format.
TOOL_FORMATS: dict[str, ToolFormat] = {
    GENERIC_PARSER: ToolFormat(
        lambda ids, _: TrailingCallParser(generic_calls, ids, START_MARKERS, (ANYWHERE_MARKER,)), GENERIC
    ),
}
# --reasoning-parser name -> its block's delimiters.
REASONING_FORMATS: dict[str, ThinkMarkup] = {}
# Format name -> the families it serves (README's table of formats: ovserve.service.parsing.formats_table).
TOOL_FAMILIES: dict[str, str] = {
    GENERIC_PARSER: "any template that shows no tool format (Gemma 2, Gemma 3, Phi-3.5, SmolLM3, ...)",
}
REASONING_FAMILIES: dict[str, str] = {}
# Other servers' names (vLLM's, OVMS's) for these formats: {"tool": {alias: name}, "reasoning": {...}}.
ALIASES: dict[str, dict[str, str]] = {"tool": {}, "reasoning": {}}
# Template markup (a string, or several that must all appear) -> the parser it calls for (checked after
# formats.py's own entries, in this order). None: a template that shows no format is found by its lacking one
# (format detection falls back to "generic"), not by a string it holds.
TEMPLATE_TOOL_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
TEMPLATE_REASONING_MARKUP: list[tuple[str | tuple[str, ...], str]] = []
