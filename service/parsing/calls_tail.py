"""Decoders for ovserve.service.parsing.formats_tail's families (the long tail of vLLM's tool parsers), and their tags.

Each reads the text its parser hands it (a tagged block's or section's inside) and returns the calls, or None
when the text is not exactly a well-formed call list, so the caller keeps it as content::

    Hunyuan 4     <tool_calls><tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>...
    K2 Horizon    the same under ifm| tags: <ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key>...
    PLaMo 3       <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>
                  get_weather<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>{"city": "Paris"}...
    Step-Audio 2  <tool_call>function\\nget_weather\\n{"city": "Paris"}</tool_call>
    HyperCLOVA X  assistant -> tool/function_call\n[{"name": "get_weather", "arguments": {"city": "Paris"}}]
    Inkling       <|content_invoke_tool_json|>{"name": "get_weather", "args": {"city": "Paris"}}<|end_message|>
    CWM           <tool: function>\\nget_weather {"city": "Paris"}\\n</tool>; a command: <tool: x>\\nbash ls\\n</tool>

The scans only move forward with ``str.find`` / ``str.partition``: linear in the text, no regular expressions.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovserve.service.parsing.calls import Call, json_object
from ovserve.service.parsing.calls_json import named_calls
from ovserve.service.parsing.markup import tag_name
from ovserve.service.parsing.tagged_calls import Schemas, argument_schema, typed_value

PLAMO_REQUESTS, PLAMO_REQUESTS_END = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"
PLAMO_REQUEST, PLAMO_REQUEST_END = "<|plamo:begin_tool_request:plamo|>", "<|plamo:end_tool_request:plamo|>"
PLAMO_NAME, PLAMO_NAME_END = "<|plamo:begin_tool_name:plamo|>", "<|plamo:end_tool_name:plamo|>"
PLAMO_ARGS, PLAMO_ARGS_END = "<|plamo:begin_tool_arguments:plamo|>", "<|plamo:end_tool_arguments:plamo|>"
# Later PLaMo 3 checkpoints say the arguments are JSON (as gpt-oss does) before writing them; earlier ones do not.
PLAMO_JSON = "<|plamo:constrain|>json<|plamo:msg|>"
# Step-Audio 2: the call's kind on the block's first line (always "function"), its name on the second.
STEP_AUDIO_KIND = "function"
# Inkling: every block a content kind between special tokens; a call's block holds {"name": ..., "args": {...}}.
INKLING_CALL, INKLING_END = "<|content_invoke_tool_json|>", "<|end_message|>"
INKLING_ARGUMENTS = ("args", "arguments", "parameters")  # the key Inkling writes, then those vLLM's parser reads too
# HyperCLOVA X SEED Think 14B: a call list is a message of its own to the function-call role, ChatML's special
# tokens around it (dropped by the detokenizer, or kept and taken off when its reasoning format is on): its
# header's text "assistant -> tool/function_call", then a JSON list of {"name", "arguments"|"parameters"}.
HCX_ROLE, HCX_ASSISTANT, HCX_END = "-> tool/function_call", "assistant", "<|im_end|>"
# CWM: a <tool: LABEL> block (the label is informational), the name and the JSON arguments in it, or a command line
# (a shell tool's: the arguments are then {"command": LINE}).
CWM_OPEN, CWM_CLOSE = "<tool:", "</tool>"
CWM_COMMAND = "command"
CWM_NOT_NAME = ("{", "[", '"')  # how JSON opens: not a name, and arguments that must be JSON


@dataclass(frozen=True)
class KeyedTags:
    """GLM-like members with no separator after the name: ``NAME key_begin KEY key_end value_begin VALUE
    value_end ...`` (Hunyuan 4's and K2 Horizon's calls)."""

    key_begin: str
    key_end: str
    value_begin: str
    value_end: str

    @property
    def tags(self) -> tuple[str, ...]:
        """The member tags (special tokens in these families' vocabularies, which the engine must keep)."""
        return (self.key_begin, self.key_end, self.value_begin, self.value_end)


HY_V4_KEYS = KeyedTags("<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
IFM_KEYS = KeyedTags("<ifm|arg_key>", "</ifm|arg_key>", "<ifm|arg_value>", "</ifm|arg_value>")


def keyed_call(block: str, tags: KeyedTags, schemas: Schemas | None = None) -> list[Call] | None:
    """The one call in ``block``: its name up to the first key, then its members (whitespace between tags),
    each value typed by the tool's schema; None when the block is anything else."""
    first = block.find(tags.key_begin)
    name = (block if first < 0 else block[:first]).strip()
    if not tag_name(name):
        return None
    arguments: dict[str, Any] = {}
    position = len(block) if first < 0 else first
    while position < len(block):
        position = _after(block, position, tags.key_begin)
        key_end = block.find(tags.key_end, position) if position >= 0 else -1
        if key_end < 0 or not (key := block[position:key_end].strip()) or key in arguments:
            return None
        position = _after(block, key_end + len(tags.key_end), tags.value_begin)
        value_end = block.find(tags.value_end, position) if position >= 0 else -1
        if value_end < 0:
            return None
        arguments[key] = typed_value(block[position:value_end], argument_schema(schemas, name, key))
        position = _space(block, value_end + len(tags.value_end))
    return [(name, json.dumps(arguments, ensure_ascii=False))]


def tagged_blocks(
    text: str, open_tag: str, close_tag: str, decode: Callable[[str], list[Call] | None]
) -> list[Call] | None:
    """The calls of a section that holds only ``open_tag ... close_tag`` blocks (whitespace between), each read
    by ``decode``; None when anything else stands in it or a block is not a call."""
    calls: list[Call] = []
    rest = text.strip()
    while rest:
        if not rest.startswith(open_tag):
            return None
        block, closed, rest = rest[len(open_tag) :].partition(close_tag)
        decoded = decode(block) if closed else None
        if decoded is None:
            return None
        calls += decoded
        rest = rest.lstrip()
    return calls or None


def plamo3_request(block: str) -> list[Call] | None:
    """One PLaMo 3 request's inside: the name between its tags, then the JSON arguments between theirs (after
    the JSON constraint's tags, where the checkpoint writes them)."""
    name, named, rest = block.strip().removeprefix(PLAMO_NAME).partition(PLAMO_NAME_END)
    if not block.strip().startswith(PLAMO_NAME) or not named or not tag_name(name.strip()):
        return None
    rest = rest.strip()
    if not rest.startswith(PLAMO_ARGS) or not rest.endswith(PLAMO_ARGS_END):
        return None
    arguments = json_object(rest[len(PLAMO_ARGS) : -len(PLAMO_ARGS_END)].strip().removeprefix(PLAMO_JSON))
    return None if arguments is None else [(name.strip(), arguments)]


def plamo3_calls(text: str) -> list[Call] | None:
    """The requests inside PLaMo 3's tool-requests section."""
    return tagged_blocks(text, PLAMO_REQUEST, PLAMO_REQUEST_END, plamo3_request)


def step_audio_2_call(block: str) -> list[Call] | None:
    """Step-Audio 2's ``<tool_call>`` block: ``function``, the name and the JSON arguments, a line each."""
    kind, _, rest = block.strip().partition("\n")
    name, _, body = rest.partition("\n")
    arguments = json_object(body)
    if kind.strip() != STEP_AUDIO_KIND or not tag_name(name.strip()) or arguments is None:
        return None
    return [(name.strip(), arguments)]


def inkling_call(block: str) -> list[Call] | None:
    """Inkling's tool block: one JSON object, its ``name`` and its arguments under ``args``."""
    try:
        value = json.loads(block)
    except (ValueError, RecursionError):  # RecursionError: JSON nested past the decoder's stack
        return None
    if not isinstance(value, dict) or not isinstance(name := value.get("name"), str) or not tag_name(name):
        return None
    key = next((key for key in INKLING_ARGUMENTS if key in value), None)
    arguments = {} if key is None else value[key]
    if not isinstance(arguments, dict) or set(value) - {"name", *INKLING_ARGUMENTS}:
        return None
    return [(name, json.dumps(arguments, ensure_ascii=False))]


def hyperclovax_calls(text: str) -> list[Call] | None:
    """The calls of HyperCLOVA X SEED Think 14B's function-call message: from its role line (after the header's
    "assistant", when the detokenizer kept that) to the end, a JSON list (or one call object)."""
    body = text.strip().removeprefix(HCX_ASSISTANT).lstrip()
    if not body.startswith(HCX_ROLE):
        return None
    return named_calls(body[len(HCX_ROLE) :].strip().removesuffix(HCX_END).rstrip())


def cwm_call(block: str, commands: bool = True) -> list[Call] | None:
    """What follows ``<tool:`` up to ``</tool>``: its label, then ``>`` and the body, whose first word is the
    tool's name and the rest its arguments; or, without ``>`` after the label (the shorthand vLLM reads too),
    the label is the name and the rest after it the arguments. The arguments are a JSON object, or (with
    ``commands``) a command line, ``{"command": REST}``, as vLLM reads a shell tool's body. A rest that opens
    like JSON but is not an object stays text: a broken call, not a command. Without ``commands`` (a block the
    output cut before ``</tool>``, which may hold half a command) only JSON arguments make a call."""
    rest = block.lstrip()
    cut = next((at for at, char in enumerate(rest) if char.isspace() or char == ">"), len(rest))
    label, after = rest[:cut], rest[cut:].lstrip()
    if after.startswith(">"):
        name, payload = [*after[1:].split(None, 1), "", ""][:2]  # the body's first word; the rest, on its line or after
    else:
        name, payload = label, after
    payload = payload.strip()
    if not tag_name(label) or not tag_name(name) or name[0] in CWM_NOT_NAME:
        return None
    if payload.startswith(CWM_NOT_NAME):
        arguments = json_object(payload)
    else:
        arguments = json.dumps({CWM_COMMAND: payload}, ensure_ascii=False) if commands else None
    return None if arguments is None else [(name, arguments)]


def _space(text: str, position: int) -> int:
    """The first position at or after ``position`` that is not whitespace."""
    while position < len(text) and text[position].isspace():
        position += 1
    return position


def _after(text: str, position: int, literal: str) -> int:
    """Where ``literal`` ends when it stands at ``position`` after whitespace; -1 otherwise."""
    position = _space(text, position)
    return position + len(literal) if text.startswith(literal, position) else -1
