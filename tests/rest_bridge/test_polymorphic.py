"""Every polymorphic field of ``ovserve.clients.polymorphic`` through the real bridge, both ways.

Over HTTP, to a recording gRPC backend: each OpenAI form reaches the service
in the right proto field (the simple form under the OpenAI name, the other in
the typed alternative), and when the service refuses a path inside the typed
alternative (``stop_sequences[1]``) the client gets OpenAI's name back as
``param`` (``stop``) and in the message (``stop[1]``). The expected names are
written out here, not computed with the table under test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message

from ovserve.clients.polymorphic import BY_PROTO_NAME
from ovserve.clients.v1 import chat_pb2_grpc, completion_pb2_grpc, embedding_pb2_grpc, response_pb2_grpc
from ovserve.rest_bridge.server import Bridge
from ovserve.service.errors import InvalidArgument, to_rpc_status
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import http_request

USER = [{"role": "user", "content": "hi"}]


class RecordingBackend(
    chat_pb2_grpc.ChatServiceServicer,
    completion_pb2_grpc.CompletionServiceServicer,
    response_pb2_grpc.ResponseServiceServicer,
    embedding_pb2_grpc.EmbeddingServiceServicer,
):
    """Records each unary request, then refuses it naming ``refuse`` (a proto path) as the real service would."""

    def __init__(self) -> None:
        self.requests: list[Message] = []
        self.refuse = "model"

    async def _refuse(self, request: Message, context: grpc.aio.ServicerContext) -> Any:
        self.requests.append(request)
        status = to_rpc_status(InvalidArgument.of(self.refuse, "refused by the recording backend"))
        await context.abort(status.code, status.details, status.trailing_metadata)

    CreateChatCompletion = CreateCompletion = CreateResponse = CreateEmbedding = _refuse


class Recorded:
    """The recording backend and a bridge in front of it, on the session server's loop."""

    def __init__(self) -> None:
        self.backend = RecordingBackend()

    async def start(self) -> int:
        self.grpc = grpc.aio.server()
        chat_pb2_grpc.add_ChatServiceServicer_to_server(self.backend, self.grpc)
        completion_pb2_grpc.add_CompletionServiceServicer_to_server(self.backend, self.grpc)
        response_pb2_grpc.add_ResponseServiceServicer_to_server(self.backend, self.grpc)
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(self.backend, self.grpc)
        port = self.grpc.add_insecure_port("127.0.0.1:0")
        await self.grpc.start()
        self.bridge = Bridge(f"127.0.0.1:{port}", "127.0.0.1", 0)
        return await self.bridge.start()

    async def stop(self) -> None:
        await self.bridge.stop()
        await self.grpc.stop(0)


@pytest.fixture(scope="module")
def recorded(server: ServerThread) -> Iterator[tuple[RecordingBackend, int]]:
    """The recording backend and the REST port of the bridge in front of it."""
    running = Recorded()
    port = server.run(running.start())
    yield running.backend, port
    server.run(running.stop())


@dataclass(frozen=True)
class Case:
    """One polymorphic field: where it goes in a request, its two forms, and an error inside the typed one."""

    route: str
    body: Callable[[Any], dict[str, Any]]  # the request body with the field's value in place
    simple: Any  # the string form, and where the service finds it
    read_simple: Callable[[Any], Any]
    typed: Any  # the other form, and what the service finds in the typed alternative
    read_typed: Callable[[Any], Any]
    expected_typed: Any
    refused_path: str  # a proto path inside the typed alternative the service refuses...
    param: str  # ...the param the OpenAI client gets...
    text: str  # ...and the path its message names


CASES: dict[str, Case] = {
    "stop_sequences": Case(
        "/v3/chat/completions", lambda value: {"model": "m", "messages": USER, "stop": value},
        "END", lambda r: r.stop,
        ["a", "b"], lambda r: list(r.stop_sequences), ["a", "b"],
        "stop_sequences[1]", "stop", "stop[1]",
    ),
    "prompts": Case(
        "/v3/completions", lambda value: {"model": "m", "prompt": value},
        "Once", lambda r: r.prompt,
        [[1, 2], [3]], lambda r: [list(p.token_ids.ids) for p in r.prompts], [[1, 2], [3]],
        "prompts[1].token_ids.ids[0]", "prompt", "prompt[1][0]",
    ),
    "input_prompts": Case(
        "/v3/embeddings", lambda value: {"model": "m", "input": value},
        "Once", lambda r: r.input,
        ["a", "b"], lambda r: [p.text for p in r.input_prompts], ["a", "b"],
        "input_prompts[1].text", "input", "input[1]",
    ),
    "content_parts": Case(
        "/v3/chat/completions", lambda value: {"model": "m", "messages": [{"role": "user", "content": value}]},
        "hi", lambda r: r.messages[0].content,
        [{"type": "text", "text": "hi"}], lambda r: [(p.type, p.text) for p in r.messages[0].content_parts],
        [("text", "hi")],
        "messages[0].content_parts[0].text", "messages[0].content[0].text", "messages[0].content[0].text",
    ),
    "input_items": Case(
        "/v3/responses", lambda value: {"model": "m", "input": value},
        "hi", lambda r: r.input,
        [{"role": "user", "content": "hi"}], lambda r: [(i.type, i.role, i.content) for i in r.input_items],
        [("message", "user", "hi")],
        "input_items[0].content", "input[0].content", "input[0].content",
    ),
    "output_parts": Case(
        "/v3/responses",
        lambda value: {"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": value}]},
        "42", lambda r: r.input_items[0].output,
        [{"type": "input_text", "text": "7"}], lambda r: [p.text for p in r.input_items[0].output_parts], ["7"],
        "input_items[0].output_parts[0].text", "input[0].output[0].text", "input[0].output[0].text",
    ),
    "named_tool_choice": Case(
        "/v3/chat/completions", lambda value: {"model": "m", "messages": USER, "tool_choice": value},
        "auto", lambda r: r.tool_choice,
        {"type": "function", "function": {"name": "f"}}, lambda r: r.named_tool_choice.function.name, "f",
        "named_tool_choice.function.name", "tool_choice", "tool_choice.function.name",
    ),
}  # fmt: skip


def test_every_field_of_the_table_has_a_case() -> None:
    assert set(CASES) == set(BY_PROTO_NAME)


def _send(recorded: tuple[RecordingBackend, int], case: Case, value: Any) -> tuple[Message, dict[str, Any]]:
    """POST the case's body with ``value``; the request the service received, and the error the client got."""
    backend, port = recorded
    before = len(backend.requests)
    reply = http_request(port, "POST", case.route, case.body(value))
    assert reply.status == 400, reply.body
    assert len(backend.requests) == before + 1, "the bridge refused the request itself"
    return backend.requests[-1], reply.json()["error"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_both_forms_reach_the_service_in_their_own_field(recorded, name: str) -> None:
    case = CASES[name]
    recorded[0].refuse = "model"
    request, _ = _send(recorded, case, case.simple)
    assert case.read_simple(request) == case.simple
    assert not case.read_typed(request)  # the typed alternative stays empty
    request, _ = _send(recorded, case, case.typed)
    assert case.read_typed(request) == case.expected_typed
    assert case.read_simple(request) == ""  # the OpenAI name's string stays unset


@pytest.mark.parametrize("name", sorted(CASES))
def test_an_error_inside_the_typed_alternative_names_the_openai_field(recorded, name: str) -> None:
    case = CASES[name]
    recorded[0].refuse = case.refused_path
    _, error = _send(recorded, case, case.typed)
    assert error["param"] == case.param
    assert error["message"] == f"{case.text}: refused by the recording backend"
    assert error["type"] == "invalid_request_error"
