"""JSON-argument tool formats (DeepSeek V3 / V3.1, Kimi K2, Phi-4-mini, Granite) and Granite's reasoning split.

Every case is parsed whole and streamed split at every point (and a character at a time): the
results agree, and no markup reaches the content or the reasoning on the way.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovserve.service.parsing import ContentDelta, OutputFormat, ParsedTurn, Piece, ReasoningDelta, ToolCallStarted

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"

# What each model writes, as its chat template writes a call back into the prompt.
DS_V3_CALL = (
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"  # noqa: RUF001
    '{"city": "Paris"}\n```<｜tool▁call▁end｜>'  # noqa: RUF001
)
DS_V3_CALL2 = '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{"zone": "CET"}\n```<｜tool▁call▁end｜>'  # noqa: RUF001
DS_BEGIN, DS_END = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"  # noqa: RUF001
DS_V31_CALL = '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>'  # noqa: RUF001
DS_V31_CALL2 = '<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"zone": "CET"}<｜tool▁call▁end｜>'  # noqa: RUF001
KIMI_BEGIN, KIMI_END = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
KIMI_CALL = '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|>'
KIMI_CALL2 = '<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"zone": "CET"}<|tool_call_end|>'
JSON_CALL = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
JSON_CALL2 = '{"name": "get_time", "arguments": {"zone": "CET"}}'

WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET"})
# Strings that are markup in some format: none may appear in streamed content.
MARKUP = ["｜", "<|tool", "functools", "```"]  # noqa: RUF001

CASES = [
    # (format, output, calls, content)
    ("deepseek_v3", DS_BEGIN + DS_V3_CALL + DS_END, [WEATHER], ""),
    ("deepseek_v3", DS_BEGIN + DS_V3_CALL + "\n" + DS_V3_CALL2 + DS_END, [WEATHER, TIME], ""),
    ("deepseek_v3", "Let me look.\n\n" + DS_BEGIN + DS_V3_CALL + DS_END, [WEATHER], "Let me look."),
    ("deepseek_v3", DS_BEGIN + DS_V3_CALL, [WEATHER], ""),  # cut off before the section's end: still whole
    ("deepseek_v3", DS_BEGIN + DS_V3_CALL.replace("}\n", "\n") + DS_END, [], None),  # broken JSON
    ("deepseek_v3", DS_BEGIN + DS_V3_CALL[:40], [], None),  # cut off inside the call
    ("deepseek_v31", DS_BEGIN + DS_V31_CALL + DS_END, [WEATHER], ""),
    ("deepseek_v31", DS_BEGIN + DS_V31_CALL + DS_V31_CALL2 + DS_END, [WEATHER, TIME], ""),
    ("deepseek_v31", "Checking. " + DS_BEGIN + DS_V31_CALL + DS_END + " Done.", [WEATHER], "Checking.\nDone."),
    ("deepseek_v31", DS_BEGIN + DS_V31_CALL.replace("get_weather", "") + DS_END, [], None),  # no name
    ("kimi_k2", KIMI_BEGIN + KIMI_CALL + KIMI_END, [WEATHER], ""),
    ("kimi_k2", KIMI_BEGIN + KIMI_CALL + KIMI_CALL2 + KIMI_END, [WEATHER, TIME], ""),
    ("kimi_k2", "I'll check. " + KIMI_BEGIN + KIMI_CALL + KIMI_END, [WEATHER], "I'll check."),
    ("kimi_k2", KIMI_BEGIN + KIMI_CALL.replace(":0", "") + KIMI_END, [], None),  # no call number
    ("phi4_mini_json", f"functools[{JSON_CALL}]", [WEATHER], ""),
    ("phi4_mini_json", f" functools[{JSON_CALL}, {JSON_CALL2}]", [WEATHER, TIME], ""),
    ("phi4_mini_json", f"Sure, let me check. functools[{JSON_CALL}]", [WEATHER], "Sure, let me check."),
    ("phi4_mini_json", f"functools[{JSON_CALL}] and more", [], None),  # text after the list
    ("phi4_mini_json", 'functools[{"name": "get_weather"', [], None),
    ("granite", f"<|tool_call|>[{JSON_CALL}]", [WEATHER], ""),
    ("granite", f"<|tool_call|>[{JSON_CALL}, {JSON_CALL2}]", [WEATHER, TIME], ""),
    ("granite", f"[{JSON_CALL}]", [WEATHER], ""),  # the token skipped
    ("granite", f"One moment.<|tool_call|>[{JSON_CALL}]", [WEATHER], "One moment."),
    ("granite", '<|tool_call|>[{"arguments": {}}]', [], None),  # no name
    ("granite", "[1, 2] are numbers", [], None),
    # llama.cpp's Phi-4-mini template: one call object a <|tool_call|> block, each closed by <|/tool_call|>
    ("granite", f"<|tool_call|>{JSON_CALL}<|/tool_call|>", [WEATHER], ""),
    ("granite", f"<|tool_call|>{JSON_CALL}<|/tool_call|><|tool_call|>{JSON_CALL2}<|/tool_call|>", [WEATHER, TIME], ""),
    ("granite", f"Checking.<|tool_call|>{JSON_CALL}<|/tool_call|>", [WEATHER], "Checking."),
    ("granite", f"<|tool_call|>{JSON_CALL}<|/tool_call|> and then", [], None),  # text after a block
    ("granite", f"<|tool_call|>{JSON_CALL}<|/tool_call|><|tool_call|>[]<|/tool_call|>", [], None),  # an empty list
    ("granite", '<|tool_call|>{"name": "get_weather"}{"name": "x"}<|/tool_call|>', [], None),  # two values
]  # fmt: skip


def parse(fmt: OutputFormat, cuts: list[int], text: str) -> tuple[ParsedTurn, list[Piece]]:
    """``text`` fed in pieces cut at ``cuts``, then finished."""
    parser = fmt.parser()
    pieces: list[Piece] = []
    for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True):
        pieces += parser.feed(text[start:end])
    return parser.result, pieces + parser.finish()


def summary(turn: ParsedTurn) -> tuple[str, str, bool, list[tuple[str, str]]]:
    """The turn but for the random call ids."""
    return turn.content, turn.reasoning, turn.in_reasoning, [(c.name, c.arguments) for c in turn.calls]


def splits(text: str) -> list[list[int]]:
    """Every cut into two, and a character at a time."""
    return [[cut] for cut in range(1, len(text))] + [list(range(1, len(text)))]


@pytest.mark.parametrize(("name", "text", "calls", "content"), CASES)
def test_whole_and_every_split_agree(name: str, text: str, calls: list, content: str | None) -> None:
    fmt = OutputFormat(name)
    whole, _ = parse(fmt, [], text)
    assert [(c.name, json.loads(c.arguments)) for c in whole.calls] == calls
    assert whole.content == (text if content is None else content)  # None: not a call, all of it is text
    for cuts in splits(text):
        split, pieces = parse(fmt, cuts, text)
        assert summary(split) == summary(whole), cuts
        if calls:  # markup never streams out as text, however it is split
            streamed = [p.text for p in pieces if isinstance(p, ContentDelta)]
            assert not any(mark in part for part in streamed for mark in MARKUP), (cuts, streamed)


def test_kimi_call_ids_are_its_own_form() -> None:
    turn, pieces = parse(OutputFormat("kimi_k2"), [], KIMI_BEGIN + KIMI_CALL + KIMI_CALL2 + KIMI_END)
    assert [c.id for c in turn.calls] == ["functions.get_weather:0", "functions.get_time:1"]
    assert [p.name for p in pieces if isinstance(p, ToolCallStarted)] == ["get_weather", "get_time"]


def test_a_call_with_a_name_of_dots_and_colons_keeps_it() -> None:
    text = KIMI_BEGIN + KIMI_CALL.replace("get_weather", "weather.v2:now") + KIMI_END
    turn, _ = parse(OutputFormat("kimi_k2"), [], text)
    assert [c.name for c in turn.calls] == ["weather.v2:now"]


def test_sections_amid_text_each_make_their_calls() -> None:
    text = "First. " + DS_BEGIN + DS_V31_CALL + DS_END + " Then. " + DS_BEGIN + DS_V31_CALL2 + DS_END
    turn, _ = parse(OutputFormat("deepseek_v31"), [], text)
    assert [c.name for c in turn.calls] == ["get_weather", "get_time"] and turn.content == "First.\nThen."


GRANITE_REASONING = [
    # (output, reasoning, content, cut off inside the reasoning)
    ("Here is my thought process:\nThe user greets me.\n\nHere is my response:\nHello!",
     "The user greets me.", "Hello!", False),
    ("Here's my thought process: short.\nHere's my response: Hi.", "short.", "Hi.", False),
    ("Here is my thought process:\nStill thinking about He", "Still thinking about He", "", True),
    ("Hello! Here is my response: plain.", "", "Hello! Here is my response: plain.", False),
    ("Here is my thought process:\nNo tag for the end here", "No tag for the end here", "", True),
]  # fmt: skip


@pytest.mark.parametrize(("text", "reasoning", "content", "cut_off"), GRANITE_REASONING)
def test_granite_reasoning_split(text: str, reasoning: str, content: str, cut_off: bool) -> None:
    fmt = OutputFormat(None, "granite")
    whole, _ = parse(fmt, [], text)
    assert (whole.reasoning, whole.content, whole.in_reasoning) == (reasoning, content, cut_off)
    for cuts in splits(text):
        split, pieces = parse(fmt, cuts, text)
        assert summary(split) == summary(whole), cuts
        if reasoning:  # the phrases are markup: neither streams out
            texts = [p.text for p in pieces if isinstance(p, ContentDelta | ReasoningDelta)]
            assert not any("my thought process" in t or "my response:" in t for t in texts), (cuts, texts)


def test_granite_reasoning_then_a_call() -> None:
    text = f"Here is my thought process:\nI need the weather.\nHere is my response:\n<|tool_call|>[{JSON_CALL}]"
    fmt = OutputFormat("granite", "granite")
    for cuts in [[], *splits(text)]:
        turn, _ = parse(fmt, cuts, text)
        assert (turn.reasoning, turn.content) == ("I need the weather.", "")
        assert [c.name for c in turn.calls] == ["get_weather"]


def test_granite_block_opened_by_the_prompt() -> None:
    turn, _ = parse_with_tail("Thinking.\nHere is my response:\nHi.", "<|start_of_role|>assistant<|end_of_role|>"
                              "Here is my thought process:\n")  # fmt: skip
    assert (turn.reasoning, turn.content) == ("Thinking.", "Hi.")


def parse_with_tail(text: str, prompt_tail: str) -> tuple[ParsedTurn, list[Piece]]:
    parser = OutputFormat(None, "granite").parser(prompt_tail=prompt_tail)
    pieces = parser.feed(text) + parser.finish()
    return parser.result, pieces


@pytest.mark.parametrize(
    ("template", "tool_parser", "reasoning_parser"),
    [
        ("deepseek-ai-DeepSeek-V3.1.jinja", "deepseek_v31", "think"),
        ("llama-cpp-deepseek-r1.jinja", "deepseek_v3", "think"),
        ("deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "deepseek_v3", "think"),
        ("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek_v3", "think"),
        ("moonshotai-Kimi-K2.jinja", "kimi_k2", None),
        ("Kimi-K2-Instruct.jinja", "kimi_k2", None),
        ("ibm-granite-granite-3.3-2B-Instruct.jinja", "granite", "granite_think"),  # <think>, <response> tags
        ("ibm-granite-granite-4.0.jinja", "hermes", None),  # Granite 4 writes Hermes <tool_call> blocks
        ("vllm-phi4-mini-tool_use.jinja", "phi4_mini_json", None),
        ("microsoft-Phi-4-mini-instruct.jinja", "phi4_mini_json", None),
        ("Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", None),
        ("meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3_json", None),
        ("llama-cpp-microsoft-Phi-4-mini-instruct.jinja", "granite", None),  # <|tool_call|>{...}<|/tool_call|>
    ],
)
def test_vendored_templates_choose_their_parsers(template: str, tool_parser: str, reasoning_parser: str | None) -> None:
    chosen = OutputFormat.choose(None, None, (TEMPLATES / template).read_text())
    assert (chosen.tool_parser, chosen.reasoning_parser) == (tool_parser, reasoning_parser)


def test_granite_3_2_thinking_prompt_chooses_granite_reasoning() -> None:
    # Granite 3.2's template (not vendored) asks for the phrases in its thinking system prompt.
    prompt = "Write your thoughts after 'Here is my thought process:' and your response after 'Here is my response:'"
    assert OutputFormat.choose(None, None, prompt + " <|tool_call|>").reasoning_parser == "granite"


@pytest.mark.parametrize(
    "text",
    [
        "<think>Checking the sky.</think><response>Sunny today.</response>",
        "<think>\nChecking the sky.\n</think>\n<response>\nSunny today.\n</response>",
        "<think>Checking the sky.</think>Sunny today.",  # the wrapper is the model's to write, not required
    ],
)
def test_granite_33_reply_tags_are_not_content(text: str) -> None:
    """Granite 3.3's thinking prompt asks for <think>...</think><response>...</response>: the tags are markup."""
    template = (TEMPLATES / "ibm-granite-granite-3.3-2B-Instruct.jinja").read_text()
    chosen = OutputFormat.choose(None, None, template)
    assert chosen.reasoning_parser == "granite_think"
    for split in range(1, len(text) + 1):
        parser = chosen.parser(tools=False)
        for start in range(0, len(text), split):
            parser.feed(text[start : start + split])
        parser.finish()
        assert (parser.result.reasoning, parser.result.content) == ("Checking the sky.", "Sunny today."), split
