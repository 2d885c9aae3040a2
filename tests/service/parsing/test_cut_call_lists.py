"""A call list the output cuts short (max_tokens, a stop string) keeps its complete calls, in every format.

Every registered tool format (TOOL_PARSERS read at collection, so a format added later is covered too) writes
two complete calls in its own markup, then a third cut at every character position: exactly the two complete
calls come back, unary and fed in small deltas, and the content is what it is beside the whole list (empty, or
the text before the calls). Once the third call's arguments are whole and only its end markup is cut (a stop
string there), it may come back too, exactly as written. A cut call with no call before it stays text: nothing
the model wrote is lost.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovserve.service.parsing import TOOL_PARSERS, OutputFormat, ParsedTurn
from ovserve.service.parsing.cut_lists import MAX_ENDS_TRIED, call_ends, complete_calls
from ovserve.service.parsing.markup import PYTHONIC, TAGGED_ARGUMENTS, CallMarkup

# One name per format (aliases share their format's entry).
FORMATS = list({id(chosen): name for name, chosen in reversed(TOOL_PARSERS.items())}.values())[::-1]
PARALLEL = [name for name in FORMATS if TOOL_PARSERS[name].markup.parallel]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Paris", "days": 3}),
    ("set_alarm", {"hour": 7, "label": "wake up"}),
    ("get_time", {"zone": "Europe/Rome", "exact": True}),
]
SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    "set_alarm": {"type": "object", "properties": {"hour": {"type": "integer"}, "label": {"type": "string"}}},
    "get_time": {"type": "object", "properties": {"zone": {"type": "string"}, "exact": {"type": "boolean"}}},
}
PREAMBLES = ["", "Let me look that up.\n"]
DELTAS = (1, 2, 3, 5)  # the sizes, in turn, of the deltas a streamed reply is fed in


def written_arguments(markup: CallMarkup, arguments: dict[str, Any]) -> str:
    """``arguments`` in ``markup``'s dialect, as its model writes them."""
    if markup.arguments == "json":
        return json.dumps(arguments)
    if markup.arguments == "python":
        return ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    if markup.arguments in TAGGED_ARGUMENTS:
        return TAGGED_ARGUMENTS[markup.arguments].write(arguments)
    raise AssertionError(f"a dialect this test cannot write: {markup.arguments!r}: teach written_arguments it")


def written_calls(markup: CallMarkup) -> list[str]:
    """Each of CALLS as ``markup`` writes it, numbered in turn."""
    return [call + markup.call_end for call in unended_calls(markup)]


def unended_calls(markup: CallMarkup) -> list[str]:
    """Each of CALLS as ``markup`` writes it up to its end markup (whitespace after the arguments left off)."""
    return [
        (markup.begin(name, index) + written_arguments(markup, arguments)).rstrip()
        for index, (name, arguments) in enumerate(CALLS)
    ]


def parse(name: str, text: str, deltas: tuple[int, ...] = ()) -> ParsedTurn:
    """``text`` through format ``name``'s turn parser, whole or (``deltas``) in deltas of those sizes in turn."""
    parser = OutputFormat(name).parser(schemas=SCHEMAS)
    position, turn = 0, 0
    while position < len(text):
        size = deltas[turn % len(deltas)] if deltas else len(text)
        parser.feed(text[position : position + size])
        position, turn = position + size, turn + 1
    parser.finish()
    return parser.result


def calls_of(turn: ParsedTurn) -> list[tuple[str, Any]]:
    return [(call.name, json.loads(call.arguments)) for call in turn.calls]


@pytest.mark.parametrize("preamble", PREAMBLES, ids=["calls-only", "text-first"])
@pytest.mark.parametrize("name", PARALLEL)
def test_complete_calls_survive_a_cut_at_every_position(name: str, preamble: str) -> None:
    markup = TOOL_PARSERS[name].markup
    first, second, third = written_calls(markup)
    listed = preamble + markup.opening + first + markup.separator + second
    whole = parse(name, listed + markup.closing)
    if preamble and len(whole.calls) != 2:
        assert not whole.calls  # a format that reads no calls after text: a cut list after text is no concern
        return
    assert [call for call, _ in calls_of(whole)] == ["get_weather", "set_alarm"], listed + markup.closing
    three = parse(name, listed + markup.separator + third + markup.closing)
    assert [call for call, _ in calls_of(three)] == [call for call, _ in CALLS]
    two, all_three = (calls_of(whole), whole.content), (calls_of(three), whole.content)
    arguments_end = len(unended_calls(markup)[2])
    for cut in range(len(third)):  # third[:cut]: the third call cut short, up to its last character
        text = listed + markup.separator + third[:cut]
        for deltas in ((), *((size,) for size in DELTAS), DELTAS):
            turn = parse(name, text, deltas)
            allowed = [two, all_three] if cut >= arguments_end else [two]
            assert (calls_of(turn), turn.content) in allowed, (text, deltas)


@pytest.mark.parametrize("name", FORMATS)
def test_a_lone_cut_call_stays_text(name: str) -> None:
    """No complete call before the cut: no call, and the text the model wrote comes back as content (or, once
    the arguments are whole and only the end markup is cut, the call exactly as written)."""
    markup = TOOL_PARSERS[name].markup
    call, arguments_end = written_calls(markup)[0], len(unended_calls(markup)[0])
    whole = calls_of(parse(name, markup.opening + call + markup.closing))
    assert whole == CALLS[:1], call
    for cut in range(1, len(call)):
        text = markup.opening + call[:cut]
        turn = parse(name, text)
        as_text = not turn.calls and "".join(turn.content.split()) == "".join(text.split())
        assert as_text or (cut >= arguments_end and calls_of(turn) == whole and not turn.content), text
        streamed = parse(name, text, DELTAS)
        assert (calls_of(streamed), streamed.content) == (calls_of(turn), turn.content), text


@pytest.mark.parametrize("name", PARALLEL)
def test_a_whole_list_reads_as_before(name: str) -> None:
    """Three whole calls, closed or not (a stop string at the closing): all three, as before."""
    markup = TOOL_PARSERS[name].markup
    text = markup.opening + markup.separator.join(written_calls(markup))
    for closing in (markup.closing, ""):
        turn = parse(name, text + closing)
        assert [call for call, _ in calls_of(turn)] == [call for call, _ in CALLS] and not turn.content, text


def test_a_list_malformed_from_its_first_call_stays_text() -> None:
    """No run of whole calls decodes before the cut: no call is made up, the text is the content."""
    for text in ("[get_weather(city=), set_alarm(hour=7)]", "[get_weather(city=), set_alarm(hour=7), get_ti"):
        turn = parse("pythonic", text)
        assert not turn.calls and turn.content == text


def test_the_cut_call_is_dropped_when_calls_came_before() -> None:
    """Hermes' blocks: two whole calls, then a block the output cut: the two calls, nothing of the third."""
    complete = "".join(f'<tool_call>\n{{"name": "{name}", "arguments": {{}}}}\n</tool_call>\n' for name in "ab")
    turn = parse("hermes", complete + '<tool_call>\n{"name": "c", "argu')
    assert [call.name for call in turn.calls] == ["a", "b"] and turn.content == ""


def test_ends_tried_are_bounded_on_hostile_text() -> None:
    """A cut call full of what looks like calls' ends: at most MAX_ENDS_TRIED decodes, the last ends first."""
    decoded: list[str] = []

    def decode(text: str) -> None:
        decoded.append(text)

    text = "[a(x=1), " + "b(y=')'), " * 10_000 + "c(z="
    assert len(call_ends(text, PYTHONIC)) == MAX_ENDS_TRIED
    assert complete_calls(decode, text, PYTHONIC, "]") is None
    assert len(decoded) == MAX_ENDS_TRIED and decoded[0].endswith("b(y=')')]")


@pytest.mark.parametrize("name", FORMATS)
def test_long_whitespace_after_a_call_end_is_scanned_once(name: str) -> None:
    """Runs of whitespace where calls meet: the ends are found by a scan that does not try every split of a
    run (a pattern of two optional whitespace runs took about a second per 20,000 spaces, quadratic), and
    the list reads as it does with short runs."""
    markup = TOOL_PARSERS[name].markup
    first, second, _ = written_calls(markup)

    def spaced(run: int) -> str:
        space = " " * run
        return markup.opening + first + space + markup.separator + space + second + space + markup.separator

    text = spaced(300_000) + "\n" * 300_000
    assert all(0 <= end <= len(text) for end in call_ends(text, markup))
    if markup.parallel:
        short = parse(name, spaced(1) + "\n")
        assert short.calls and [call.name for call in parse(name, text).calls] == [c.name for c in short.calls]


@pytest.mark.parametrize("name", FORMATS)
def test_a_list_cut_inside_its_closing_keeps_every_call(name: str) -> None:
    """Every call whole, the output ended partway into the list's closing (a closing of several tokens:
    Apriel's ]</tool_calls>, Kimi K3's <|close|>tools<|sep|>, DeepSeek's section end): every call, unary and in
    small deltas, and no markup left as content. Before, a close tag cut short hid the list's last call (two
    calls read as one) or all of them (one call read as text)."""
    markup = TOOL_PARSERS[name].markup
    calls = written_calls(markup) if markup.parallel else written_calls(markup)[:1]
    listed = markup.opening + markup.separator.join(calls)
    expected = calls_of(parse(name, listed + markup.closing))
    assert [call for call, _ in expected] == [call for call, _ in CALLS[: len(calls)]], listed + markup.closing
    for cut in range(len(markup.closing.rstrip())):
        text = listed + markup.closing[:cut]
        for deltas in ((), DELTAS):
            turn = parse(name, text, deltas)
            assert (calls_of(turn), turn.content) == (expected, ""), (text, deltas)
