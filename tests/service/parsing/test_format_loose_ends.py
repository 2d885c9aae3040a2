"""Loose ends of issue 44's formats, each pinned by the case that showed it (service/parsing)."""

from __future__ import annotations

import json

import pytest

from service.parsing import OutputFormat, ParsedTurn
from service.parsing.calls import mistral_calls


def parsed(fmt: OutputFormat, text: str, *, pieces: int = 0, prompt_tail: str = "", tools: bool = True) -> ParsedTurn:
    """``text`` read by a parser of ``fmt``: whole, or (``pieces``) fed that many characters at a time."""
    parser = fmt.parser(prompt_tail=prompt_tail, tools=tools)
    step = pieces or len(text) or 1
    for start in range(0, len(text), step):
        parser.feed(text[start : start + step])
    parser.finish()
    return parser.result


def calls_of(turn: ParsedTurn) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, json.loads(call.arguments)) for call in turn.calls]


# 6. Mistral Small 3.2 writes a past call's id between its name and arguments.
@pytest.mark.parametrize("pieces", [0, 1, 3])
def test_mistral_reads_and_drops_a_call_id(pieces: int) -> None:
    text = '[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{}'
    turn = parsed(OutputFormat("mistral_args"), text, pieces=pieces)
    assert calls_of(turn) == [("get_weather", {"city": "Paris"}), ("get_time", {})]
    assert turn.content == ""


def test_mistral_call_id_markup_alone_is_not_a_call() -> None:
    assert mistral_calls('[TOOL_CALLS][CALL_ID]a1b2c3d4e[ARGS]{"city": "Paris"}') is None
    assert mistral_calls('[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e{"city": "Paris"}') is None
