"""The JSON-argument families' formats (ovserve.service.parsing.formats_json, decoders in calls_json).

Each format reads what its model writes, whole and fed in deltas of 1 to 3 characters (and split at every
point): calls, text around them, reasoning; malformed markup stays content. Each family's published template
(tests/data/chat_templates), rendering a known call, holds that call as the format's markup writes it, and no
other format's writing of it is longer there, so detection by rendering finds the right format. A forced
call's grammar, built from the markup, compiles on the engine and accepts what the markup writes, and that
reads back as the calls; after the family's own reasoning block too; allowed_tools "auto" tags one allowed call.
(tests/service/api/test_call_markup.py runs every format's forced calls on the engine.)
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jinja2
import jinja2.sandbox
import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.engine import OutputConstraint
from ovserve.service.engine.grammar import GrammarChecker
from ovserve.service.errors import FieldViolation
from ovserve.service.parsing import TOOL_PARSERS, ContentDelta, OutputFormat, ParsedTurn, parser_name_problem
from ovserve.service.parsing.calls_json import RECIPIENT
from ovserve.service.parsing.formats_json import ALIASES, REASONING_FORMATS, TOOL_FORMATS
from ovserve.service.parsing.markup import CallMarkup
from ovserve.service.structured.output import AFTER_THINK, structured_output_config
from tests.rpc import parse as parse_request
from tests.service.api.ebnf import to_regex
from tests.service.parsing.feeding import deltas, fed

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"

W = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
T = '{"name": "get_time", "arguments": {"zone": "CET"}}'
WEATHER = ("get_weather", {"city": "Paris"})
TIME = ("get_time", {"zone": "CET"})
F1, F2 = '<function=get_weather>{"city": "Paris"}</function>', '<function=get_time>{"zone": "CET"}</function>'
V1, V2 = 'get_weather\n{"city": "Paris"}', 'get_time\n{"zone": "CET"}'
C1 = '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}'
C2 = '{"tool_call_id": "1", "tool_name": "get_time", "parameters": {"zone": "CET"}}'
P1, P2 = C1.replace('"tool_call_id": "0", ', ""), C2.replace('"tool_call_id": "1", ', "")
PLUGIN, ACTION_END = "<|action_start|><|plugin|>\n", "<|action_end|>"
# Strings that are markup in one of these formats: none may stream out as content beside a call.
MARKUP = ["<function", ">>>", "TOOLCALL", "tool_calls>", "_ACTION|>", "Action:", "<|action", "<function_call>",
          "longcat_tool_call", '"name"', '"tool_name"', "functools"]  # fmt: skip

CASES = [
    # (tool parser, output, calls, content; None: not a call, all of it is content)
    ("functionary_v3_1", F1, [WEATHER], ""),
    ("functionary_v3_1", "I will check. " + F1, [WEATHER], "I will check."),
    ("functionary_v3_1", F1 + F2, [WEATHER, TIME], ""),
    ("functionary_v3_1", F1 + "\n" + F2, [WEATHER, TIME], ""),
    ("functionary_v3_1", F1.removesuffix("</function>"), [WEATHER], ""),  # a stop string ate the close tag
    ("functionary_v3_1", F1.replace("}<", "<"), [], None),  # broken JSON
    ("functionary_v3_1", F1.replace("get_weather", ""), [], None),  # no name
    ("functionary_v3_1", F1.replace("get_weather", "get weather"), [], None),
    ("functionary_v3_2", V1, [WEATHER], ""),  # the prompt wrote the first ">>>"
    ("functionary_v3_2", V1 + RECIPIENT + V2, [WEATHER, TIME], ""),
    ("functionary_v3_2", RECIPIENT + V1, [WEATHER], ""),  # the recipient marker written again
    ("functionary_v3_2", "all\nLet me check." + RECIPIENT + V1, [WEATHER], "Let me check."),
    ("functionary_v3_2", "all\nHello there!", [], "Hello there!"),  # text: its recipient is not content
    ("functionary_v3_2", V1.removesuffix("}"), [], None),
    ("functionary_v3_2", "alpine meadows\nare green", [], None),  # not a call: text as written
    ("functionary_v3_2", "all", [], "all"),  # cut before the recipient's line ended
    ("nemotron_json", f"<TOOLCALL>[{W}]</TOOLCALL>", [WEATHER], ""),
    ("nemotron_json", f"<TOOLCALL>[{W}, {T}]</TOOLCALL>", [WEATHER, TIME], ""),
    ("nemotron_json", f"<TOOLCALL>{W}</TOOLCALL>", [WEATHER], ""),  # one call, no list (vLLM reads it)
    ("nemotron_json", f"Checking.\n<TOOLCALL>[{W}]</TOOLCALL>", [WEATHER], "Checking."),
    ("nemotron_json", '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": }]</TOOLCALL>', [], None),
    ("nemotron_json", "<TOOLCALL>[]</TOOLCALL>", [], None),
    ("apriel", f"<tool_calls>[{W}]</tool_calls>", [WEATHER], ""),
    ("apriel", f'<tool_calls>[{W[:-1]}, "id": "call_1"}}, {T}]</tool_calls>', [WEATHER, TIME], ""),  # ids kept out
    ("apriel", f"Here you go.\n<tool_calls>[{W}]</tool_calls>", [WEATHER], "Here you go."),
    ("apriel", '<tool_calls>[{"arguments": {}}]</tool_calls>', [], None),  # no name
    ("apriel", f"<tool_call>{W}</tool_call>", [], None),  # Hermes' singular tag is not Apriel's
    ("minimax", f"<tool_calls>\n{W}\n{T}\n</tool_calls>", [WEATHER, TIME], ""),
    ("minimax", f"<tool_calls>\n{W}\n</tool_calls>", [WEATHER], ""),
    ("minimax", f"<tool_calls>\n{W}\nnot json\n</tool_calls>", [], None),
    ("command_r7b", f"<|START_ACTION|>[\n    {C1}\n]<|END_ACTION|>", [WEATHER], ""),
    ("command_r7b", f"<|START_ACTION|>[{C1}, {C2}]<|END_ACTION|>", [WEATHER, TIME], ""),
    ("command_r7b", "<|START_ACTION|>[" + C1.replace('{"city": "Paris"}', '"{\\"city\\": \\"Paris\\"}"')
     + "]<|END_ACTION|>", [WEATHER], ""),  # parameters as a JSON text, as the template writes string arguments
    ("command_r7b", '<|START_ACTION|>[{"tool_call_id": "0", "parameters": {}}]<|END_ACTION|>', [], None),
    ("command_r7b", f"<|START_ACTION|>{C1}<|END_ACTION|>", [], None),  # not a list
    ("command_r_plus", f"Action: ```json\n[\n    {P1}\n]\n```", [WEATHER], ""),
    ("command_r_plus", f"Action:\n```json\n[{P1}, {P2}]```", [WEATHER, TIME], ""),
    ("command_r_plus", f"Action: [{P1}]", [WEATHER], ""),  # no fence
    ("command_r_plus", f"Plan first.\nAction: ```json\n[{P1}]\n```", [WEATHER], "Plan first."),
    ("command_r_plus", "Action: take an umbrella.", [], None),
    ("internlm", PLUGIN + W + ACTION_END, [WEATHER], ""),
    ("internlm", "Sure. " + PLUGIN + W + ACTION_END, [WEATHER], "Sure."),
    ("internlm", PLUGIN + W + ACTION_END + PLUGIN + T.replace("arguments", "parameters") + ACTION_END,
     [WEATHER, TIME], ""),  # InternLM's own "parameters" read too
    ("internlm", PLUGIN + W.replace("}}", "") + ACTION_END, [], None),
    ("granite_20b_fc", "<function_call> " + W, [WEATHER], ""),
    ("granite_20b_fc", f"<function_call> {W}\n<function_call> {T}", [WEATHER, TIME], ""),
    ("granite_20b_fc", "Let me look. <function_call> " + W, [WEATHER], "Let me look."),
    ("granite_20b_fc", "<function_call> not json", [], None),
    ("longcat", f"<longcat_tool_call>\n{W}\n</longcat_tool_call>", [WEATHER], ""),
    ("longcat", f"<longcat_tool_call>{W}</longcat_tool_call>\n<longcat_tool_call>{T}</longcat_tool_call>",
     [WEATHER, TIME], ""),
    ("longcat", "<longcat_tool_call>{oops}</longcat_tool_call>", [], None),
    ("xlam", f"[{W}]", [WEATHER], ""),
    ("xlam", f"```json\n[{W}, {T}]\n```", [WEATHER, TIME], ""),
    ("xlam", "[1, 2] are numbers", [], None),
    ("xlam", f"The answer: [{W}]", [], None),  # a list only when the reply is one
    # Other servers' names for these formats, and families read by an existing format.
    ("firefunction_v2", f" functools[{W}, {T}]", [WEATHER, TIME], ""),
    ("jamba", f"<tool_calls>[{W}]</tool_calls>", [WEATHER], ""),
    ("hunyuan_a13b", f"<tool_calls>[{W}, {T}]</tool_calls>", [WEATHER, TIME], ""),
    ("cohere_command3", f"<|START_ACTION|>[{C1}]<|END_ACTION|>", [WEATHER], ""),
    ("granite-20b-fc", "<function_call> " + W, [WEATHER], ""),
    ("nemotron_nano_v2", f"<TOOLCALL>[{W}]</TOOLCALL>", [WEATHER], ""),
    ("functionary_v3_1_llama_3_1", F1, [WEATHER], ""),
    ("ernie45", f"<tool_call>\n{W}\n</tool_call>", [WEATHER], ""),
]  # fmt: skip

REASONING = [
    # (tool parser, reasoning parser, end of the prompt, output, reasoning, content, calls, cut off in reasoning)
    ("command_r7b", "command_r7b", "<|CHATBOT_TOKEN|>",
     f"<|START_THINKING|>I need the weather.<|END_THINKING|><|START_ACTION|>[{C1}]<|END_ACTION|>",
     "I need the weather.", "", [WEATHER], False),
    ("command_r7b", "command_r7b", "<|CHATBOT_TOKEN|>",
     "<|START_THINKING|>A greeting.<|END_THINKING|><|START_RESPONSE|>Hello!<|END_RESPONSE|>",
     "A greeting.", "Hello!", [], False),
    ("command_r7b", "command_r7b", "<|CHATBOT_TOKEN|><|START_THINKING|>",  # the prompt opened the block
     "Thinking.<|END_THINKING|><|START_RESPONSE|>Hi.<|END_RESPONSE|>", "Thinking.", "Hi.", [], False),
    ("command_r7b", "cohere2_moe", "<|CHATBOT_TOKEN|><|START_THINKING|>",
     "Plan.<|END_THINKING|><|START_TEXT|>Hi.<|END_TEXT|>", "Plan.", "Hi.", [], False),
    ("apriel", "apriel", "<|begin_assistant|>\nHere are my reasoning steps:\n",  # Apriel 1.6 opens it
     "The user wants the weather.\n[BEGIN FINAL RESPONSE]\nIt is sunny.\n[END FINAL RESPONSE]",
     "The user wants the weather.", "It is sunny.", [], False),
    ("apriel", "apriel", "<|assistant|>\n",  # Apriel 1.5's model writes the opening itself
     f"Here are my reasoning steps:\nCall it.\n[BEGIN FINAL RESPONSE]\n<tool_calls>[{W}]</tool_calls>",
     "Call it.", "", [WEATHER], False),
    ("apriel", "apriel", "\nHere are my reasoning steps:\n", "Still thinking about [BEGIN FINAL",
     "Still thinking about [BEGIN FINAL", "", [], True),
    ("longcat", "longcat", "<longcat_think>", "Hmm.</longcat_think>\nAnswer.", "Hmm.", "Answer.", [], False),
    ("nemotron_json", "think", "<SPECIAL_11>Assistant\n<think>\n",
     f"Need the weather.\n</think>\n<TOOLCALL>[{W}]</TOOLCALL>", "Need the weather.", "", [WEATHER], False),
]  # fmt: skip


def chosen(tool: str | None, reasoning: str | None = None) -> OutputFormat:
    """The output format a command line naming these parsers (or their aliases) gets."""
    return OutputFormat.choose(tool, reasoning, "")


def summary(turn: ParsedTurn) -> tuple[str, str, bool, list[tuple[str, Any]]]:
    """The turn but for the call ids (new each time)."""
    calls = [(call.name, json.loads(call.arguments)) for call in turn.calls]
    return turn.content, turn.reasoning, turn.in_reasoning, calls


@pytest.mark.parametrize(("name", "text", "calls", "content"), CASES)
def test_calls_read_whole_and_in_small_deltas(name: str, text: str, calls: list, content: str | None) -> None:
    fmt = chosen(name)
    whole, _ = fed(fmt, [text])
    assert summary(whole) == (text if content is None else content, "", False, calls)
    for chunks in deltas(text):
        split, pieces = fed(fmt, chunks)
        assert summary(split) == summary(whole), chunks
        if calls:  # markup never streams out as text, however it is cut
            streamed = [piece.text for piece in pieces if isinstance(piece, ContentDelta)]
            assert not any(mark in part for part in streamed for mark in MARKUP), (chunks, streamed)


@pytest.mark.parametrize(("tool", "reasoning", "tail", "text", "thought", "content", "calls", "cut_off"), REASONING)
def test_reasoning_then_the_reply(
    tool: str, reasoning: str, tail: str, text: str, thought: str, content: str, calls: list, cut_off: bool
) -> None:
    fmt = chosen(tool, reasoning)
    expected = (content, thought, cut_off, calls)
    for chunks in deltas(text):
        turn, pieces = fed(fmt, chunks, tail)
        assert summary(turn) == expected, chunks
        streamed = "".join(piece.text for piece in pieces if isinstance(piece, ContentDelta))
        assert "THINKING" not in streamed and "FINAL RESPONSE" not in streamed and "think>" not in streamed


# Model output no parser may choke on: JSON nested past Python's parser (RecursionError there), a number past its
# digit limit, an endless string.
HOSTILE = ["[" * 5000, '{"a": ' * 5000, "1" * 6000, '"' + "\\" * 5001]


@pytest.mark.parametrize("name", sorted(TOOL_FORMATS))
def test_hostile_output_stays_text(name: str) -> None:
    markup = TOOL_FORMATS[name].markup
    for value in HOSTILE:
        for text in (markup.opening + markup.begin("f") + value + markup.call_end + markup.closing, value):
            turn, _ = fed(OutputFormat(name), [text])
            assert not turn.calls and turn.content.strip() == text.strip()


def test_every_name_is_known_and_aliases_reach_their_formats() -> None:
    for kind, names in ALIASES.items():
        for alias, name in names.items():
            assert parser_name_problem(kind, alias) is None, alias
            assert parser_name_problem(kind, name) is None, name
    for name in [*TOOL_FORMATS, *REASONING_FORMATS]:
        assert parser_name_problem("tool" if name in TOOL_FORMATS else "reasoning", name) is None
    # vLLM's names for these families (its --tool-call-parser and --reasoning-parser).
    tools = {"nemotron_json": "nemotron_json", "minimax": "minimax", "jamba": "apriel", "hunyuan_a13b": "apriel",
             "internlm": "internlm", "xlam": "xlam", "granite-20b-fc": "granite_20b_fc", "longcat": "longcat",
             "ernie45": "hermes", "granite4": "hermes",
             "cohere_command3": "command_r7b", "cohere_command4": "command_r7b"}  # fmt: skip
    assert {alias: chosen(alias).tool_parser for alias in tools} == tools
    reasoning = {"cohere_command3": "command_r7b", "cohere_command4": "cohere2_moe", "apriel": "apriel",
                 "longcat": "longcat", "minimax_m1": "think"}  # fmt: skip
    assert {alias: chosen(None, alias).reasoning_parser for alias in reasoning} == reasoning


# ---- the families' templates ----

PROBE_ARGUMENTS = {"city": "Paris", "days": 3}
PROBE_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                "parameters": {"type": "object", "required": ["city"], "properties": {
                    "city": {"type": "string", "description": "A city."},
                    "days": {"type": "integer", "description": "How many days."}}}}}]  # fmt: skip
_SPACE = re.compile(r"\s+")


def _tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None, **options: Any) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, **options)  # transformers': no escaping


def _raise(message: str) -> None:
    raise jinja2.TemplateError(message)


ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"]
)
ENVIRONMENT.filters["tojson"] = _tojson
ENVIRONMENT.globals["raise_exception"] = _raise
ENVIRONMENT.globals["strftime_now"] = datetime.datetime(2026, 1, 1).strftime  # a fixed day


def rendered(template: str, arguments: str, answered: bool = True) -> str:
    """The conversation in which the assistant called get_weather (and the tool answered, when ``answered``),
    as ``template`` renders it; ``arguments``: "object" or "text", as the template takes them."""
    value: Any = PROBE_ARGUMENTS if arguments == "object" else json.dumps(PROBE_ARGUMENTS)
    call = {"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": value}}
    messages = [{"role": "user", "content": "What is the weather in Paris?"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call00001", "content": "Sunny."}][: 3 if answered else 2]  # fmt: skip
    context = {"functions": json.dumps(PROBE_TOOLS), "datetime": "2026-01-01"}  # Firefunction's own variables
    source = (TEMPLATES / template).read_text()
    return ENVIRONMENT.from_string(source).render(messages=messages, tools=PROBE_TOOLS, add_generation_prompt=True,
                                                  bos_token="<s>", eos_token="</s>", **context)  # fmt: skip


def written(markup: CallMarkup) -> str:
    """The probe call as ``markup`` writes it (JSON arguments)."""
    arguments = json.dumps(PROBE_ARGUMENTS)
    return markup.opening + markup.begin("get_weather", 0) + arguments + markup.call_end + markup.closing


def compact(text: str) -> str:
    return _SPACE.sub("", text)


def longest_writing(rendering: str) -> set[str]:
    """The tool parsers whose writing of the probe call is the longest found in ``rendering`` (whitespace
    ignored): the format detection by rendering picks."""
    found = {name: len(compact(written(f.markup))) for name, f in TOOL_PARSERS.items()
             if f.markup.arguments == "json" and compact(written(f.markup)) in compact(rendering)}  # fmt: skip
    return {name for name, size in found.items() if size == max(found.values())}


FAMILIES = [
    # (template, the format that reads its model, arguments as the template takes them, the tool answered)
    ("meetkai-functionary-medium-v3.1.jinja", "functionary_v3_1", "object", True),
    ("meetkai-functionary-medium-v3.2.jinja", "functionary_v3_2", "text", True),
    ("fireworks-ai-llama-3-firefunction-v2.jinja", "phi4_mini_json", "object", True),
    ("NVIDIA-Nemotron-Nano-v2.jinja", "nemotron_json", "object", True),
    # Apriel writes the call's id after its arguments in earlier turns: the last turn's call is written bare.
    ("unsloth-Apriel-1.5.jinja", "apriel", "object", False),
    ("Apriel-1.6-15b-Thinker-fixed.jinja", "apriel", "object", False),
    ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command_r7b", "object", True),
    ("Cohere2MoE.jinja", "command_r7b", "object", True),
    ("CohereForAI-c4ai-command-r-plus-tool_use.jinja", "command_r_plus", "object", True),
    ("MiniMax-M1.jinja", "minimax", "object", True),
    # vLLM's templates for the families it names (examples/tool_chat_template_*.jinja).
    ("vllm-internlm2-tool.jinja", "internlm", "text", True),
    ("vllm-granite-20b-fc.jinja", "granite_20b_fc", "object", True),
    ("vllm-hunyuan-a13b.jinja", "apriel", "object", True),  # vLLM's hunyuan_a13b: Apriel's <tool_calls>[...]
]


@pytest.mark.parametrize(("template", "name", "arguments", "answered"), FAMILIES)
def test_the_family_template_renders_the_call_as_the_markup_writes_it(
    template: str, name: str, arguments: str, answered: bool
) -> None:
    rendering = rendered(template, arguments, answered)
    markup = TOOL_PARSERS[name].markup
    assert compact(written(markup)) in compact(rendering), rendering[-600:]
    if name == "functionary_v3_2":  # the reply starts after the prompt's ">>>": the markup leaves it out
        assert compact(RECIPIENT + written(markup)) in compact(rendering)
        assert [compact(text) for text in TOOL_PARSERS[name].written] == [compact(RECIPIENT + written(markup))]
    else:
        assert longest_writing(rendering) == {name}, longest_writing(rendering)  # not Qwen3-Coder's, not Hermes'
    # What the model writes reads back as the call.
    turn, _ = fed(OutputFormat(name), [written(markup)])
    assert summary(turn) == ("", "", False, [("get_weather", PROBE_ARGUMENTS)])


def test_xlam_writes_calls_as_mistral_does_and_both_read_them() -> None:
    """xLAM's template writes a bare list of named calls, as Mistral's markup does: detection may pick either
    (their writings tie), and each reads what the other writes."""
    rendering = rendered("vllm-xlam-llama.jinja", "object")
    assert longest_writing(rendering) == {"mistral", "xlam"}
    for reader in ("mistral", "xlam"):
        turn, _ = fed(OutputFormat(reader), [written(TOOL_PARSERS["xlam"].markup)])
        assert summary(turn) == ("", "", False, [("get_weather", PROBE_ARGUMENTS)])


def test_apriel_writes_ids_only_for_earlier_calls_and_its_head_still_shows() -> None:
    rendering = compact(rendered("Apriel-1.6-15b-Thinker-fixed.jinja", "object"))
    head = compact(written(TOOL_PARSERS["apriel"].markup)).removesuffix("}]</tool_calls>")
    assert head + ',"id":"call00001"}]</tool_calls>' in rendering


@pytest.mark.parametrize(
    ("template", "tool", "reasoning"),
    [
        ("meetkai-functionary-medium-v3.2.jinja", "functionary_v3_2", None),
        ("fireworks-ai-llama-3-firefunction-v2.jinja", "phi4_mini_json", None),
        ("NVIDIA-Nemotron-Nano-v2.jinja", "nemotron_json", "think"),
        ("Apriel-1.6-15b-Thinker-fixed.jinja", "apriel", "apriel"),
        ("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "command_r7b", "command_r7b"),
        ("Cohere2MoE.jinja", "command_r7b", "cohere2_moe"),
        ("CohereForAI-c4ai-command-r-plus-tool_use.jinja", "command_r_plus", None),
        ("MiniMax-M1.jinja", "minimax", "think"),
    ],
)
def test_a_template_that_renders_no_call_is_known_by_what_it_asks_for(
    template: str, tool: str, reasoning: str | None
) -> None:
    chosen_format = OutputFormat.choose(None, None, (TEMPLATES / template).read_text())
    assert (chosen_format.tool_parser, chosen_format.reasoning_parser) == (tool, reasoning)


@pytest.mark.parametrize(
    ("template", "arguments", "formats"),
    [
        ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", "object", {"hermes", "qwen"}),
        ("Bielik-11B-v3.0-Instruct.jinja", "object", {"hermes", "qwen"}),
        ("meta-llama-Llama-3.3-70B-Instruct.jinja", "object", {"llama3_json"}),
        ("HuggingFaceTB-SmolLM3-3B.jinja", "object", set()),  # this copy shows no tool format at all
    ],
)
def test_families_an_existing_format_serves(template: str, arguments: str, formats: set[str]) -> None:
    assert longest_writing(rendered(template, arguments)) == formats


# ---- forced calls: the grammar built from each markup ----

FORCED = ["functionary_v3_1", "functionary_v3_2", "nemotron_json", "apriel", "minimax", "command_r7b",
          "command_r_plus", "internlm", "granite_20b_fc", "longcat", "xlam"]  # fmt: skip
ASK = [{"role": "user", "content": "What is the weather like in Paris?"}]
TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "required": ["city", "unit"],
        "properties": {"city": {"type": "string", "maxLength": 16}, "unit": {"enum": ["celsius", "fahrenheit"]}}}}},
    {"type": "function", "function": {"name": "set_alarm", "parameters": {
        "type": "object", "required": ["hour", "loud"], "additionalProperties": False,
        "properties": {"hour": {"type": "integer", "minimum": 0, "maximum": 23}, "loud": {"type": "boolean"}}}}},
]  # fmt: skip
ARGUMENTS: list[tuple[str, dict[str, Any]]] = [
    ("get_weather", {"city": "Paris", "unit": "celsius"}),
    ("set_alarm", {"hour": 7, "loud": True}),
]
CHOICES: dict[str, dict[str, Any]] = {"required": {"tool_choice": "required"},
           "named": {"named_tool_choice": {"type": "function", "function": {"name": "set_alarm"}}}}  # fmt: skip


@pytest.fixture(scope="module")
def checker(tiny_chat_dir: Path) -> Iterator[GrammarChecker]:
    """The engine's grammar compiler (XGrammar in openvino_genai) on tiny-chat's tokenizer."""
    checker = GrammarChecker(tiny_chat_dir, timeout=120)
    yield checker
    checker.close()


def constraint(fmt: OutputFormat, choice: str, thinking: bool = False) -> OutputConstraint:
    request = parse_request(chat_pb2.CreateChatCompletionRequest,
                            {"model": "m", "messages": ASK, "tools": TOOLS, **CHOICES[choice]})  # fmt: skip
    violations: list[FieldViolation] = []
    made = structured_output_config(
        request, violations, tools=TOOLS, thinking=thinking, markup=fmt.call_markup, think=fmt.think_markup
    )
    assert made is not None and not violations, violations
    return made


def written_calls(markup: CallMarkup, calls: list[tuple[str, dict[str, Any]]]) -> str:
    """``calls`` in ``markup``, with compact JSON arguments as the grammar writes them."""
    parts = [markup.begin(name, index) + json.dumps(arguments, separators=(",", ":")) + markup.call_end
             for index, (name, arguments) in enumerate(calls)]  # fmt: skip
    return markup.opening + markup.separator.join(parts) + markup.closing


@pytest.mark.parametrize("name", FORCED)
def test_forced_calls_compile_and_what_the_markup_writes_reads_back(name: str, checker: GrammarChecker) -> None:
    fmt = OutputFormat(name)
    markup = fmt.call_markup
    assert markup is not None
    for choice, calls in (("required", ARGUMENTS), ("named", ARGUMENTS[1:])):
        made = constraint(fmt, choice)
        assert made.kind == "grammar"
        assert asyncio.run(checker.check(made)) is None, made.value
        text = written_calls(markup, calls)
        # spaced_ebnf makes the markup's spaces after ":" and "," optional: the compact writing is one it takes.
        assert re.fullmatch(to_regex(made.value), text.replace(": ", ":").replace(", ", ",")), (text, made.value)
        assert re.fullmatch(to_regex(made.value), text), (text, made.value)
        turn, _ = fed(fmt, [text])
        assert summary(turn) == ("", "", False, calls), text


@pytest.mark.parametrize(
    ("tool", "reasoning"),
    [
        ("command_r7b", "command_r7b"),
        ("command_r7b", "cohere2_moe"),
        ("apriel", "apriel"),
        ("longcat", "longcat"),
    ],
)
def test_the_reasoning_block_then_a_forced_call(tool: str, reasoning: str, checker: GrammarChecker) -> None:
    fmt = OutputFormat(tool, reasoning)
    made = constraint(fmt, "named", thinking=True)
    assert made.kind == "structural_tags_config" and asyncio.run(checker.check(made)) is None
    block, *blanks, calls = json.loads(made.value)["format"]["elements"]
    think, markup = fmt.think_markup, fmt.call_markup
    assert think is not None and markup is not None
    after = AFTER_THINK if think.after is None else think.after
    assert (block["begin"], block["end"]) == (think.begin, think.end)  # the block ends at its end tag
    # Blank lines after it (a blank line in most templates, Apriel's newline) are the model's to write or not,
    # in a bounded run; none where the template writes none (Cohere's).
    assert [bool(blanks), *[bool(re.fullmatch(blank["pattern"], after)) for blank in blanks]] == (
        [True, True] if after else [False]
    )
    for blank in blanks:
        assert re.fullmatch(blank["pattern"], "") and not re.fullmatch(blank["pattern"], "\n" * 5)
    for written in {after, ""}:  # MiniMax-M3's template writes a call straight after its block
        text = block["begin"] + "Setting it." + block["end"] + written + written_calls(markup, ARGUMENTS[1:])
        head = block["begin"] + "Setting it." + block["end"] + written
        assert re.fullmatch(to_regex(calls["grammar"]), text.removeprefix(head))
        turn, _ = fed(fmt, [text])
        assert summary(turn) == ("", "Setting it.", False, ARGUMENTS[1:]), text


@pytest.mark.parametrize("name", [name for name in FORCED if TOOL_FORMATS[name].markup.tag])
def test_allowed_tools_auto_tags_one_allowed_call(name: str, checker: GrammarChecker) -> None:
    """allowed_tools "auto" on a format whose calls open with a tag: free text, and the tag opens one allowed
    call (XGrammar triggered tags); the constraint compiles, and a call written by the markup fits its tag."""
    fmt = OutputFormat(name)
    markup = fmt.call_markup
    assert markup is not None
    allowed = {"mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}
    fields = {"named_tool_choice": {"type": "allowed_tools", "allowed_tools": allowed}}
    request = parse_request(
        chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": ASK, "tools": TOOLS, **fields}
    )
    violations: list[FieldViolation] = []
    made = structured_output_config(request, violations, tools=TOOLS, markup=markup)
    assert made is not None and not violations, violations
    assert asyncio.run(checker.check(made)) is None
    document = json.loads(made.value)["format"]
    assert document["triggers"] == [markup.tag] and len(document["tags"]) == 1
    tag = document["tags"][0]
    text = written_calls(markup, ARGUMENTS[:1])
    assert text.startswith(tag["begin"]) and text.endswith(tag["end"]), (tag, text)
    assert re.fullmatch(to_regex(tag["content"]["grammar"]), text[len(tag["begin"]) : len(text) - len(tag["end"])])
    turn, _ = fed(fmt, ["Let me see. " + text])
    assert summary(turn) == ("Let me see.", "", False, ARGUMENTS[:1])
