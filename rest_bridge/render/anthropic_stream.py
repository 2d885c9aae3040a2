"""A chat stream as Anthropic's Messages events: ``message_start``, ``ping``, per block ``content_block_start``,
its deltas (``thinking_delta``, ``text_delta``, ``input_json_delta``) and ``content_block_stop``, then
``message_delta`` (stop reason and usage) and ``message_stop``; a failure after the start is an ``error`` event.

Blocks come in the order the chat stream opens them; a new kind of delta closes the open block. With stop
sequences, the last characters of the text are held back until the next delta shows they are not the end of
a matched stop sequence (which the request asked to be kept, so that the reply can tell which one matched), and
the matched one is never sent.
"""

from __future__ import annotations

from typing import Any

from ovserve.clients.v1 import chat_pb2, common_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.render.anthropic import (
    STOP_REASONS,
    error_body,
    message_id,
    stop_matched,
    tool_use_id,
    usage,
)
from ovserve.rest_bridge.sse import named_event

PING = named_event("ping", {"type": "ping"})


class MessageEventFraming:
    """Frames one StreamChatCompletion call as Anthropic's event stream (a ``sse.Framing``)."""

    def __init__(self, model: str, stop_sequences: tuple[str, ...], show_thinking: bool) -> None:
        self._model = model  # the answer's model until the first chunk names it
        self._stops = stop_sequences
        self._hold = max(map(len, stop_sequences), default=0)  # characters of text held back
        self._show_thinking = show_thinking
        self._started = False
        self._failed = False
        self._block: str | None = None  # the open block's kind: "thinking", "text" or "tool_use"
        self._index = -1  # the open (or last) block's index
        self._tail = ""  # text held back
        self._finish = common_pb2.FINISH_REASON_UNSPECIFIED
        self._usage: common_pb2.Usage | None = None

    # ---- sse.Framing ----

    def event(self, message: chat_pb2.StreamChatCompletionResponse) -> bytes | None:
        out: list[bytes] = []
        if not self._started:
            out += self._start(message.id, message.model)
        for choice in message.choices[:1]:  # Anthropic has no n: one choice
            delta = choice.delta
            if delta.HasField("reasoning_content") and delta.reasoning_content:
                out += self._open("thinking", {"type": "thinking", "thinking": "", "signature": ""})
                if self._show_thinking:
                    out.append(self._delta({"type": "thinking_delta", "thinking": delta.reasoning_content}))
            if delta.HasField("content") and delta.content:
                out += self._text(delta.content)
            for call in delta.tool_calls:
                if call.id:  # a call's first fragment
                    block = {"type": "tool_use", "id": tool_use_id(call.id), "name": call.function.name, "input": {}}
                    out += self._open("tool_use", block, new=True)
                if call.function.arguments:
                    out.append(self._delta({"type": "input_json_delta", "partial_json": call.function.arguments}))
            if choice.finish_reason:
                self._finish = choice.finish_reason
        if message.HasField("usage"):
            self._usage = message.usage
        return b"".join(out) or None

    def failure(self, error: BridgeError) -> bytes:
        self._failed = True
        return named_event("error", error_body(error))

    def end(self) -> bytes:
        if self._failed:
            return b""
        out = [] if self._started else self._start("chatcmpl-" + "0" * 24, self._model)
        stop_reason, stop_sequence = STOP_REASONS[self._finish], None
        if self._finish == common_pb2.FINISH_REASON_STOP and (stop_sequence := stop_matched(self._tail, self._stops)):
            stop_reason, self._tail = "stop_sequence", self._tail.removesuffix(stop_sequence)
        out += self._flush()
        out += self._close()
        counted = usage(self._usage) if self._usage is not None else {"output_tokens": 0}
        out.append(named_event("message_delta", {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
            "usage": counted,
        }))  # fmt: skip
        out.append(named_event("message_stop", {"type": "message_stop"}))
        return b"".join(out)

    # ---- blocks ----

    def _start(self, chat_id: str, model: str) -> list[bytes]:
        """message_start (usage comes with message_delta: the chat stream counts the prompt at its end), a ping."""
        self._started = True
        message: dict[str, Any] = {
            "id": message_id(chat_id), "type": "message", "role": "assistant", "model": model or self._model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }  # fmt: skip
        return [named_event("message_start", {"type": "message_start", "message": message}), PING]

    def _open(self, kind: str, block: dict[str, Any], *, new: bool = False) -> list[bytes]:
        """Open a block of ``kind`` unless one is open (``new``: always), closing the open one."""
        if self._block == kind and not new:
            return []
        out = self._flush() + self._close()
        self._block, self._index = kind, self._index + 1
        out.append(named_event("content_block_start", {"type": "content_block_start", "index": self._index,
                                                       "content_block": block}))  # fmt: skip
        return out

    def _close(self) -> list[bytes]:
        if self._block is None:
            return []
        out = []
        if self._block == "thinking":  # a signature closes a thinking block; there is none to give here
            out.append(self._delta({"type": "signature_delta", "signature": ""}))
        self._block = None
        out.append(named_event("content_block_stop", {"type": "content_block_stop", "index": self._index}))
        return out

    def _delta(self, delta: dict[str, Any]) -> bytes:
        return named_event("content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta})

    def _text(self, text: str) -> list[bytes]:
        """Text, less the characters held back for a stop sequence that may be ending."""
        out = self._open("text", {"type": "text", "text": ""})
        self._tail += text
        if len(self._tail) > self._hold:
            cut = len(self._tail) - self._hold
            sent, self._tail = self._tail[:cut], self._tail[cut:]
            out.append(self._delta({"type": "text_delta", "text": sent}))
        return out

    def _flush(self) -> list[bytes]:
        """The text held back, sent: what follows it is not text, or the stream ended."""
        if not self._tail:  # (text is held only while its block is open: _open and end flush before closing)
            return []
        sent, self._tail = self._tail, ""
        return [self._delta({"type": "text_delta", "text": sent})]
