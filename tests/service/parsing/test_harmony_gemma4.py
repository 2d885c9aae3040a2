"""gpt-oss (harmony) and Gemma 4 output: reasoning, content and calls, whole and split at every point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovserve.service.parsing import ContentDelta, OutputFormat, ParsedTurn, Piece, ReasoningDelta, ToolCallStarted
from ovserve.service.parsing.gemma4 import gemma4_call

TEMPLATES = Path(__file__).resolve().parents[2] / "data" / "chat_templates"
HARMONY = OutputFormat("openai", "openai_gptoss")
GEMMA4 = OutputFormat("gemma4", "gemma4")
WEATHER = [("get_weather", {"city": "Paris"})]

ANALYSIS = "<|channel|>analysis<|message|>The user asks for the weather. I will call get_weather.<|end|>"
HARMONY_CALL = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'
# (output, reasoning, content, calls): every <|call|> / <|return|> may be left out by the engine.
HARMONY_CASES = [
    (ANALYSIS + "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>",
     "The user asks for the weather. I will call get_weather.", "It is sunny.", []),
    (ANALYSIS + "<|start|>assistant<|channel|>final<|message|>It is sunny.", None, "It is sunny.", []),
    (ANALYSIS + "<|start|>assistant" + HARMONY_CALL + "<|call|>", None, "", WEATHER),
    # The recipient in the role part of the header, as the chat template writes history.
    (ANALYSIS + '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris"}',
     None, "", WEATHER),
    (HARMONY_CALL + "<|call|>", "", "", WEATHER),
    (" to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>", "", "", WEATHER),
    ("<|channel|>final<|message|>Hello! How can I help?<|return|>", "", "Hello! How can I help?", []),
    # A preamble on the commentary channel is content, before the call.
    ("<|channel|>commentary<|message|>Let me check.<|end|><|start|>assistant" + HARMONY_CALL, "", "Let me check.",
     WEATHER),
    ("Plain text, no harmony at all.", "", "Plain text, no harmony at all.", []),
]  # fmt: skip

GEMMA4_CALL = '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|>'
GEMMA4_CASES = [
    ("<|channel>thought\nThe user greets me.<channel|>Hello! How can I help?", "The user greets me.",
     "Hello! How can I help?", []),
    ("<|channel>thought\nThe user asks for the weather.\n<channel|>" + GEMMA4_CALL, "The user asks for the weather.",
     "", WEATHER),
    (GEMMA4_CALL + '<|tool_call>call:set_alarm{"hour":7,"loud":true,"label":null}<tool_call|>', "", "",
     [*WEATHER, ("set_alarm", {"hour": 7, "loud": True, "label": None})]),
    ("Let me check. " + GEMMA4_CALL, "", "Let me check.", WEATHER),
]  # fmt: skip
MALFORMED = [
    (HARMONY, '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Par'),
    (HARMONY, "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>[1, 2]<|call|>"),
    (GEMMA4, '<|tool_call>call:get_weather{city:<|"|>Paris}<tool_call|>'),
    (GEMMA4, '<|tool_call>get_weather{city:<|"|>Paris<|"|>}<tool_call|>'),
    (GEMMA4, "<|tool_call>call:get_weather{city:Paris}<tool_call|>"),
]


def parse(fmt: OutputFormat, text: str, cuts: list[int], **options: object) -> tuple[ParsedTurn, list[Piece]]:
    parser = fmt.parser(**options)  # type: ignore[arg-type]
    pieces: list[Piece] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        pieces += parser.feed(text[start:end])
    return parser.result, pieces + parser.finish()


def summary(turn: ParsedTurn) -> tuple[str, str, bool, list[tuple[str, object]]]:
    return turn.reasoning, turn.content, turn.in_reasoning, [(c.name, json.loads(c.arguments)) for c in turn.calls]


def check_every_split(fmt: OutputFormat, text: str, **options: object) -> ParsedTurn:
    """Whole, split once at every point, and one character at a time: the same turn; the whole one."""
    whole, _ = parse(fmt, text, [], **options)
    for cuts in [[i] for i in range(1, len(text))] + [list(range(1, len(text)))]:
        split, pieces = parse(fmt, text, cuts, **options)
        assert summary(split) == summary(whole), cuts
        if whole.calls or not whole.content.startswith("<"):  # no markup streamed, unless kept as text
            assert not [p for p in pieces if isinstance(p, ContentDelta | ReasoningDelta) and "|>" in p.text], cuts
    return whole


@pytest.mark.parametrize(("fmt", "case"), [(HARMONY, c) for c in HARMONY_CASES] + [(GEMMA4, c) for c in GEMMA4_CASES])
def test_reasoning_content_and_calls(fmt: OutputFormat, case: tuple) -> None:
    text, reasoning, content, calls = case
    turn = check_every_split(fmt, text)
    assert (turn.content, summary(turn)[3]) == (content, calls)
    if reasoning is not None:
        assert turn.reasoning == reasoning
    assert not turn.in_reasoning


@pytest.mark.parametrize(("fmt", "text"), MALFORMED)
def test_a_malformed_call_stays_text(fmt: OutputFormat, text: str) -> None:
    turn = check_every_split(fmt, text)
    assert turn.calls == [] and turn.content == text


@pytest.mark.parametrize(
    ("fmt", "text", "reasoning"),
    [(HARMONY, "<|channel|>analysis<|message|>The user asks for", "The user asks for"),
     (GEMMA4, "<|channel>thought\nThe user asks for", "The user asks for")],
)  # fmt: skip
def test_cut_off_inside_the_reasoning(fmt: OutputFormat, text: str, reasoning: str) -> None:
    turn = check_every_split(fmt, text)
    assert (turn.reasoning, turn.content, turn.in_reasoning) == (reasoning, "", True)


def test_without_tools_a_harmony_call_is_text_but_the_channels_are_read() -> None:
    call = "<|start|>assistant" + HARMONY_CALL
    turn = check_every_split(HARMONY, ANALYSIS + call, tools=False)
    assert turn.calls == [] and turn.content == call and turn.reasoning.startswith("The user asks")
    # The reasoning parser alone reads harmony too (its channels are one markup).
    turn = check_every_split(OutputFormat(None, "openai"), HARMONY_CASES[0][0])
    assert (turn.reasoning, turn.content) == (HARMONY_CASES[0][1], "It is sunny.")


def test_harmony_after_a_think_block_and_max_calls() -> None:
    """Another reasoning parser's block first (a forced call's grammar may write one), then harmony."""
    turn = check_every_split(OutputFormat("openai", "qwen3"), "<think>\nWeather.\n</think>\n\n" + HARMONY_CALL)
    assert turn.reasoning == "Weather." and summary(turn)[3] == WEATHER
    two = HARMONY_CALL + "<|call|>" + HARMONY_CALL.replace("Paris", "Rome")
    result, pieces = parse(HARMONY, two, [], max_calls=1)
    assert summary(result)[3] == WEATHER and len([p for p in pieces if isinstance(p, ToolCallStarted)]) == 1


def test_gemma4_thinking_off_prefill_and_values() -> None:
    turn = check_every_split(GEMMA4, "Hello!", prompt_tail="<|turn>model\n<|channel>thought\n<channel|>")
    assert (turn.reasoning, turn.content) == ("", "Hello!")
    block = 'call:f{q:<|"|>a: b, {c}]<|"|>,n:-1.5e2,l:[[1],{k:false}],"j":"x\\"y",<|"|>s<|"|>:<|"|><|"|>,e:{}}'
    assert gemma4_call(block) == [("f", json.dumps({"q": "a: b, {c}]", "n": -150.0, "l": [[1], {"k": False}],
                                                    "j": 'x"y', "s": "", "e": {}}))]  # fmt: skip
    assert gemma4_call("call:f{}") == [("f", "{}")] and gemma4_call("call:f{} trailing") is None


@pytest.mark.parametrize(
    ("template", "parsers", "family"),
    [
        ("openai-gpt-oss-120b.jinja", ("openai", "openai"), ("gpt-oss", "gpt_oss")),
        ("google-gemma-4-31B-it.jinja", ("gemma4", "gemma4"), ("gemma-4",)),
    ],
)
def test_the_real_templates_are_recognised(template: str, parsers: tuple[str, str], family: tuple[str, ...]) -> None:
    chosen = OutputFormat.choose(None, None, (TEMPLATES / template).read_text())
    assert (chosen.tool_parser, chosen.reasoning_parser) == parsers
    for other in sorted(TEMPLATES.glob("*.jinja")):  # and no other family's template is taken for these
        if not any(name in other.name for name in family):  # the family's variants (OVMS's copy too) are its own
            assert parsers[0] != OutputFormat.choose(None, None, other.read_text()).tool_parser, other.name


def test_markup_texts_hold_every_special_token_the_parsers_read() -> None:
    harmony = set("".join(HARMONY.markup_texts).replace(">", ">\n").split("\n"))
    for token in ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|constrain|>"):
        assert any(token in text for text in harmony), token
    assert {'<|"|>', "<|channel>thought", "<channel|>", "<|tool_call>call:{name}", "<tool_call|>"} <= set(
        GEMMA4.markup_texts
    )
