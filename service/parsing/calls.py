"""Decoding the call markup of each model family into (name, arguments JSON) pairs.

Each decoder returns None when the text is not a well-formed call list; the
caller then keeps the text as content, so nothing the model wrote is lost.
openvino_genai's ``Llama3JsonToolParser`` reads one call and leaves the
content as it was; its ``Llama3PythonicToolParser`` mixes the name of the
first call with the arguments of the last and drops non-string values (2026.4),
hence these few lines.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable
from typing import Any

from ovserve.service.parsing.markup import (
    DEEPSEEK_CALL_BEGIN,
    DEEPSEEK_CALL_END,
    DEEPSEEK_SEP,
    GRANITE_TAG,
    KIMI_ARGUMENTS,
    KIMI_CALL_BEGIN,
    KIMI_CALL_END,
)

Call = tuple[str, str]  # function name, arguments as a JSON object text

PYTHON_TAG = "<|python_tag|>"  # Llama 3's "ipython" marker (a special token; absent when skipped)
# Llama 4's template writes a past call turn's content between these, its calls after them (special tokens).
PYTHON_START, PYTHON_END = "<|python_start|>", "<|python_end|>"
TOOL_CALL_END = "<|/tool_call|>"  # closes a <|tool_call|> block in llama.cpp's Phi-4-mini template
MISTRAL_TAG = "[TOOL_CALLS]"  # Mistral's marker (also special: the `[{` start is accepted without it)
MISTRAL_ARGS = "[ARGS]"
MISTRAL_CALL_ID = "[CALL_ID]"  # Mistral Small 3.2's template writes a past call's id between its name and [ARGS]


def named_call(value: Any) -> Call | None:
    """``{"name": ..., "arguments"|"parameters": {...}}`` (arguments may be a JSON string) as a Call; also in
    OpenAI's shape, ``{"type": "function", "function": {"name": ..., "arguments": ...}}``, which models trained on
    templates that write past calls as the API holds them (Falcon 3) write back."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict) and "name" not in value:
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str) or not value["name"]:
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    return value["name"], json.dumps(arguments, ensure_ascii=False)


def hermes_call(block: str) -> list[Call] | None:
    """The JSON between ``<tool_call>`` and ``</tool_call>`` (Hermes, Qwen 2.5/3): one call, or a list of them
    (Falcon 3's template writes its past calls as one list in one block)."""
    try:
        value = json.loads(block)
    except ValueError:
        return None
    listed = [named_call(item) for item in value] if isinstance(value, list) else [named_call(value)]
    return None if not listed or None in listed else listed  # type: ignore[return-value]


def json_sequence(text: str, separators: str = " \t\r\n;") -> list[Any] | None:
    """JSON values one after the other, separated by whitespace or ``;`` (Llama 3 writes ``a; b``)."""
    decoder, position = json.JSONDecoder(), 0
    values: list[Any] = []
    while True:
        while position < len(text) and text[position] in separators:
            position += 1
        if position == len(text):
            return values
        try:
            value, position = decoder.raw_decode(text, position)
        except ValueError:
            return None
        values.append(value)


def llama3_json_calls(text: str) -> list[Call] | None:
    """Llama 3.x JSON tool calls: ``{"name": ..., "parameters": {...}}``, several separated by ``;``; also after
    Llama 4's empty ``<|python_start|><|python_end|>`` (its template writes a call turn's content there: text in
    it is no call list, so the whole stays content)."""
    text = text.strip()
    if text.startswith(PYTHON_START):
        inside, closed, text = text[len(PYTHON_START) :].partition(PYTHON_END)
        if not closed or inside.strip():
            return None
    values = json_sequence(text.removeprefix(PYTHON_TAG))
    calls = [named_call(value) for value in values or []]
    return None if not calls or None in calls else calls  # type: ignore[return-value]


def pythonic_calls(text: str) -> list[Call] | None:
    """Llama 3.2 / 4 pythonic calls: ``[get_weather(city="Paris"), get_time(city="Rome")]``, literals only."""
    try:
        tree = ast.parse(text.removeprefix(PYTHON_TAG).strip(), mode="eval")
    except SyntaxError:
        return None
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return None
    calls = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
            return None
        try:  # literal_eval: values are data, never code
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg is not None}
            calls.append((node.func.id, json.dumps(arguments, ensure_ascii=False)))
        except (ValueError, TypeError, SyntaxError):
            return None
    return calls


def named_call_list(text: str) -> list[Call] | None:
    """One JSON list of ``{"name": ..., "arguments": {...}}`` objects, and nothing after it."""
    values = json_sequence(text)
    if not values or len(values) != 1 or not isinstance(values[0], list):
        return None
    calls = [named_call(value) for value in values[0]]
    return None if not calls or None in calls else calls  # type: ignore[return-value]


def mistral_calls(text: str) -> list[Call] | None:
    """Mistral: ``[TOOL_CALLS][{"name": ..., "arguments": {...}}]`` or (v11+) ``[TOOL_CALLS]name[ARGS]{...}``,
    with ``[CALL_ID]id`` before ``[ARGS]`` as Mistral Small 3.2 writes it (the id is dropped: calls get new ones)."""
    body = text.strip().removeprefix(MISTRAL_TAG).strip()
    if body.startswith("["):
        return named_call_list(body)
    result = []
    for part in body.split(MISTRAL_TAG):
        head, sep, arguments = part.partition(MISTRAL_ARGS)
        name = head.partition(MISTRAL_CALL_ID)[0]
        decoded = json_sequence(arguments)
        if not sep or not name.strip() or decoded is None or len(decoded) != 1 or not isinstance(decoded[0], dict):
            return None
        result.append((name.strip(), json.dumps(decoded[0], ensure_ascii=False)))
    return result or None


def phi4_mini_calls(text: str) -> list[Call] | None:
    """Phi-4-mini: ``functools[{"name": ..., "arguments": {...}}, ...]``; or, at the start of the reply, the call
    objects bare, as its template (OVMS's copy) writes a past call back into the prompt."""
    body = text.strip()
    if body.startswith("functools"):
        return named_call_list(body.removeprefix("functools"))
    values = json_sequence(body)
    listed = [named_call(value) for value in values or []]
    return None if not listed or None in listed else listed  # type: ignore[return-value]


def granite_calls(text: str) -> list[Call] | None:
    """Granite 3.x: ``<|tool_call|>[{"name": ..., "arguments": {...}}, ...]`` (the token may be missing); also
    ``<|tool_call|>`` blocks of one call object each, closed by ``<|/tool_call|>``, as llama.cpp's Phi-4-mini
    template writes them (the same token)."""
    calls: list[Call] = []
    for index, block in enumerate(text.strip().split(GRANITE_TAG)):
        block = block.strip()
        if index == 0 and not block:  # the reply opened with the token
            continue
        values = json_sequence(block.removesuffix(TOOL_CALL_END))
        if not values or len(values) != 1:
            return None
        listed = values[0] if isinstance(values[0], list) else [values[0]]
        read = [named_call(value) for value in listed]
        if not read or None in read:
            return None
        calls += read  # type: ignore[arg-type]
    return calls or None


def json_object(text: str) -> str | None:
    """``text`` as a JSON object text, or None when it is not exactly one JSON object."""
    values = json_sequence(text, " \t\r\n")
    if values is None or len(values) != 1 or not isinstance(values[0], dict):
        return None
    return json.dumps(values[0], ensure_ascii=False)


def delimited_calls(
    text: str, begin: str, sep: str, end: str, read: Callable[[str, str], Call | None]
) -> list[Call] | None:
    """Calls written ``begin head sep body end`` one after another, with only whitespace between them.

    ``read(head, body)`` (both stripped) makes the call, or None when the block is not one.
    """
    calls, rest = [], text.strip()
    while rest:
        block, closed, after = rest.removeprefix(begin).partition(end)
        head, separated, body = block.partition(sep)
        call = read(head.strip(), body.strip()) if rest.startswith(begin) and closed and separated else None
        if call is None:
            return None
        calls.append(call)
        rest = after.lstrip()
    return calls or None


def _bare_name(name: str) -> bool:
    return bool(name) and not any(character.isspace() for character in name)


def _deepseek_v3_call(kind: str, body: str) -> Call | None:
    """After the call's kind (``function``): its name, a line break, the arguments in a ```json fence
    (read without the fence too)."""
    name, _, fenced = body.partition("\n")
    arguments = json_object(fenced.strip().removeprefix("```json").removesuffix("```"))
    return (name.strip(), arguments) if _bare_name(name.strip()) and arguments is not None else None


def deepseek_v3_calls(text: str) -> list[Call] | None:
    """The calls inside DeepSeek V3 / R1's tool-calls section (the section's tokens taken off)."""
    return delimited_calls(text, DEEPSEEK_CALL_BEGIN, DEEPSEEK_SEP, DEEPSEEK_CALL_END, _deepseek_v3_call)


def _named_json_call(name: str, body: str) -> Call | None:
    arguments = json_object(body)
    return (name, arguments) if _bare_name(name) and arguments is not None else None


def deepseek_v31_calls(text: str) -> list[Call] | None:
    """The calls inside DeepSeek V3.1's tool-calls section: call begin, name, sep, arguments, call end."""
    return delimited_calls(text, DEEPSEEK_CALL_BEGIN, DEEPSEEK_SEP, DEEPSEEK_CALL_END, _named_json_call)


def _kimi_call(call_id: str, body: str) -> Call | None:
    """Kimi K2's call id is ``functions.<name>:<index>``; the name is what lies between."""
    name, colon, index = call_id.removeprefix("functions.").rpartition(":")
    return _named_json_call(name, body) if colon and index.isdigit() else None


def kimi_k2_calls(text: str) -> list[Call] | None:
    """The calls inside Kimi K2's ``<|tool_calls_section_begin|>...<|tool_calls_section_end|>`` section."""
    return delimited_calls(text, KIMI_CALL_BEGIN, KIMI_ARGUMENTS, KIMI_CALL_END, _kimi_call)
