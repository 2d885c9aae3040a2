"""Decoders of the call syntaxes that are not a JSON list of named objects: Python-style calls (LFM2, Olmo 3),
FunctionGemma's ``call:NAME{...}``, Apertus' ``{"NAME": {...}}`` and GigaChat 3's ``function call`` message.

As every decoder in ovserve.service.parsing.calls, each returns None when the text is not a well-formed call (the caller
keeps it as content) and never evaluates what the model wrote: Python values are read from the syntax tree.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from ovserve.service.parsing.calls import Call, json_sequence, named_call
from ovserve.service.parsing.calls_json import named_calls
from ovserve.service.parsing.gemma4 import QUOTE, gemma4_call

# Bare names a model writes as values: Python's, and JSON's (Olmo 3 writes null/true/false; LFM2.5's template
# writes an object argument as JSON inside the Python call).
LITERAL_NAMES: dict[str, Any] = {"True": True, "False": False, "None": None, "true": True, "false": False, "null": None}
# What ast.parse raises on text it cannot take: bad syntax, a NUL byte, nesting past the parser's limits.
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


class _NotLiteral(ValueError):
    """A node that is not a literal value."""


def _literal(node: ast.AST) -> Any:
    """The value of a literal node: constants, +/- numbers, lists, tuples (as lists), dicts with string keys."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | bool | type(None)):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise _NotLiteral("not a JSON number")  # 1e999 reads as inf, which JSON cannot hold
        return node.value
    if isinstance(node, ast.Name) and node.id in LITERAL_NAMES:
        return LITERAL_NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _literal(node.operand)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _NotLiteral("a sign before a non-number")
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        keys = [_literal(key) if key is not None else None for key in node.keys]  # None: a ** spread
        if not all(isinstance(key, str) for key in keys):
            raise _NotLiteral("a key that is not a string")
        return dict(zip(keys, (_literal(value) for value in node.values), strict=True))
    raise _NotLiteral(type(node).__name__)


def _keyword_call(node: ast.AST) -> Call | None:
    """``name(key=value, ...)`` with literal values as a Call; None for anything else."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name) or node.args:
        return None
    if any(keyword.arg is None for keyword in node.keywords):  # **spread
        return None
    try:
        arguments = {keyword.arg: _literal(keyword.value) for keyword in node.keywords}
    except _NotLiteral:
        return None
    return node.func.id, json.dumps(arguments, ensure_ascii=False)


def _all_calls(nodes: Sequence[ast.AST]) -> list[Call] | None:
    calls = [_keyword_call(node) for node in nodes]
    return None if not calls or None in calls else calls  # type: ignore[return-value]


def python_call_list(text: str) -> list[Call] | None:
    """A Python list of keyword calls, ``[get_weather(city="Paris"), get_time(zone='CET')]`` (LFM2).

    Unlike ``calls.pythonic_calls``, JSON's ``true``/``false``/``null`` are read as values too: LFM2.5's chat
    template writes an object argument as JSON (``tojson``) inside the Python call, so the model learned both.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except _UNPARSABLE:
        return None
    return _all_calls(tree.body.elts) if isinstance(tree.body, ast.List) else None


_PYTHON_FENCE = re.compile(r"\A\s*```(?:python|py)?[ \t]*\n(.*?)\n?```\s*\Z", re.DOTALL)


def lfm2_calls(text: str) -> list[Call] | None:
    """What LFM2's tags hold: a Python list of calls (LFM2, LFM2.5), or calls one per line, bare or in a
    ```python fence (MiniCPM 3/4 write theirs between the same tokens), or a JSON list of named calls (openPangu
    writes its calls between the same tokens, and llama.cpp's own LFM2 template writes past calls so: whichever
    of the two formats a template shows, a model trained on the other's form is read)."""
    fenced = _PYTHON_FENCE.match(text)
    return python_call_list(text) or python_call_lines(fenced.group(1) if fenced else text) or named_calls(text)


def python_call_lines(text: str) -> list[Call] | None:
    """Python keyword calls one per line (Olmo 3's ``<function_calls>`` block), values Python's or JSON's."""
    lines = [line.strip() for line in text.strip().splitlines()]
    try:
        tree = ast.parse("\n".join(line for line in lines if line), mode="exec")
    except _UNPARSABLE:
        return None
    if not all(isinstance(statement, ast.Expr) for statement in tree.body):
        return None
    return _all_calls([statement.value for statement in tree.body])  # type: ignore[attr-defined]


FUNCTIONGEMMA_ESCAPE = "<escape>"  # FunctionGemma's string delimiter (a special token), where Gemma 4 has <|"|>


def functiongemma_call(block: str) -> list[Call] | None:
    """FunctionGemma's ``call:NAME{key:<escape>text<escape>,n:3}``: Gemma 4's notation with another quote, so
    read as Gemma 4's once the quote is swapped (a block that holds Gemma 4's own quote is not FunctionGemma's)."""
    if QUOTE in block:
        return None
    try:
        return gemma4_call(block.replace(FUNCTIONGEMMA_ESCAPE, QUOTE))
    except RecursionError:  # nesting deeper than the reader (or the JSON decoder inside it) follows
        return None


def _json_values(text: str) -> list[Any] | None:
    """The JSON values of ``text`` one after another (``calls.json_sequence``); None also where the nesting
    is too deep for the JSON decoder (it raises RecursionError there, not ValueError)."""
    try:
        return json_sequence(text.strip(), " \t\r\n")
    except RecursionError:
        return None


def apertus_calls(text: str) -> list[Call] | None:
    """Apertus: a JSON list of one-member objects, the member named for the function, ``[{"NAME": {args}}]``."""
    values = _json_values(text)
    if values is None or len(values) != 1 or not isinstance(values[0], list) or not values[0]:
        return None
    calls = []
    for item in values[0]:
        if not isinstance(item, dict) or len(item) != 1:
            return None
        ((name, arguments),) = item.items()
        if not name or not isinstance(arguments, dict):
            return None
        calls.append((name, json.dumps(arguments, ensure_ascii=False)))
    return calls


# GigaChat 3: a message of the "function call" role after the assistant's; GigaChat 3.1: a special token.
GIGACHAT_MESSAGE_SEP = "<|message_sep|>"
GIGACHAT3_CALL = "function call<|role_sep|>\n"
GIGACHAT31_CALL = "<|function_call|>"
_GIGACHAT_OPENERS = (GIGACHAT3_CALL.strip(), GIGACHAT31_CALL)
_GIGACHAT_ENDS = (GIGACHAT_MESSAGE_SEP, "</s>")  # what may follow the call's JSON: its message's end


def gigachat_call(text: str) -> list[Call] | None:
    """GigaChat 3 / 3.1: one ``{"name": ..., "arguments": {...}}`` after ``function call<|role_sep|>`` or
    ``<|function_call|>``, with the assistant message's end before it (3) and the call message's end after.

    The assistant message's end alone (no call after it) is the turn's markup, not content: no calls.
    """
    body = text.strip().removeprefix(GIGACHAT_MESSAGE_SEP).strip()
    if not body:
        return []
    opener = next((opener for opener in _GIGACHAT_OPENERS if body.startswith(opener)), None)
    if opener is None:
        return None
    body = body[len(opener) :].strip()
    for end in _GIGACHAT_ENDS:
        body = body.removesuffix(end).rstrip()
    values = _json_values(body)
    if values is None or len(values) != 1 or not isinstance(values[0], dict) or "arguments" not in values[0]:
        return None  # both members, as GigaChat's templates write them
    call = named_call(values[0])
    return None if call is None else [call]


# RWKV (vLLM's rwkv parser): each call a bold marker, then the call's JSON in a ```json fence.
RWKV_MARKER, RWKV_FENCE_OPEN, RWKV_FENCE = "**Tool Call:**", "```json", "```"


def rwkv_calls(text: str) -> list[Call] | None:
    """RWKV: ``**Tool Call:**`` and a ```json fence holding ``{"name": ..., "arguments": {...}}``, once a call,
    with only whitespace between the calls and nothing after them."""
    calls: list[Call] = []
    rest = text.strip()
    while rest:
        if not rest.startswith(RWKV_MARKER):
            return None
        rest = rest[len(RWKV_MARKER) :].lstrip()
        if not rest.startswith(RWKV_FENCE_OPEN):
            return None
        body, closed, rest = rest[len(RWKV_FENCE_OPEN) :].partition(RWKV_FENCE)
        values = _json_values(body) if closed else None
        if values is None or len(values) != 1 or not isinstance(values[0], dict) or "arguments" not in values[0]:
            return None
        call = named_call(values[0])
        if call is None:
            return None
        calls.append(call)
        rest = rest.lstrip()
    return calls or None
