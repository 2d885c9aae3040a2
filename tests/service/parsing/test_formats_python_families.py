"""The Python-style and other non-JSON tool formats (LFM2, Olmo 3, FunctionGemma, Apertus, GigaChat 3 / 3.1,
Mistral's [ARGS] form) and the reasoning-only formats of ovserve.service.parsing.formats_python.

Each written call is parsed whole and fed in deltas of 1-3 characters (and cut in two at every point): the
results agree and no markup reaches the content on the way; malformed markup stays content. Each family's
published template renders a known call, and the format's CallMarkup writes that call as the template does.
A forced call after the family's own reasoning block ([THINK], Apertus', Solar Open 2's) runs on the engine.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.sandbox
import pytest

from ovserve.service.parsing import REASONING_PARSERS, TOOL_PARSERS, ContentDelta, OutputFormat, ParsedTurn
from ovserve.service.parsing.calls_python import (
    apertus_calls,
    functiongemma_call,
    gigachat_call,
    python_call_lines,
    rwkv_calls,
)
from ovserve.service.parsing.formats_python import HUNYUAN_THINK, MISTRAL_THINK, SOLAR_OPEN2_THINK
from ovserve.service.parsing.markup import GRANITE_TAGGED_THINK, THINK, CallMarkup
from tests.service.parsing.feeding import deltas, fed

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"
WEATHER = ("get_weather", {"city": "Paris", "days": 3})
TIME = ("get_time", {"zone": "CET", "exact": True, "note": None})

LFM2_CALL = "<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>"  # as LFM2.5's template
LFM2_TWO = '<|tool_call_start|>[get_weather(city="Paris", days=3), get_time(zone="CET", exact=true, note=None)]<|tool_call_end|>'  # noqa: E501
OLMO3_CALL = '<function_calls>get_weather(city="Paris", days=3)</function_calls>'
OLMO3_TWO = '<function_calls>\nget_weather(city="Paris", days=3)\nget_time(zone="CET", exact=true, note=null)\n</function_calls>'  # noqa: E501
FG_CALL = "<start_function_call>call:get_weather{city:<escape>Paris<escape>,days:3}<end_function_call>"
FG_CALL2 = "<start_function_call>call:get_time{zone:<escape>CET<escape>,exact:true,note:null}<end_function_call>"
APERTUS_CALL = '<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 3}}]<|tools_suffix|>'
APERTUS_TWO = '<|tools_prefix|>[{"get_weather": {"city": "Paris", "days": 3}}, {"get_time": {"zone": "CET", "exact": true, "note": null}}]<|tools_suffix|>'  # noqa: E501
GIGA_JSON = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
GIGA3_CALL = "<|message_sep|>\n\nfunction call<|role_sep|>\n" + GIGA_JSON
GIGA31_CALL = "<|function_call|>" + GIGA_JSON
MISTRAL_CALL = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}'
RWKV_CALL = '**Tool Call:**\n```json\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n```'
RWKV_CALL2 = '**Tool Call:** ```json {"name": "get_time", "arguments": {"zone": "CET", "exact": true, "note": null}}```'
MISTRAL_CALL2 = '[TOOL_CALLS]get_time[ARGS]{"zone": "CET", "exact": true, "note": null}'

CASES = [
    # (format, output, calls, content; None: not a call, all of it is content)
    ("lfm2", LFM2_CALL, [WEATHER], ""),
    ("lfm2", LFM2_TWO, [WEATHER, TIME], ""),
    ("lfm2", "Let me check.\n" + LFM2_CALL + "\nOne moment.", [WEATHER], "Let me check.\nOne moment."),
    ("lfm2", '<|tool_call_start|>[get_weather(city={"a": true, "b": [1, -2.5]})]<|tool_call_end|>',
     [("get_weather", {"city": {"a": True, "b": [1, -2.5]}})], ""),  # an object written as JSON (LFM2.5's tojson)
    ("lfm2", "<|tool_call_start|>[get_weather('Paris')]<|tool_call_end|>", [], None),  # positional
    ("lfm2", "<|tool_call_start|>[get_weather(city=open('x'))]<|tool_call_end|>", [], None),  # not a literal
    ("lfm2", "<|tool_call_start|>[get_weather(city='Paris'<|tool_call_end|>", [], None),  # broken syntax
    ("lfm2", "<|tool_call_start|>[]<|tool_call_end|>", [], None),  # no call
    # JSON named calls between the same tokens: llama.cpp's own LFM2 template writes past calls so (detected as
    # openpangu, whose form it is), and a model trained on either form is read under either format.
    ("lfm2", '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]<|tool_call_end|>',
     [WEATHER], ""),
    ("openpangu", LFM2_TWO, [WEATHER, TIME], ""),
    ("openpangu", "<|tool_call_start|>[get_weather('Paris')]<|tool_call_end|>", [], None),  # neither form
    ("olmo3", OLMO3_CALL, [WEATHER], ""),
    ("olmo3", OLMO3_TWO, [WEATHER, TIME], ""),
    ("olmo3", "Sure. " + OLMO3_CALL, [WEATHER], "Sure."),
    ("olmo3", "<function_calls>x = get_weather(city='Paris')</function_calls>", [], None),  # not a bare call
    ("olmo3", "<function_calls>get_weather(**{'city': 'Paris'})</function_calls>", [], None),
    ("functiongemma", FG_CALL, [WEATHER], ""),
    ("functiongemma", FG_CALL + FG_CALL2, [WEATHER, TIME], ""),
    ("functiongemma", "I'll look. " + FG_CALL, [WEATHER], "I'll look."),
    ("functiongemma", '<start_function_call>call:get_weather{"city": "Paris", "days": 3}<end_function_call>',
     [WEATHER], ""),  # JSON, as a forced call's grammar writes it
    ("functiongemma", "<start_function_call>call:get_weather{city:<escape>Paris}<end_function_call>", [], None),
    ("apertus", APERTUS_CALL, [WEATHER], ""),
    ("apertus", APERTUS_TWO, [WEATHER, TIME], ""),
    ("apertus", "Checking. " + APERTUS_CALL, [WEATHER], "Checking."),
    ("apertus", '<|tools_prefix|>[{"get_weather": {"city": "Paris"}, "x": {}}]<|tools_suffix|>', [], None),
    ("apertus", '<|tools_prefix|>[{"get_weather": "Paris"}]<|tools_suffix|>', [], None),
    ("gigachat3", GIGA3_CALL, [WEATHER], ""),
    ("gigachat3", "Checking." + GIGA3_CALL + "<|message_sep|>", [WEATHER], "Checking."),
    ("gigachat3", "Hello there.<|message_sep|>", [], "Hello there."),  # the message's end alone: no call
    ("gigachat3", "<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"get_weather\"}", [], None),
    ("gigachat3_1", GIGA31_CALL, [WEATHER], ""),
    ("gigachat3_1", "Checking." + GIGA31_CALL + "<|message_sep|>", [WEATHER], "Checking."),
    ("gigachat3_1", '<|function_call|>{"name": "get_weather", "arguments": [1]}', [], None),
    ("mistral_args", MISTRAL_CALL, [WEATHER], ""),
    ("mistral_args", MISTRAL_CALL + MISTRAL_CALL2, [WEATHER, TIME], ""),
    ("mistral_args", "Let me see." + MISTRAL_CALL, [WEATHER], "Let me see."),
    ("mistral_args", "[TOOL_CALLS]get_weather[ARGS]{\"city\": ", [], None),
    ("rwkv", RWKV_CALL, [WEATHER], ""),
    ("rwkv", RWKV_CALL + "\n" + RWKV_CALL2, [WEATHER, TIME], ""),
    ("rwkv", "I will check.\n\n" + RWKV_CALL, [WEATHER], "I will check."),
    ("rwkv", RWKV_CALL + " and then more text", [], None),
    ("rwkv", "**Tool Call:** get_weather", [], None),
]  # fmt: skip
# Strings that are markup: none may reach the content of a reply that made its calls.
MARKUP = ["<|tool_call", "<function_calls", "function_call>", "<|tools_", "<|message_sep", "<|function_call",
          "function call<", "[TOOL_CALLS]", "[ARGS]", "call:", "**Tool", "```"]  # fmt: skip


def summary(turn: ParsedTurn) -> tuple[str, str, list[tuple[str, Any]]]:
    return turn.content, turn.reasoning, [(c.name, json.loads(c.arguments)) for c in turn.calls]


@pytest.mark.parametrize(("name", "text", "calls", "content"), CASES)
def test_whole_and_streamed_agree(name: str, text: str, calls: list, content: str | None) -> None:
    fmt = OutputFormat(name)
    whole, _ = fed(fmt, [text])
    assert summary(whole) == (text if content is None else content, "", calls)
    for chunks in deltas(text):
        turn, pieces = fed(fmt, chunks)
        assert summary(turn) == summary(whole), chunks
        if calls:
            streamed = [piece.text for piece in pieces if isinstance(piece, ContentDelta)]
            assert not any(mark in part for part in streamed for mark in MARKUP), (chunks, streamed)


def test_without_tools_the_markup_is_text() -> None:
    parser = OutputFormat("lfm2").parser(tools=False)
    parser.feed(LFM2_CALL)
    parser.finish()
    assert parser.result.content == LFM2_CALL and not parser.result.calls


def test_decoders_are_total_on_hostile_text() -> None:
    """Deep nesting, NUL bytes, huge exponents, sets and calls as values: no call, and no exception."""
    hostile = [
        "[get_weather(city=" + "[" * 5000 + "]" * 5000 + ")]",
        "[get_weather(city='a\x00b')]",
        "[get_weather(days=1e999)]",
        "[get_weather(days={1, 2})]",
        "[get_weather(days=-True)]",
        "[get_weather(city=f'{x}')]",
        "[get_weather(city=print())]",
        "[get_weather(city=b'x')]",
        "[get_weather(city={1: 2})]",
    ]
    for text in hostile:
        assert OutputFormat("lfm2").parser().feed("<|tool_call_start|>" + text) == []
        assert python_call_lines(text[1:-1]) is None, text
    for decode in (apertus_calls, gigachat_call, functiongemma_call, rwkv_calls):
        assert decode("[" * 100_000) is None
    assert rwkv_calls("**Tool Call:**```json" + "[" * 100_000 + "```") is None
    assert functiongemma_call('call:f{city:<|"|>x<|"|>}') is None  # Gemma 4's quote is not FunctionGemma's


# The reasoning formats: (name, output, reasoning, content, cut off inside the block).
REASONING = [
    ("mistral", "[THINK]The user wants the weather.[/THINK]It is sunny.", "The user wants the weather.",
     "It is sunny.", False),
    ("mistral", "[THINK]Still thinking", "Still thinking", "", True),
    ("mistral", "No block here.", "", "No block here.", False),
    ("hunyuan_a13b", "<think>\nThe user asks.\n</think>\n<answer>\nSunny.\n</answer>", "The user asks.", "Sunny.",
     False),
    ("solar_open2", "<|think:start|>Hmm.<|think:end|>Sunny.", "Hmm.", "Sunny.", False),
    ("apertus", "<|inner_prefix|>Checking.<|inner_suffix|>Sunny.", "Checking.", "Sunny.", False),
    ("ernie45", "<think>abc\n</think>\n\n<response>\ndef\n</response>\n", "abc", "def", False),
    ("olmo3", "<think>Plain text tags.</think>Reply.", "Plain text tags.", "Reply.", False),
    ("exaone_deep", "<thought>\nLet me check.\n</thought>\n\nSunny.", "Let me check.", "Sunny.", False),
    ("exaone_deep", "<thought>Still", "Still", "", True),
    ("exaone_deep", "<think>not its tag</think>", "", "<think>not its tag</think>", False),
    ("marco_o1", "<Thought>\nThe sky.\n</Thought>\n<Output>\nSunny.\n</Output>", "The sky.", "Sunny.", False),
    ("marco_o1", "<Thought>The sky.</Thought>Sunny.", "The sky.", "Sunny.", False),  # the wrapper is optional
    ("minicpm3", "<|thought_start|>\nThe user asks.\n<|thought_end|>\nSunny.", "The user asks.", "Sunny.", False),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "reasoning", "content", "cut_off"), REASONING)
def test_reasoning_split_whole_and_streamed(name: str, text: str, reasoning: str, content: str, cut_off: bool) -> None:
    fmt = OutputFormat.choose(None, name, "")
    whole, _ = fed(fmt, [text])
    assert (whole.reasoning, whole.content, whole.in_reasoning) == (reasoning, content, cut_off)
    think = fmt.think_markup
    assert think is not None
    for chunks in deltas(text):
        turn, pieces = fed(fmt, chunks)
        assert (turn.reasoning, turn.content, turn.in_reasoning) == (reasoning, content, cut_off), chunks
        texts = [piece.text for piece in pieces if isinstance(piece, ContentDelta)]
        assert not any(tag in part for part in texts for tag in (*think.begins, *think.ends)), (chunks, texts)


def test_a_block_the_prompt_opened() -> None:
    """Solar Open 2's template opens the block in the prompt: the reply starts inside it."""
    turn, _ = fed(OutputFormat(None, "solar_open2"), ["Hmm.", "<|think:e", "nd|>Sunny."], "<|think:start|>")
    assert (turn.reasoning, turn.content) == ("Hmm.", "Sunny.")


def test_exaone_deep_prompt_opens_the_block() -> None:
    """EXAONE Deep's template ends the prompt with <thought>: the reply starts inside the block."""
    turn, _ = fed(OutputFormat(None, "exaone_deep"), ["Let me", " check.\n</tho", "ught>\n\nSunny."], "<thought>\n")
    assert (turn.reasoning.strip(), turn.content.strip()) == ("Let me check.", "Sunny.")


def test_minicpm3_thought_then_its_calls() -> None:
    """MiniCPM3 writes its thought, then its Python calls in a fence between LFM2's tokens (its template's order)."""
    text = ('<|thought_start|>\nI need the weather.\n<|thought_end|>\n<|tool_call_start|>\n```python\n'
            'get_weather(city="Paris")\n```\n<|tool_call_end|>\n')  # fmt: skip
    for chunks in [[text], *deltas(text)[:4]]:
        turn, _ = fed(OutputFormat("lfm2", "minicpm3"), chunks)
        assert (turn.reasoning.strip(), turn.content.strip(), [c.name for c in turn.calls]) == (
            "I need the weather.", "", ["get_weather"]), chunks  # fmt: skip


def test_mistral_reasoning_then_its_calls() -> None:
    text = "[THINK]I need the weather.[/THINK]" + MISTRAL_CALL
    for chunks in [[text], *deltas(text)[:4]]:
        turn, _ = fed(OutputFormat("mistral_args", "mistral"), chunks)
        assert summary(turn) == ("", "I need the weather.", [WEATHER]), chunks


# vLLM's reasoning parsers and what serves each here.
VLLM_REASONING = {
    "deepseek_v3": THINK, "ernie45": GRANITE_TAGGED_THINK, "glm45": THINK, "glm47": THINK, "holo2": THINK,
    "hunyuan_a13b": HUNYUAN_THINK, "kimi_k2": THINK, "mimo": THINK, "minimax_m2": THINK, "mistral": MISTRAL_THINK,
    "nemotron_v3": THINK, "olmo3": THINK, "qwen3": THINK, "step3": THINK, "step3p5": THINK, "poolside_v1": THINK,
    "solar_open2": SOLAR_OPEN2_THINK, "rwkv": THINK,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(VLLM_REASONING))
def test_vllm_reasoning_names_are_served(name: str) -> None:
    chosen = OutputFormat.choose(None, name, "")
    assert chosen.reasoning_parser in REASONING_PARSERS and chosen.think_markup == VLLM_REASONING[name]


class _Generation(jinja2.ext.Extension):
    """transformers' ``{% generation %}`` block (it marks the assistant's tokens for training): its body."""

    tags = {"generation"}  # noqa: RUF012 (jinja2.ext.Extension declares it an instance variable)

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        line = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(line)

    def _body(self, caller: Any) -> str:
        return str(caller())


ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment(
    trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols", _Generation]
)
ENVIRONMENT.filters["tojson"] = lambda value, ensure_ascii=False, indent=None: json.dumps(
    value, ensure_ascii=ensure_ascii, indent=indent
)
ENVIRONMENT.globals["strftime_now"] = lambda pattern: "2026-01-01"
PROBE_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "The weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]  # fmt: skip


def rendered(template: str, content: str | None) -> str:
    """A conversation in which the assistant called get_weather(city="Paris", days=3), as ``template`` writes it
    (Jinja2 set up as transformers sets it up)."""
    call = {"id": "call00001", "type": "function", "function": {"name": WEATHER[0], "arguments": WEATHER[1]}}
    history = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": content, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call00001", "content": "Sunny."},
    ]
    compiled = ENVIRONMENT.from_string((TEMPLATES / template).read_text())
    return compiled.render(messages=history, tools=PROBE_TOOLS, bos_token="<s>", eos_token="</s>")


def written_call(markup: CallMarkup) -> str:
    """The known call as ``markup`` writes it (JSON arguments, or Python keywords)."""
    arguments = json.dumps(WEATHER[1])
    if markup.arguments == "python":
        arguments = ", ".join(f"{key}={json.dumps(value)}" for key, value in WEATHER[1].items())
    return markup.opening + markup.begin(WEATHER[0]) + arguments + markup.call_end + markup.closing


def normal(text: str) -> str:
    """Whitespace dropped, one quote style: templates differ there, parsers do not."""
    return "".join(text.split()).replace("'", '"')


FAMILY_TEMPLATES = [
    # (template, the format serving it, the calling turn's content, what ends the rendered call)
    ("LFM2.5-8B-A1B.jinja", "lfm2", "", "<|im_end|>"),  # refuses content None,
    ("Apertus-8B-Instruct.jinja", "apertus", None, "[Sunny.]"),
    ("GigaChat3-10B-A1.8B.jinja", "gigachat3", None, "\n\nfunction result"),
    ("GigaChat3.1-10B-A1.8B.jinja", "gigachat3_1", None, "\n\nfunction result"),
    ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", "mistral_args", "", "</s>"),  # refuses content None
    ("ibm-granite-granite-4.1.jinja", "hermes", None, "<|end_of_text|>"),
]


@pytest.mark.parametrize(("template", "name", "content", "end"), FAMILY_TEMPLATES)
def test_the_template_renders_the_formats_written_call(template: str, name: str, content: str | None,
                                                       end: str) -> None:  # fmt: skip
    markup = TOOL_PARSERS[name].markup
    text = rendered(template, content)
    assert normal(written_call(markup)) in normal(text), text
    # And the call as the template wrote it (its quotes, its spacing) reads back as the call.
    opening = (
        markup.opening or markup.tag or markup.call_begin.split("{name}")[0]
    )  # the call's first markup, looked for after the question
    start = text.find(opening, text.index("What is the weather"))
    turn, _ = fed(OutputFormat(name), [text[start : text.index(end, start)]])
    assert summary(turn) == ("", "", [WEATHER]), text[start:]


@pytest.mark.parametrize(
    ("template", "tool_parser", "reasoning_parser"),
    [
        ("LFM2-8B-A1B.jinja", "lfm2", None),  # renders no call: its tool list's tokens are LFM2's
        ("LFM2.5-Instruct.jinja", "lfm2", None),  # renders none either: "List of tools: [" is LFM2's
        ("LFM2.5-8B-A1B.jinja", "lfm2", "think"),
        ("Apertus-8B-Instruct.jinja", "apertus", "apertus"),
        ("GigaChat3-10B-A1.8B.jinja", "gigachat3", None),
        ("GigaChat3.1-10B-A1.8B.jinja", "gigachat3_1", None),
        ("mistralai-Ministral-3-14B-Reasoning-2512.jinja", None, "mistral"),  # the tool parser: see below
        ("google-gemma-4-31B-it-interleaved.jinja", "gemma4", "gemma4"),
        ("ollama-exaone-deep.jinja", "generic", "exaone_deep"),  # opens <thought>, cuts past ones at </thought>
        ("ollama-marco-o1.jinja", "generic", "marco_o1"),  # its system prompt asks for <Thought> and <Output>
        ("genai-openbmb-MiniCPM3-4B.jinja", "lfm2", "minicpm3"),  # its tool prompt asks for <|thought_start|>
    ],
)
def test_template_markup_chooses_the_formats(template: str, tool_parser: str | None, reasoning_parser: str | None
                                             ) -> None:  # fmt: skip
    chosen = OutputFormat.choose(None, None, (TEMPLATES / template).read_text())
    assert chosen.reasoning_parser == reasoning_parser
    # Ministral 3 mentions [TOOL_CALLS], which formats.py's table gives to "mistral" (whose parser reads the
    # [ARGS] form too); the rendered call is mistral_args' writing (test above).
    assert chosen.tool_parser == (tool_parser or "mistral")


def test_gemma4_interleaved_template_renders_calls_gemma4_reads() -> None:
    """Gemma 4's interleaved-thinking template writes calls in Gemma 4's notation: the gemma4 format reads them."""
    text = rendered("google-gemma-4-31B-it-interleaved.jinja", None)
    start = text.index("<|tool_call>")
    turn, _ = fed(OutputFormat("gemma4"), [text[start : text.index("<turn|>", start)]])
    assert summary(turn) == ("", "", [WEATHER])


# tests/service/api/test_call_markup.py writes two calls from every registered format's markup and forces each
# (required, named, parallel calls off, after a <think> block) on the engine; here, a call after the family's own
# reasoning block.


@pytest.mark.parametrize("reasoning", ["mistral", "apertus", "solar_open2"])
def test_forced_call_after_the_formats_own_reasoning_block(reasoning: str) -> None:
    """The grammar opens the reasoning block with the format's own delimiters, then the call: what it writes
    reads back as reasoning and the call (tiny-chat rarely ends a block it never learned: then all reasoning)."""
    from tests.service.api.test_call_markup import NAMES, assert_calls, forced_config, generate, read_back

    fmt = OutputFormat("mistral_args", reasoning)
    think, markup = fmt.think_markup, fmt.call_markup
    assert think is not None and markup is not None
    config = forced_config(
        fmt, thinking=True, named_tool_choice={"type": "function", "function": {"name": "get_weather"}}
    )
    text = generate(config, 0, thinking=True)
    turn = read_back(fmt, text)
    assert text.startswith(think.begin) and (turn.in_reasoning or assert_calls(turn, text, NAMES)), text
    written = think.begin + "Weather.\n" + think.end + "\n\n" + markup.begin("get_weather") + '{"city": "Paris"}'
    turn = read_back(fmt, written)
    assert turn.reasoning == "Weather." and [c.name for c in turn.calls] == ["get_weather"], written


MINIMAX_CALL = (
    '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n</minimax:tool_call>'
)


def test_minimax_append_think_keeps_the_block_in_the_content() -> None:
    """vLLM's minimax_m2_append_think: nothing goes to reasoning; the content is the text as written, after the
    <think> the prompt opened; a call after the block is still a call. Whole and in every cut."""
    fmt = OutputFormat("minimax_m2", "minimax_m2_append_think")
    thought = "I should check.</think>\n\nIt is sunny."
    for chunks in deltas(thought, 3):
        answer, _ = fed(fmt, chunks, prompt_tail="<think>\n")
        assert (answer.content, answer.reasoning) == ("<think>" + thought, "")
        split, _ = fed(OutputFormat("minimax_m2", "think"), chunks, prompt_tail="<think>\n")
        assert (split.content, split.reasoning) == ("It is sunny.", "I should check.")  # minimax_m2's own split
    for chunks in deltas("<think>hm</think>Hi"):
        unopened, _ = fed(fmt, chunks)
        assert (unopened.content, unopened.reasoning) == ("<think>hm</think>Hi", "")
    for chunks in deltas("Let me look.</think>\n\n" + MINIMAX_CALL, 7):
        called, _ = fed(fmt, chunks, prompt_tail="<think>\n")
        assert called.content.strip() == "<think>Let me look.</think>" and called.reasoning == ""
        assert [(call.name, json.loads(call.arguments)) for call in called.calls] == [WEATHER]
