"""The complete calls of a call list the output cut short (``max_tokens`` or a stop string), found from the
format's ``CallMarkup`` alone.

A cut list does not decode: its last call is half written, and its closing
(``]``, a section's end token) is missing. A call ends where the markup's
``call_end`` is followed by its ``separator`` and the next call's ``call_begin``
(or where the text runs out partway through them), so the text up to each such
end, with the list's closing put back, is decoded in turn, the last end first:
the first that decodes holds every complete call, and the cut call after it is
dropped. (A list that runs to the end of the output and does not decode is read
so whether or not it looks closed: ``]`` or ``}`` also end arguments, so a cut list
and a closed one malformed at its end cannot be told apart; one malformed from its
first call still decodes nowhere and stays text.) Whitespace is not compared (models and grammars differ there, parsers
do not). Nothing here knows a format by name, so every format described by a
``CallMarkup`` gets it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from service.parsing.calls import Call
from service.parsing.markup import TAGGED_ARGUMENTS, CallMarkup

MAX_ENDS_TRIED = 16  # each try decodes the text once: a bound on the work a hostile reply can cause
TAIL_SLACK = 64  # whitespace a model may write between a call's end and the cut


def _spaced(text: str) -> str:
    """A regex matching ``text`` with any whitespace, or none, between its characters (each a literal, so the
    ``\\s*`` between them cannot backtrack into one another)."""
    return r"\s*".join(re.escape(char) for char in text if not char.isspace())


def _head(markup: CallMarkup) -> str:
    """The fixed start of ``call_begin``: up to the first of its ``{name}`` and ``{index}``."""
    return re.split(r"\{name\}|\{index\}", markup.call_begin, maxsplit=1)[0]


def _bare(text: str) -> str:
    """``text`` without whitespace."""
    return "".join(text.split())


@functools.cache
def _end_pattern(markup: CallMarkup) -> re.Pattern[str] | None:
    """Where a call ends and another follows: after ``call_end``, the separator (optional, as parsers read a
    list without it) and the fixed start of ``call_begin``; None when the markup marks no such place."""
    end, separator = _spaced(markup.call_end), _spaced(markup.separator)
    head = _spaced(_head(markup))
    if end:
        return re.compile(rf"{end}(?=\s*(?:{separator})?\s*{head})" if separator else rf"{end}(?=\s*{head})")
    if not separator and not head:
        return None  # calls back to back, nothing marking where one ends: no place to cut
    return re.compile(rf"(?=\s*{separator}\s*{head})")


def call_ends(text: str, markup: CallMarkup) -> list[int]:
    """Positions in ``text`` where a call of ``markup`` may end, the last first, at most ``MAX_ENDS_TRIED``:
    where another call follows, or where the text ends within what comes between two calls."""
    pattern = _end_pattern(markup)
    if pattern is None:
        return []
    ends = {match.end() for match in pattern.finditer(text)}
    between = [_bare(markup.separator + _head(markup))]
    between += [_bare(_head(markup))] if markup.call_end else []
    end = _bare(markup.call_end)
    window = len(markup.call_end) + len(between[0]) + TAIL_SLACK
    for position in range(max(0, len(text) - window), len(text) + 1):
        before = _bare(text[max(0, position - window) : position])
        if before.endswith(end) and any(form.startswith(_bare(text[position:])) for form in between):
            ends.add(position)
    return sorted(ends, reverse=True)[:MAX_ENDS_TRIED]


def may_be_whole(text: str, markup: CallMarkup, close_tag: str = "") -> bool:
    """Whether ``text``, a call list the output ended in before ``close_tag``, may be read whole: its last
    call is then complete (a stop string or a stop token took only the tag).

    JSON's and Python's arguments close themselves, so a decoder reads none cut short. Tagged members
    (GLM's ``<arg_key>``) do not: a call cut after any member, or inside its name, still decodes, so such a
    call is whole only when ``text`` ends with what the markup writes after a call's arguments, before the
    tag (Qwen3-Coder's ``</function>``); where the tag alone ends a call (GLM), a cut call is never whole.
    """
    if markup.arguments not in TAGGED_ARGUMENTS:
        return True
    at = markup.call_end.rfind(close_tag) if close_tag else -1
    end = _bare(markup.call_end[:at] if at >= 0 else markup.call_end)
    return bool(end) and _bare(text[-len(markup.call_end) - TAIL_SLACK :]).endswith(end)


def complete_calls(
    decode: Callable[[str], list[Call] | None], text: str, markup: CallMarkup, closing: str
) -> list[Call] | None:
    """The calls ``text`` (a list of ``markup``, cut short) completed before the cut: the longest run of whole
    calls that decodes with ``closing`` put back after it; None when it holds none."""
    for end in call_ends(text, markup):
        decoded = decode((text[:end] + closing).strip())
        if decoded:
            return decoded
    return None
