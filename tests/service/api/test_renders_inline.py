"""Which conversations the event loop renders itself: only those that cannot hold it (see prompting.py)."""

from __future__ import annotations

from typing import Any

import pytest

from service.api.prompting import INLINE_MESSAGES, INLINE_PROMPT_CHARS, renders_inline

TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}


def messages(count: int, content: Any = "hello") -> list[dict[str, Any]]:
    return [{"role": "user", "content": content} for _ in range(count)]


CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any], bool]] = {
    "a short chat": (messages(3), None, {"enable_thinking": True}, True),
    "as many messages as allowed": (messages(INLINE_MESSAGES), None, {}, True),
    "one message too many": (messages(INLINE_MESSAGES + 1), None, {}, False),
    "a tool": (messages(1), [TOOL], {}, False),
    "long text": (messages(1, "x" * (INLINE_PROMPT_CHARS + 1)), None, {}, False),
    "long text in parts": (messages(1, [{"type": "text", "text": "x" * INLINE_PROMPT_CHARS}] * 2), None, {}, False),
    "a large chat_template_kwargs": (messages(1), None, {"documents": [{"text": "x" * 1000}] * 20}, False),
    "many small keys": (messages(1), None, {f"k{i}": i for i in range(INLINE_PROMPT_CHARS)}, False),
}


@pytest.mark.parametrize("name", CASES)
def test_only_small_conversations_render_on_the_loop(name: str) -> None:
    history, tools, context, inline = CASES[name]
    assert renders_inline(history, tools, context) is inline
