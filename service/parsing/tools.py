"""Incremental tool-call parsers: tagged blocks anywhere in the reply, or calls that make up its tail.

Both hold back text that could be the start of their markup, so markup never
reaches the content even when a tag is split across deltas, and buffer a call
until its markup closes: a call is announced only once its JSON is known to be
valid (name first, then the whole arguments object as one fragment).

When the output ends inside a call list (``max_tokens``, a stop string), the
calls completed before the cut are kept and the cut call is dropped
(``ovserve.service.parsing.cut_lists``, from the format's ``CallMarkup``, which
``keep_complete_calls`` gives the parser); a cut call with no call before it
stays text, so nothing is lost when the model wrote no call at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ovserve.service.parsing.calls import Call
from ovserve.service.parsing.cut_lists import closed_short, complete_calls, may_be_whole
from ovserve.service.parsing.markup import CallMarkup
from ovserve.service.parsing.pieces import ContentDelta, Piece, ToolCallArguments, ToolCallFinished, ToolCallStarted
from ovserve.service.parsing.text import TrimmedText, find_first, partial_tag_length

Decoder = Callable[[str], list[Call] | None]
CallIds = Callable[[int, str], str]  # (index of the call in the turn, function name) -> a new call id


def total(decode: Decoder) -> Decoder:
    """``decode``, reading as no call what Python's parsers cannot: values nested past their recursion limit
    (about a thousand ``[`` for json, fewer for ast) raise RecursionError there, which would otherwise end the
    turn's parsing with an error; a model's output is untrusted text."""

    def guarded(text: str) -> list[Call] | None:
        try:
            return decode(text)
        except RecursionError:
            return None

    return guarded


class _CallWriter:
    """Numbers calls and turns them into pieces; keeps the content's whitespace rules."""

    def __init__(self, decode: Decoder, ids: CallIds) -> None:
        self._decode = total(decode)
        self._ids = ids
        self._text = TrimmedText(strip_leading=False)
        self._wrote = False  # some content was passed on
        self._separate = False  # text after a call, following earlier text: a line break between them
        self.calls = 0
        self.markup: CallMarkup | None = None  # the format's, to find the complete calls of a cut list

    def content(self, pieces: list[Piece], text: str) -> None:
        body = self._text.push(text)
        if body:
            if self._separate:
                body, self._separate = "\n" + body, False
            pieces.append(ContentDelta(body))
            self._wrote = True

    def calls_or_text(self, pieces: list[Piece], markup: str, raw: str) -> None:
        """Pieces of the calls in ``markup``, or ``raw`` as content when it is not a valid call list."""
        decoded = self._decode(markup.strip())
        if decoded is None:
            self.content(pieces, raw)
            return
        self._write(pieces, decoded)

    def cut_list(self, pieces: list[Piece], text: str, raw: str, closing: str, close_tag: str = "") -> None:
        """Pieces of a call list the output ended in before ``close_tag``: its calls when it may be whole,
        else those complete before the cut (``closing`` is what would close ``text``). The cut call is
        dropped, or is ``raw`` content when no call came before it (the model may have written no call at
        all: nothing is lost)."""
        markup = self.markup
        decoded = self._decode(text.strip()) if markup is None or may_be_whole(text, markup, close_tag) else None
        if decoded is None and (completed := closed_short(text, closing)) is not None:
            decoded = self._decode(completed.strip())
        if decoded is None and markup is not None:
            decoded = complete_calls(self._decode, text, markup, closing)
        if decoded is not None:
            self._write(pieces, decoded)
        elif not self.calls:
            self.content(pieces, raw)

    def _write(self, pieces: list[Piece], decoded: list[Call]) -> None:
        self._text.cut()
        for name, arguments in decoded:
            index, self.calls = self.calls, self.calls + 1
            pieces += [
                ToolCallStarted(index, self._ids(index, name), name),
                ToolCallArguments(index, arguments),
                ToolCallFinished(index),
            ]
        self._text = TrimmedText(strip_leading=True)  # whitespace between and after calls is not content
        self._separate = self._wrote

    def end(self, pieces: list[Piece]) -> None:
        tail = self._text.flush()
        if tail:
            pieces.append(ContentDelta(tail))


@runtime_checkable
class KeepsCompleteCalls(Protocol):
    """A tool parser that reads a call list the output cuts short by its format's markup (``ToolFormat``
    gives it): the call-list parsers here, and any parser built on them that passes the markup on."""

    def keep_complete_calls(self, markup: CallMarkup) -> None:
        """Read a cut list by ``markup``: its complete calls are kept."""
        ...


class CallListParser:
    """What the two parsers share: their call writer, and the markup that tells where a cut list's calls end."""

    def __init__(self, decode: Decoder, ids: CallIds) -> None:
        self._writer = _CallWriter(decode, ids)

    @property
    def calls(self) -> int:
        """Calls made so far."""
        return self._writer.calls

    def keep_complete_calls(self, markup: CallMarkup) -> None:
        """Read a call list the output cuts short by ``markup`` (the format's): its complete calls are kept."""
        self._writer.markup = markup


class TaggedCallParser(CallListParser):
    """Calls inside ``open_tag ... close_tag`` blocks anywhere in the reply: one a block (Hermes / Qwen
    ``<tool_call>``), or a section of several (DeepSeek, Kimi K2), as ``decode`` reads the block."""

    def __init__(
        self, decode: Decoder, ids: CallIds, open_tag: str = "<tool_call>", close_tag: str = "</tool_call>"
    ) -> None:
        super().__init__(decode, ids)
        self._open, self._close = open_tag, close_tag
        self._in_call = False
        self._buffer = ""

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        self._buffer += text
        pieces: list[Piece] = []
        while True:
            if not self._in_call:
                start = self._buffer.find(self._open)
                if start < 0:
                    ready = len(self._buffer) - partial_tag_length(self._buffer, (self._open,))
                    self._writer.content(pieces, self._buffer[:ready])
                    self._buffer = self._buffer[ready:]
                    return pieces
                self._writer.content(pieces, self._buffer[:start])
                self._buffer, self._in_call = self._buffer[start + len(self._open) :], True
            else:
                end = self._buffer.find(self._close)
                if end < 0:
                    return pieces  # the whole block is needed to know the call is valid
                block = self._buffer[:end]
                self._writer.calls_or_text(pieces, block, self._open + block + self._close)
                self._buffer, self._in_call = self._buffer[end + len(self._close) :], False

    def finish(self) -> list[Piece]:
        """What is still held back, at the end of the output."""
        pieces: list[Piece] = []
        if self._in_call:  # no close tag (a stop string, the token limit): a call if its JSON is whole
            raw = self._open + self._buffer
            # The output may end partway into the close tag (a tag of several tokens: Apriel's </tool_calls>,
            # Kimi K3's <|close|>tools<|sep|>): that part is the tag's, not the list's, and would hide its calls.
            block = self._buffer[: len(self._buffer) - partial_tag_length(self._buffer, (self._close,))]
            self._writer.cut_list(pieces, block, raw, self._closing_inside(), self._close)
        elif not self._writer.calls:
            self._writer.content(pieces, self._buffer)
        # else what is held could only begin another block's tag: the start of a cut call, dropped
        self._buffer = ""
        self._writer.end(pieces)
        return pieces

    def _closing_inside(self) -> str:
        """What closes a list before the close tag (LFM2's ``]``); the tag itself is not in a block's text."""
        markup = self._writer.markup
        if markup is None:
            return ""
        at = markup.closing.rfind(self._close)
        return markup.closing[:at] if at >= 0 else markup.closing


class TrailingCallParser(CallListParser):
    """Calls that take up the rest of the reply from a marker on (Llama 3 JSON and pythonic, Mistral,
    Phi-4-mini, Granite).

    ``start_markers`` count only at the start of the reply (``{`` or ``[``
    there begins a call list); ``anywhere_markers`` also after text. From the
    marker on, the text is held to the end and decoded whole.
    """

    def __init__(
        self,
        decode: Decoder,
        ids: CallIds,
        start_markers: tuple[str, ...],
        anywhere_markers: tuple[str, ...] = (),
    ) -> None:
        super().__init__(decode, ids)
        self._start, self._anywhere = start_markers + anywhere_markers, anywhere_markers
        self._state = "start"
        self._buffer = ""

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        self._buffer += text
        pieces: list[Piece] = []
        if self._state == "start":
            head = self._buffer.lstrip()
            if any(head.startswith(marker) for marker in self._start):
                self._state = "calls"
            elif any(marker.startswith(head) for marker in self._start):
                return pieces  # still could be a marker
            else:
                self._state = "text"
        if self._state == "text":
            position, _ = find_first(self._buffer, self._anywhere)
            if position >= 0:
                self._writer.content(pieces, self._buffer[:position])
                self._buffer, self._state = self._buffer[position:], "calls"
            else:
                ready = len(self._buffer) - partial_tag_length(self._buffer, self._anywhere)
                self._writer.content(pieces, self._buffer[:ready])
                self._buffer = self._buffer[ready:]
        return pieces

    def finish(self) -> list[Piece]:
        """Decode the held calls (or return them as text), at the end of the output."""
        pieces: list[Piece] = []
        if self._state == "calls":  # the list runs to the end of the output: whole, or cut short
            closing = "" if self._writer.markup is None else self._writer.markup.closing
            self._writer.cut_list(pieces, self._buffer, self._buffer, closing)
        else:
            self._writer.content(pieces, self._buffer)
        self._buffer = ""
        self._writer.end(pieces)
        return pieces


class TextOpening:
    """Content whose start may be a format's opening of a text reply, removed: Functionary v3.2's ``all\n``
    recipient when the request offers no tools (its call parser, which reads the recipient, is then not used).
    The rest of the text passes as it comes; text that may still become an opening is held back."""

    def __init__(self, openings: tuple[str, ...]) -> None:
        self._openings = openings
        self._head: str | None = ""  # the reply so far while its start is not known; None after

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        if self._head is None:
            return [ContentDelta(text)] if text else []
        self._head += text
        start = self._head.lstrip()
        opening = next((opening for opening in self._openings if start.startswith(opening)), None)
        if opening is None and any(opening.startswith(start) for opening in self._openings):
            return []  # may still be an opening
        text, self._head = self._head if opening is None else start[len(opening) :], None
        return [ContentDelta(text)] if text else []

    def finish(self) -> list[Piece]:
        """What is still held back (a reply shorter than an opening), at the end of the output."""
        held, self._head = self._head, None
        return [ContentDelta(held)] if held else []
