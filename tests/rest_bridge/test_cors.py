"""CORS on the bridge: off by default; with --cors-origin, preflights and allow-origin headers for allowed origins."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from ovserve.rest_bridge.config import BridgeSettings, add_arguments, from_arguments
from ovserve.rest_bridge.server import Bridge
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import RunningBridge, http_request

PAGE = "https://chat.example"
CHAT = "/v3/chat/completions"
BODY = {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0}
STAINLESS = "authorization, content-type, x-stainless-os, x-stainless-retry-count"


@pytest.fixture(scope="module", params=[(PAGE,), ("*",)], ids=["listed", "any"])
def cors_bridge(request: pytest.FixtureRequest, server: ServerThread) -> Iterator[RunningBridge]:
    """A second bridge, with CORS on for one listed origin or for any origin."""
    running = Bridge(server.target, "127.0.0.1", 0, BridgeSettings(cors_origins=request.param))
    server.run(running.start())
    yield RunningBridge(running, server)
    server.run(running.stop())


def _preflight(port: int, origin: str) -> dict[str, str]:
    headers = {"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": STAINLESS}
    reply = http_request(port, "OPTIONS", CHAT, headers=headers)
    assert reply.status == 204 and reply.body == b""
    return dict(reply.headers)


def test_preflight_from_an_allowed_origin_echoes_the_requested_headers(cors_bridge: RunningBridge) -> None:
    headers = _preflight(cors_bridge.port, PAGE)
    expected = "*" if "*" in cors_bridge.bridge.settings.cors_origins else PAGE
    assert headers["Access-Control-Allow-Origin"] == expected
    assert "POST" in headers["Access-Control-Allow-Methods"] and "GET" in headers["Access-Control-Allow-Methods"]
    assert headers["Access-Control-Allow-Headers"] == STAINLESS


def test_normal_and_streamed_responses_carry_allow_origin(cors_bridge: RunningBridge) -> None:
    expected = "*" if "*" in cors_bridge.bridge.settings.cors_origins else PAGE
    for body in (BODY, {**BODY, "stream": True}):
        reply = http_request(cors_bridge.port, "POST", CHAT, body, headers={"Origin": PAGE})
        assert reply.status == 200
        assert reply.headers["Access-Control-Allow-Origin"] == expected
        assert "x-request-id" in reply.headers["Access-Control-Expose-Headers"]
    error = http_request(cors_bridge.port, "POST", CHAT, {**BODY, "top_p": 3}, headers={"Origin": PAGE})
    assert error.status == 400 and error.headers["Access-Control-Allow-Origin"] == expected  # the page reads it


def test_an_origin_not_listed_gets_no_cors_headers(cors_bridge: RunningBridge) -> None:
    headers = _preflight(cors_bridge.port, "https://evil.example")
    if "*" in cors_bridge.bridge.settings.cors_origins:  # any origin is allowed
        assert headers["Access-Control-Allow-Origin"] == "*"
        return
    assert not any(name.lower().startswith("access-control-") for name in headers)
    reply = http_request(cors_bridge.port, "POST", CHAT, BODY, headers={"Origin": "https://evil.example"})
    assert reply.status == 200 and "Access-Control-Allow-Origin" not in reply.headers


def test_a_header_list_that_is_not_one_is_not_echoed(cors_bridge: RunningBridge) -> None:
    headers = {"Origin": PAGE, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "a\tb;c"}
    reply = http_request(cors_bridge.port, "OPTIONS", CHAT, headers=headers)
    assert reply.status == 204 and reply.headers["Access-Control-Allow-Headers"].startswith("Authorization")


def test_cors_is_off_by_default(bridge: RunningBridge) -> None:
    preflight = {"Origin": PAGE, "Access-Control-Request-Method": "POST"}
    reply = http_request(bridge.port, "OPTIONS", CHAT, headers=preflight)
    assert reply.status == 405 and reply.json()["error"]["type"] == "invalid_request_error"
    assert "Access-Control-Allow-Origin" not in reply.headers
    plain = http_request(bridge.port, "POST", CHAT, BODY, headers={"Origin": PAGE})
    assert plain.status == 200 and "Access-Control-Allow-Origin" not in plain.headers


def test_cors_origin_flag_is_repeatable() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser, prefix="rest-")
    args = parser.parse_args(["--rest-cors-origin", PAGE, "--rest-cors-origin", "http://localhost:3000"])
    assert from_arguments(args, prefix="rest-").cors_origins == (PAGE, "http://localhost:3000")
    assert from_arguments(parser.parse_args([]), prefix="rest-").cors_origins == ()
