"""CORS, end to end: off by default; with --cors-origin, preflights and answers carry what browsers check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rest_bridge.config import BridgeSettings
from rest_bridge.server import Bridge
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import RunningBridge, http_request

CHAT = "/v3/chat/completions"
PAGE = "http://localhost:3000"
BODY = {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
PREFLIGHT = {
    "Origin": PAGE,
    "Access-Control-Request-Method": "POST",
    "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os, x-stainless-retry-count",
}


@pytest.fixture(scope="module")
def cors_bridge(server: ServerThread) -> Iterator[int]:
    """A bridge allowing one origin."""
    bridge = Bridge(server.target, "127.0.0.1", 0, BridgeSettings(cors_origins=(PAGE,)))
    port = server.run(bridge.start())
    yield port
    server.run(bridge.stop())


def test_without_cors_origins_there_are_no_cors_headers(bridge: RunningBridge) -> None:
    assert http_request(bridge.port, "OPTIONS", CHAT, None, PREFLIGHT).status == 405
    reply = http_request(bridge.port, "POST", CHAT, BODY, {"Origin": PAGE})
    assert reply.status == 200 and "Access-Control-Allow-Origin" not in reply.headers


@pytest.mark.parametrize("path", [CHAT, "/v3/completions", "/v3/responses", "/v3/models", "/v1/models/tiny-chat"])
def test_a_preflight_from_an_allowed_origin_is_answered(cors_bridge: int, path: str) -> None:
    reply = http_request(cors_bridge, "OPTIONS", path, None, PREFLIGHT)
    assert reply.status == 204
    assert reply.headers["Access-Control-Allow-Origin"] == PAGE
    assert "POST" in reply.headers["Access-Control-Allow-Methods"]
    assert reply.headers["Access-Control-Allow-Headers"] == PREFLIGHT["Access-Control-Request-Headers"]
    assert reply.headers["Vary"] == "Origin"


def test_answers_and_errors_carry_the_origin_for_allowed_pages_only(cors_bridge: int) -> None:
    ok = http_request(cors_bridge, "POST", CHAT, BODY, {"Origin": PAGE})
    assert ok.status == 200 and ok.headers["Access-Control-Allow-Origin"] == PAGE
    assert "x-request-id" in ok.headers["Access-Control-Expose-Headers"]
    streamed = http_request(cors_bridge, "POST", CHAT, {**BODY, "stream": True}, {"Origin": PAGE})
    assert streamed.status == 200 and streamed.headers["Access-Control-Allow-Origin"] == PAGE
    error = http_request(cors_bridge, "POST", CHAT, {**BODY, "top_p": 5}, {"Origin": PAGE})
    assert error.status == 400 and error.headers["Access-Control-Allow-Origin"] == PAGE  # the page can read why
    other = http_request(cors_bridge, "POST", CHAT, BODY, {"Origin": "http://evil.example"})
    assert other.status == 200 and "Access-Control-Allow-Origin" not in other.headers
    refused = http_request(cors_bridge, "OPTIONS", CHAT, None, {**PREFLIGHT, "Origin": "http://evil.example"})
    assert refused.status == 403 and "Access-Control-Allow-Origin" not in refused.headers


def test_origin_rules_and_requested_headers() -> None:
    from rest_bridge import cors

    assert cors.allowed_origin(PAGE, ()) is None
    assert cors.allowed_origin(PAGE, ("*",)) == "*"
    assert cors.allowed_origin("http://other", (PAGE,)) is None and cors.allowed_origin(None, (PAGE,)) is None
    assert cors.preflight_headers("x-a, x-b")["Access-Control-Allow-Headers"] == "x-a, x-b"
    for odd in ("x-a\r\nSet-Cookie: 1", "x" * 5000, None):  # never echoed: the safe pair instead
        assert cors.preflight_headers(odd)["Access-Control-Allow-Headers"] == "Authorization, Content-Type"
