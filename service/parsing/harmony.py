"""gpt-oss's harmony format: a turn of messages on channels, read as reasoning, content and tool calls.

The prompt ends with ``<|start|>assistant``; the model then writes messages, each a header up to
``<|message|>``, a body, and ``<|end|>`` (more follows), ``<|call|>`` or ``<|return|>`` (the turn
ends; the engine may leave that last token out)::

    <|channel|>analysis<|message|>Thinking...<|end|><|start|>assistant<|channel|>final<|message|>Answer.<|return|>
    <|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"city":"Paris"}<|call|>

The recipient (``to=functions.NAME``) may also stand in the role part of the header, before
``<|channel|>`` (as the chat template writes history). ``analysis`` is reasoning; a message to
``functions.NAME`` is a call (its body a JSON object); anything else (``final``, a ``commentary``
preamble) is content. Harmony is one markup for the whole turn, so one reader takes all of it
rather than a reasoning splitter followed by a tool parser.
"""

from __future__ import annotations

import json
import re

from ovserve.service.parsing.pieces import (
    ContentDelta,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
)
from ovserve.service.parsing.reasoning import ThinkSplitter
from ovserve.service.parsing.text import TrimmedText, find_first, partial_tag_length
from ovserve.service.parsing.tools import CallIds
from ovserve.service.parsing.turn import TurnParser

START, CHANNEL, MESSAGE, CONSTRAIN = "<|start|>", "<|channel|>", "<|message|>", "<|constrain|>"
END, CALL, RETURN = "<|end|>", "<|call|>", "<|return|>"
TERMINATORS = (END, CALL, RETURN)
HEADER_OPENINGS = (START, CHANNEL, "to=")  # how a message's header may begin (the first one lacks <|start|>)
FUNCTIONS = "functions."  # the recipient namespace of the request's tools
# A header: [<|start|>assistant] [to=RECIPIENT] <|channel|>CHANNEL [to=RECIPIENT] [[<|constrain|>]TYPE]
HEADER = re.compile(
    r"(?:<\|start\|>\s*assistant)?\s*(?:to=(?P<before>[^\s<]+))?\s*<\|channel\|>\s*(?P<channel>\w+)"
    r"\s*(?:to=(?P<after>[^\s<]+))?\s*(?:<\|constrain\|>)?\s*[\w-]*\s*"
)


class _Text:
    """Reasoning or content across messages: each body trimmed at its tags, bodies a line apart."""

    def __init__(self, piece: type[ReasoningDelta] | type[ContentDelta]) -> None:
        self._piece = piece
        self._body = TrimmedText(strip_leading=True)
        self._wrote = False  # an earlier message wrote some
        self._separate = False  # the next text written begins a new message

    def begin(self) -> None:
        self._body = TrimmedText(strip_leading=True)
        self._separate = self._wrote

    def push(self, pieces: list[Piece], text: str) -> None:
        body = self._body.push(text)
        if body:
            if self._separate:
                body, self._separate = "\n" + body, False
            pieces.append(self._piece(body))
            self._wrote = True

    def end(self) -> None:
        self._body.cut()  # whitespace before a tag (or the end of the output) is not text


class HarmonyReader:
    """Harmony text in, reasoning, content and tool-call pieces out (a ``ToolParser``).

    Headers are held until ``<|message|>``; a call's body until its message ends, then it is a call
    if its body is a JSON object, else the message's raw text as content (as with ``calls`` false,
    when the request offered no tools). Text that does not start as a header is content.
    """

    def __init__(self, ids: CallIds, *, calls: bool = True) -> None:
        self._ids = ids
        self._calls_on = calls
        self._reasoning, self._content = _Text(ReasoningDelta), _Text(ContentDelta)
        self._state = "start"  # start | header | text | held
        self._text = self._content  # where the current body goes (state text)
        self._header = ""  # the current held message's header, as written (state held)
        self._name = ""  # the function a held body calls ("" for a message kept as it is)
        self._buffer = ""
        self.calls = 0

    @property
    def in_reasoning(self) -> bool:
        """Inside an analysis message (not ended yet)."""
        return self._state == "text" and self._text is self._reasoning

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta."""
        self._buffer += text
        pieces: list[Piece] = []
        while self._step(pieces):
            pass
        return pieces

    def finish(self) -> list[Piece]:
        """What is still held back, at the end of the output: a message may simply end."""
        pieces: list[Piece] = []
        if self._state == "text":
            self._text.push(pieces, self._buffer)
            self._text.end()
        elif self._state == "held":
            self._held_message(pieces, self._buffer)
        elif self._buffer.strip():  # a header cut off, or text that began like one
            self._raw(pieces, self._buffer)
        self._buffer = ""
        return pieces

    def _step(self, pieces: list[Piece]) -> bool:
        """Move on as far as the buffer allows; whether to look again."""
        if self._state == "start":
            head = self._buffer.lstrip()
            if any(head.startswith(opening) for opening in HEADER_OPENINGS):
                self._state = "header"
            elif any(opening.startswith(head) for opening in HEADER_OPENINGS):
                return False  # maybe a header, split across deltas
            else:  # plain text: content until a tag says otherwise
                self._state, self._text = "text", self._content
                self._content.begin()
            return True
        if self._state == "header":
            position = self._buffer.find(MESSAGE)
            if position < 0:
                return False
            self._open(self._buffer[:position])
            self._buffer = self._buffer[position + len(MESSAGE) :]
            return True
        position, tag = find_first(self._buffer, (*TERMINATORS, START, CHANNEL))
        if position < 0:  # the message goes on
            if self._state == "text":
                ready = len(self._buffer) - partial_tag_length(self._buffer, (*TERMINATORS, START, CHANNEL))
                self._text.push(pieces, self._buffer[:ready])
                self._buffer = self._buffer[ready:]
            return False
        # A terminator ends the message; a new header without one ends it too (and is read next).
        ending = tag if tag in TERMINATORS else ""
        body, self._buffer = self._buffer[:position], self._buffer[position + len(ending) :]
        if self._state == "text":
            self._text.push(pieces, body)
            self._text.end()
        else:
            self._held_message(pieces, body, ending)
        self._state = "start"
        return True

    def _open(self, header: str) -> None:
        """A message's header is complete: where its body goes."""
        match = HEADER.fullmatch(header.strip())
        recipient = (match["before"] or match["after"] or "") if match else ""
        if match is not None and not recipient:
            self._text = self._reasoning if match["channel"] == "analysis" else self._content
            self._state = "text"
            self._text.begin()
            return
        # A message to a recipient (or a header not understood): held whole, a call or kept as written.
        callable_ = recipient.startswith(FUNCTIONS) and self._calls_on
        self._state, self._header = "held", header
        self._name = recipient.removeprefix(FUNCTIONS) if callable_ else ""

    def _held_message(self, pieces: list[Piece], body: str, ending: str = "") -> None:
        """A call when its body is a JSON object; otherwise the message as it was written, as content."""
        try:
            arguments = json.loads(body) if self._name else None
        except (ValueError, RecursionError):  # RecursionError: JSON nested past the parser's stack
            arguments = None
        if not isinstance(arguments, dict):
            self._raw(pieces, self._header + MESSAGE + body + ending)
            return
        index, self.calls = self.calls, self.calls + 1
        pieces += [
            ToolCallStarted(index, self._ids(index, self._name), self._name),
            ToolCallArguments(index, json.dumps(arguments, ensure_ascii=False)),
            ToolCallFinished(index),
        ]

    def _raw(self, pieces: list[Piece], text: str) -> None:
        """Text kept as written (a malformed call, a message to a recipient that is not a tool)."""
        self._content.begin()
        self._content.push(pieces, text)
        self._content.end()


class HarmonyTurnParser(TurnParser):
    """A ``TurnParser`` whose turn a ``HarmonyReader`` reads (after a ``<think>`` block, if ``reasoning``)."""

    def __init__(self, reader: HarmonyReader, reasoning: ThinkSplitter | None = None, max_calls: int | None = None):
        super().__init__(reasoning, reader, max_calls)
        self._reader = reader

    def finish(self) -> list[Piece]:
        """Pieces for what is still held back; the output has ended (maybe inside an analysis message)."""
        pieces = super().finish()
        self.result.in_reasoning = self.result.in_reasoning or self._reader.in_reasoning
        return pieces
