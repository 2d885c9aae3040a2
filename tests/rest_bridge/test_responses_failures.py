"""Responses streams that fail after they began, and metadata: a scripted ResponseService behind the bridge.

The real engine cannot be made to fail mid-stream on demand; as in test_backend_failures, a small
grpc.aio servicer stands in, and only the bridge's HTTP side is under test here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import grpc
import openai
import pydantic
import pytest
from openai.types.responses import ResponseStreamEvent

from ovserve.clients.v1 import response_events_pb2, response_object_pb2, response_pb2, response_pb2_grpc
from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.server import Bridge
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import http_request

EVENT = pydantic.TypeAdapter(ResponseStreamEvent)
ev = response_events_pb2


def snapshot(status: int) -> response_object_pb2.Response:
    return response_object_pb2.Response(id="resp_s", object="response", created_at=1, model="scripted", status=status)


class ScriptedResponses(response_pb2_grpc.ResponseServiceServicer):
    """Acts on ``input``: "fail-midway", "cut" (ends without a closing event), "slow"; records metadata."""

    def __init__(self) -> None:
        self.metadata: list[dict[str, str]] = []

    async def CreateResponse(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.metadata.append(dict(context.invocation_metadata() or ()))
        if request.input == "slow":
            await asyncio.sleep(30)
        return response_pb2.CreateResponseResponse(response=snapshot(response_object_pb2.RESPONSE_STATUS_COMPLETED))

    async def StreamResponse(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        self.metadata.append(dict(context.invocation_metadata() or ()))
        in_progress = snapshot(response_object_pb2.RESPONSE_STATUS_IN_PROGRESS)
        item = response_object_pb2.OutputItem()
        item.message.id, item.message.role, item.message.status = "msg_s", 4, 1
        script = [
            ev.ResponseStreamEvent(created=ev.ResponseCreatedEvent(response=in_progress)),
            ev.ResponseStreamEvent(in_progress=ev.ResponseInProgressEvent(response=in_progress)),
            ev.ResponseStreamEvent(output_item_added=ev.ResponseOutputItemAddedEvent(item=item)),
        ]
        for number, event in enumerate(script):
            event.sequence_number = number
            yield response_pb2.StreamResponseResponse(event=event)
        if request.input == "fail-midway":
            await context.abort(grpc.StatusCode.INTERNAL, "the engine failed")


class Scripted:
    """The scripted ResponseService and a bridge (deadline 1 s) in front of it, on the session server's loop."""

    def __init__(self) -> None:
        self.responses = ScriptedResponses()

    async def start(self) -> int:
        self.grpc = grpc.aio.server()
        response_pb2_grpc.add_ResponseServiceServicer_to_server(self.responses, self.grpc)
        port = self.grpc.add_insecure_port("127.0.0.1:0")
        await self.grpc.start()
        self.bridge = Bridge(f"127.0.0.1:{port}", "127.0.0.1", 0, BridgeSettings(deadline_seconds=1.0))
        return await self.bridge.start()

    async def stop(self) -> None:
        await self.bridge.stop()
        await self.grpc.stop(0)


@pytest.fixture(scope="module")
def scripted(server: ServerThread) -> Iterator[tuple[Scripted, int]]:
    backend = Scripted()
    port = server.run(backend.start())
    yield backend, port
    server.run(backend.stop())


def sse_events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in body.decode().split("\n\n")[:-1]:
        name, data = block.split("\n")
        out.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return out


@pytest.mark.parametrize(
    ("script", "message", "code"),
    [
        ("fail-midway", "the engine failed", "server_error"),
        ("cut", "the response stream ended before its final event", "server_error"),
    ],
)
def test_a_stream_that_breaks_ends_with_failed_then_error(scripted, script: str, message: str, code: str) -> None:
    _, port = scripted
    body = {"model": "scripted", "input": script, "stream": True}
    reply = http_request(port, "POST", "/v3/responses", body)
    assert reply.status == 200
    events = sse_events(reply.body)
    assert [name for name, _ in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.failed", "error",
    ]  # fmt: skip
    assert [payload["sequence_number"] for _, payload in events] == [0, 1, 2, 3, 4]
    for name, payload in events:
        assert EVENT.validate_python(payload).type == name == payload["type"]
    failed = events[3][1]["response"]
    assert failed["status"] == "failed" and failed["error"] == {"code": code, "message": message}
    assert failed["id"] == "resp_s"
    assert events[4][1] == {"type": "error", "sequence_number": 4, "code": code, "message": message, "param": None}


def test_openai_client_sees_the_closing_events(scripted) -> None:
    _, port = scripted
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v3", api_key="k", max_retries=0) as client:
        events = list(client.responses.create(model="scripted", input="fail-midway", stream=True))
    assert [event.type for event in events][-2:] == ["response.failed", "error"]


def test_deadline_and_metadata(scripted) -> None:
    backend, port = scripted
    reply = http_request(port, "POST", "/v3/responses", {"model": "scripted", "input": "slow"})
    assert reply.status == 504 and reply.json()["error"]["type"] == "timeout_error"
    headers = {"Authorization": "Bearer sk-2", "X-Request-Id": "req-r"}
    assert http_request(port, "POST", "/v3/responses", {"model": "scripted", "input": "hi"}, headers).status == 200
    assert (
        http_request(port, "POST", "/v3/responses", {"model": "scripted", "input": "hi", "stream": True}).status == 200
    )
    with_headers, streamed = backend.responses.metadata[-2:]
    assert with_headers["authorization"] == "Bearer sk-2" and with_headers["x-request-id"] == "req-r"
    assert "authorization" not in streamed and len(streamed["x-request-id"]) == 32


def test_unserved_rpc_is_501(scripted) -> None:
    _, port = scripted
    reply = http_request(port, "GET", "/v3/responses/resp_s")
    assert reply.status == 501 and reply.json()["error"]["type"] == "not_implemented_error"
