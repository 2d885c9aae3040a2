"""The message envelope ATEM models (OVMS's Onyx, vLLM's MuseGlimmer) write their turn in, taken out of the text.

Each message of the turn opens with a header naming its recipient and ends with a terminator::

     to=self<|message|>...reasoning...<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>...</atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>...the answer...<|eot|>

(the turn's first header has no ``<|start|>assistant``: the prompt ends with it). ``EnvelopedCallParser`` drops
the headers and terminators from the streamed text and hands the bodies to a call parser, which reads the
ATEM sections among them; the reasoning message, when a reasoning format is on, is split off before.

A header is recognised only whole (its recipient a run of letters, digits, ``_``, ``.`` or ``-`` of bounded
length, then ``<|message|>``); text that starts like one is held back until it is or is not one. The scan only
moves forward: linear in the text.
"""

from __future__ import annotations

from ovserve.service.parsing.markup import CallMarkup
from ovserve.service.parsing.pieces import Piece
from ovserve.service.parsing.text import partial_tag_length
from ovserve.service.parsing.tools import TaggedCallParser

START, ROLE, RECIPIENT, MESSAGE = "<|start|>", "assistant", "to=", "<|message|>"
TERMINATORS = ("<|eom|>", "<|eot|>")
SPECIAL_TOKENS = (START, MESSAGE, *TERMINATORS)  # what the engine must keep in the text for the parser to see
HEADER_STARTS = (START, RECIPIENT)
MARKERS = (*HEADER_STARTS, MESSAGE, *TERMINATORS)
MAX_RECIPIENT = 128  # longer runs are not a recipient: the text is released
RECIPIENT_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


class Envelope:
    """Streamed text in, the message bodies out (headers and terminators dropped)."""

    def __init__(self) -> None:
        self._buffer = ""

    def feed(self, text: str) -> str:
        """The body text of one delta; what may still be a header is held back."""
        buffer, index, out = self._buffer + text, 0, []
        found = {marker: buffer.find(marker) for marker in MARKERS}  # each marker's next place, looked up again
        while True:  # only once passed: one forward scan per marker
            for marker, at in found.items():
                if 0 <= at < index:
                    found[marker] = buffer.find(marker, index)
            places = [(at, marker) for marker, at in found.items() if at >= 0]
            if not places:
                # Held back: a marker's start, or the space a header's " to=" may follow (the header's own).
                ready = len(buffer) - partial_tag_length(buffer[index:], MARKERS)
                ready -= ready > index and buffer[ready - 1] in " \t"
                out.append(buffer[index:ready])
                index = ready
                break
            position, marker = min(places)
            if marker in TERMINATORS or marker == MESSAGE:  # a terminator, or a header with no recipient
                out.append(buffer[index:position])
                index = position + len(marker)
                continue
            end = _header_end(buffer, position)
            if end == 0:  # the buffer ends inside what may be a header (and the spaces before " to=" with it)
                cut = position - _header_space(buffer, index, position, marker)
                out.append(buffer[index:cut])
                index = cut
                break
            if end < 0:  # not a header: its first character is text
                out.append(buffer[index : position + 1])
                index = position + 1
                continue
            out.append(buffer[index : position - _header_space(buffer, index, position, marker)])
            index = end
        self._buffer = buffer[index:]
        return "".join(out)

    def finish(self) -> str:
        """What is held back, at the end of the output (an unfinished header is text)."""
        text, self._buffer = self._buffer, ""
        return text


def _header_end(text: str, position: int) -> int:
    """Where the header starting at ``position`` ends; 0 when ``text`` ends before that is known, -1 when no
    header starts there."""
    index = position
    for part, optional in ((START, True), (ROLE, True), (RECIPIENT, False)):
        index = _skip_space(text, index)
        if text.startswith(part, index):
            index += len(part)
        elif part.startswith(text[index : index + len(part)]):  # text ends inside this part
            return 0
        elif not optional:
            return -1
    start = index
    while index < len(text) and text[index] in RECIPIENT_CHARS and index - start <= MAX_RECIPIENT:
        index += 1
    if index - start > MAX_RECIPIENT:
        return -1
    if index == len(text) or (
        MESSAGE.startswith(text[index : index + len(MESSAGE)]) and len(text) - index < len(MESSAGE)
    ):
        return 0
    return index + len(MESSAGE) if index > start and text.startswith(MESSAGE, index) else -1


def _header_space(text: str, index: int, position: int, marker: str) -> int:
    """1 when a space or tab stands right before a header that opens with " to=" (the space is the header's, as
    vLLM reads it); 0 otherwise."""
    return int(marker == RECIPIENT and position > index and text[position - 1] in " \t")


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t":
        index += 1
    return index


class EnvelopedCallParser:
    """A call parser fed the message bodies of an enveloped turn (see the module's docstring)."""

    def __init__(self, inner: TaggedCallParser) -> None:
        self._envelope = Envelope()
        self._inner = inner

    def feed(self, text: str) -> list[Piece]:
        """Pieces for one delta."""
        return self._inner.feed(self._envelope.feed(text))

    def finish(self) -> list[Piece]:
        """What is held back, at the end."""
        return self._inner.feed(self._envelope.finish()) + self._inner.finish()

    def keep_complete_calls(self, markup: CallMarkup) -> None:
        """Read a cut call list by ``markup``, as the inner parser does."""
        self._inner.keep_complete_calls(markup)
