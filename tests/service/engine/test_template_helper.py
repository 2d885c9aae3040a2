"""Large conversations are rendered by the chat template's helper process, as minja renders them in the server.

minja (openvino_genai's template engine) holds the GIL for a whole render: a megabyte of tool schema held
it 0.56 s, and the event loop with it, from a worker thread. Renders past HELPER_BYTES or HELPER_MESSAGES
run in a helper process instead (service/engine/template_worker.py): the same text, the template's own
refusals, a timeout that replaces the process, and a loop that keeps its turns meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openvino_genai as ov_genai
import pytest

from ovserve.service.api.prompting import INLINE_MESSAGES, INLINE_PROMPT_CHARS, renders_inline
from ovserve.service.engine import chat_template
from ovserve.service.engine.chat_template import (
    HELPER_BYTES,
    HELPER_MESSAGES,
    ChatTemplate,
    TemplateError,
    TemplateRenderer,
    error_message,
    minja_render,
)
from ovserve.service.workers.helper import HelperProcess
from tests.conftest import TINY_CHAT
from tests.pauses import longest_pause_while


def big_tool(fields: int) -> dict[str, Any]:
    properties = {f"field_{i}": {"type": "string", "description": "d" * 200} for i in range(fields)}
    return {"type": "function", "function": {"name": "big", "parameters": {"type": "object", "properties": properties}}}


def chat(messages: int) -> list[dict[str, Any]]:
    return [{"role": ("user", "assistant")[i % 2], "content": f"message {i}"} for i in range(messages)]


@pytest.fixture(scope="module")
def tokenizer() -> ov_genai.Tokenizer:
    return ov_genai.Tokenizer(str(TINY_CHAT))


@pytest.fixture
def renderer(tokenizer: ov_genai.Tokenizer) -> Iterator[TemplateRenderer]:
    template = ChatTemplate((TINY_CHAT / "chat_template.jinja").read_text(), "test")
    renderer = TemplateRenderer(tokenizer, template, TINY_CHAT)
    yield renderer
    renderer.close()


def helper_pid(renderer: TemplateRenderer) -> int | None:
    helper = renderer._helper
    assert helper is not None
    return None if helper.process is None else helper.process.pid


def test_a_large_conversation_renders_in_the_helper_as_in_the_server(
    renderer: TemplateRenderer, tokenizer: ov_genai.Tokenizer
) -> None:
    in_server = TemplateRenderer(tokenizer, renderer.template)  # no model directory: no helper
    small = chat(3)
    assert renderer.render(small, None, {}) == in_server.render(small, None, {})
    assert helper_pid(renderer) is None  # a small conversation never starts it
    tools = [big_tool(HELPER_BYTES // 200 + 10)]
    for history, tool_list in ((chat(HELPER_MESSAGES + 1), None), (chat(2), tools)):
        context = {"enable_thinking": False}
        expected = in_server.render(history, tool_list, context)
        assert renderer.render(history, tool_list, context) == expected
        assert helper_pid(renderer) is not None
    assert renderer._helper is not None and renderer._helper.restarts == 0


def test_what_the_event_loop_renders_never_waits_on_the_helper(renderer: TemplateRenderer) -> None:
    """The largest conversation prompting.renders_inline lets the loop render, in 4-byte characters, stays in
    the server: the loop must not wait on a pipe."""
    per_message = INLINE_PROMPT_CHARS // INLINE_MESSAGES - 24  # room for the keys and roles it counts too
    history = [{"role": "user", "content": "\U0001f600" * per_message} for _ in range(INLINE_MESSAGES)]
    assert renders_inline(history, None, {})
    renderer.render(history, None, {})
    assert helper_pid(renderer) is None


def test_the_templates_refusal_reads_the_same_from_the_helper(tokenizer: ov_genai.Tokenizer) -> None:
    text = "{% if messages | length > 2 %}{{ raise_exception('at most two messages, please') }}{% endif %}ok"
    renderer = TemplateRenderer(tokenizer, ChatTemplate(text, "test"), TINY_CHAT)
    try:
        with pytest.raises(TemplateError, match="at most two messages, please") as in_helper:
            renderer.render(chat(HELPER_MESSAGES + 1), None, {})
        assert helper_pid(renderer) is not None
        with pytest.raises(TemplateError) as in_server:
            renderer.render(chat(3), None, {})
        assert str(in_helper.value) == str(in_server.value)
    finally:
        renderer.close()


def test_a_render_past_the_timeout_is_refused_and_the_helper_replaced(
    renderer: TemplateRenderer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 20,000 messages: ~0.1 s or more on any CPU. The wait for an answer is polled in whole milliseconds, and a
    # fast CPU renders a few hundred messages within one (a test with HELPER_MESSAGES + 1 got its answer).
    history = chat(20_000)
    expected = renderer.render(history, None, {})
    first = helper_pid(renderer)
    monkeypatch.setattr(chat_template, "RENDER_TIMEOUT_S", 1e-6)  # polled as 1 ms: far shorter than the render
    with pytest.raises(TemplateError, match="longer than"):
        renderer.render(history, None, {})
    assert renderer._helper is not None and renderer._helper.restarts == 1
    monkeypatch.setattr(chat_template, "RENDER_TIMEOUT_S", 60.0)
    assert renderer.render(history, None, {}) == expected
    assert helper_pid(renderer) not in (None, first)


def test_a_helper_killed_between_renders_is_replaced(renderer: TemplateRenderer) -> None:
    history = chat(HELPER_MESSAGES + 1)
    expected = renderer.render(history, None, {})
    helper = renderer._helper
    assert helper is not None and helper.process is not None
    helper.process.kill()
    helper.process.wait()
    assert renderer.render(history, None, {}) == expected
    assert helper.restarts == 1


def test_other_threads_keep_their_turns_while_the_helper_renders(
    renderer: TemplateRenderer, tokenizer: ov_genai.Tokenizer
) -> None:
    """The ratio of two pauses measured side by side: a 1 MB tool schema rendered in the server, then by the
    helper (started beforehand, as a server's is after its first large render)."""
    tools = [big_tool(4500)]
    history = chat(1)
    renderer.render(chat(HELPER_MESSAGES + 1), None, {})  # the helper is up
    in_server = TemplateRenderer(tokenizer, renderer.template)
    server_pause = longest_pause_while(lambda: in_server.render(history, tools, {}))
    helper_pause = longest_pause_while(lambda: renderer.render(history, tools, {}))
    print(
        f"\nlongest pause: {server_pause * 1000:.0f} ms rendering in the server, "
        f"{helper_pause * 1000:.0f} ms in the helper"
    )
    assert helper_pause * 4 < server_pause


PUBLISHED = sorted(Path(__file__).resolve().parents[2].glob("**/*.jinja"))  # tests/data and tests/families


def test_published_templates_render_the_same_in_the_helper(tokenizer: ov_genai.Tokenizer) -> None:
    """Every vendored template of a real family that minja renders: the helper's text is the server's."""
    helper = HelperProcess("ovserve.service.engine.template_worker", TINY_CHAT)
    history = chat(HELPER_MESSAGES + 2)
    tools = [big_tool(3)]
    compared = 0
    try:
        for path in PUBLISHED:
            text = path.read_text(encoding="utf-8")
            for tool_list in (None, tools):
                try:
                    expected = ("text", minja_render(tokenizer, text, history, tool_list, {}, True))
                except Exception as error:
                    expected = ("error", error_message(error))
                assert helper.ask((text, history, tool_list, {}, True), 60) == expected, path.name
                compared += 1
    finally:
        helper.close()
    assert compared >= 40 and helper.restarts == 0
