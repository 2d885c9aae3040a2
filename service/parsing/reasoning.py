"""Reasoning split: ``<think>...</think>`` at the start of the output becomes reasoning, the rest content.

Written here rather than taken from openvino_genai: its ``ReasoningParser``
leaves a block cut off by the token limit in the content, and its
``DeepSeekR1ReasoningParser`` keeps ``<think>`` inside the reasoning; its
incremental parser keeps the newlines around the tags. This splitter handles a
block the chat template already opened (``opened``; an opening the model writes again there is dropped, as
vLLM's think parsers drop it) or closed (``closed``), tags split across deltas, and a block cut off before its
close tag (reasoning, not content).
"""

from __future__ import annotations

from ovserve.service.parsing.pieces import ReasoningDelta
from ovserve.service.parsing.text import TrimmedText, find_first, partial_tag_length


class ThinkSplitter:
    """Splits streamed text into reasoning pieces and the content text that follows the block."""

    def __init__(
        self,
        *,
        opened: bool = False,
        closed: bool = False,
        open_tag: str | tuple[str, ...] = "<think>",
        close_tag: str | tuple[str, ...] = "</think>",
        reply: tuple[str, str] | None = None,
        reply_prefix: str = "",
        reply_openings: tuple[str, ...] = (),
        turn_end: str = "",
        ended_by: tuple[str, ...] = (),
        replying: bool = False,
        inline: bool = False,
    ) -> None:
        # Each tag may have several spellings (Granite: "Here is" / "Here's"): any of them counts.
        self._opens = (open_tag,) if isinstance(open_tag, str) else open_tag
        self._closes = (close_tag,) if isinstance(close_tag, str) else close_tag
        # Markup that ends the block too, and is the content's start (Kimi K2's tool-call section: the model may
        # open it without closing its reasoning); a close tag is removed, this is kept.
        self._ended_by = ended_by
        # A block the prompt opened starts as "opened": the model may still write the opening itself (DeepSeek-R1
        # distills and Nemotron Nano v2 repeat the <think> their prompt ends with), which is not reasoning text.
        self._state = "opened" if opened else "start"
        self._buffer = ""
        self._reasoning = TrimmedText(strip_leading=True)
        self._after_block = False  # content right after the close tag loses its leading whitespace
        self._reply = ReplyTags(*reply, reply_prefix, turn_end, reply_openings) if reply else None
        # A block the prompt opened, or closed itself (thinking off: Cohere's <|START_THINKING|><|END_THINKING|>),
        # is this turn's: the reply after it is wrapped in the family's reply tags either way; so is a reply the
        # prompt opened (``replying``: Kimi K3 with thinking off ends it with <|open|>response<|sep|>).
        self.saw_block = opened or closed or replying
        # inline: nothing is split off; the content is the text as written, after the opening the prompt wrote.
        self._inline_prefix: str | None = None
        if inline:
            self._inline_prefix, self._state = (self._opens[0] if opened else ""), "content"

    @property
    def in_reasoning(self) -> bool:
        """Inside the block (its close tag not seen yet)."""
        return self._state in ("opened", "reasoning")

    def feed(self, text: str) -> tuple[list[ReasoningDelta], str]:
        """Reasoning pieces and content text for one delta."""
        if self._inline_prefix is not None:
            text, self._inline_prefix = self._inline_prefix + text, ""
            return [], text
        self._buffer += text
        if self._state in ("start", "opened"):
            head = self._buffer.lstrip()
            opening = next((tag for tag in self._opens if head.startswith(tag)), None)
            if opening is not None:
                self._state, self._buffer, self.saw_block = "reasoning", head[len(opening) :], True
            elif any(tag.startswith(head) for tag in self._opens):
                return [], ""  # maybe the open tag, split across deltas
            else:
                self._state = "reasoning" if self._state == "opened" else "content"
        if self._state == "reasoning":
            return self._scan_reasoning()
        return [], self._content()

    def finish(self) -> tuple[list[ReasoningDelta], str]:
        """What is still held back, at the end of the output."""
        if self._inline_prefix is not None:
            text, self._inline_prefix = self._inline_prefix, ""
            return [], text
        if self.in_reasoning:  # cut off inside the block: all of it is reasoning
            text, self._buffer = self._reasoning.push(self._buffer), ""
            return ([ReasoningDelta(text)] if text else []), ""
        content = self._content()
        return [], content + self._reply.finish() if self._reply is not None else content

    def _scan_reasoning(self) -> tuple[list[ReasoningDelta], str]:
        ends = self._closes + self._ended_by
        end, close = find_first(self._buffer, ends)
        if end < 0:
            keep = partial_tag_length(self._buffer, ends)
            text = self._reasoning.push(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            return ([ReasoningDelta(text)] if text else []), ""
        text = self._reasoning.push(self._buffer[:end])
        self._reasoning.cut()
        self._state, self._after_block = "content", True
        self._buffer = self._buffer[end if close in self._ended_by else end + len(close) :]
        return ([ReasoningDelta(text)] if text else []), self._content()

    def _content(self) -> str:
        text, self._buffer = self._buffer, ""
        if self._after_block:
            text = text.lstrip()
            self._after_block = not text
        return self._reply.feed(text) if self._reply is not None and self.saw_block else text


class ReplyTags:
    """Removes the tags a family wraps its reply in after the reasoning block (Granite 3.3:
    ``<think>...</think><response>...</response>``), from streamed text: the opening tag at the start,
    the closing tag wherever it comes, and the whitespace that touches them; text that may be the start of
    either is held back."""

    def __init__(
        self, opening: str, closing: str, prefix: str = "", turn_end: str = "", other_openings: tuple[str, ...] = ()
    ) -> None:
        # The closing tag, and the turn's own end after it (Kimi K3's message close): each removed where it comes.
        self._closings = (closing, turn_end) if turn_end else (closing,)
        # What the reply may start with, in turn, each removed when there: the opening tag (any of its spellings:
        # Onyx's header with or without <|start|>), then the words a family opens its reply with (``prefix``:
        # Hunyuan A13B's word for assistant).
        self._leading = [(opening, *other_openings), (prefix,)] if prefix else [(opening, *other_openings)]
        self._held = ""
        self._text = TrimmedText(strip_leading=False)

    def feed(self, text: str) -> str:
        """The reply text of one delta, tags removed."""
        text, self._held = self._held + text, ""
        while self._leading:
            head = text.lstrip()
            spelled = next((spelling for spelling in self._leading[0] if head.startswith(spelling)), None)
            if spelled is not None:
                self._leading.pop(0)
                text = head[len(spelled) :]
                self._text = TrimmedText(strip_leading=True)
            elif any(spelling.startswith(head) for spelling in self._leading[0]):
                self._held = text
                return ""
            else:
                self._leading.pop(0)  # not there: the next may be
        out = ""
        while (found := find_first(text, self._closings))[0] >= 0:
            end, closing = found
            out += self._text.push(text[:end])
            self._text = TrimmedText(strip_leading=True)  # the tag's own whitespace, both sides
            text = text[end + len(closing) :]
        keep = partial_tag_length(text, self._closings)
        self._held = text[len(text) - keep :] if keep else ""
        return out + self._text.push(text[: len(text) - keep])

    def finish(self) -> str:
        """What is held back, at the end of the output."""
        held, self._held = self._held, ""
        return self._text.push(held) + self._text.flush() if held else self._text.flush()
