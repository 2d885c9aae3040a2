"""Envoy's gRPC-JSON transcoder (deploy/envoy/envoy.yaml) in front of a replica's gRPC port, routed by the
contract's google.api.http annotations from the descriptor set ``ovserve descriptor-set`` writes: JSON in and
out over HTTP/1.1, server streams as server-sent events, gRPC errors as google.rpc.Status JSON with details."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from google.api import annotations_pb2
from google.protobuf import descriptor_pb2

from ovserve.clients import OvserveClient
from ovserve.clients.descriptors import descriptor_set, service_names
from tests.rest_bridge.envoy_proxy import envoy, recipe, transcoder
from tests.rest_bridge.replicas import replica

CHAT = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 12, "temperature": 0}


def call(port: int, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of one HTTP/1.1 request to Envoy."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", data, {"Content-Type": "application/json"}, method=method
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, OvserveClient]]:
    """(Envoy's port, a gRPC client straight to the replica)."""
    with ExitStack() as stack:
        _, grpc_port, _ = stack.enter_context(replica())
        port = stack.enter_context(envoy([grpc_port], tmp_path_factory.mktemp("envoy")))
        yield port, stack.enter_context(OvserveClient(f"127.0.0.1:{grpc_port}", timeout=30))


def test_the_descriptor_set_carries_every_service_and_its_http_rules() -> None:
    files = descriptor_pb2.FileDescriptorSet.FromString(descriptor_set())
    names = [file.name for file in files.file]
    for file in files.file:  # every import comes before the file that needs it
        assert all(names.index(dependency) < names.index(file.name) for dependency in file.dependency)
    services = [service for file in files.file if file.package == "ovserve.v1" for service in file.service]
    assert sorted(f"ovserve.v1.{service.name}" for service in services) == service_names()
    for method in (method for service in services for method in service.method):
        assert method.options.HasExtension(annotations_pb2.http), f"{method.name} has no google.api.http rule"
    assert {"google/rpc/status.proto", "google/rpc/error_details.proto"} <= set(names)


def test_the_recipe_transcodes_every_service_of_the_contract() -> None:
    assert sorted(transcoder(recipe())["services"]) == service_names()


def test_unary_json_matches_the_grpc_answer(served: tuple[int, OvserveClient]) -> None:
    port, client = served
    status, kind, body = call(port, "POST", "/v3/chat/completions", CHAT)
    assert (status, kind) == (200, "application/json"), body
    answer = json.loads(body)
    direct = client.chat("tiny-chat", CHAT["messages"], max_tokens=12, temperature=0)
    assert answer["object"] == "chat.completion" and answer["usage"]["completion_tokens"] > 0
    assert answer["choices"][0]["message"]["content"] == direct.choices[0].message.content


def test_a_server_stream_arrives_as_server_sent_events(served: tuple[int, OvserveClient]) -> None:
    port, client = served
    status, kind, body = call(port, "POST", "/v3/chat/completions:stream", CHAT)
    assert (status, kind) == (200, "text/event-stream"), body
    events = [json.loads(line[len(b"data: ") :]) for line in body.split(b"\n\n") if line.startswith(b"data: ")]
    # (under load the server merges chunks for a slow reader: how many events come is not fixed)
    assert events and {event["object"] for event in events} == {"chat.completion.chunk"}
    text = "".join(event["choices"][0]["delta"].get("content", "") for event in events if event["choices"])
    assert text == client.chat("tiny-chat", CHAT["messages"], max_tokens=12, temperature=0).choices[0].message.content


def test_models_route_by_the_get_annotation(served: tuple[int, OvserveClient]) -> None:
    status, _, body = call(served[0], "GET", "/v3/models")
    assert status == 200 and "tiny-chat" in [model["id"] for model in json.loads(body)["data"]]
    status, _, body = call(served[0], "GET", "/v3/models/tiny-chat")
    assert status == 200 and json.loads(body)["model"]["id"] == "tiny-chat"  # GetModelResponse.model


def test_errors_become_http_statuses_with_their_details(served: tuple[int, OvserveClient]) -> None:
    port, _ = served
    status, _, body = call(port, "POST", "/v3/chat/completions", {**CHAT, "messages": []})
    error = json.loads(body)
    assert status == 400 and error["code"] == 3  # INVALID_ARGUMENT
    [bad_request] = [d for d in error["details"] if d["@type"].endswith("google.rpc.BadRequest")]
    assert bad_request["field_violations"][0]["field"] == "messages"
    status, _, body = call(port, "POST", "/v3/chat/completions", {**CHAT, "model": "absent"})
    assert status == 404 and json.loads(body)["code"] == 5  # NOT_FOUND
