"""The complete calls of a call list the output cut short (``max_tokens`` or a stop string), found from the
format's ``CallMarkup`` alone.

A cut list does not decode: its last call is half written, and its closing
(``]``, a section's end token) is missing. A call ends where the markup's
``call_end`` is followed by its ``separator`` and the next call's ``call_begin``
(or where the text runs out partway through them), so the text up to each such
end, with the list's closing put back, is decoded in turn, the last end first:
the first that decodes holds every complete call, and the cut call after it is
dropped. Whitespace is not compared (models and grammars differ there, parsers do
not). Nothing here knows a format by name, so every format described by a
``CallMarkup`` gets it.

Why drop the cut call rather than answer the whole list as text: its calls are what
the client asked for, finish_reason ``length`` tells it the rest is missing, and half a
call is neither a call nor text a user should read. vLLM's Kimi K2 parser does the
same (its calls must end with ``<|tool_call_end|>``), as its GLM parser does for a call
without ``</tool_call>``; vLLM's Hermes and pythonic parsers answer such a list as text
unary while their streams had already sent the complete calls, and llama.cpp fails the
final parse. A cut call with no call before it stays text, as there.

A list that runs to the end of the output and does not decode is read so whether
or not it looks closed: ``]`` and ``}`` also end arguments, so a cut list and a
closed one malformed at its end cannot be told apart. One malformed from its first
call decodes nowhere and stays text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

from ovserve.service.parsing.calls import Call
from ovserve.service.parsing.markup import TAGGED_ARGUMENTS, CallMarkup

MAX_ENDS_TRIED = 16  # each try decodes the text once: a bound on the work a hostile reply can cause
TAIL_SLACK = 64  # whitespace a model may write inside a call's end markup


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
def _end_pattern(markup: CallMarkup) -> tuple[re.Pattern[str], bool] | None:
    """Where a call ends and another follows: ``call_end``, then the separator (optional, as parsers read a
    list without it) and the fixed start of ``call_begin``. With whether a call ends where the match starts
    (a markup without ``call_end``: the next call's start marks it) rather than where it ends; None when the
    markup marks no such place. Each ``\\s*`` is followed by a literal that is not whitespace, so on a long
    run of whitespace the pattern fails at once rather than trying every way to split the run."""
    end, separator, head = _spaced(markup.call_end), _spaced(markup.separator), _spaced(_head(markup))
    if end:
        return re.compile(rf"{end}(?=\s*(?:{separator}\s*)?{head})" if separator else rf"{end}(?=\s*{head})"), False
    if not separator and not head:
        return None  # calls back to back, nothing marking where one ends: no place to cut
    return re.compile(rf"{separator}\s*{head}" if separator and head else separator or head), True


def call_ends(text: str, markup: CallMarkup) -> list[int]:
    """Positions in ``text`` where a call of ``markup`` may end, the last first, at most ``MAX_ENDS_TRIED``:
    where another call follows, or where the text ends within what comes between two calls."""
    found = _end_pattern(markup)
    if found is None:
        return []
    pattern, at_start = found
    ends = {match.start() if at_start else match.end() for match in pattern.finditer(text)}
    between = [_bare(markup.separator + _head(markup))]
    between += [_bare(_head(markup))] if markup.call_end else []
    ends |= _ends_at_the_cut(text, _bare(markup.call_end), between)
    return sorted(ends, reverse=True)[:MAX_ENDS_TRIED]


def _ends_at_the_cut(text: str, end: str, between: list[str]) -> set[int]:
    """Where the text ends after a call's ``end`` and part of what comes ``between`` two calls (nothing, or a
    separator cut short): found among the last non-space characters, whatever whitespace lies between them."""
    last: list[int] = []  # positions of the last non-space characters, last first: all that can matter
    position = len(text)
    while position > 0 and len(last) <= len(end) + max(map(len, between)):
        position -= 1
        if not text[position].isspace():
            last.append(position)
    last.reverse()
    tail = "".join(text[at] for at in last)
    ends = set()
    for split in range(len(last) + 1):
        if tail[:split].endswith(end) and any(form.startswith(tail[split:]) for form in between):
            ends.add(last[split - 1] + 1 if split else last[0] if last else 0)
    return ends


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
    return bool(end) and _bare(text.rstrip()[-len(markup.call_end) - TAIL_SLACK :]).endswith(end)


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


def closed_short(text: str, closing: str) -> str | None:
    """``text`` with the rest of ``closing`` put back when the output ended partway into it (a closing of
    several tokens: Command R+'s ``]`` and fence, the generic format's ``]}``); None when ``text`` does not end
    inside it. The list's last call ended before its closing began, so the list is whole but for that rest.
    Whitespace is not compared."""
    body = text.rstrip()
    for size in range(len(closing) - 1, 0, -1):  # the longest start of the closing first
        begun = closing[:size].strip()
        if begun and body.endswith(begun):
            return body + closing[size:]
    return None
