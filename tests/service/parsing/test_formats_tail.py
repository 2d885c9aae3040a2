"""The long tail of vLLM's tool parsers (ovserve.service.parsing.formats_tail): each new format reads its model's calls,
written by hand as vLLM's parser for the family documents them, whole and fed in 1 to 3 character deltas; two
calls; malformed markup stays content. Each alias names a format that reads the markup its vLLM parser
documents, in that parser's own examples. (Forced calls, cut lists and hostile input are covered for every
registered format by test_call_markup, test_cut_call_lists and test_hostile_output.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovserve.service.parsing import OutputFormat, ParsedTurn, calls_tail, envelope, formats_tail, inkling
from ovserve.service.parsing.detection import written_arguments
from ovserve.service.parsing.formats import ALIASES, REASONING_PARSERS, TOOL_PARSERS
from ovserve.service.parsing.markup import DSML, GCML, THINK
from tests.service.parsing.feeding import calls as calls_of
from tests.service.parsing.feeding import fed, in_sizes

SCHEMAS = {
    "get_weather": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}},
    "set_alarm": {"type": "object", "properties": {"hour": {"type": "integer"}, "label": {"type": "string"}}},
}
WEATHER = ("get_weather", {"city": "Paris", "days": 3})
ALARM = ("set_alarm", {"hour": 7, "label": "wake up"})
PLAMO = {
    tag: f"<|plamo:{tag}:plamo|>"
    for tag in (
        "begin_tool_requests", "end_tool_requests", "begin_tool_request", "end_tool_request", "begin_tool_name",
        "end_tool_name", "begin_tool_arguments", "end_tool_arguments",
    )
}  # fmt: skip


PLAMO_JSON = "<|plamo:constrain|>json<|plamo:msg|>"  # before the arguments, in later checkpoints


def plamo(*calls: tuple[str, dict[str, Any]], constrained: bool = True) -> str:
    """PLaMo 3's section of requests, as its vLLM parser's docstring lays them out (one tag after another)."""
    requests = "".join(
        f"{PLAMO['begin_tool_request']}{PLAMO['begin_tool_name']}{name}{PLAMO['end_tool_name']}"
        f"{PLAMO['begin_tool_arguments']}{PLAMO_JSON if constrained else ''}{json.dumps(arguments)}"
        f"{PLAMO['end_tool_arguments']}{PLAMO['end_tool_request']}"
        for name, arguments in calls
    )
    return PLAMO["begin_tool_requests"] + requests + PLAMO["end_tool_requests"]


def gcml(*calls: tuple[str, dict[str, Any]]) -> str:
    """GigaChat 3.5's section, as vLLM's tests of its parser write one (string="false" before a JSON value)."""
    invokes = "".join(
        f'<{GCML}invoke name="{name}">\n'
        + "".join(
            f'<{GCML}parameter name="{key}" string="{str(isinstance(value, str)).lower()}">'
            f"{value if isinstance(value, str) else json.dumps(value)}</{GCML}parameter>\n"
            for key, value in arguments.items()
        )
        + f"</{GCML}invoke>\n"
        for name, arguments in calls
    )
    return f"<{GCML}tool_calls>\n{invokes}</{GCML}tool_calls>"


def spaced_dsml(*calls: tuple[str, dict[str, Any]]) -> str:
    """DeepSeek V4.1's section, as vLLM's deepseek_v41 parser's tags lay it out (V4's, a space after the prefix)."""
    invokes = "".join(
        f'<{DSML} invoke name="{name}">\n'
        + "".join(
            f'<{DSML} parameter name="{key}" string="{str(isinstance(value, str)).lower()}">'
            f"{value if isinstance(value, str) else json.dumps(value)}</{DSML} parameter>\n"
            for key, value in arguments.items()
        )
        + f"</{DSML} invoke>\n"
        for name, arguments in calls
    )
    return f"<{DSML} calls>\n{invokes}</{DSML} calls>"


def atem(*calls: tuple[str, dict[str, Any]], first: str = " to=self<|message|>Need the weather.<|eom|>") -> str:
    """An ATEM turn (OVMS's Onyx template, vLLM's muse_glimmer docstring): a reasoning message, then each call a
    message to its tool, in the envelope's headers and terminators."""
    messages = "".join(
        f'<|start|>assistant to={name}<|message|><atem:function_calls>\n<atem:invoke name="{name}">\n'
        + "".join(f'<atem:parameter name="{key}">{value}</atem:parameter>\n' for key, value in arguments.items())
        + "</atem:invoke>\n</atem:function_calls><|eom|>"
        for name, arguments in calls
    )
    return first + messages


def keyed(call_tag: str, section: str, *calls: tuple[str, dict[str, Any]]) -> str:
    """Hunyuan 4's (plain tags) or K2 Horizon's (ifm| tags) section: each call its name, then key/value tags."""
    members = "".join(
        f"<{call_tag}>{name}"
        + "".join(
            f"<{section}arg_key>{key}</{section}arg_key><{section}arg_value>{value}</{section}arg_value>"
            for key, value in arguments.items()
        )
        + f"</{call_tag}>"
        for name, arguments in calls
    )
    return f"<{section}tool_calls>{members}</{section}tool_calls>"


# Each new format -> get_weather, then set_alarm, as its model writes them (by hand, not from the markup).
WRITTEN: dict[str, str] = {
    "qwen25_coder": '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tools>\n'
    '<tools>\n{"name": "set_alarm", "arguments": {"hour": 7, "label": "wake up"}}\n</tools>',
    "openpangu": '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
    '{"name": "set_alarm", "arguments": {"hour": 7, "label": "wake up"}}]<|tool_call_end|>',
    "plamo3": plamo(WEATHER, ALARM),
    "gigachat35": gcml(WEATHER, ALARM),
    "deepseek_v41": spaced_dsml(WEATHER, ALARM),
    # The reasoning message is content here (no reasoning format): "Let me check.\n" comes before it.
    "onyx": atem(WEATHER, ALARM, first=""),
    "dots": '<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">Paris</parameter>\n'
    '<parameter name="days">3</parameter>\n</invoke>\n<invoke name="set_alarm">\n'
    '<parameter name="hour">7</parameter>\n<parameter name="label">wake up</parameter>\n</invoke>\n'
    "</dots_function_call>",
    "hy_v4": keyed("tool_call", "", WEATHER, ALARM),
    "k2_horizon": keyed("ifm|tool_call", "ifm|", WEATHER, ALARM),
    "step_audio_2": '<tool_call>function\nget_weather\n{"city": "Paris", "days": 3}</tool_call>'
    '<tool_call>function\nset_alarm\n{"hour": 7, "label": "wake up"}</tool_call>',
    "cwm": '<tool: function>\nget_weather {"city": "Paris", "days": 3}\n</tool>\n'
    '<tool: function>\nset_alarm\n{"hour": 7, "label": "wake up"}\n</tool>',
    # After text, a message of its own: its ChatML tokens dropped, the header's "assistant" and the role line left
    "hyperclovax_seed_think_14b": 'assistant -> tool/function_call\n[{"name": "get_weather", "arguments": '
    '{"city": "Paris", "days": 3}}, {"name": "set_alarm", "parameters": {"hour": 7, "label": "wake up"}}]',
    # vLLM's granite_pythonic docstring: a call a line, keyword arguments
    "granite_pythonic": 'get_weather(city="Paris", days=3)\nset_alarm(hour=7, label="wake up")',
    "iquest_coder_v2": "<iquestcoder_tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
    "<arg_key>days</arg_key><arg_value>3</arg_value></iquestcoder_tool_call>\n<iquestcoder_tool_call>set_alarm\n"
    "<arg_key>hour</arg_key>\n<arg_value>7</arg_value>\n<arg_key>label</arg_key>\n<arg_value>wake up</arg_value>\n"
    "</iquestcoder_tool_call>",
    # Inkling writes each block after <|message_model|>, a special token the detokenizer drops.
    "inkling": '<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"Paris","days":3}}<|end_message|>'
    '<|content_invoke_tool_json|>{"name":"set_alarm","args":{"hour":7,"label":"wake up"}}<|end_message|>',
}
# Each new format -> markup that opens like its calls but is not one: it stays content, as written.
MALFORMED: dict[str, str] = {
    "qwen25_coder": '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"\n</tools>',
    "openpangu": '<|tool_call_start|>[{"arguments": {"city": "Paris"}}]<|tool_call_end|>',
    "plamo3": PLAMO["begin_tool_requests"] + PLAMO["begin_tool_request"] + PLAMO["begin_tool_name"] + "get_weather"
    + PLAMO["end_tool_name"] + '{"city": "Paris"}' + PLAMO["end_tool_request"] + PLAMO["end_tool_requests"],
    "gigachat35": f'<{GCML}tool_calls>\n<{GCML}invoke>\n</{GCML}invoke>\n</{GCML}tool_calls>',
    "dots": '<dots_function_call>\n<invoke name="get weather">\n</invoke>\n</dots_function_call>',
    "deepseek_v41": f"<{DSML} calls>\n<{DSML} invoke>\n</{DSML} invoke>\n</{DSML} calls>",
    "onyx": '<atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter>Paris</atem:parameter>\n'
    "</atem:invoke>\n</atem:function_calls>",
    "hy_v4": "<tool_calls><tool_call>get_weather<arg_key>city</arg_key>Paris</tool_call></tool_calls>",
    "k2_horizon": "<ifm|tool_calls><ifm|tool_call>get_weather<ifm|arg_key>city</ifm|arg_key></ifm|tool_call>"
    "</ifm|tool_calls>",
    "step_audio_2": '<tool_call>get_weather\n{"city": "Paris"}</tool_call>',
    "cwm": '<tool: function>\nget_weather {"city": "Paris"\n</tool>',  # broken JSON, not a command line
    "iquest_coder_v2": "<iquestcoder_tool_call>get_weather<arg_value>Paris</arg_value></iquestcoder_tool_call>",
    "granite_pythonic": 'get_weather(city="Paris", days=)\nsearch(query)',
    "hyperclovax_seed_think_14b": '-> tool/function_call\n[{"arguments": {"city": "Paris"}}]',
    "inkling": '<|content_invoke_tool_json|>{"name": "get_weather", "args": "Paris"}<|end_message|>',
}  # fmt: skip
NEW_FORMATS = list(formats_tail.TOOL_FORMATS)


def turn(name: str, text: str, sizes: tuple[int, ...] = ()) -> ParsedTurn:
    """``text`` through format (or alias) ``name``'s parser, whole or in deltas of ``sizes`` in turn."""
    return reasoned(name, None, text, sizes)


def test_every_new_format_is_tested() -> None:
    assert set(WRITTEN) == set(MALFORMED) == set(NEW_FORMATS)
    assert all(name in TOOL_PARSERS for name in NEW_FORMATS)


@pytest.mark.parametrize("sizes", [(), (1,), (2,), (3,), (1, 2, 3)], ids=["whole", "1", "2", "3", "1-2-3"])
@pytest.mark.parametrize("name", NEW_FORMATS)
def test_two_calls_whole_and_in_small_deltas(name: str, sizes: tuple[int, ...]) -> None:
    parsed = turn(name, "Let me check.\n" + WRITTEN[name], sizes)
    assert calls_of(parsed) == [WEATHER, ALARM]
    assert parsed.content.strip() == "Let me check."


@pytest.mark.parametrize("sizes", [(), (1,), (1, 2, 3)], ids=["whole", "1", "1-2-3"])
@pytest.mark.parametrize("name", NEW_FORMATS)
def test_malformed_markup_stays_content(name: str, sizes: tuple[int, ...]) -> None:
    parsed = turn(name, MALFORMED[name], sizes)
    assert parsed.calls == []
    assert parsed.content == MALFORMED[name]


@pytest.mark.parametrize("name", NEW_FORMATS)
def test_the_markup_writes_what_the_parser_reads(name: str) -> None:
    """One call written by the format's CallMarkup (what a forced call's grammar writes) reads back."""
    markup = TOOL_PARSERS[name].markup
    arguments = written_arguments(markup, WEATHER[1])
    text = markup.opening + markup.begin(WEATHER[0]) + arguments + markup.call_end + markup.closing
    assert calls_of(turn(name, text)) == [WEATHER]


@pytest.mark.parametrize(
    ("name", "tokens"),
    [
        ("hy_v4", calls_tail.HY_V4_KEYS.tags),
        ("k2_horizon", calls_tail.IFM_KEYS.tags),
        ("iquest_coder_v2", calls_tail.HY_V4_KEYS.tags),
        ("onyx", envelope.SPECIAL_TOKENS),
        ("inkling", inkling.SPECIAL_TOKENS),
    ],
)
def test_the_engine_keeps_the_tokens_the_parser_reads(name: str, tokens: tuple[str, ...]) -> None:
    """Member tags (and ATEM's envelope tokens) are special tokens the detokenizer drops unless the format
    names them: each is among the strings whose special tokens the engine keeps."""
    assert set(tokens) <= set(OutputFormat(name).markup_texts)


def test_granite_pythonic_text_lines_stream_and_calls_come_between_them() -> None:
    """A line that leaves the shape of a call is content at once (not held to its end); calls amid text lines."""
    parser = OutputFormat("granite_pythonic").parser(schemas=SCHEMAS)
    streamed = [piece for char in "Hello wor" for piece in parser.feed(char)]
    assert "".join(getattr(piece, "text", "") for piece in streamed) == "Hello wor"
    for piece in ('ld (and more).\nget_weather(city="Paris", days=3)\n', "Done: x(1) is not a call.\n"):
        parser.feed(piece)
    parser.finish()
    assert calls_of(parser.result) == [WEATHER]
    assert parser.result.content == "Hello world (and more).\nDone: x(1) is not a call.\n"  # as written


# vLLM's cwm docstring: a shell tool's body is its command line; the shorthand without ">" names the tool by its
# label. (What the model wrote, as written, where the block is not a call.)
CWM_COMMANDS = [
    ('<tool: function>\nterminal find . -name "*.py" | xargs grep -n "def bulk_create"\n</tool>',
     [("terminal", {"command": 'find . -name "*.py" | xargs grep -n "def bulk_create"'})]),
    ("<tool: function>\nbash cat <<EOF\nline one\n\nline two\nEOF\n</tool>",  # blank lines kept in the command
     [("bash", {"command": "cat <<EOF\nline one\n\nline two\nEOF"})]),
    ('<tool: python import os; print("hi") </tool>', [("python", {"command": 'import os; print("hi")'})]),
    ("<tool: function>\nterminal ls -l", []),  # cut before </tool>: maybe half a command, so text
    ("<tool: function>\n\n</tool>", []),  # no name
    ('<tool: function>\n{"command": "ls"}\n</tool>', []),  # JSON where the name goes
]  # fmt: skip


@pytest.mark.parametrize("sizes", [(), (1,), (1, 2, 3)], ids=["whole", "1", "1-2-3"])
@pytest.mark.parametrize(("text", "expected"), CWM_COMMANDS)
def test_cwm_reads_a_command_line_in_a_closed_block(text: str, expected: list, sizes: tuple[int, ...]) -> None:
    parsed = turn("cwm", "Running it.\n" + text, sizes)
    assert (calls_of(parsed), parsed.content) == (expected, "Running it." if expected else "Running it.\n" + text)


def test_cwm_keeps_the_calls_before_a_cut_command() -> None:
    """A closed block's command is a call; the block the output cut after it is dropped (a cut list keeps its
    complete calls, ovserve.service.parsing.cut_lists), never read as a shorter command."""
    text = "<tool: function>\nterminal ls\n</tool>\n<tool: function>\nterminal rm -rf /tmp/bu"
    for sizes in [(), (1,), (2, 3)]:
        parsed = turn("cwm", text, sizes)
        assert (calls_of(parsed), parsed.content) == ([("terminal", {"command": "ls"})], "")


def suffixed(text: str, suffix: str = ":6124c78e") -> str:
    """Hunyuan 4's plain tags as a checkpoint that suffixes its structural tokens writes them."""
    for tag in ("tool_calls", "tool_call", "arg_key", "arg_value"):
        text = text.replace(f"<{tag}>", f"<{tag}{suffix}>").replace(f"</{tag}>", f"</{tag}{suffix}>")
    return text


@pytest.mark.parametrize("sizes", [(), (1,), (2,), (1, 2, 3)], ids=["whole", "1", "2", "1-2-3"])
def test_hy_v4_reads_a_checkpoints_suffixed_tags(sizes: tuple[int, ...]) -> None:
    """vLLM's hy_v4 reads the suffix off the vocabulary; here any suffix is taken off the tags as they come."""
    for suffix in (":6124c78e", ":opensource"):
        parsed = turn("hy_v4", "Let me check.\n" + suffixed(WRITTEN["hy_v4"], suffix), sizes)
        assert (calls_of(parsed), parsed.content) == ([WEATHER, ALARM], "Let me check."), suffix


# Text that starts like a suffixed tag but is not one: it reaches the content as written.
NOT_SUFFIXED = [
    "<tool_call:>", "<arg_key: x>", "<arg_keys:abc>", "<tool_calls:" + "x" * 65 + ">", "a < b <tool_call",
    "<tool_call:ab",
]  # fmt: skip


@pytest.mark.parametrize("text", NOT_SUFFIXED)
def test_hy_v4_leaves_what_is_not_a_suffixed_tag(text: str) -> None:
    for sizes in [(), (1,), (2, 3)]:
        parsed = turn("hy_v4", "Note: " + text, sizes)
        assert (calls_of(parsed), parsed.content) == ([], "Note: " + text), sizes


def test_hy_v4_keeps_the_complete_calls_of_a_cut_suffixed_section() -> None:
    text = suffixed(WRITTEN["hy_v4"])
    cut = text[: text.index("<tool_call:6124c78e>set_alarm") + len("<tool_call:6124c78e>set_al")]
    assert calls_of(turn("hy_v4", cut, (3,))) == [WEATHER]


def test_single_object_and_list_forms_of_qwen25_coder() -> None:
    """vLLM's docstring: one call as an object, several as a JSON list, in one <tools> block."""
    one = '<tools>\n{"name": "function_name", "arguments": {"param1": "value1"}}\n</tools>'
    assert calls_of(turn("qwen25_coder", one)) == [("function_name", {"param1": "value1"})]
    listed = '<tools>\n[{"name": "func1", "arguments": {}}, {"name": "func2", "parameters": {"a": 1}}]\n</tools>'
    assert calls_of(turn("qwen2_5_coder", listed, (2,))) == [("func1", {}), ("func2", {"a": 1})]


def test_plamo3_reads_both_argument_openings() -> None:
    """Earlier PLaMo 3 checkpoints write the arguments right after their tag, later ones after the JSON
    constraint's tags (vLLM's parser has read both in turn)."""
    for constrained in (False, True):
        assert calls_of(turn("plamo3", plamo(WEATHER, constrained=constrained), (2,))) == [WEATHER]


def reasoned(tool: str | None, reasoning: str | None, text: str, sizes: tuple[int, ...] = ()) -> ParsedTurn:
    """``text`` through the tool and reasoning formats (or aliases) named, whole or in deltas of ``sizes``."""
    return fed(OutputFormat.choose(tool, reasoning, ""), in_sizes(text, sizes), schemas=SCHEMAS)[0]


# A reasoning format -> a reply as its model writes it: the block, then the answer.
REASONED = {
    "plamo3": "<|plamo:begin_think:plamo|>Rain is likely.<|plamo:end_think:plamo|>Take an umbrella.",
    "k2_horizon": "<ifm|think>Rain is likely.</ifm|think>Take an umbrella.",
    "inkling": "<|content_thinking|>Rain is likely.<|end_message|>Take an umbrella.",
    "hyperclovax_seed_think_14b": "/think\nRain is likely.<|im_end|>\n<|im_start|>assistant\n"
    "Take an umbrella.<|im_end|>",
}


@pytest.mark.parametrize("sizes", [(), (1,), (1, 2, 3)], ids=["whole", "1", "1-2-3"])
@pytest.mark.parametrize("name", list(REASONED))
def test_a_reasoning_block_then_the_reply(name: str, sizes: tuple[int, ...]) -> None:
    parsed = reasoned(None, name, REASONED[name], sizes)
    assert (parsed.reasoning, parsed.content) == ("Rain is likely.", "Take an umbrella.")


@pytest.mark.parametrize("effort", ["think_fast", "think_faster"])
def test_k2_horizons_lower_efforts_tags(effort: str) -> None:
    parsed = reasoned(None, "k2_horizon", f"<ifm|{effort}>Quick.</ifm|{effort}>Done.", (3,))
    assert (parsed.reasoning, parsed.content) == ("Quick.", "Done.")


@pytest.mark.parametrize("sizes", [(), (1,), (2,)], ids=["whole", "1", "2"])
def test_k2_horizons_reasoning_ends_at_its_call_section(sizes: tuple[int, ...]) -> None:
    """vLLM's k2_horizon reasoning parser ends an unclosed block where the call section opens."""
    parsed = reasoned("k2_horizon", "k2_horizon", "<ifm|think>Need the weather." + WRITTEN["k2_horizon"], sizes)
    assert parsed.reasoning == "Need the weather."
    assert calls_of(parsed) == [WEATHER, ALARM]
    assert parsed.content == ""


@pytest.mark.parametrize("sizes", [(), (1,), (3,)], ids=["whole", "1", "3"])
def test_deepseek_v41s_reasoning_ends_at_its_call_section(sizes: tuple[int, ...]) -> None:
    """As V4's: the section may open with the <think> block unclosed (vLLM's engine ends the block there)."""
    parsed = reasoned("deepseek_v41", "deepseek_v41", "<think>Need the weather." + WRITTEN["deepseek_v41"], sizes)
    assert parsed.reasoning == "Need the weather."
    assert calls_of(parsed) == [WEATHER, ALARM]


@pytest.mark.parametrize("sizes", [(), (1,), (2,), (1, 2, 3)], ids=["whole", "1", "2", "1-2-3"])
def test_an_atem_turn_reasoning_then_calls(sizes: tuple[int, ...]) -> None:
    """The envelope's headers and terminators are neither content nor reasoning; the reasoning message is the
    reasoning, each tool message's section its call."""
    parsed = reasoned("onyx", "onyx", atem(WEATHER, ALARM), sizes)
    assert (parsed.reasoning, calls_of(parsed), parsed.content) == ("Need the weather.", [WEATHER, ALARM], "")


@pytest.mark.parametrize("tool", ["onyx", None])
@pytest.mark.parametrize("sizes", [(), (1,), (3,)], ids=["whole", "1", "3"])
def test_an_atem_answer_to_the_user(tool: str | None, sizes: tuple[int, ...]) -> None:
    """The answer message's header and <|eot|> are not content, with the tool format on (which keeps <|start|>)
    or off (the detokenizer drops <|start|>)."""
    start = "<|start|>" if tool else ""
    text = f" to=self<|message|>Easy.<|eom|>{start}assistant to=user<|message|>It is 3 to=4, roughly.<|eot|>"
    parsed = reasoned(tool, "onyx", text, sizes)
    assert (parsed.reasoning, parsed.content, parsed.calls) == ("Easy.", "It is 3 to=4, roughly.", [])


def test_the_envelope_is_linear_in_header_lookalikes() -> None:
    """Text full of what starts like a header (" to=x ") is released as it is, and read in one forward pass."""
    text = "to=x " * 20_000 + "to=" + "a" * 200 + "<|message|>body"
    parsed = turn("onyx", text, (997,))
    assert parsed.content == "to=x " * 20_000 + "to=" + "a" * 200 + "body"  # a recipient past 128 is text


@pytest.mark.parametrize("sizes", [(), (1,), (3,)], ids=["whole", "1", "3"])
def test_hyperclovax_14b_reasoning_then_its_call_message(sizes: tuple[int, ...]) -> None:
    """vLLM's parsers' reading: reasoning to the next assistant header, then the function-call role line and the
    list, <|im_end|> (kept: the reasoning format names it) after it."""
    text = "/think\nNeed the weather.<|im_end|>\n<|im_start|>assistant -> tool/function_call\n" + (
        '[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]<|im_end|>'
    )
    parsed = reasoned("hyperclovax_seed_think_14b", "hyperclovax_seed_think_14b", text, sizes)
    assert (parsed.reasoning, calls_of(parsed), parsed.content) == ("Need the weather.", [WEATHER], "")


def test_inklings_reasoning_then_a_call() -> None:
    parsed = reasoned("inkling", "inkling", "<|content_thinking|>Need the weather.<|end_message|>" + WRITTEN["inkling"])
    assert parsed.reasoning == "Need the weather."
    assert calls_of(parsed) == [WEATHER, ALARM]


INK_CALL = '<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"Paris","days":3}}'
# Inkling's framing as vLLM's parser documents it (every block after <|message_model|>, the engine keeping the
# tokens the format names): (reply, reasoning, calls, content).
INKLING_TURNS = [
    ("<|content_thinking|>Rain?<|end_message|><|message_model|><|content_text|>Take an umbrella.<|end_message|>",
     "Rain?", [], "Take an umbrella."),
    # The function's name between the role and the kind is metadata; text blocks before and after the call.
    ("<|content_thinking|>Rain?<|end_message|><|message_model|><|content_text|>Checking.<|end_message|>"
     f"<|message_model|>get_weather{INK_CALL}<|end_message|><|message_model|><|content_text|>Done.<|end_message|>",
     "Rain?", [WEATHER], "Checking.\nDone."),
    # Sampling may end a block with its own token instead.
    (f"<|content_thinking|>Rain?<|content_model_end_sampling|><|message_model|>{INK_CALL}"
     "<|content_model_end_sampling|>", "Rain?", [WEATHER], ""),
    # Tool-text and tool-error blocks are shown as text; a role followed by no kind within a name's room is text.
    ("<|message_model|><|content_tool_error|>No such city.<|end_message|>", "", [], "No such city."),
    ("<|message_model|>" + "word " * 40, "", [], "word " * 40),
]  # fmt: skip


def test_an_inkling_reply_without_tools_offered_has_no_framing() -> None:
    """The engine keeps the framing's tokens whatever the request: a reply to one without tools is read without
    them too, its tool blocks left as text (as every format leaves its markup when no tools are offered)."""
    text, _, _, _ = INKLING_TURNS[1]
    for chunks in [[text], in_sizes(text, (1,)), in_sizes(text, (2, 3))]:
        parsed = fed(OutputFormat("inkling", "inkling"), chunks, tools=False)[0]
        assert (parsed.reasoning, parsed.calls) == ("Rain?", []), chunks
        assert parsed.content == "Checking." + INK_CALL + "<|end_message|>Done.", chunks


@pytest.mark.parametrize("sizes", [(), (1,), (2,), (1, 2, 3)], ids=["whole", "1", "2", "1-2-3"])
@pytest.mark.parametrize(("text", "reasoning", "calls", "content"), INKLING_TURNS)
def test_inklings_framing_is_neither_content_nor_a_call(
    text: str, reasoning: str, calls: list, content: str, sizes: tuple[int, ...]
) -> None:
    parsed = reasoned("inkling", "inkling", text, sizes)
    assert (parsed.reasoning, calls_of(parsed), parsed.content) == (reasoning, calls, content)


# vLLM's (and OVMS's) reasoning parser name -> a reply its parser splits at </think>.
THINK_ALIASES = {
    name: "<think>Rain is likely.</think>\n\nTake an umbrella."
    for name, target in formats_tail.ALIASES["reasoning"].items()
    if REASONING_PARSERS[target] == THINK
}


def test_every_reasoning_alias_is_a_think_block_but_atems() -> None:
    assert set(formats_tail.ALIASES["reasoning"]) - set(THINK_ALIASES) == {"muse_glimmer"}
    parsed = reasoned("muse_glimmer", "muse_glimmer", atem(WEATHER), (2,))
    assert (parsed.reasoning, calls_of(parsed)) == ("Need the weather.", [WEATHER])


@pytest.mark.parametrize("alias", list(THINK_ALIASES))
def test_a_reasoning_alias_splits_its_think_block(alias: str) -> None:
    parsed = reasoned(None, alias, THINK_ALIASES[alias], (2,))
    assert (parsed.reasoning, parsed.content) == ("Rain is likely.", "Take an umbrella.")


# vLLM's parser name -> the call markup its parser documents (docstrings and examples, in their words).
ALIAS_EXAMPLES: dict[str, tuple[str, list[tuple[str, Any]]]] = {
    "mimov2_flash": (
        "<tool_call>\n<function=execute_bash>\n<parameter=command>pwd && ls</parameter>\n</function>\n</tool_call>",
        [("execute_bash", {"command": "pwd && ls"})],
    ),
    "qwen35coder": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Paris"})],
    ),
    "iquest_coder": (
        "\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
        "<tool_call>\n<function=set_alarm>\n<parameter=hour>\n7\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Paris"}), ("set_alarm", {"hour": 7})],
    ),
    "spark3": (
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>",
        [WEATHER],
    ),
    "intern_s1": (
        '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": {"city": "Paris"}}<|action_end|>',
        [("get_weather", {"city": "Paris"})],
    ),
    "openpangu_v2": (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|tool_call_end|>',
        [("get_weather", {"city": "Paris"})],
    ),
    "pangu": (
        '<|tool_call_start|>[{"name": "get_weather", "arguments": {"city": "Paris"}}]<|tool_call_end|>',
        [("get_weather", {"city": "Paris"})],
    ),
    "qwen2_5_coder": (
        '<tools>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tools>',
        [("get_weather", {"city": "Paris"})],
    ),
    "qwen3coder_rl": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Paris"})],
    ),
    # vllm/parser/berrylm.py's docstring
    "berrylm": (
        "<tool_call>\n<function=func_name>\n<parameter=key>value</parameter>\n</function>\n</tool_call>",
        [("func_name", {"key": "value"})],
    ),
    "minicpmv": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
        [("get_weather", {"city": "Paris"})],
    ),
    "kolibri1": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        [("get_weather", {"city": "Paris"})],
    ),
    "muse_glimmer": (atem(WEATHER, first=""), [WEATHER]),
    # OVMS's qwen3 (its Hermes 3 grammar) and deepseek (its parser's header comment) names
    "qwen3": (
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        [("get_weather", {"city": "Paris"})],
    ),
    "deepseek": (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"  # noqa: RUF001
        '{"city": "Paris"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',  # noqa: RUF001
        [("get_weather", {"city": "Paris"})],
    ),
    # Its template's system prompt: "<tool_call>{function-name}\n<arg_key>{k1}</arg_key>\n<arg_value>{v1}</arg_value>"
    "hyperclovax_seed_think": (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>",
        [WEATHER],
    ),
}


def test_every_tail_alias_has_an_example() -> None:
    assert set(formats_tail.ALIASES["tool"]) == set(ALIAS_EXAMPLES)


@pytest.mark.parametrize("sizes", [(), (1,), (1, 2, 3)], ids=["whole", "1", "1-2-3"])
@pytest.mark.parametrize("alias", list(ALIAS_EXAMPLES))
def test_an_alias_reads_its_vllm_parsers_markup(alias: str, sizes: tuple[int, ...]) -> None:
    text, expected = ALIAS_EXAMPLES[alias]
    assert ALIASES["tool"][alias] in TOOL_PARSERS
    parsed = turn(alias, text, sizes)
    assert calls_of(parsed) == expected
    assert parsed.content.strip() == ""
