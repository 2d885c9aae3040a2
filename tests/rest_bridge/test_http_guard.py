"""Refusals at the HTTP edge, end to end: header limits and malformed framing in OpenAI's envelope,
the API key before the body, and Retry-After on 429 / 503.

Raw sockets where http.client would not send what is tested (two framings, a
100 KB header line); the real service behind the bridge.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from tornado import httputil

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.rest_bridge.http_guard import HeaderLimits, header_problem
from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import parse

CHAT = "/v3/chat/completions"
HI = [{"role": "user", "content": "hi"}]
TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
KEY = "guard-key"


def raw_exchange(port: int, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as is; the status, headers and body of the answer (read until the server closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in lines)}
    return int(status_line.split()[1]), headers, body


def post(path: str, headers: str, body: bytes = b"") -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n".encode() + body


def assert_envelope(body: bytes, words: str) -> None:
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"} and words in error["message"], error


BODY = json.dumps({"model": "tiny-chat", "messages": HI, "max_tokens": 2}).encode()
FRAMINGS = {
    "content-length-not-a-number": ("Content-Type: application/json\r\nContent-Length: 12x\r\n", b"{}", 400,
                                    "Content-Length"),
    "two-different-lengths": ("Content-Length: 2\r\nContent-Length: 3\r\n", b"{}", 400, "Content-Length"),
    "length-and-chunked": ("Content-Length: 2\r\nTransfer-Encoding: chunked\r\n", b"{}", 400, "both"),
    "unknown-coding": ("Transfer-Encoding: gzip\r\n", b"{}", 400, "Transfer-Encoding"),
    "100-kb-header": (f"X-Big: {'a' * 100_000}\r\nContent-Length: {len(BODY)}\r\n", BODY, 431, "headers"),
    "60-kb-authorization": (f"Authorization: Bearer {'k' * 60_000}\r\nContent-Length: {len(BODY)}\r\n", BODY, 431,
                            "Authorization"),
}  # fmt: skip


@pytest.mark.parametrize(("headers", "body", "status", "words"), FRAMINGS.values(), ids=FRAMINGS)
def test_requests_tornado_would_drop_get_an_envelope(
    bridge: RunningBridge, headers: str, body: bytes, status: int, words: str
) -> None:
    got, reply_headers, reply = raw_exchange(bridge.port, post(CHAT, headers, body))
    assert got == status
    assert reply_headers["content-type"] == "application/json" and reply_headers["connection"] == "close"
    assert_envelope(reply, words)
    assert http_request(bridge.port, "GET", "/health").status == 200  # and the bridge goes on


def test_a_good_request_with_large_but_acceptable_headers_is_served(bridge: RunningBridge) -> None:
    reply = http_request(bridge.port, "POST", CHAT, json.loads(BODY), {"X-Trace": "t" * 20_000})
    assert reply.status == 200, reply.body


def test_the_header_checks_in_isolation() -> None:
    limits = HeaderLimits(total_bytes=100, forwarded=(("Authorization", 10),))
    assert header_problem(httputil.HTTPHeaders({"Content-Length": "5"}), limits) is None
    assert header_problem(httputil.HTTPHeaders({"Transfer-Encoding": "Chunked"}), limits) is None
    assert header_problem(httputil.HTTPHeaders({"X": "y" * 100}), limits)[0] == 431  # type: ignore[index]
    assert header_problem(httputil.HTTPHeaders({"Authorization": "Bearer 12345"}), limits)[0] == 431  # type: ignore[index]
    assert header_problem(httputil.HTTPHeaders({"Content-Length": "-1"}), limits)[0] == 400  # type: ignore[index]


@pytest.fixture(scope="module")
def keyed_bridge() -> Iterator[tuple[ServerThread, int]]:
    """A server that requires an API key, with a concurrency bound of 1, and a bridge in front of it."""
    running = start_server(TINY, api_keys=(KEY,), max_concurrent_requests=1)
    bridge = Bridge(running.target, "127.0.0.1", 0)
    port = running.run(bridge.start())
    yield running, port
    running.run(bridge.stop())
    running.stop()


BAD_BODIES: dict[str, tuple[bytes, dict[str, str]]] = {
    "not-json": (b"{nope", {"Content-Type": "application/json"}),
    "unknown-field": (json.dumps({"model": "tiny-chat", "messages": HI, "frobnicate": 1}).encode(),
                      {"Content-Type": "application/json"}),
    "wrong-content-type": (b"{}", {"Content-Type": "text/plain"}),
    "too-deep": (json.dumps({"model": "tiny-chat", "messages": HI, "chat_template_kwargs": json.loads(
        '{"a":' * 40 + "1" + "}" * 40)}).encode(), {"Content-Type": "application/json"}),
}  # fmt: skip


@pytest.mark.parametrize(("body", "headers"), BAD_BODIES.values(), ids=BAD_BODIES)
@pytest.mark.parametrize("path", [CHAT, "/v3/completions", "/v3/responses"])
def test_the_key_is_checked_before_the_body(keyed_bridge, path: str, body: bytes, headers: dict[str, Any]) -> None:
    _, port = keyed_bridge
    for authorization, status in [(None, 401), ("Bearer wrong", 401), (f"Bearer {KEY}", None)]:
        sent = dict(headers, **({"Authorization": authorization} if authorization else {}))
        reply = http_request(port, "POST", path, body, sent)
        if status is None:
            assert reply.status in (400, 415), reply.body  # the key is good: the body's own refusal
        else:
            assert reply.status == status, (authorization, reply.body)
            assert json.loads(reply.body)["error"]["type"] == "authentication_error"


@pytest.mark.parametrize(("method", "path"), [("POST", CHAT), ("POST", "/v3/responses"), ("GET", "/v3/models")])
def test_a_key_grpc_metadata_cannot_carry_is_a_wrong_key(keyed_bridge, method: str, path: str) -> None:
    """A key with characters beyond printable ASCII cannot travel as gRPC metadata (it failed the call with a
    500): it gets the 401 any wrong key gets, on every route."""
    _, port = keyed_bridge
    body = {"model": "tiny-chat", "messages": HI} if method == "POST" else None
    for key in ("k\u00e9y", "\u00ff" * 8):  # what http.client can send: Latin-1 beyond ASCII
        reply = http_request(port, method, path, body, {"Authorization": f"Bearer {key}"})
        assert reply.status == 401, (key, reply.body)
        assert json.loads(reply.body)["error"]["type"] == "authentication_error"


def test_a_refusal_for_load_carries_retry_after(keyed_bridge) -> None:
    running, port = keyed_bridge
    metadata = (("authorization", f"Bearer {KEY}"),)
    long = {"model": "tiny-chat", "messages": HI, "max_tokens": 2000, "ignore_eos": True}
    with grpc.insecure_channel(running.target) as channel:
        stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
            parse(chat_pb2.StreamChatCompletionRequest, long), metadata=metadata
        )
        next(stream)  # holds the only place
        try:
            reply = http_request(port, "POST", CHAT, {"model": "tiny-chat", "messages": HI, "max_tokens": 2},
                                 {"Authorization": f"Bearer {KEY}"})  # fmt: skip
        finally:
            stream.cancel()
    assert reply.status == 429, reply.body
    assert reply.headers["Retry-After"] == "1"  # the service's RetryInfo (1 s), in whole seconds
    assert json.loads(reply.body)["error"]["code"] == "rate_limit_exceeded"
