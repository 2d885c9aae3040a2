"""What the bridge does with failures the real service rarely produces: a scripted gRPC backend.

The real engine cannot be made to fail mid-stream, time out or refuse
credentials on demand, so these tests put a small grpc.aio servicer behind
the bridge. They test the bridge's HTTP side only (status table, error events,
metadata, deadlines); everything else runs against the real service.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import openai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.server import Bridge
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import http_request

CHAT = "/v3/chat/completions"


class ScriptedChat(chat_pb2_grpc.ChatServiceServicer):
    """Acts on the user message: "fail-midway", "slow", "auth", "busy"; records each call's metadata."""

    def __init__(self) -> None:
        self.metadata: list[dict[str, str]] = []

    def _record(self, context: grpc.aio.ServicerContext) -> None:
        self.metadata.append({key: value for key, value in context.invocation_metadata() or ()})

    async def CreateChatCompletion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._record(context)
        script = request.messages[0].content
        if script == "slow":
            await asyncio.sleep(30)
        if script == "auth":
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "bad key")
        if script == "busy":
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, "queue full")
        response = chat_pb2.CreateChatCompletionResponse(id="chatcmpl-x", object="chat.completion", created=1,
                                                         model="scripted")  # fmt: skip
        choice = response.choices.add(index=0, finish_reason=common_pb2.FINISH_REASON_TOOL_CALLS)
        choice.message.role = common_pb2.ROLE_ASSISTANT
        choice.message.tool_calls.add(id="call_1", type="function").function.name = "get_weather"
        return response

    async def StreamChatCompletion(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self._record(context)
        chunk = chat_pb2.StreamChatCompletionResponse(id="chatcmpl-y", object="chat.completion.chunk", created=1,
                                                      model="scripted")  # fmt: skip
        chunk.choices.add(index=0, delta=chat_pb2.ChatCompletionDelta(role=common_pb2.ROLE_ASSISTANT, content=""))
        yield chunk
        await context.abort(grpc.StatusCode.INTERNAL, "the engine failed")


class Scripted:
    """The scripted backend and a bridge in front of it, both on the session server's loop."""

    def __init__(self, loop_owner: ServerThread, settings: BridgeSettings) -> None:
        self.owner = loop_owner
        self.chat = ScriptedChat()
        self.settings = settings

    async def start(self) -> int:
        self.grpc = grpc.aio.server()
        chat_pb2_grpc.add_ChatServiceServicer_to_server(self.chat, self.grpc)
        port = self.grpc.add_insecure_port("127.0.0.1:0")
        await self.grpc.start()
        self.bridge = Bridge(f"127.0.0.1:{port}", "127.0.0.1", 0, self.settings)
        return await self.bridge.start()

    async def stop(self) -> None:
        await self.bridge.stop()
        await self.grpc.stop(0)


@pytest.fixture(scope="module")
def scripted(server: ServerThread) -> Iterator[tuple[Scripted, int]]:
    """A bridge (deadline 1 s) in front of ScriptedChat; yields it and the REST port."""
    backend = Scripted(server, BridgeSettings(deadline_seconds=1.0))
    port = server.run(backend.start())
    yield backend, port
    server.run(backend.stop())


def say(script: str, **fields: Any) -> dict[str, Any]:
    """A chat body whose user message is the script."""
    return {"model": "scripted", "messages": [{"role": "user", "content": script}], **fields}


def test_error_after_the_stream_began_is_an_error_event_then_done(scripted) -> None:
    _, port = scripted
    reply = http_request(port, "POST", CHAT, say("hi", stream=True))
    assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/event-stream")
    events = reply.events()
    assert json.loads(events[0])["choices"][0]["delta"]["role"] == "assistant"
    error = json.loads(events[1])
    assert error == {"error": {"message": "the engine failed", "type": "server_error", "param": None, "code": None}}
    assert events[2:] == ["[DONE]"]


def test_openai_client_raises_on_the_error_event(scripted) -> None:
    _, port = scripted
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v3", api_key="k", max_retries=0) as client:
        stream = client.chat.completions.create(model="scripted", messages=say("hi")["messages"], stream=True)
        with pytest.raises(openai.APIError, match="the engine failed"):
            list(stream)


@pytest.mark.parametrize(
    ("script", "status", "error_type", "code"),
    [("auth", 401, "authentication_error", None), ("busy", 429, "rate_limit_error", "rate_limit_exceeded"),
     ("slow", 504, "timeout_error", None)],
)  # fmt: skip
def test_grpc_codes_become_http_statuses(scripted, script: str, status: int, error_type: str, code: str) -> None:
    _, port = scripted
    reply = http_request(port, "POST", CHAT, say(script))
    assert reply.status == status
    error = reply.json()["error"]
    assert (error["type"], error["code"]) == (error_type, code)


def test_tool_call_reply_has_null_content_and_tool_calls(scripted) -> None:
    _, port = scripted
    message = http_request(port, "POST", CHAT, say("tools")).json()["choices"][0]
    assert message["finish_reason"] == "tool_calls"
    assert message["message"]["content"] is None
    assert message["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
    ]


def test_authorization_and_request_id_are_forwarded_as_metadata(scripted) -> None:
    backend, port = scripted
    http_request(port, "POST", CHAT, say("hi"), {"Authorization": "Bearer sk-1", "X-Request-Id": "req-9"})
    http_request(port, "POST", CHAT, say("hi"))
    with_headers, without = backend.chat.metadata[-2:]
    assert with_headers["authorization"] == "Bearer sk-1" and with_headers["x-request-id"] == "req-9"
    assert "authorization" not in without and len(without["x-request-id"]) == 32


def test_missing_service_is_501(scripted) -> None:
    """The scripted backend serves no CompletionService: UNIMPLEMENTED maps to 501."""
    _, port = scripted
    reply = http_request(port, "POST", "/v3/completions", {"model": "scripted", "prompt": "x"})
    assert reply.status == 501 and reply.json()["error"]["type"] == "not_implemented_error"
