"""Decoders for the JSON-argument call markups of ovserve.service.parsing.formats_json's families, and their markup.

Each decoder reads the text its parser hands it (a tagged block's inside, or the reply's tail from a marker
on) and returns the calls, or None when the text is not a well-formed call list, so the text stays content.
All of them read with ``json.JSONDecoder`` only (no regular expressions), so any input is read in one pass.
"""

from __future__ import annotations

import json
from typing import Any

from ovserve.service.parsing.calls import Call, json_sequence, named_call, named_call_list
from ovserve.service.parsing.markup import CallMarkup, ThinkMarkup, tag_name
from ovserve.service.parsing.pieces import Piece
from ovserve.service.parsing.tools import CallIds, TrailingCallParser

# Functionary v3.1 (meetkai-functionary-medium-v3.1): <function=NAME>{...}</function>, a call a block.
FUNCTION_OPEN, FUNCTION_CLOSE = "<function=", "</function>"
FUNCTIONARY_V31 = CallMarkup("", FUNCTION_OPEN + "{name}>", FUNCTION_CLOSE, "", "", name="bare", tag=FUNCTION_OPEN)
# Functionary v3.2: every message opens with a recipient, ">>>all\n" for text, ">>>NAME\n" for a call of NAME.
# The generation prompt already ends with ">>>", so the reply starts at the recipient's name, and a call that
# follows another opens with ">>>" again: the markup writes it as the separator.
RECIPIENT, TEXT_RECIPIENT = ">>>", "all"  # ">>>all\n" opens text
FUNCTIONARY_V32 = CallMarkup("", "{name}\n", "", RECIPIENT, "", name="bare")
# Nemotron Nano v2: a JSON list of calls (or one call object) between <TOOLCALL> and </TOOLCALL>.
NEMOTRON_OPEN, NEMOTRON_CLOSE = "<TOOLCALL>", "</TOOLCALL>"
NAMED_ARGUMENTS = '{"name": {name}, "arguments": '
NEMOTRON_JSON = CallMarkup(NEMOTRON_OPEN + "[", NAMED_ARGUMENTS, "}", ", ", "]" + NEMOTRON_CLOSE, tag=NEMOTRON_OPEN)
# Apriel 1.5 / 1.6, Jamba, Hunyuan A13B: a JSON list between <tool_calls> and </tool_calls>.
TOOL_CALLS_OPEN, TOOL_CALLS_CLOSE = "<tool_calls>", "</tool_calls>"
APRIEL = CallMarkup(TOOL_CALLS_OPEN + "[", NAMED_ARGUMENTS, "}", ", ", "]" + TOOL_CALLS_CLOSE, tag=TOOL_CALLS_OPEN)
# MiniMax-M1: the same tags, a call object a line.
MINIMAX = CallMarkup(TOOL_CALLS_OPEN + "\n", NAMED_ARGUMENTS, "}", "\n", "\n" + TOOL_CALLS_CLOSE, tag=TOOL_CALLS_OPEN)
# Command R7B / Command A / Cohere2 MoE: a JSON list of {"tool_call_id", "tool_name", "parameters"} objects in an
# action block; the template numbers the calls of the conversation from 0.
ACTION_OPEN, ACTION_CLOSE = "<|START_ACTION|>", "<|END_ACTION|>"
COMMAND_R7B = CallMarkup(
    ACTION_OPEN + "[",
    '{"tool_call_id": "{index}", "tool_name": {name}, "parameters": ',
    "}",
    ", ",
    "]" + ACTION_CLOSE,
    tag=ACTION_OPEN,
)
# Command R / R+ (tool_use template): "Action:" then a fenced JSON list of {"tool_name", "parameters"} objects.
ACTION_WORD, JSON_FENCE, FENCE = "Action:", "```json", "```"
COMMAND_R_PLUS = CallMarkup(
    f"{ACTION_WORD}\n{JSON_FENCE}\n[", '{"tool_name": {name}, "parameters": ', "}", ", ", f"]\n{FENCE}"
)
# The pseudo-tool Command R+'s template tells the model to call when it answers without tools: not a call.
DIRECT_ANSWER = "directly-answer"
# InternLM 2 / 2.5: an action block to the plugin executor, a call a block.
PLUGIN_OPEN, PLUGIN_CLOSE = "<|action_start|><|plugin|>", "<|action_end|>"
INTERNLM = CallMarkup("", PLUGIN_OPEN + "\n" + NAMED_ARGUMENTS, "}" + PLUGIN_CLOSE, "\n", "", tag=PLUGIN_OPEN)
# granite-20b-functioncalling: each call after a <function_call> marker, to the end of the reply.
FUNCTION_CALL = "<function_call>"
GRANITE_20B_FC = CallMarkup("", FUNCTION_CALL + " " + NAMED_ARGUMENTS, "}", "\n", "")
# LongCat-Flash: Hermes' blocks under tags of its own.
LONGCAT_OPEN, LONGCAT_CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"
LONGCAT = CallMarkup("", LONGCAT_OPEN + "\n" + NAMED_ARGUMENTS, "}\n" + LONGCAT_CLOSE, "\n", "", tag=LONGCAT_OPEN)
# xLAM: the reply is a bare JSON list of calls (a ```json fence around it is read too).
XLAM = CallMarkup("[", NAMED_ARGUMENTS, "}", ", ", "]")

# Reasoning blocks. Cohere's are special tokens written back to back (nothing between the block and the reply),
# and the reply after them is wrapped: Command R7B / A in <|START_RESPONSE|>, Cohere2 MoE in <|START_TEXT|>.
COHERE_THINK = ThinkMarkup(
    "<|START_THINKING|>", "<|END_THINKING|>", after="", reply=("<|START_RESPONSE|>", "<|END_RESPONSE|>")
)
COHERE2_MOE_THINK = ThinkMarkup(
    "<|START_THINKING|>", "<|END_THINKING|>", after="", reply=("<|START_TEXT|>", "<|END_TEXT|>")
)
# Apriel: reasoning from "Here are my reasoning steps:" (1.6's prompt writes it, 1.5's model does, 1.6's template
# leaves it out of a past turn) to "[BEGIN FINAL RESPONSE]": implicit, the reply starts inside the block whether
# or not the words are written (vLLM's apriel parser: everything before the marker); 1.5's prompt asks for
# "[END FINAL RESPONSE]" after the reply. 1.5's template with add_thoughts set asks for the reason for a call between
# <thinking> and </thinking> before it: that block is reasoning too (llama.cpp's Apriel 1.5 handler reads it so).
APRIEL_THINK = ThinkMarkup(
    "Here are my reasoning steps:",
    "[BEGIN FINAL RESPONSE]",
    other_begins=("<thinking>",),
    other_ends=("</thinking>",),
    after="\n",
    reply=("", "[END FINAL RESPONSE]"),
    implicit=True,
)
LONGCAT_THINK = ThinkMarkup("<longcat_think>", "</longcat_think>")


def named_calls(text: str) -> list[Call] | None:
    """Named calls (``{"name": ..., "arguments": {...}}``): one JSON list of them, one of them alone, or several
    one after another with whitespace between (MiniMax writes a line each)."""
    values = json_sequence(text, " \t\r\n")
    if values is not None and len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    calls = [named_call(value) for value in values or []]
    return None if not calls or None in calls else calls  # type: ignore[return-value]


def functionary_v31_call(block: str) -> list[Call] | None:
    """What follows ``<function=`` up to ``</function>``: the name, ``>``, then the arguments object."""
    name, closed, arguments = block.partition(">")
    decoded = _one_object(arguments)
    if not closed or not tag_name(name) or decoded is None:
        return None
    return [(name, json.dumps(decoded, ensure_ascii=False))]


def functionary_v32_calls(text: str) -> list[Call] | None:
    """Functionary v3.2's calls: ``NAME\\n{...}``, each after the first opened by ``>>>`` (the first may be too)."""
    calls: list[Call] = []
    rest = text.strip()
    while rest:
        name, newline, body = rest.removeprefix(RECIPIENT).partition("\n")
        if not newline or not tag_name(name) or name == TEXT_RECIPIENT:
            return None
        decoded, rest = _leading_object(body)
        if decoded is None or (rest and not rest.startswith(RECIPIENT)):
            return None
        calls.append((name, json.dumps(decoded, ensure_ascii=False)))
    return calls or None


def cohere_calls(text: str) -> list[Call] | None:
    """Inside Command R7B's action block: a JSON list of ``{"tool_call_id", "tool_name", "parameters"}`` objects
    (the ids are the template's call numbers: a new id is given to each call)."""
    values = json_sequence(text, " \t\r\n")
    if values is None or len(values) != 1 or not isinstance(values[0], list) or not values[0]:
        return None
    calls = [_cohere_call(value) for value in values[0]]
    return None if None in calls else calls  # type: ignore[return-value]


def command_r_plus_calls(text: str) -> list[Call] | None:
    """Command R / R+: ``Action:`` then a JSON list of ``{"tool_name", "parameters"}`` objects, fenced or not.

    A ``directly-answer`` call is left out: the model says so when it answers without tools (a list of that
    alone is an empty list, no call, and the action block is not content)."""
    body = text.strip()
    if not body.startswith(ACTION_WORD):
        return None
    calls = cohere_calls(_unfenced(body.removeprefix(ACTION_WORD)))
    return None if calls is None else [call for call in calls if call[0] != DIRECT_ANSWER]


def function_call_calls(text: str) -> list[Call] | None:
    """granite-20b-functioncalling: ``<function_call> {"name": ..., "arguments": {...}}``, one call a marker."""
    calls: list[Call] = []
    rest = text.strip()
    while rest:
        if not rest.startswith(FUNCTION_CALL):
            return None
        value, rest = _leading_value(rest.removeprefix(FUNCTION_CALL))
        call = named_call(value)
        if call is None:
            return None
        calls.append(call)
    return calls or None


def xlam_calls(text: str) -> list[Call] | None:
    """xLAM: the reply is one JSON list of named calls, bare or in a ```json fence."""
    return named_call_list(_unfenced(text))


class RecipientCallParser:
    """Functionary v3.2's reply: its first recipient says what the message is (the prompt wrote the ``>>>``).

    ``all\\n`` opens text, whose own recipient is not content; any later ``>>>`` opens calls up to the end. Any
    other name opens a call, and then the whole reply is read as calls (text again if it is not).
    """

    def __init__(self, ids: CallIds) -> None:
        self._ids = ids
        self._head = ""  # the reply so far, while its first recipient is not known
        self._tail: TrailingCallParser | None = None
        self._markup: CallMarkup | None = None  # the format's, passed to the tail (a cut list keeps its calls)

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return 0 if self._tail is None else self._tail.calls

    def keep_complete_calls(self, markup: CallMarkup) -> None:
        """Read a call list the output cuts short by ``markup``: its complete calls are kept."""
        self._markup = markup

    def _new_tail(self, *markers: tuple[str, ...]) -> TrailingCallParser:
        tail = TrailingCallParser(functionary_v32_calls, self._ids, *markers)
        if self._markup is not None:
            tail.keep_complete_calls(self._markup)
        return tail

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        if self._tail is not None:
            return self._tail.feed(text)
        self._head += text
        text_opening = TEXT_RECIPIENT + "\n"
        recipient = self._head.lstrip().removeprefix(RECIPIENT)
        if recipient.startswith(text_opening):
            self._tail = self._new_tail((), (RECIPIENT,))
            return self._tail.feed(recipient.removeprefix(text_opening))
        if any(opening.startswith(self._head.lstrip()) for opening in (RECIPIENT + text_opening, text_opening)):
            return []  # still may be the text recipient
        self._tail = self._new_tail(("",))  # "": from the start on
        return self._tail.feed(self._head)

    def finish(self) -> list[Piece]:
        """What is still held back, at the end of the output."""
        if self._tail is None:  # a reply shorter than its recipient: what there is, as text
            self._tail = self._new_tail(())
            return self._tail.feed(self._head) + self._tail.finish()
        return self._tail.finish()


def _cohere_call(value: Any) -> Call | None:
    if not isinstance(value, dict):
        return None
    return named_call({"name": value.get("tool_name"), "arguments": value.get("parameters", {})})


def _unfenced(text: str) -> str:
    """``text`` without a Markdown code fence around it (```json ... ``` or ``` ... ```)."""
    body = text.strip()
    if body.startswith(FENCE) and body.endswith(FENCE) and len(body) >= 2 * len(FENCE):
        body = body.removeprefix(JSON_FENCE) if body.startswith(JSON_FENCE) else body.removeprefix(FENCE)
        body = body.removesuffix(FENCE)
    return body


def _leading_value(text: str) -> tuple[Any, str]:
    """The JSON value at the start of ``text`` (after whitespace) and the stripped rest; (None, "") if none."""
    body = text.lstrip()
    try:
        value, end = json.JSONDecoder().raw_decode(body)
    except ValueError:
        return None, ""
    return value, body[end:].strip()


def _leading_object(text: str) -> tuple[dict[str, Any] | None, str]:
    value, rest = _leading_value(text)
    return (value, rest) if isinstance(value, dict) else (None, "")


def _one_object(text: str) -> dict[str, Any] | None:
    """``text`` as exactly one JSON object (whitespace around it allowed); None otherwise."""
    value, rest = _leading_object(text)
    return None if rest else value
