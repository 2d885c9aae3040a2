"""GLM-4-9B-chat's and ChatGLM3's tool formats (ovserve.service.parsing.formats_glm): a call is a message naming its
function on its first line.

Each written call is parsed whole and fed in deltas of 1-3 characters (and cut in two at every point): the
results agree and no markup reaches the content on the way; malformed calls stay content. GLM-4-9B-chat's
published template writes a past call (from a message's metadata) as the glm4 markup writes it, and the call the
server writes into a past turn's content for it reads back. Forced calls of both formats run on the engine in
tests/service/api/test_call_markup.py (every registered format).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jinja2.sandbox
import pytest

from ovserve.service.parsing import TOOL_PARSERS, ContentDelta, OutputFormat, formats
from ovserve.service.parsing.calls_glm import MAX_NAME_CHARS, chatglm3_calls, glm4_calls, opens_call
from ovserve.service.parsing.detection import written_call
from ovserve.service.parsing.formats_glm import CHATGLM3, GLM4
from tests.service.parsing.feeding import deltas, fed, streamed_like_whole, summary

TEMPLATES = Path(__file__).parents[2] / "data" / "chat_templates"
GLM_TEMPLATE = "genai-THUDM-glm-4-9b-chat.jinja"
WEATHER = ("get_weather", {"city": "Paris", "days": 3})
TIME = ("get_time", {"zone": "CET", "exact": True, "note": None})

GLM_CALL = 'get_weather\n{"city": "Paris", "days": 3}'
GLM_CALL2 = 'get_time\n{"zone": "CET", "exact": true, "note": null}'
C3_CALL = 'get_weather\n ```python\ntool_call(city="Paris", days=3)\n```'  # as ChatGLM3's tool demo shows it
C3_CALL2 = "get_time\n```python\ntool_call(zone='CET', exact=True, note=None)\n```"

CASES = [
    # (format, output, calls, content; None: not a call, all of it is content)
    ("glm4", GLM_CALL, [WEATHER], ""),
    ("glm4", GLM_CALL + "<|assistant|>" + GLM_CALL2, [WEATHER, TIME], ""),
    ("glm4", "\nLet me check.<|assistant|>" + GLM_CALL, [WEATHER], "Let me check."),
    ("glm4", 'get_weather\n{\n    "city": "Paris",\n    "days": 3\n}\n', [WEATHER], ""),  # indented JSON
    ("glm4", "\nHello there.\nHow can I help?", [], "Hello there.\nHow can I help?"),  # the metadata line is not text
    ("glm4", "Paris is sunny.\n{not a call}", [], None),  # a sentence on the first line
    ("glm4", 'get_weather\n{"city": "Paris"} and more', [], None),  # text after the arguments
    ("glm4", 'get_weather\n["Paris"]', [], None),  # arguments not an object
    # A text message after a call (the model stops at <|observation|> after one): the list does not decode whole,
    # so it is read as a cut list (ovserve.service.parsing.cut_lists) and keeps its complete call.
    ("glm4", 'get_weather\n{"city": "Paris"}<|assistant|>\nSure.', [("get_weather", {"city": "Paris"})], ""),
    ("glm4", '{"city": "Paris"}\nget_weather', [], None),  # JSON first: not a name
    ("chatglm3", C3_CALL, [WEATHER], ""),
    ("chatglm3", C3_CALL + "<|assistant|>" + C3_CALL2, [WEATHER, TIME], ""),
    ("chatglm3", "\n Let me look.<|assistant|>" + C3_CALL, [WEATHER], "Let me look."),
    ("chatglm3", "get_weather\n```python\ntool_call('Paris')\n```", [], None),  # positional
    ("chatglm3", "get_weather\n```python\nlookup(city='Paris')\n```", [], None),  # not tool_call
    ("chatglm3", "get_weather\n```python\ntool_call(city=open('x'))\n```", [], None),  # not a literal
    ("chatglm3", "get_weather\n```python\ntool_call(city='Paris')", [], None),  # the fence never closes
]  # fmt: skip
# Strings that are markup: none may reach the content of a reply that made its calls.
MARKUP = ["<|assistant", "get_weather", "```", "tool_call("]


@pytest.mark.parametrize(("name", "text", "calls", "content"), CASES)
def test_whole_and_streamed_agree(name: str, text: str, calls: list, content: str | None) -> None:
    whole = streamed_like_whole(OutputFormat(name), text, MARKUP)
    assert summary(whole) == (text.lstrip() if content is None else content, "", calls)


def test_text_streams_once_its_first_word_is_known() -> None:
    """Only the reply's first word is held back while it may name a function; then text passes as it comes."""
    parser = OutputFormat("glm4").parser()
    assert parser.feed("\nSunny") == []  # may still be a name
    assert [piece.text for piece in parser.feed(" today") if isinstance(piece, ContentDelta)] == ["Sunny today"]
    assert [piece.text for piece in parser.feed(", 24 degrees") if isinstance(piece, ContentDelta)] == [", 24 degrees"]


def test_only_an_offered_tools_name_opens_a_call() -> None:
    """With the request's tools known (the server passes them), a first line naming none of them is text, known
    as soon as it cannot become one of their names (as GLM's own server reads a call only of an offered tool);
    without them, a first line that is not a function's name (a colon, a fence) is text."""
    schemas = {"get_weather": {}, "get_time": {}}
    parser = OutputFormat("glm4").parser(schemas=schemas)
    streamed = parser.feed("\nParis")
    assert [piece.text for piece in streamed if isinstance(piece, ContentDelta)] == ["Paris"]
    for text in ('Paris\n{"sunny": true}', 'get_weathers\n{"city": "Paris"}'):
        turn, _ = fed(OutputFormat("glm4"), [text], schemas={"get_weather": {}})
        assert (turn.content, turn.calls) == (text, []), text
    # A call of a tool not offered after one offered: read as a cut list, the offered call kept.
    turn, _ = fed(OutputFormat("glm4"), [GLM_CALL + "<|assistant|>" + GLM_CALL2], schemas={"get_weather": {}})
    assert summary(turn) == ("", "", [WEATHER])
    turn, _ = fed(OutputFormat("glm4"), [GLM_CALL + "<|assistant|>" + GLM_CALL2], schemas=schemas)
    assert summary(turn) == ("", "", [WEATHER, TIME])
    for text in ('Result:\n{"a": 1}', '```json\n{"a": 1}\n```'):
        turn, _ = fed(OutputFormat("glm4"), ["\n" + text])
        assert (turn.content, turn.calls) == (text, []), text


def test_a_call_after_a_reasoning_block() -> None:
    """The blank line a grammar (or the model) writes after </think> does not hide the call's name line."""
    text = "<think>The user wants the weather.</think>\n\n" + GLM_CALL
    for chunks in [[text], *deltas(text)[:5]]:
        turn, _ = fed(OutputFormat("glm4", "think"), chunks)
        assert summary(turn) == ("", "The user wants the weather.", [WEATHER]), chunks


def test_a_cut_second_call_keeps_the_first() -> None:
    """The output ends inside the second call (max_tokens): the complete call before it is kept."""
    text = GLM_CALL + '<|assistant|>get_time\n{"zone": "C'
    for chunks in [[text], *deltas(text)[:4]]:
        turn, _ = fed(OutputFormat("glm4"), chunks)
        assert summary(turn) == ("", "", [WEATHER]), chunks


def test_decoders_are_total_on_hostile_text() -> None:
    """Deep nesting, NUL bytes, huge numbers, empty and odd lines: no call, and no exception."""
    hostile = [
        "get_weather\n" + "[" * 100_000,
        "get_weather\n" + '{"a":' * 50_000 + "1" + "}" * 50_000,
        'get_weather\n{"city": "a\x00b"}x',
        "get_weather\n```python\ntool_call(city=" + "[" * 5000 + "]" * 5000 + ")\n```",
        "<|assistant|>" * 1000,
        "\n" * 1000,
        "",
    ]
    for text in hostile:
        assert glm4_calls(text) is None and chatglm3_calls(text) is None, text[:40]
        for name in ("glm4", "chatglm3"):
            turn, _ = fed(OutputFormat(name), [text])
            assert not turn.calls, text[:40]


def test_what_is_held_at_the_start_is_bounded() -> None:
    """A first line too long to be a name, or a flood of leading whitespace, is text at once."""
    assert opens_call("a" * (MAX_NAME_CHARS + 1), ("{",)) is False
    assert opens_call("\n" * (MAX_NAME_CHARS + 1), ("{",)) is False
    assert opens_call("get_weather\n" + " " * (MAX_NAME_CHARS + 1), ("{",)) is False
    assert opens_call("get_weather", ("{",)) is None and opens_call("get_weather\n {", ("{",)) is True
    parser = OutputFormat("glm4").parser()
    streamed = parser.feed("x" * (MAX_NAME_CHARS + 1))
    assert [piece.text for piece in streamed if isinstance(piece, ContentDelta)] == ["x" * (MAX_NAME_CHARS + 1)]


def test_the_markup_writes_what_its_parser_reads() -> None:
    for name, markup, body in (("glm4", GLM4, GLM_CALL), ("chatglm3", CHATGLM3, C3_CALL)):
        assert TOOL_PARSERS[name].markup == markup
        written = written_call(markup)
        turn, _ = fed(OutputFormat(name), [written])
        assert summary(turn) == ("", "", [WEATHER]), written
        plain, _ = fed(OutputFormat(name), [written], tools=False)  # no tools offered: the markup is text
        assert summary(plain) == (written, "", []), written
        assert "".join(written.split()) == "<|assistant|>" + "".join(body.split()).replace("'", '"'), written


ENVIRONMENT = jinja2.sandbox.ImmutableSandboxedEnvironment()
ENVIRONMENT.filters["tojson"] = lambda value, indent=None: json.dumps(value, indent=indent, ensure_ascii=False)


def render(messages: list[dict[str, Any]]) -> str:
    """``messages`` as GLM-4-9B-chat's published template writes them (Jinja2, as transformers sets it up)."""
    template = ENVIRONMENT.from_string((TEMPLATES / GLM_TEMPLATE).read_text())
    return template.render(messages=messages, add_generation_prompt=True)


def test_the_template_writes_a_past_call_as_the_format_does() -> None:
    """GLM-4-9B-chat's template writes a call from the message's metadata (the name) and content (the
    arguments), right after the role token: glm4's writing of the call, which reads back as the call."""
    call_turn = {"role": "assistant", "metadata": WEATHER[0], "content": json.dumps(WEATHER[1])}
    text = render([{"role": "user", "content": "Weather in Paris?"}, call_turn])
    start = text.index("<|assistant|>")
    assert text[start:].startswith(written_call(GLM4)), text
    for turn_text in (text[start : text.rindex("<|assistant|>")], text[start + len("<|assistant|>") :]):
        turn, _ = fed(OutputFormat("glm4"), [turn_text.removesuffix("<|assistant|>")])  # with its role token or not
        assert summary(turn) == ("", "", [WEATHER]), turn_text
    # Detection by rendering finds glm4 in such a rendering: its writing of the probe call, the role token included
    # (and not a shorter writing of another format).
    found = formats.detect_tool_parser("", None, [text])
    assert found is not None and found.name == "glm4", found
    assert found.evidence.startswith("the template writes a past call as glm4 does"), found


def test_a_past_call_written_into_the_content_reads_back() -> None:
    """The template drops OpenAI's tool_calls, so the server writes a past call into the turn's content in the
    model's markup (calls_in_content), and the tool's result in an observation turn, the role the template writes
    as GLM's <|observation|>: rendered, the turn reads back as the same calls, the result after it."""
    fmt = OutputFormat.choose(None, None, (TEMPLATES / GLM_TEMPLATE).read_text(), render=lambda h, t, c: render(h))
    assert (fmt.tool_parser, fmt.calls_in_content) == ("glm4", True)
    listed = [{"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
              for n, (name, args) in enumerate([WEATHER, TIME])]  # fmt: skip
    history = [
        {"role": "user", "content": "Weather and time?"},
        {"role": "assistant", "content": None, "tool_calls": listed},
        {"role": "tool", "tool_call_id": "call_0", "content": "Sunny, 24 degrees."},
    ]
    text = render([fmt.with_calls_in_content(message) for message in history])
    start = text.index("<|assistant|>") + len("<|assistant|>")
    turn, _ = fed(fmt, [text[start : text.index("<|observation|>")]])
    assert summary(turn) == ("", "", [WEATHER, TIME]), text
    assert text.endswith("<|observation|>\nSunny, 24 degrees.<|assistant|>"), text
    # A template that renders tool_calls itself keeps OpenAI's roles.
    assert OutputFormat("glm4").with_calls_in_content(history[2]) == history[2]
