"""Gemma 4's tool calls: ``<|tool_call>call:NAME{key:value,...}<tool_call|>``, values in its own notation.

Gemma 4's chat template writes a call's arguments with bare keys and strings between ``<|"|>``
marks, never escaped (``{city:<|"|>Paris<|"|>,days:3,tags:[<|"|>a<|"|>]}``); numbers, ``true``,
``false`` and ``null`` as in JSON. The grammar of a forced call writes JSON (``{"city":"Paris"}``),
so JSON's quoted keys and strings are read too, anywhere a value or key may stand. Calls are tagged
blocks amid the reply (``TaggedCallParser``), back to back when there are several.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ovserve.service.parsing.calls import Call

CALL_OPEN, CALL_CLOSE = "<|tool_call>", "<tool_call|>"
QUOTE = '<|"|>'  # Gemma 4's string delimiter (a special token)
CALL = re.compile(r"call:([^\s{]+)\s*(?={)")  # call:NAME, then the arguments object
BARE_KEY = re.compile(r"\s*([^\s:{}\[\],\"<]+)\s*:")  # key: (a key without quotes)
_JSON = json.JSONDecoder()


class _Malformed(ValueError):
    """The text is not a value in Gemma 4's notation."""


def gemma4_call(block: str) -> list[Call] | None:
    """The call between ``<|tool_call>`` and ``<tool_call|>``; None when it is not a well-formed call."""
    match = CALL.match(block)
    if match is None:
        return None
    try:
        arguments, end = _value(block, match.end())
    except _Malformed:
        return None
    if not isinstance(arguments, dict) or block[end:].strip():
        return None
    return [(match[1], json.dumps(arguments, ensure_ascii=False))]


def _skip(text: str, position: int) -> int:
    """The position of the first character at or after ``position`` that is not whitespace."""
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _value(text: str, position: int) -> tuple[Any, int]:
    """The value at ``position`` (after any whitespace) and the position after it."""
    position = _skip(text, position)
    if text.startswith(QUOTE, position):
        end = text.find(QUOTE, position + len(QUOTE))
        if end < 0:
            raise _Malformed("unclosed string")
        return text[position + len(QUOTE) : end], end + len(QUOTE)
    if text.startswith("{", position):
        return _items(text, position + 1, "}", _member)
    if text.startswith("[", position):
        return _items(text, position + 1, "]", _value)
    if position < len(text) and text[position] in '"-0123456789tfn':  # JSON's string, number and literals
        try:
            return _JSON.raw_decode(text, position)
        except ValueError as error:
            raise _Malformed(str(error)) from error
    raise _Malformed(f"no value at {position}")


def _member(text: str, position: int) -> tuple[tuple[str, Any], int]:
    """``key:value`` at ``position``; the key bare, or quoted either way."""
    bare = BARE_KEY.match(text, position)
    if bare is not None:
        key, position = bare[1], bare.end()
    else:
        key, position = _value(text, position)
        if not isinstance(key, str):
            raise _Malformed("a key is not a string")
        colon = _skip(text, position)
        if not text.startswith(":", colon):
            raise _Malformed("no colon after a key")
        position = colon + 1
    value, position = _value(text, position)
    return (key, value), position


def _items(text: str, position: int, close: str, item: Any) -> tuple[Any, int]:
    """The members of an object (``close`` ``}``) or the items of a list (``]``), comma separated."""
    found: list[Any] = []
    position = _skip(text, position)
    if not text.startswith(close, position):
        while True:
            value, position = item(text, position)
            found.append(value)
            position = _skip(text, position)
            if not text.startswith(",", position):
                break
            position += 1
    if not text.startswith(close, position):
        raise _Malformed(f"expected {close!r} at {position}")
    return (dict(found) if close == "}" else found), position + 1
