"""Inkling's content blocks, their framing taken out of the text before its tool blocks are read.

Every block of an Inkling reply is a message of the model, its kind a special token, its end another::

    <|message_model|><|content_thinking|>...reasoning...<|end_message|>
    <|message_model|><|content_text|>...the answer...<|end_message|>
    <|message_model|>get_weather<|content_invoke_tool_json|>{"name": "get_weather", "args": {...}}<|end_message|>

(the optional function name between the role and the kind is metadata; sampling may end any block with
``<|content_model_end_sampling|>`` instead). The reasoning block is split off before (the inkling reasoning
format); ``InklingBlocks`` keeps a tool block as it is for the tool parser (its end normalised to
``<|end_message|>``) and drops everything else of the framing: the role and its metadata, the kind of a text
block (and of the tool-text and tool-error blocks, shown as text, as vLLM shows them) and its end. The scan only
moves forward, each marker looked up again only once passed: linear in the text.
"""

from __future__ import annotations

from ovserve.service.parsing.calls_tail import INKLING_CALL, INKLING_END
from ovserve.service.parsing.envelope import Envelope, EnvelopedCallParser
from ovserve.service.parsing.text import partial_tag_length
from ovserve.service.parsing.tools import TaggedCallParser

MESSAGE_MODEL = "<|message_model|>"
CONTENT_TEXT, CONTENT_THINKING = "<|content_text|>", "<|content_thinking|>"
TOOL_TEXT, TOOL_ERROR = "<|content_invoke_tool_text|>", "<|content_tool_error|>"
END_SAMPLING = "<|content_model_end_sampling|>"
ENDS = (INKLING_END, END_SAMPLING)
KINDS = (CONTENT_TEXT, CONTENT_THINKING, TOOL_TEXT, TOOL_ERROR, INKLING_CALL)  # what ends a message's header
MARKERS = (MESSAGE_MODEL, *KINDS, *ENDS)
# The framing's special tokens the engine must keep in the text for the parser to take them out (the tool block's
# own tags are its markup's).
SPECIAL_TOKENS = (MESSAGE_MODEL, CONTENT_TEXT, TOOL_TEXT, TOOL_ERROR, END_SAMPLING)
MAX_HEADER = 128  # a header's metadata longer than this is not a function's name: the text is released


class InklingBlocks(Envelope):
    """Streamed content in, Inkling's framing out (see the module's docstring); a tool block passes whole."""

    def __init__(self) -> None:
        super().__init__()
        self._state = "text"  # "text", "header" (after the role, before the kind) or "call" (inside a tool block)

    def feed(self, text: str) -> str:
        """The text of one delta without the framing; what may still be a marker, or a header, is held back."""
        buffer, index = self._buffer + text, 0
        out: list[str] = []
        found = {marker: buffer.find(marker) for marker in MARKERS}
        while True:
            for marker, at in found.items():  # each marker looked up again only once passed
                if 0 <= at < index:
                    found[marker] = buffer.find(marker, index)
            wanted = ENDS if self._state == "call" else MARKERS
            places = [(at, marker) for marker, at in found.items() if at >= 0 and marker in wanted]
            if not places:
                index = self._rest(buffer, index, out, wanted)
                break
            position, marker = min(places)
            if self._state == "header" and (marker not in KINDS or position - index > MAX_HEADER):
                self._state = "text"  # no kind after a name's room: what followed the role is text
                continue
            if self._state != "header":  # a header's metadata (the function's name) is not text
                out.append(buffer[index:position])
            index = position + len(marker)
            if self._state == "call":
                out.append(INKLING_END)  # the block's end, as the tool parser knows it
                self._state = "text"
            elif marker == INKLING_CALL:
                out.append(marker)
                self._state = "call"
            else:
                self._state = "header" if marker == MESSAGE_MODEL else "text"
        self._buffer = buffer[index:]
        return "".join(out)

    def _rest(self, buffer: str, index: int, out: list[str], wanted: tuple[str, ...]) -> int:
        """With no marker left in ``buffer`` after ``index``: pass on what cannot start one; where the rest is
        held from."""
        if self._state == "header":
            if len(buffer) - index <= MAX_HEADER + max(map(len, MARKERS)):
                return index  # still a header: its kind may follow
            self._state = "text"  # too long for a name: what followed the role is text
        ready = len(buffer) - partial_tag_length(buffer[index:], wanted)
        out.append(buffer[index:ready])
        return ready


class InklingCallParser(EnvelopedCallParser):
    """A call parser of Inkling's tool blocks fed the content without the blocks' framing."""

    def __init__(self, inner: TaggedCallParser) -> None:
        super().__init__(inner)
        self._envelope = InklingBlocks()


def inkling_text() -> InklingCallParser:
    """The parser of an Inkling reply to a request that offers no tools: its framing out, a tool block as text."""
    return InklingCallParser(TaggedCallParser(lambda block: None, lambda index, name: "", INKLING_CALL, INKLING_END))
