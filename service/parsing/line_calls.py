"""Calls written as lines of their own amid the reply's text, with no markup around them (vLLM's granite_pythonic:
Granite 3.3 and 4.0 under a pythonic chat template write ``get_weather(city="Paris")`` on a line).

A line is a call when the whole line decodes as one (``decode``); any other line is content. A line is held back
only while it can still become a call: while it is a name, or a name and ``(`` and what follows up to the line's
end. A line that leaves that shape (``Hello world``) is content at once, and the rest of it streams as it comes.
At the end of the output an unfinished last line is read as a cut call list is (ovserve.service.parsing.cut_lists): a
call when whole, dropped when cut after other calls, text when no call came before it.
"""

from __future__ import annotations

from ovserve.service.parsing.pieces import Piece
from ovserve.service.parsing.tools import CallIds, CallListParser, Decoder

NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
NAME_CHARS = NAME_START | frozenset("0123456789")


class LineCallParser(CallListParser):
    """Calls a line each amid text (see the module's docstring)."""

    def __init__(self, decode: Decoder, ids: CallIds) -> None:
        super().__init__(decode, ids)
        self._parts: list[str] = []  # the current line, held while it may be a call (joined once, at its end)
        self._shape = INDENT  # how far the held line has come towards "name(": INDENT, NAME, OPEN
        self._text_line = False  # the current line is text: it streams to its end

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta of content text."""
        pieces: list[Piece] = []
        while text:
            end = text.find("\n")
            part, text = (text, "") if end < 0 else (text[: end + 1], text[end + 1 :])
            if self._text_line:
                self._writer.content(pieces, part)
            else:
                self._hold(pieces, part)
            if part.endswith("\n"):
                if not self._text_line:
                    line = "".join(self._parts)
                    self._writer.calls_or_text(pieces, line.strip(), line)
                self._parts, self._shape, self._text_line = [], INDENT, False
        return pieces

    def finish(self) -> list[Piece]:
        """What is held back, at the end of the output: the last line, whole or cut."""
        pieces: list[Piece] = []
        line, self._parts = "".join(self._parts), []
        if line:
            closing = "" if self._writer.markup is None else self._writer.markup.closing
            self._writer.cut_list(pieces, line, line, closing)
        self._writer.end(pieces)
        return pieces

    def _hold(self, pieces: list[Piece], part: str) -> None:
        """Hold ``part`` with the line so far while the line may be a call; else the line is text from here on.
        Each character is looked at once, and only until the line has its name and ``(``."""
        index, body = 0, part.rstrip("\n")
        while self._shape != OPEN and index < len(body):
            self._shape = NEXT_SHAPE[self._shape](body[index])
            if self._shape == TEXT:
                self._writer.content(pieces, "".join(self._parts) + part)
                self._parts, self._text_line = [], True
                return
            index += 1
        self._parts.append(part)


INDENT, NAME, OPEN, TEXT = "indent", "name", "open", "text"
# The line's shape so far -> its shape after one more character.
NEXT_SHAPE = {
    INDENT: lambda char: INDENT if char in " \t" else NAME if char in NAME_START else TEXT,
    NAME: lambda char: NAME if char in NAME_CHARS else OPEN if char == "(" else TEXT,
}
