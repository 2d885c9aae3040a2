"""Llama 4's JSON calls (llama3_json): its published template writes a call turn's content between
``<|python_start|>`` and ``<|python_end|>`` and the calls after them, so a past call reads
``<|python_start|><|python_end|>{"name": ..., "parameters": {...}}``. The format reads that back, whole and fed in
pieces; text between the two tokens is no call list and stays content, as does a wrapper left open.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2.sandbox
import pytest

from ovserve.service.parsing import OutputFormat
from ovserve.service.parsing.calls import PYTHON_END, PYTHON_START, llama3_json_calls
from tests.service.parsing.feeding import calls, deltas, fed

TEMPLATE = Path(__file__).parents[2] / "data" / "chat_templates" / "ollama-llama4.jinja"
W = '{"name": "get_weather", "parameters": {"city": "Paris"}}'
T = '{"name": "get_time", "parameters": {"zone": "CET"}}'
WEATHER, TIME = ("get_weather", {"city": "Paris"}), ("get_time", {"zone": "CET"})
WRAPPED = PYTHON_START + PYTHON_END

CASES = [
    # (output, calls, content: None when all of it is content)
    (WRAPPED + W, [WEATHER], ""),
    (WRAPPED + W + "; " + T, [WEATHER, TIME], ""),
    (f"{PYTHON_START}\n{PYTHON_END}\n{W}", [WEATHER], ""),
    (W, [WEATHER], ""),  # Llama 3's bare form still reads
    (f"{PYTHON_START}I will check.{PYTHON_END}{W}", [], None),  # text inside: not a bare call list
    (PYTHON_START + W, [], None),  # the wrapper never closed
    (WRAPPED + W[:-1], [], None),  # broken JSON
    (WRAPPED, [], None),  # no call after it
]


@pytest.mark.parametrize(("text", "expected", "content"), CASES)
def test_llama4_calls_whole_and_in_pieces(text: str, expected: list, content: str | None) -> None:
    fmt = OutputFormat("llama3_json")
    for chunks in deltas(text, cut_every=5):
        turn, _ = fed(fmt, chunks, tools=True)
        assert calls(turn) == expected, chunks
        assert turn.content == (text if content is None else content), chunks


def test_the_decoder_is_total_on_wrapper_fragments() -> None:
    for text in (PYTHON_START, PYTHON_END, PYTHON_START * 3, WRAPPED * 2 + W, PYTHON_START + "[" * 10_000):
        assert llama3_json_calls(text) is None


def test_the_published_template_writes_what_llama3_json_reads() -> None:
    """Llama 4's template (via Ollama's GGUF), rendering a past call, writes the wrapper and the JSON call: the
    turn as written reads back as that call."""
    template = jinja2.sandbox.ImmutableSandboxedEnvironment().from_string(TEMPLATE.read_text())
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    # content "": the template iterates a content that is not a string (the server's message form gives it "")
    history = [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "", "tool_calls": [call]}]
    rendered = template.render(messages=history, bos_token="", add_generation_prompt=False)
    turn_text = rendered.split("<|header_start|>assistant<|header_end|>\n\n", 1)[1].removesuffix("<|eot|>")
    assert turn_text.startswith(WRAPPED), turn_text
    turn, _ = fed(OutputFormat("llama3_json"), [turn_text], tools=True)
    assert calls(turn) == [WEATHER]
    assert json.loads(turn.calls[0].arguments) == {"city": "Paris"}
