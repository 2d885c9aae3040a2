"""The generic tool format (service/parsing/formats_generic.py): ``{"tool_calls": [...]}`` read back as calls.

Every case is parsed whole and streamed split at every point (and a character at a time): the results agree,
and no call's JSON reaches the content on the way. Then the forced-call grammar built from the format's
CallMarkup is run on the real engine (tiny-chat): what it writes reads back as the forced calls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovserve.service.parsing import TOOL_PARSERS, ContentDelta, OutputFormat, ParsedTurn, Piece
from ovserve.service.parsing.formats_generic import GENERIC, generic_calls
from ovserve.service.parsing.markup import spaced_ebnf
from tests.service.api.test_call_markup import BOUNDED, NAMES, assert_calls, forced_config, generate, read_back

GENERIC_FORMAT = OutputFormat("generic")
WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET", "days": [1, 2]})
CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
CALL2 = '{"name": "get_time", "arguments": {"zone": "CET", "days": [1, 2]}}'
PRETTY = json.dumps({"tool_calls": [{"name": n, "arguments": a} for n, a in (WEATHER, TIME)]}, indent=2)

CASES = [
    # (output, calls, content; None: not a call, all of it is content)
    (f'{{"tool_calls": [{CALL}]}}', [WEATHER], ""),
    (f'{{"tool_calls": [{CALL}, {CALL2}]}}', [WEATHER, TIME], ""),
    (PRETTY, [WEATHER, TIME], ""),  # whitespace anywhere
    (f'\n  {{"tool_calls":[{CALL.replace(" ", "")}]}}\n', [WEATHER], ""),  # none at all, and around
    (f'{{"tool_call": {CALL}}}', [WEATHER], ""),  # llama.cpp's one-call shape
    (f'```json\n{{"tool_calls": [{CALL}]}}\n```', [WEATHER], ""),  # fenced
    (f'Let me check. {{"tool_calls": [{CALL}]}}', [WEATHER], "Let me check."),
    (f'{{"tool_calls": [{CALL}]}} {{"tool_calls": [{CALL2}]}}', [WEATHER, TIME], ""),  # one object after another
    ('{"tool_calls": [{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}]}', [WEATHER], ""),
    ('{"tool_calls": [{"name": "get_weather", "parameters": {"city": "Paris"}}]}', [WEATHER], ""),
    ('{"answer": 42}', [], None),  # a JSON answer, not a call
    ('{"tool_calls": []}', [], None),  # no call in it
    (f'{{"tool_calls": [{CALL}], "content": "x"}}', [], None),  # more than the call list
    (f'{{"tool_calls": [{CALL}]}} and then some', [], None),  # text after the object
    ('{"tool_calls": [{"name": "get_weather", "argu', [], None),  # cut off in its first call
    ('{"tool_calls": [{"arguments": {}}]}', [], None),  # no name
    ('{"tool_calls": [{"name": "f", "arguments": [1]}]}', [], None),  # arguments not an object
    ('{"tool_calls": {"name": "f", "arguments": {}}}', [], None),  # not a list
    ('```python\nprint("hi")\n```', [], None),
    ("Hello! How can I help?", [], None),
    ('The object {"a": 1} is JSON.', [], None),
]  # fmt: skip


def parse(cuts: list[int], text: str, fmt: OutputFormat = GENERIC_FORMAT) -> tuple[ParsedTurn, list[Piece]]:
    """``text`` fed in pieces cut at ``cuts``, then finished."""
    parser = fmt.parser()
    pieces: list[Piece] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        pieces += parser.feed(text[start:end])
    return parser.result, pieces + parser.finish()


def summary(turn: ParsedTurn) -> tuple[str, list[tuple[str, Any]]]:
    """The turn but for the random call ids."""
    return turn.content, [(call.name, json.loads(call.arguments)) for call in turn.calls]


def splits(text: str) -> list[list[int]]:
    """Every cut into two, and a character at a time."""
    return [[cut] for cut in range(1, len(text))] + [list(range(1, len(text)))]


@pytest.mark.parametrize(("text", "calls", "content"), CASES)
def test_whole_and_every_split_agree(text: str, calls: list[tuple[str, Any]], content: str | None) -> None:
    whole, _ = parse([], text)
    assert summary(whole) == (text if content is None else content, calls)
    for cuts in splits(text):
        split, pieces = parse(cuts, text)
        assert summary(split) == summary(whole), cuts
        if calls:  # the call's JSON never streams out as text, however it is split
            streamed = "".join(piece.text for piece in pieces if isinstance(piece, ContentDelta))
            assert "tool_call" not in streamed and "{" not in streamed, (cuts, streamed)


def test_plain_text_streams_as_it_comes() -> None:
    """Only a reply that could still be a call list is held back: prose goes out delta by delta."""
    parser = GENERIC_FORMAT.parser()
    assert [piece.text for piece in parser.feed("Hello") if isinstance(piece, ContentDelta)] == ["Hello"]
    # The "{" could open a call list: held, with the space before it (content's trailing space always is).
    assert [piece.text for piece in parser.feed(", world {") if isinstance(piece, ContentDelta)] == [", world"]
    assert [piece.text for piece in parser.feed("x} done") if isinstance(piece, ContentDelta)] == [" {x} done"]


def test_without_tools_the_json_is_content() -> None:
    text = f'{{"tool_calls": [{CALL}]}}'
    parser = GENERIC_FORMAT.parser(tools=False)
    parser.feed(text)
    parser.finish()
    assert parser.result.content == text and not parser.result.calls


@pytest.mark.parametrize(
    "text",
    [
        '{"tool_calls": [{"name": "f", "arguments": ' + "[" * 100_000 + "]" * 100_000 + "}]}",  # deeper than the stack
        '{"tool_calls": [{"name": "f", "arguments": "' + "[" * 100_000 + '"}]}',  # the same as a string
        "{" * 50_000,
        '{"tool_calls": [' * 20_000,
        "```json" + "`" * 1000,
        "",
    ],
    ids=["deep", "deep-string", "braces", "opened-lists", "fences", "empty"],
)
def test_hostile_output_is_content_never_an_error(text: str) -> None:
    assert generic_calls(text) is None
    turn, _ = parse([], text)
    assert turn.content == text.strip() and not turn.calls


def test_the_markup_writes_what_the_parser_reads() -> None:
    """Two calls written from the CallMarkup (what the forced grammar writes, spaces optional) read back."""
    assert TOOL_PARSERS["generic"].markup == GENERIC
    calls = [GENERIC.begin(name) + json.dumps(arguments) + GENERIC.call_end for name, arguments in (WEATHER, TIME)]
    text = GENERIC.opening + GENERIC.separator.join(calls) + GENERIC.closing
    assert text == f'{{"tool_calls": [{CALL}, {CALL2}]}}'
    assert summary(parse([], text)[0]) == ("", [WEATHER, TIME])
    assert summary(parse([], text.replace(": ", ":").replace(", ", ","))[0]) == ("", [WEATHER, TIME])
    assert spaced_ebnf(GENERIC.opening) == '"{\\"tool_calls\\":" " "? "["'


# The forced-call grammar path: the grammar output.py builds from GENERIC, run by XGrammar on tiny-chat.


@pytest.mark.parametrize("seed", [0, 1, 2], ids=["greedy", "seed1", "seed2"])
def test_required_calls_read_back(seed: int) -> None:
    text = generate(forced_config(GENERIC_FORMAT, tools=BOUNDED, tool_choice="required"), seed)
    assert text.lstrip().startswith('{"tool_calls":'), text
    assert assert_calls(read_back(GENERIC_FORMAT, text), text, NAMES)


@pytest.mark.parametrize("tool", NAMES)
def test_named_call_reads_back(tool: str) -> None:
    config = forced_config(GENERIC_FORMAT, named_tool_choice={"type": "function", "function": {"name": tool}})
    for seed in (0, 3):
        text = generate(config, seed)
        assert assert_calls(read_back(GENERIC_FORMAT, text), text, [tool]) == [tool]


def test_parallel_tool_calls_false_is_one_call() -> None:
    config = forced_config(GENERIC_FORMAT, tool_choice="required", parallel_tool_calls=False)
    for seed in (0, 4, 5):
        text = generate(config, seed)
        assert len(assert_calls(read_back(GENERIC_FORMAT, text), text, NAMES)) == 1
