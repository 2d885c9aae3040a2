"""Decoding XML-style calls whose arguments are tagged members, one per argument, in any family's tags (and
Solar Open's special-token sections, whose arguments are JSON).

A call is ``name_begin NAME name_end``, then one member per argument as its ``TaggedArguments`` dialect
(ovserve.service.parsing.markup; DSML there) writes it, ``key_begin KEY key_end VALUE value_end``, then ``call_end``::

    Seed-OSS     <function=get_weather><parameter=city>Paris</parameter></function>
    MiniMax-M2   <invoke name="get_weather"><parameter name="city">Paris</parameter></invoke>
    DeepSeek     <{DSML}invoke name="get_weather"><{DSML}parameter name="city" string="true">Paris</{DSML}parameter>
    MiniCPM5     <function name="get_weather"><param name="city">Paris</param></function>

Whitespace may stand between any two tags (and inside a tag where the markup has a space); a value is
the text up to its closing tag, less one line break on each side (templates write values on lines of their
own or not). A value is typed as ovserve.service.parsing.tagged_calls types Qwen3-Coder's, by the tool's schema;
where the key's end says how the value is written (DSML's ``string="true"`` / ``"false"``), raw text stays
text wherever the schema allows a string. Anything else in the text makes it not a call list (None), so the
caller keeps it as content. The scan only moves forward with ``str.find``: linear in the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ovserve.service.parsing.calls import Call, delimited_calls, json_object
from ovserve.service.parsing.markup import MINIMAX_NS, TaggedArguments, tag_name
from ovserve.service.parsing.tagged_calls import Schemas, argument_schema, json_types, typed_value

CDATA_BEGIN, CDATA_END = "<![CDATA[", "]]>"
# Solar Open: a <|tool_calls|> section of <|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}
SOLAR_CALLS, SOLAR_CALLS_END = "<|tool_calls|>", "<|calls|>"
SOLAR_CALL_BEGIN, SOLAR_NAME, SOLAR_ARGS, SOLAR_CALL_END = (
    "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>", "<|tool_call:end|>",
)  # fmt: skip


@dataclass(frozen=True)
class XmlCallForm:
    """How one call is written around its tagged members (see the module's docstring)."""

    name_begin: str
    name_end: str
    call_end: str
    arguments: TaggedArguments
    cdata: bool = False  # a value may be wrapped in <![CDATA[...]]> (MiniCPM5: values holding <, & or lines)
    # Other spellings of the key's end before a JSON value (Kimi K3 names each JSON type: type="boolean", ...).
    json_key_ends: tuple[str, ...] = ()
    numbered: str = ""  # after name_end, the call's number and then this (Kimi K3's index="1"<|sep|>)
    # The arguments may instead be one JSON object between the name and call_end (SGLang's DeepSeek V3.2 / V4
    # detectors read this "direct JSON" form beside the tagged members).
    json_body: bool = False


def xml_calls(text: str, form: XmlCallForm, schemas: Schemas | None = None) -> list[Call] | None:
    """Every call in ``text`` (one or several, whitespace between); None unless ``text`` is only calls."""
    calls: list[Call] = []
    position = _space(text, 0)
    while position < len(text):
        read = _call(text, position, form, schemas)
        if read is None:
            return None
        call, position = read
        calls.append(call)
        position = _space(text, position)
    return calls or None


def _call(text: str, position: int, form: XmlCallForm, schemas: Schemas | None) -> tuple[Call, int] | None:
    """The call that starts at ``position`` and where it ends; None when none does."""
    position = _expect(text, position, form.name_begin)
    end = text.find(_first(form.name_end), position) if position >= 0 else -1
    if end < 0 <= position and not form.name_end.strip():  # a name ended by a line break may end the block
        end = len(text)
    if end < 0 or not tag_name(name := text[position:end].strip()) or '"' in name:
        return None
    position = _expect(text, end, form.name_end)
    if form.numbered and position >= 0:
        digits = _space(text, position)
        while digits < len(text) and text[digits].isdigit():
            digits += 1
        position = _expect(text, digits, form.numbered) if digits > position else -1
    arguments: dict[str, Any] = {}
    body = _space(text, position) if form.json_body and position >= 0 else -1
    if 0 <= body < len(text) and text[body] == "{":
        try:
            decoded, position = json.JSONDecoder().raw_decode(text, body)
        except ValueError:
            return None
        if not isinstance(decoded, dict):
            return None
        arguments = decoded
    while position >= 0 and (member := _member(text, position, form, schemas, name)) is not None:
        key, value, position = member
        arguments[key] = value
    position = _expect(text, position, form.call_end) if position >= 0 else -1
    return None if position < 0 else ((name, json.dumps(arguments, ensure_ascii=False)), position)


def _member(
    text: str, position: int, form: XmlCallForm, schemas: Schemas | None, function: str
) -> tuple[str, Any, int] | None:
    """The member that starts at ``position`` (key, typed value, where it ends); None when none does."""
    dialect = form.arguments
    start = _expect(text, position, dialect.key_begin)
    if start < 0:
        return None
    # The key's end: one spelling, or (DSML, Kimi K3) one before raw text and others before JSON, starting alike.
    ends: list[tuple[str, bool | None]] = [(dialect.key_end, True if dialect.json_key_end else None)]
    ends += [(spelling, False) for spelling in (dialect.json_key_end, *form.json_key_ends) if spelling]
    key_stop = min((found for spelling, _ in ends if (found := text.find(_first(spelling), start)) >= 0), default=-1)
    if key_stop < 0 or not tag_name(key := text[start:key_stop].strip()) or '"' in key:
        return None
    matched = next(((end, raw) for spelling, raw in ends if (end := _expect(text, key_stop, spelling)) >= 0), None)
    if matched is None:
        return None
    value_start, raw = matched
    read = _value_text(text, value_start, form)
    if read is None:
        return None
    value, position = read
    return key, _typed(value, argument_schema(schemas, function, key), raw), position


def _value_text(text: str, position: int, form: XmlCallForm) -> tuple[str, int] | None:
    """A value's text (less one line break each side, CDATA unwrapped) and where its member ends."""
    closing = _first(form.arguments.value_end)
    head = _space(text, position)
    if form.cdata and text.startswith(CDATA_BEGIN, head):
        inner_end = text.find(CDATA_END, head + len(CDATA_BEGIN))
        if inner_end < 0 or not text.startswith(closing, after := _space(text, inner_end + len(CDATA_END))):
            return None
        value, end = text[head + len(CDATA_BEGIN) : inner_end], after
    else:
        end = text.find(closing, position)
        if end < 0:
            return None
        value = text[position:end].removeprefix("\n").removesuffix("\n")
    position = _expect(text, end, form.arguments.value_end)
    return None if position < 0 else (value, position)


def _typed(raw: str, schema: Any, written_raw: bool | None) -> Any:
    """A value from its text: ``written_raw`` True (the markup says raw text) keeps it text where the schema
    allows a string; otherwise it is typed by the schema as Qwen3-Coder's values are."""
    if written_raw:
        types = json_types(schema)
        if types is None or "string" in types:
            return raw
    return typed_value(raw, schema)


def _first(literal: str) -> str:
    """The first whitespace-separated piece of a markup literal: what is searched for to find it."""
    pieces = literal.split()
    return pieces[0] if pieces else literal


def _space(text: str, position: int) -> int:
    """The first position at or after ``position`` that is not whitespace."""
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _expect(text: str, position: int, literal: str) -> int:
    """Where ``literal`` ends when the text at ``position`` is it, whitespace free around and inside its
    pieces (``<invoke name="`` read in ``<invoke  name="``); -1 when it is not. An empty literal matches."""
    for piece in literal.split():
        position = _space(text, position)
        if not text.startswith(piece, position):
            return -1
        position += len(piece)
    return position


def solar_open_calls(text: str) -> list[Call] | None:
    """The calls in Solar Open's section (its tokens taken off): each ``<|tool_call:begin|>`` the model's own
    call id, the name after ``<|tool_call:name|>``, the JSON arguments after ``<|tool_call:args|>``."""
    try:
        return delimited_calls(text, SOLAR_CALL_BEGIN, SOLAR_ARGS, SOLAR_CALL_END, _solar_call)
    except RecursionError:  # arguments nested past the JSON decoder's stack ("[[[[..."): not a call
        return None


def _solar_call(head: str, body: str) -> Call | None:
    """``ID<|tool_call:name|>NAME`` and the arguments; the model's id is not kept (ids are the server's)."""
    _, named, name = head.partition(SOLAR_NAME)
    arguments = json_object(body)
    name = name.strip()
    return (name, arguments) if named and tag_name(name) and arguments is not None else None


# MiniMax-M3: every tag after the namespace token; a value is text, or elements (an object's members by name,
# an array's as <item>) nested at most this deep.
M3_INVOKE, M3_INVOKE_END = f'{MINIMAX_NS}<invoke name="', f"{MINIMAX_NS}</invoke>"
MAX_NESTING = 16


def minimax_m3_calls(text: str, schemas: Schemas | None = None) -> list[Call] | None:
    """The calls in a MiniMax-M3 ``<tool_call>`` section (its tags taken off)::

        ]<]minimax[>[<invoke name="f">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>

    A value holding elements is an object (or, all ``<item>``, an array) of values read the same way; a
    value without is typed by the schema as Qwen3-Coder's are (JSON where a grammar wrote an object)."""
    calls: list[Call] = []
    position = _space(text, 0)
    while position < len(text):
        position = _expect(text, position, M3_INVOKE)
        end = text.find('">', position) if position >= 0 else -1
        if end < 0 or not tag_name(name := text[position:end].strip()) or '"' in name:
            return None
        members = _elements(text, end + 2, M3_INVOKE_END)
        if members is None:
            return None
        read, position = members
        arguments = {}
        for key, raw in read:
            value = _nested(raw, argument_schema(schemas, name, key), 1)
            if value is _NOT_READ:
                return None
            arguments[key] = value
        calls.append((name, json.dumps(arguments, ensure_ascii=False)))
        position = _space(text, position)
    return calls or None


def _elements(text: str, position: int, closing: str | None) -> tuple[list[tuple[str, str]], int] | None:
    """The elements from ``position`` up to ``closing`` (None: the end of the text): (name, inner text) each,
    and where they end; None when the text there is not only elements."""
    elements: list[tuple[str, str]] = []
    while True:
        position = _space(text, position)
        if closing is not None and text.startswith(closing, position):
            return elements, position + len(closing)
        if closing is None and position == len(text):
            return elements, position
        if not text.startswith(MINIMAX_NS + "<", position):
            return None
        start = position + len(MINIMAX_NS) + 1
        end = text.find(">", start)
        if end < 0 or not tag_name(name := text[start:end]) or name.startswith("/"):
            return None
        inner = _inner(text, end + 1, name)
        if inner is None:
            return None
        value_end, position = inner
        elements.append((name, text[end + 1 : value_end]))


def _inner(text: str, position: int, name: str) -> tuple[int, int] | None:
    """Where element ``name``'s inner text (from ``position``) ends and where its closing tag ends: the closing
    tag that balances the openings of the same name met on the way (nested elements may share a name)."""
    opening, closing = f"{MINIMAX_NS}<{name}>", f"{MINIMAX_NS}</{name}>"
    depth, close = 1, text.find(closing, position)
    while close >= 0:  # each search starts past the last one: linear in the text
        open_ = text.find(opening, position, close)
        if open_ >= 0:
            depth, position = depth + 1, open_ + len(opening)
            continue
        depth, position = depth - 1, close + len(closing)
        if depth == 0:
            return close, position
        close = text.find(closing, position)
    return None


_NOT_READ = object()  # a nested value that is not well-formed (None is a value: JSON's null)


def _nested(raw: str, schema: Any, depth: int) -> Any:
    """A MiniMax-M3 value: elements as an object or array (by the schema, else by their names), else text
    typed by the schema; _NOT_READ when its elements are not well-formed or nest past MAX_NESTING."""
    if not raw.lstrip().startswith(MINIMAX_NS + "<"):
        return typed_value(raw, schema)
    read = _elements(raw, 0, None) if depth <= MAX_NESTING else None
    if read is None:
        return _NOT_READ
    elements, _ = read
    types = json_types(schema)
    schema = schema if isinstance(schema, dict) else {}
    if "array" in types if types else all(name == "item" for name, _ in elements):
        items = [_nested(inner, schema.get("items"), depth + 1) for _, inner in elements]
        return _NOT_READ if any(item is _NOT_READ for item in items) else items
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    members = {name: _nested(inner, properties.get(name), depth + 1) for name, inner in elements}
    return _NOT_READ if any(value is _NOT_READ for value in members.values()) else members
