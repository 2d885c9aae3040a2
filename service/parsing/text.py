"""Helpers for scanning streamed text for tags that may arrive split across deltas."""

from __future__ import annotations


def partial_tag_length(text: str, tags: tuple[str, ...]) -> int:
    """Length of the longest end of ``text`` that is a proper start of one of ``tags``.

    That much must be held back: the next delta may complete the tag.
    """
    longest = 0
    for tag in tags:
        for size in range(min(len(tag) - 1, len(text)), longest, -1):
            if text.endswith(tag[:size]):
                longest = size
                break
    return longest


def find_first(text: str, tags: tuple[str, ...]) -> tuple[int, str]:
    """Position and tag of the earliest of ``tags`` in ``text``; (-1, "") if none."""
    found = [(position, tag) for tag in tags if (position := text.find(tag)) >= 0]
    return min(found) if found else (-1, "")


class TrimmedText:
    """Text passed on in pieces, with the whitespace that touches a tag removed.

    Trailing whitespace is held back until more text follows: ``cut`` drops it
    (a tag follows), ``flush`` hands it back (the text ended without a tag).
    With ``strip_leading`` (the text follows a tag) leading whitespace is
    dropped too. Streamed pieces join into what stripping the whole text at
    its tags gives, so streamed and unary output agree.
    """

    def __init__(self, *, strip_leading: bool) -> None:
        self._started = not strip_leading
        self._held = ""

    def push(self, text: str) -> str:
        """The part of ``text`` that can be passed on now."""
        if not self._started:
            text = text.lstrip()
            if not text:
                return ""
            self._started = True
        text = self._held + text
        body = text.rstrip()
        self._held = text[len(body) :]
        return body

    def cut(self) -> None:
        """Drop the held whitespace: a tag follows."""
        self._held = ""

    def flush(self) -> str:
        """The held whitespace: the text ended here, with no tag after it."""
        held, self._held = self._held, ""
        return held
