"""Loose ends of issue 44's formats, each pinned by the case that showed it (service/parsing)."""

from __future__ import annotations

import json

import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.errors import FieldViolation
from ovserve.service.parsing import TOOL_PARSERS, OutputFormat, ParsedTurn
from ovserve.service.parsing.calls import mistral_calls
from ovserve.service.parsing.formats_python import HUNYUAN_REPLY_PREFIX
from ovserve.service.structured.output import structured_output_config
from tests.rpc import parse


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


# 5. A name the markup writes between double quotes cannot hold one: a forced call of it is refused, by name.
QUOTED_NAME_FORMATS = ["minimax_m2", "deepseek_v32", "deepseek_v4", "minicpm5xml", "kimi_k3", "minimax_m3", "step3"]


@pytest.mark.parametrize("name", QUOTED_NAME_FORMATS)
def test_a_quoted_name_with_a_quote_is_refused(name: str) -> None:
    markup = TOOL_PARSERS[name].markup
    problem = markup.name_problem('get_"weather"')
    assert problem is not None and "get_" in problem
    assert markup.name_problem("get_weather") is None


@pytest.mark.parametrize("name", ["hermes", "qwen3_coder", "kimi_k2", "mistral_args"])
def test_names_written_otherwise_may_hold_a_quote(name: str) -> None:
    assert TOOL_PARSERS[name].markup.name_problem('get_"weather"') is None


@pytest.mark.parametrize("name", QUOTED_NAME_FORMATS)
def test_a_forced_call_of_a_quoted_name_is_a_violation_naming_the_tool(name: str) -> None:
    tools = [
        {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": 'say_"hi"', "parameters": {"type": "object"}}},
    ]
    request = parse(
        chat_pb2.CreateChatCompletionRequest,
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools, "tool_choice": "required"},
    )
    violations: list[FieldViolation] = []
    config = structured_output_config(request, violations, tools=tools, markup=TOOL_PARSERS[name].markup)
    assert config is None
    assert [violation.field for violation in violations] == ["tools[1].function.name"]
    assert 'say_\\"hi\\"' in violations[0].description


# 4. Command R+'s directly-answer pseudo-tool is its way of saying it answers without tools: no call.
@pytest.mark.parametrize("pieces", [0, 1, 4])
def test_command_r_plus_directly_answer_is_no_call(pieces: int) -> None:
    text = 'Action:\n```json\n[{"tool_name": "directly-answer", "parameters": {}}]\n```'
    turn = parsed(OutputFormat("command_r_plus"), text, pieces=pieces)
    assert (turn.calls, turn.content) == ([], "")


def test_command_r_plus_keeps_the_real_calls_beside_directly_answer() -> None:
    text = (
        'Action:\n```json\n[{"tool_name": "directly-answer", "parameters": {}}, '
        '{"tool_name": "get_weather", "parameters": {"city": "Paris"}}]\n```'
    )
    turn = parsed(OutputFormat("command_r_plus"), text)
    assert (calls_of(turn), turn.content) == ([("get_weather", {"city": "Paris"})], "")


# 1. Kimi K2 and DeepSeek V4 may open their calls without closing their reasoning: the call's opening ends it (as
# vLLM's kimi_k2 and deepseek_v4 reasoning parsers end it), whichever name the reasoning format has.
KIMI_SECTION = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
    '{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>'
)
DSML = "｜DSML｜"  # noqa: RUF001
V4_SECTION = (
    f'<{DSML}tool_calls>\n<{DSML}invoke name="get_weather">\n'
    f'<{DSML}parameter name="city" string="true">Paris</{DSML}parameter>\n</{DSML}invoke>\n</{DSML}tool_calls>'
)


@pytest.mark.parametrize("pieces", [0, 1, 5])
@pytest.mark.parametrize(
    ("tool", "reasoning", "text"),
    [
        ("kimi_k2", "think", "<think>I need the weather.\n" + KIMI_SECTION),
        ("kimi_k2", "kimi_k2", "<think>I need the weather." + KIMI_SECTION),  # vLLM's names for both
        ("deepseek_v4", "deepseek_v4", "<think>I need the weather.\n\n" + V4_SECTION),
    ],
)
def test_the_call_opening_ends_an_unclosed_reasoning_block(tool: str, reasoning: str, text: str, pieces: int) -> None:
    turn = parsed(OutputFormat.choose(tool, reasoning, ""), text, pieces=pieces)
    assert turn.reasoning == "I need the weather."
    assert (calls_of(turn), turn.content, turn.in_reasoning) == ([("get_weather", {"city": "Paris"})], "", False)


@pytest.mark.parametrize("pieces", [0, 1, 5])
def test_a_block_the_prompt_opened_ends_at_the_call_too(pieces: int) -> None:
    turn = parsed(OutputFormat("kimi_k2", "think"), "Checking." + KIMI_SECTION, pieces=pieces, prompt_tail="<think>")
    assert (turn.reasoning, calls_of(turn), turn.content) == ("Checking.", [("get_weather", {"city": "Paris"})], "")


def test_other_formats_calls_stay_inside_an_unclosed_block() -> None:
    """Qwen's reasoning parser (vLLM's too) ends the block at </think> only: a <tool_call> inside is reasoning."""
    text = '<think>Maybe <tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    turn = parsed(OutputFormat("hermes", "think"), text)
    assert (turn.calls, turn.content, turn.in_reasoning) == ([], "", True)


# 2. Cohere's reply tags are removed when the prompt closed the thinking block itself (thinking off) too.
@pytest.mark.parametrize("pieces", [0, 1, 4])
@pytest.mark.parametrize(
    ("reasoning", "text"),
    [
        ("cohere2_moe", "<|START_TEXT|>Sunny in Paris.<|END_TEXT|>"),
        ("command_r7b", "<|START_RESPONSE|>Sunny in Paris.<|END_RESPONSE|>"),
    ],
)
def test_reply_tags_go_when_the_prompt_closed_the_block(reasoning: str, text: str, pieces: int) -> None:
    tail = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|><|END_THINKING|>"
    turn = parsed(OutputFormat("command_r7b", reasoning), text, pieces=pieces, prompt_tail=tail)
    assert (turn.reasoning, turn.content) == ("", "Sunny in Paris.")


def test_reply_tags_stay_text_without_a_block() -> None:
    """A prompt that neither opened nor closed a block: the model wrote no block, its text is its own."""
    text = "<|START_TEXT|>Sunny.<|END_TEXT|>"
    turn = parsed(OutputFormat("command_r7b", "cohere2_moe"), text, prompt_tail="<|CHATBOT_TOKEN|>")
    assert turn.content == text


def test_a_block_the_model_writes_after_a_closed_prompt_block_is_still_reasoning() -> None:
    text = "<|START_THINKING|>Hm.<|END_THINKING|><|START_TEXT|>Sunny.<|END_TEXT|>"
    tail = "<|START_THINKING|><|END_THINKING|>"
    turn = parsed(OutputFormat("command_r7b", "cohere2_moe"), text, prompt_tail=tail)
    assert (turn.reasoning, turn.content) == ("Hm.", "Sunny.")


# 8. Hunyuan A13B opens a text reply with its word for assistant and a full-width colon, as its template writes past
# replies and its tool prompt asks: not content.
ASSISTANT, SUNNY = HUNYUAN_REPLY_PREFIX, "晴天。"
HUNYUAN_TEXTS = [
    (f"<think>\nWeather.\n</think>\n<answer>\n{ASSISTANT}{SUNNY}\n</answer>", "", "Weather."),
    (f"<answer>\n{ASSISTANT}{SUNNY}\n</answer>", "<think>\n\n</think>\n", ""),  # thinking off: the prompt closed it
    (f"<think>\nWeather.\n</think>\n{ASSISTANT}{SUNNY}", "", "Weather."),  # no <answer> tags
]


@pytest.mark.parametrize("pieces", [0, 1, 2])
@pytest.mark.parametrize(("text", "tail", "reasoning"), HUNYUAN_TEXTS)
def test_hunyuan_reply_prefix_is_not_content(text: str, tail: str, reasoning: str, pieces: int) -> None:
    turn = parsed(OutputFormat.choose("hunyuan_a13b", "hunyuan_a13b", ""), text, pieces=pieces, prompt_tail=tail)
    assert (turn.reasoning, turn.content) == (reasoning, SUNNY)


def test_hunyuan_prefix_later_in_the_reply_stays() -> None:
    reply = f"{SUNNY} {ASSISTANT}{SUNNY}"
    text = f"<think>\nW.\n</think>\n<answer>\n{reply}\n</answer>"
    assert parsed(OutputFormat.choose("hunyuan_a13b", "hunyuan_a13b", ""), text).content == reply


# 3. Functionary v3.2 opens a text reply with the recipient "all" (its prompt wrote the ">>>"), tools offered or not.
@pytest.mark.parametrize("pieces", [0, 1, 2])
@pytest.mark.parametrize("text", ["all\nSunny in Paris.", ">>>all\nSunny in Paris.", "\nall\nSunny in Paris."])
@pytest.mark.parametrize("tools", [False, True])
def test_functionary_text_recipient_is_not_content(text: str, tools: bool, pieces: int) -> None:
    turn = parsed(OutputFormat("functionary_v3_2"), text, pieces=pieces, tools=tools)
    assert (turn.calls, turn.content) == ([], "Sunny in Paris.")


@pytest.mark.parametrize("text", ["allright\nSunny.", "al", "Sunny, all\nof it."])
def test_functionary_text_without_its_recipient_is_kept_without_tools(text: str) -> None:
    assert parsed(OutputFormat("functionary_v3_2"), text, pieces=1, tools=False).content == text
