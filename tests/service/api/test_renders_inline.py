"""Which requests the event loop reads and renders itself: only those that cannot hold it (see prompting.py)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from ovserve.clients.v1 import chat_pb2
from ovserve.service.api.prompting import (
    INLINE_MESSAGES,
    INLINE_PROMPT_CHARS,
    INLINE_REQUEST_BYTES,
    read_off_the_loop_if_large,
    renders_inline,
)

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


@pytest.mark.parametrize(
    ("messages_count", "content", "inline"),
    [(3, "hi", True), (INLINE_MESSAGES + 1, "hi", False), (1, "x" * INLINE_REQUEST_BYTES, False)],
    ids=["a short chat", "many messages", "a large request"],
)
def test_only_small_requests_are_read_on_the_loop(messages_count: int, content: str, inline: bool) -> None:
    request = chat_pb2.CreateChatCompletionRequest(
        model="m", messages=[chat_pb2.ChatMessage(role="user", content=content)] * messages_count
    )

    async def thread_of_the_work() -> bool:
        loop_thread = threading.get_ident()
        return await read_off_the_loop_if_large(request, len(request.messages), threading.get_ident) == loop_thread

    assert asyncio.run(thread_of_the_work()) is inline
