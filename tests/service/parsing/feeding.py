"""A format's parser fed as a stream feeds it: the pieces a reply may arrive in, and the turn they make.

Shared by the family format tests (test_formats_json_families, test_formats_xml_families,
test_formats_python_families, test_formats_glm_families, test_formats_tail), so each cuts a reply the same ways.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from typing import Any

from ovserve.service.parsing import ContentDelta, OutputFormat, ParsedTurn, Piece


def fed(
    fmt: OutputFormat, chunks: Iterable[str], prompt_tail: str = "", **options: Any
) -> tuple[ParsedTurn, list[Piece]]:
    """The turn ``chunks`` make, fed one by one to a fresh parser of ``fmt`` (``options``: the parser's, e.g.
    ``schemas``, ``tools``), and every piece it gave out on the way."""
    parser = fmt.parser(prompt_tail=prompt_tail, **options)
    pieces: list[Piece] = []
    for chunk in chunks:
        pieces += parser.feed(chunk)
    return parser.result, pieces + parser.finish()


def calls(turn: ParsedTurn) -> list[tuple[str, Any]]:
    """The turn's calls as (name, arguments decoded)."""
    return [(call.name, json.loads(call.arguments)) for call in turn.calls]


def summary(turn: ParsedTurn) -> tuple[str, str, list[tuple[str, Any]]]:
    """The turn as (content, reasoning, calls as ``calls`` gives them)."""
    return turn.content, turn.reasoning, calls(turn)


def in_sizes(text: str, sizes: tuple[int, ...]) -> list[str]:
    """``text`` in deltas of ``sizes`` in turn, over and over (whole when ``sizes`` is empty)."""
    chunks, start, count = [], 0, 0
    while start < len(text):
        size = sizes[count % len(sizes)] if sizes else len(text)
        chunks.append(text[start : start + size])
        start, count = start + size, count + 1
    return chunks


def streamed_like_whole(fmt: OutputFormat, text: str, markup: Iterable[str] = (), **options: Any) -> ParsedTurn:
    """The turn ``text`` makes fed whole, after checking that every way ``deltas`` cuts it makes the same turn
    and, when the turn made calls, that no content piece given out on the way holds any of ``markup``."""
    whole, _ = fed(fmt, [text], **options)
    for chunks in deltas(text):
        turn, pieces = fed(fmt, chunks, **options)
        assert summary(turn) == summary(whole), chunks
        if whole.calls:
            streamed = [piece.text for piece in pieces if isinstance(piece, ContentDelta)]
            assert not any(mark in part for part in streamed for mark in markup), (chunks, streamed)
    return whole


def deltas(text: str, cut_every: int = 1) -> list[list[str]]:
    """``text`` whole, then in deltas of 1, 2 and 3 characters, in deltas of 1-3 characters drawn at random
    (seeded by its length, so a failure repeats), and cut in two at every ``cut_every``-th point."""
    sized = [[text[start : start + size] for start in range(0, len(text), size)] for size in (1, 2, 3)]
    draw, start, drawn = random.Random(len(text)), 0, []
    while start < len(text):
        size = draw.randint(1, 3)
        drawn.append(text[start : start + size])
        start += size
    halves = [[text[:cut], text[cut:]] for cut in range(1, len(text), cut_every)]
    return [[text], *sized, drawn, *halves]
