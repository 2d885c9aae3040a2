"""Clients that vanish mid-request: the bridge cancels their gRPC calls, the engine lets go, serving goes on."""

from __future__ import annotations

import gc
import json
import logging
import socket
import time
from typing import Any

import pytest

from tests.rest_bridge.conftest import RunningBridge, http_request

CHAT_STREAM = {
    "model": "tiny-chat", "messages": [{"role": "user", "content": "Tell me a story."}],
    "max_tokens": 1500, "ignore_eos": True, "temperature": 0, "stream": True,
}  # fmt: skip
COMPLETION_STREAM = {"model": "tiny-chat", "prompt": "Once", "max_tokens": 1500, "ignore_eos": True, "stream": True}


def send(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """A raw HTTP/1.1 connection that has sent one JSON POST."""
    payload = json.dumps(body).encode()
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    head += f"Content-Length: {len(payload)}\r\n\r\n"
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(head.encode() + payload)
    return sock


def open_stream(port: int, path: str, body: dict[str, Any]) -> socket.socket:
    """A streaming request whose first SSE event has arrived (so its generation is under way)."""
    sock = send(port, path, body)
    received = b""
    while b"\n\n" not in received.partition(b"\r\n\r\n")[2].partition(b"data: ")[2]:  # one whole event
        piece = sock.recv(65536)
        assert piece, received
        received += piece
    assert received.startswith(b"HTTP/1.1 200"), received
    return sock


def engine_stats(bridge: RunningBridge) -> Any:
    """The engine's current stats (see ovserve.service.engine.EngineStats)."""
    engine = next(iter(bridge.server.server.registry)).engine
    return bridge.server.run(engine.stats())


def wait_idle(bridge: RunningBridge) -> Any:
    """Poll the engine until it holds no request (or 10 s pass); return its last stats."""
    deadline = time.monotonic() + 10
    while not (stats := engine_stats(bridge)).idle and time.monotonic() < deadline:
        time.sleep(0.05)
    return stats


def test_twenty_dropped_streams_leave_the_engine_idle(bridge: RunningBridge) -> None:
    sockets = [open_stream(bridge.port, "/v3/chat/completions", CHAT_STREAM) for _ in range(20)]
    assert not engine_stats(bridge).idle  # they are generating (1500 tokens each)
    for sock in sockets:
        sock.close()
    stats = wait_idle(bridge)
    assert stats.idle, stats
    hi = {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    reply = http_request(bridge.port, "POST", "/v3/chat/completions", hi)
    assert reply.status == 200 and reply.json()["choices"]


def test_dropped_completion_streams_and_a_dropped_unary_call(bridge: RunningBridge) -> None:
    sockets = [open_stream(bridge.port, "/v3/completions", COMPLETION_STREAM) for _ in range(3)]
    for sock in sockets:
        sock.close()
    assert wait_idle(bridge).idle
    # A unary request whose client leaves before the answer: its call is cancelled too.
    sock = send(bridge.port, "/v3/completions", {**COMPLETION_STREAM, "stream": False})
    deadline = time.monotonic() + 10
    while engine_stats(bridge).idle and time.monotonic() < deadline:
        time.sleep(0.01)  # until the request is running
    sock.close()
    stats = wait_idle(bridge)
    assert stats.idle, stats


RESPONSE_STREAM = {"model": "tiny-chat", "input": "Tell me a story.", "max_output_tokens": 1500, "stream": True}


def test_a_disconnect_mid_stream_logs_nothing_above_debug(
    bridge: RunningBridge, caplog: pytest.LogCaptureFixture
) -> None:
    # A client leaving early is routine: it once logged "Failed to detach context" at ERROR with two
    # tracebacks (the call's tracing context, attached across a yield, detached from another context).
    streams = [("/v3/chat/completions", CHAT_STREAM), ("/v3/completions", COMPLETION_STREAM)]
    streams.append(("/v3/responses", RESPONSE_STREAM))
    with caplog.at_level(logging.INFO):
        for path, body in streams * 2:
            open_stream(bridge.port, path, {**body, "ignore_eos": True}).close()
        assert wait_idle(bridge).idle
        gc.collect()  # abandoned generators are finalised here at the latest
        time.sleep(0.2)
    loud = [f"{record.name}: {record.getMessage()}" for record in caplog.records if record.levelno >= logging.WARNING]
    assert not loud, loud
