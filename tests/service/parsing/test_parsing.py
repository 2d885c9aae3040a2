"""Output parsers: whole-text and streamed parsing agree, markup never leaks, every family's calls decode."""

from __future__ import annotations

import json
import random

import pytest

from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.parsing import (
    ContentDelta,
    OutputFormat,
    ParsedTurn,
    Piece,
    ReasoningDelta,
    ToolCallArguments,
    ToolCallFinished,
    ToolCallStarted,
    parser_name_problem,
)

TEMPLATE = (BUNDLED_MODELS_DIR / BUNDLED_MODEL / "chat_template.jinja").read_text()
TINY = OutputFormat.choose(None, None, TEMPLATE)

# Greedy outputs of tiny-chat, from its model card.
SINGLE = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
MULTIPLE = SINGLE + '\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
THINKING = (
    "<think>\nThe user greets me. I should greet them back and offer help.\n</think>\n\n"
    "Hello! I am doing well. How can I help you?"
)
THINKING_CALL = (
    "<think>\nThe user asks: What is the weather in Paris? I can use the tools. I will call get_weather with city "
    "Paris.\n</think>\n\n" + SINGLE
)
CARD_OUTPUTS = [SINGLE, MULTIPLE, THINKING, THINKING_CALL, "Hello! How can I help you today?"]


def parse_whole(text: str, fmt: OutputFormat = TINY, **options: object) -> tuple[ParsedTurn, list[Piece]]:
    parser = fmt.parser(**options)  # type: ignore[arg-type]
    pieces = parser.feed(text) + parser.finish()
    return parser.result, pieces


def parse_split(text: str, cuts: list[int], fmt: OutputFormat = TINY, **options: object) -> tuple[ParsedTurn, list]:
    parser = fmt.parser(**options)  # type: ignore[arg-type]
    pieces: list[Piece] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        pieces += parser.feed(text[start:end])
    return parser.result, pieces + parser.finish()


def same(a: ParsedTurn, b: ParsedTurn) -> bool:
    """Equal but for the random call ids."""
    calls = [[(c.name, c.arguments) for c in turn.calls] for turn in (a, b)]
    return (a.content, a.reasoning, a.in_reasoning, calls[0]) == (b.content, b.reasoning, b.in_reasoning, calls[1])


def test_tiny_chat_template_selects_hermes_and_think() -> None:
    assert (TINY.tool_parser, TINY.reasoning_parser) == ("hermes", "think")
    assert OutputFormat.choose("none", "none", TEMPLATE) == OutputFormat(None, None)
    assert OutputFormat.choose("pythonic", None, "plain template") == OutputFormat("pythonic", None)
    assert parser_name_problem("tool", "hermes") is None
    assert "unknown tool parser 'hermez'" in (parser_name_problem("tool", "hermez") or "")


def test_model_card_outputs_parse() -> None:
    single, _ = parse_whole(SINGLE)
    assert single.content == "" and [(c.name, json.loads(c.arguments)) for c in single.calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert single.calls[0].id.startswith("call_") and len(single.calls[0].id) > 10
    multiple, _ = parse_whole(MULTIPLE)
    assert [json.loads(c.arguments)["city"] for c in multiple.calls] == ["Paris", "Rome"]
    assert multiple.content == "" and len({c.id for c in multiple.calls}) == 2
    thinking, _ = parse_whole(THINKING)
    assert thinking.reasoning == "The user greets me. I should greet them back and offer help."
    assert thinking.content == "Hello! I am doing well. How can I help you?" and not thinking.calls
    both, _ = parse_whole(THINKING_CALL)
    assert both.reasoning.startswith("The user asks") and both.reasoning.endswith("city Paris.")
    assert both.content == "" and [c.name for c in both.calls] == ["get_weather"]


@pytest.mark.parametrize("text", CARD_OUTPUTS)
def test_random_splits_give_the_whole_text_result(text: str) -> None:
    whole, _ = parse_whole(text)
    rng = random.Random(text)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(text)), rng.randint(1, min(30, len(text) - 1))))
        split, pieces = parse_split(text, cuts)
        assert same(split, whole), cuts
        for piece in pieces:  # no markup in what is streamed as text
            if isinstance(piece, ContentDelta | ReasoningDelta):
                assert "<" not in piece.text and ">" not in piece.text, (cuts, piece)


def test_one_character_at_a_time_streams_name_first_then_valid_arguments() -> None:
    _, pieces = parse_split(MULTIPLE, list(range(1, len(MULTIPLE))))
    calls = [p for p in pieces if not isinstance(p, ContentDelta | ReasoningDelta)]
    kinds = [(type(p).__name__, p.index) for p in calls]
    assert kinds == [
        ("ToolCallStarted", 0), ("ToolCallArguments", 0), ("ToolCallFinished", 0),
        ("ToolCallStarted", 1), ("ToolCallArguments", 1), ("ToolCallFinished", 1),
    ]  # fmt: skip
    fragments = "".join(p.fragment for p in calls if isinstance(p, ToolCallArguments) and p.index == 1)
    assert json.loads(fragments) == {"city": "Rome"}
    assert not [p for p in pieces if isinstance(p, ContentDelta)]


def test_text_around_calls_keeps_its_words_and_loses_the_markup() -> None:
    text = "Let me check.\n" + SINGLE + "\nDone."
    whole, pieces = parse_whole(text)
    assert whole.content == "Let me check.\nDone." and len(whole.calls) == 1
    assert isinstance(pieces[0], ContentDelta) and isinstance(pieces[1], ToolCallStarted)


def test_a_split_tag_is_held_back_until_it_is_known() -> None:
    parser = TINY.parser()
    assert parser.feed("Sure <tool") == [ContentDelta("Sure")]  # the space waits too: it may precede a call
    assert parser.feed("_ca") == []
    assert parser.feed("ke is a lie") == [ContentDelta(" <tool_cake is a lie")]
    assert parser.finish() == []


def test_malformed_call_stays_text_and_makes_no_call() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tool_call>'
    result, pieces = parse_whole(text)
    assert result.calls == [] and result.content == text
    assert not [p for p in pieces if isinstance(p, ToolCallStarted)]
    # A call without a name is not a call either; the valid call next to it is kept.
    result, _ = parse_whole('<tool_call>\n{"arguments": {}}\n</tool_call>' + SINGLE)
    assert [c.name for c in result.calls] == ["get_weather"] and result.content.startswith("<tool_call>")


def test_unclosed_call_at_the_end_is_a_call_when_its_json_is_whole() -> None:
    result, _ = parse_whole(SINGLE.removesuffix("</tool_call>"))
    assert [c.name for c in result.calls] == ["get_weather"] and result.content == ""
    cut, _ = parse_whole(SINGLE[:30])
    assert cut.calls == [] and cut.content == SINGLE[:30]


def test_cut_off_inside_thinking_is_reasoning_not_content() -> None:
    text = "<think>\nThe user greets me. I should gr"
    result, pieces = parse_split(text, [3, 9, 20])
    assert result.in_reasoning and result.reasoning == "The user greets me. I should gr" and result.content == ""
    assert all(isinstance(p, ReasoningDelta) for p in pieces)


def test_block_opened_by_the_template() -> None:
    result, _ = parse_whole("I think so.\n</think>\n\nYes.", prompt_tail="<|im_start|>assistant\n<think>\n")
    assert (result.reasoning, result.content) == ("I think so.", "Yes.")
    # tiny-chat's thinking-off prefill closes the block: the output is plain content.
    result, _ = parse_whole("Hello!", prompt_tail="assistant\n<think>\n\n</think>\n\n")
    assert (result.reasoning, result.content) == ("", "Hello!")


def test_plain_text_is_untouched() -> None:
    text = "  Spaces and <b>tags</b> stay as written.  "
    result, _ = parse_whole(text)
    assert result.content == text and not result.reasoning


def test_without_tools_offered_tool_markup_is_text() -> None:
    result, _ = parse_whole(SINGLE, tools=False)
    assert result.calls == [] and result.content == SINGLE


def test_max_calls_keeps_only_the_first_call() -> None:
    result, pieces = parse_whole(MULTIPLE, max_calls=1)
    assert [json.loads(c.arguments) for c in result.calls] == [{"city": "Paris"}]
    assert all(p.index == 0 for p in pieces if isinstance(p, ToolCallStarted | ToolCallArguments | ToolCallFinished))


LLAMA3_JSON = OutputFormat("llama3_json", None)
PYTHONIC = OutputFormat("pythonic", None)
MISTRAL = OutputFormat("mistral", None)


@pytest.mark.parametrize(
    ("fmt", "text", "calls", "content"),
    [
        (LLAMA3_JSON, '{"name": "get_weather", "parameters": {"city": "Paris"}}',
         [("get_weather", {"city": "Paris"})], ""),
        (LLAMA3_JSON, '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": 1}}',
         [("a", {}), ("b", {"x": 1})], ""),
        (LLAMA3_JSON, 'The answer is {"name": "a"}', [], 'The answer is {"name": "a"}'),
        (LLAMA3_JSON, '{"not": "a call"}', [], '{"not": "a call"}'),
        (PYTHONIC, '[get_weather(city="Paris", days=3, metric=True), get_time(city="Rome")]',
         [("get_weather", {"city": "Paris", "days": 3, "metric": True}), ("get_time", {"city": "Rome"})], ""),
        (PYTHONIC, "[print(open('x').read())]", [], "[print(open('x').read())]"),
        (PYTHONIC, "[1, 2]", [], "[1, 2]"),
        (MISTRAL, 'Sure. [TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}}]',
         [("get_weather", {"city": "Paris"})], "Sure."),
        (MISTRAL, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_time[ARGS]{"city": "Rome"}',
         [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Rome"})], ""),
        (MISTRAL, '[{"name": "get_time", "arguments": {"city": "Rome"}}]', [("get_time", {"city": "Rome"})], ""),
    ],
)  # fmt: skip
def test_other_families(fmt: OutputFormat, text: str, calls: list, content: str) -> None:
    whole, _ = parse_whole(text, fmt)
    assert [(c.name, json.loads(c.arguments)) for c in whole.calls] == calls
    assert whole.content == content
    for size in (1, 2, 5):
        split, _ = parse_split(text, list(range(size, len(text), size)), fmt)
        assert same(split, whole)


def test_other_servers_parser_names_pick_the_same_formats() -> None:
    """vLLM's and OVMS's names for a format work as --tool-parser / --reasoning-parser values."""
    from ovserve.service.parsing import parser_name_problem
    from ovserve.service.parsing.formats import ALIASES

    for kind, aliases in ALIASES.items():
        for alias, name in aliases.items():
            assert parser_name_problem(kind, alias) is None
            chosen = OutputFormat.choose(*((alias, None) if kind == "tool" else (None, alias)), "")
            assert (chosen.tool_parser if kind == "tool" else chosen.reasoning_parser) == name
