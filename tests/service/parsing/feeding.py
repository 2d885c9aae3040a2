"""A format's parser fed as a stream feeds it: the pieces a reply may arrive in, and the turn they make.

Shared by the family format tests (test_formats_json_families, test_formats_xml_families,
test_formats_python_families), so each cuts a reply the same ways.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from typing import Any

from service.parsing import OutputFormat, ParsedTurn, Piece


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
