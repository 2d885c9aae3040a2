"""Hunyuan 4's per-checkpoint tag suffix taken out of the text: ``<tool_call:6124c78e>`` read as ``<tool_call>``.

Some Hunyuan 4 checkpoints suffix every structural token (``<tool_calls:SUFFIX>``, ``<tool_call:SUFFIX>``,
``<arg_key:SUFFIX>``, ``<arg_value:SUFFIX>`` and their closings; vLLM's hy_v4 parser reads the suffix off the
vocabulary). ``UnsuffixedTags`` writes each such tag without its suffix, so the hy_v4 format reads suffixed and
plain checkpoints alike, and a forced call's grammar writes the plain tags. A tag is recognised only whole (its
suffix a bounded run without spaces or angle brackets); text that starts like one is held back until it is or is
not one. Each ``<`` is looked at once, a bounded way ahead: linear in the text.
"""

from __future__ import annotations

from ovserve.service.parsing.envelope import Envelope, EnvelopedCallParser
from ovserve.service.parsing.tools import TaggedCallParser

SUFFIXED = ("tool_calls", "tool_call", "arg_key", "arg_value")  # longest first where one starts another
MAX_SUFFIX = 64  # a longer run after the colon is not a checkpoint's suffix


class UnsuffixedTags(Envelope):
    """Streamed text in, the same text with Hunyuan 4's tags written without their suffix out."""

    def feed(self, text: str) -> str:
        """One delta's text, its whole suffixed tags unsuffixed; what may still be one is held back."""
        buffer, index = self._buffer + text, 0
        out: list[str] = []
        while (at := buffer.find("<", index)) >= 0:
            end, tag = _suffixed_tag(buffer, at)
            if end == 0:  # the text ends inside what may be a suffixed tag
                break
            out.append(buffer[index:at] + tag if end > 0 else buffer[index : at + 1])
            index = end if end > 0 else at + 1
        else:
            at = len(buffer)
        out.append(buffer[index:at])
        self._buffer = buffer[at:]
        return "".join(out)


def unsuffixed(text: str) -> str:
    """``text`` whole, its complete suffixed tags written without their suffix (``<tool_call:6124c78e>`` ->
    ``<tool_call>``): how the engine tells a checkpoint's suffixed special tokens are the hy_v4 format's markup."""
    tags = UnsuffixedTags()
    return tags.feed(text) + tags.finish()


def _suffixed_tag(text: str, at: int) -> tuple[int, str]:
    """Where a suffixed tag starting at ``at`` ends, and the tag unsuffixed; (0, "") when ``text`` ends before
    that is known, (-1, "") when none starts there."""
    index = at + 1
    slash = "/" if text.startswith("/", index) else ""
    index += len(slash)
    rest = text[index : index + len(SUFFIXED[0]) + 1]
    name = next((name for name in SUFFIXED if rest.startswith(name + ":")), None)
    if name is None:
        may_be = any((name + ":").startswith(rest) for name in SUFFIXED) and index + len(rest) == len(text)
        return (0, "") if may_be or index == len(text) else (-1, "")
    start = index = index + len(name) + 1
    while index < len(text) and index - start <= MAX_SUFFIX and not (text[index].isspace() or text[index] in "<>"):
        index += 1
    if index - start > MAX_SUFFIX:
        return -1, ""
    if index == len(text):
        return 0, ""
    return (index + 1, f"<{slash}{name}>") if text[index] == ">" and index > start else (-1, "")


class UnsuffixedCallParser(EnvelopedCallParser):
    """A call parser of Hunyuan 4's plain tags fed the text with any checkpoint's suffix taken off its tags."""

    def __init__(self, inner: TaggedCallParser) -> None:
        super().__init__(inner)
        self._envelope = UnsuffixedTags()
