"""Request bodies that never arrive whole: abandoned mid-way, sent without a valid key, or trickled.

Each is let go of at once (its buffered chunks, its spool file, its descriptor, its handler), refused with 401
before it is read, or refused with 408 once it falls behind its pace. The bridge runs in this process (on the
server's event loop), so its descriptors and memory are this process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import logging
import os
import select
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import grpc
import pytest
import tornado.websocket

from ovserve.clients.defaults import MIB
from ovserve.rest_bridge.app import make_app
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import NotFoundHandler
from ovserve.rest_bridge.key_check import KeysSeen
from ovserve.rest_bridge.routes.health import ServerFigures
from tests.rest_bridge.conftest import GRACE, RunningBridge, http_request, served_with_bridge
from tests.rest_bridge.envoy_proxy import ENVOY, address
from tests.rest_bridge.replicas import free_port, stop
from tests.rest_bridge.test_conversations import KEYS, TINY

ROUNDS = 16
BOUNDARY = "b0undary"
FILE_PART = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.bin"\r\n'
    "Content-Type: application/octet-stream\r\n\r\n"
).encode()
FORM = f"multipart/form-data; boundary={BOUNDARY}"
PAYLOAD = b"x" * (20 * MIB)  # one buffer every body below is cut from, so the client's own memory stays flat
SETTLE_SECONDS = 30.0  # the longest wait for the bridge to notice closed connections (polled, not a threshold)
ENVOY_API = "type.googleapis.com/envoy.extensions"


def head(path: str, length: int, content_type: str, key: str = "any-key") -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\n"
        f"Authorization: Bearer {key}\r\nContent-Length: {length}\r\nConnection: close\r\n\r\n"
    ).encode()


def abandon(port: int, path: str, content_type: str, prefix: bytes, declared: int, sent: int) -> None:
    """Declare ``declared`` body bytes, send ``sent`` of them (``prefix`` first), and close the connection."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head(path, declared, content_type) + prefix)
        sock.sendall(memoryview(PAYLOAD)[: sent - len(prefix)])


def descriptors() -> tuple[int, int]:
    """This process's open descriptors: all of them, and those of temporary (spool) files."""
    spooled = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # the listing's own descriptor, gone already
        spooled += target.startswith(tempfile.gettempdir()) or target.endswith("(deleted)")
    return len(os.listdir("/proc/self/fd")), spooled


def rss() -> int:
    """This process's resident memory, bytes."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


def handlers_running(running: RunningBridge) -> int:
    """Request handlers whose coroutine is still under way on the bridge's event loop."""

    async def count() -> int:
        return sum(task.get_coro().__qualname__.endswith("._execute") for task in asyncio.all_tasks())  # type: ignore[union-attr]

    return int(running.server.run(count()))


def settled(running: RunningBridge, fds: tuple[int, int]) -> tuple[tuple[int, int], int]:
    """Descriptors and running handlers, once they are back to ``fds`` and none (or SETTLE_SECONDS passed)."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        now, handlers = descriptors(), handlers_running(running)
        if (now[0] <= fds[0] and now[1] <= fds[1] and handlers == 0) or time.monotonic() > deadline:
            return now, handlers
        time.sleep(0.2)


@pytest.mark.parametrize(
    ("path", "content_type", "prefix", "declared", "sent"),
    [
        ("/v3/files", FORM, FILE_PART, 20 * MIB, 12 * MIB),  # spooled to a file past 1 MiB
        ("/v3/chat/completions", "application/json", b"", 10_000_000, 9_000_000),  # buffered in memory
        ("/v3/audio/transcriptions", FORM, FILE_PART, 10_000_000, 9_000_000),  # the form, buffered
    ],
    ids=["files", "json", "transcription"],
)
def test_abandoned_bodies_are_let_go_of(
    paced: RunningBridge, path: str, content_type: str, prefix: bytes, declared: int, sent: int
) -> None:
    abandon(paced.port, path, content_type, prefix, declared, sent)  # a first round: the allocator's own growth
    settled(paced, descriptors())
    fds, memory = descriptors(), rss()
    for _ in range(ROUNDS):
        abandon(paced.port, path, content_type, prefix, declared, sent)
    after, handlers = settled(paced, fds)
    assert handlers == 0, "handlers still wait for bodies that will never come"
    assert after[1] <= fds[1], f"{after[1] - fds[1]} spool files left open"
    assert after[0] <= fds[0], f"{after[0] - fds[0]} descriptors left open"
    grown = rss() - memory
    assert grown < ROUNDS * sent / 8, f"RSS grew {grown / MIB:.0f} MiB after {ROUNDS * sent / MIB:.0f} MiB abandoned"


@pytest.fixture(scope="module")
def proxied(paced: RunningBridge, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """Envoy (the scale-out tests' binary) as a plain HTTP proxy in front of ``paced``: its listening port."""
    listen, admin = free_port(), free_port()
    router = {
        "name": "envoy.filters.http.router",
        "typed_config": {"@type": f"{ENVOY_API}.filters.http.router.v3.Router"},
    }
    manager = {
        "@type": f"{ENVOY_API}.filters.network.http_connection_manager.v3.HttpConnectionManager",
        "stat_prefix": "bridge",
        "route_config": {
            "virtual_hosts": [
                {
                    "name": "all",
                    "domains": ["*"],
                    "routes": [{"match": {"prefix": "/"}, "route": {"cluster": "bridge"}}],
                }
            ]
        },
        "http_filters": [router],
    }
    config = {
        "admin": {"address": address(admin)},
        "static_resources": {
            "listeners": [
                {
                    "address": address(listen),
                    "filter_chains": [
                        {
                            "filters": [
                                {"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}
                            ]
                        }
                    ],
                }
            ],
            "clusters": [
                {
                    "name": "bridge",
                    "type": "STATIC",
                    "connect_timeout": "5s",
                    "load_assignment": {
                        "cluster_name": "bridge",
                        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": address(paced.port)}}]}],
                    },
                }
            ],
        },
    }
    path = tmp_path_factory.mktemp("envoy") / "envoy.json"
    path.write_text(json.dumps(config))
    process = subprocess.Popen(
        [str(ENVOY), "-c", str(path), "--log-level", "error", "--base-id", str(listen)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:  # up once it proxies /health
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{listen}/health", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "envoy did not start"
            time.sleep(0.2)
        yield listen
    finally:
        stop(process)


@pytest.mark.parametrize(
    ("path", "content_type", "prefix", "declared", "sent"),
    [
        ("/v3/files", FORM, FILE_PART, 20 * MIB, 12 * MIB),
        ("/v3/chat/completions", "application/json", b"", 10_000_000, 9_000_000),
    ],
    ids=["files", "json"],
)
def test_bodies_abandoned_through_envoy_are_let_go_of(
    paced: RunningBridge, proxied: int, path: str, content_type: str, prefix: bytes, declared: int, sent: int
) -> None:
    abandon(proxied, path, content_type, prefix, declared, sent)
    settled(paced, descriptors())
    fds = descriptors()
    for _ in range(ROUNDS // 4):
        abandon(proxied, path, content_type, prefix, declared, sent)
    after, handlers = settled(paced, fds)
    assert handlers == 0, "handlers still wait for bodies that will never come"
    assert after[1] <= fds[1] and after[0] <= fds[0], f"descriptors {fds} -> {after}"


def answered_after(port: int, request_head: bytes, piece: bytes, pieces: int, pause: float) -> tuple[bytes, int]:
    """Send the head, then up to ``pieces`` copies of ``piece`` ``pause`` seconds apart, until the server answers;
    return its answer and how many pieces went before it (``pieces`` if it never answered)."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request_head)
        for count in range(pieces):
            readable, _, _ = select.select([sock], [], [], pause)
            if readable:
                answer = b""
                # A server answering before it read the whole body closes with bytes unread, which the kernel
                # turns into a reset: what came before it is the answer.
                with contextlib.suppress(ConnectionResetError):
                    while chunk := sock.recv(65536):
                        answer += chunk
                return answer, count
            sock.sendall(piece)
    return b"", pieces


@pytest.fixture(scope="module")
def keyed() -> Iterator[RunningBridge]:
    with served_with_bridge(TINY, api_keys=KEYS) as running:
        yield running


@pytest.mark.parametrize(
    ("path", "content_type", "length"),
    [
        ("/v3/files", FORM, 400 * MIB),
        ("/v3/chat/completions", "application/json", 9 * MIB),
        ("/v3/audio/transcriptions", FORM, 9 * MIB),
        ("/v3/batches/batch_none/cancel", "application/json", 9 * MIB),  # a route that takes no body
    ],
    ids=["files", "json", "transcription", "bodiless-route"],
)
def test_no_body_is_read_before_a_401(keyed: RunningBridge, path: str, content_type: str, length: int) -> None:
    # The client sends its headers and 64 KiB, then waits for the answer: a bridge reading the body first
    # never gives one (the body is not whole).
    answer, pieces = answered_after(keyed.port, head(path, length, content_type, "wrong-key"), PAYLOAD[:65536], 20, 0.5)
    assert answer.startswith(b"HTTP/1.1 401"), answer[:200]
    assert b'"authentication_error"' in answer
    assert pieces <= 1, f"the 401 came after {pieces} pieces of 64 KiB"


def test_a_chunked_body_without_a_valid_key_is_not_read(keyed: RunningBridge) -> None:
    request_head = (
        "POST /v3/files HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wrong-key\r\n"
        f"Content-Type: {FORM}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    piece = b"10000\r\n" + PAYLOAD[:65536] + b"\r\n"
    answer, pieces = answered_after(keyed.port, request_head, piece, 20, 0.5)
    assert answer.startswith(b"HTTP/1.1 401") and pieces <= 1


def test_a_large_body_with_a_valid_key_is_read(keyed: RunningBridge) -> None:
    # Checked first (the key is good), then read: the service's own answer (the model is unknown).
    body = b'{"model": "no-such-model", "messages": [{"role": "user", "content": "' + PAYLOAD[:200_000] + b'"}]}'
    answer, _ = answered_after(
        keyed.port, head("/v3/chat/completions", len(body), "application/json", KEYS[0]) + body, b"", 1, 30
    )
    assert answer.startswith(b"HTTP/1.1 404"), answer[:300]


@pytest.mark.parametrize(
    ("path", "content_type", "prefix"),
    [
        ("/v3/files", FORM, FILE_PART),
        ("/v3/chat/completions", "application/json", b'{"model": "tiny-chat", "messages": ['),
        ("/v3/batches/batch_none/cancel", "application/json", b"{"),  # a route that takes no body
    ],
    ids=["files", "json", "bodiless-route"],
)
def test_a_slow_body_gets_408_and_is_let_go_of(
    paced: RunningBridge, path: str, content_type: str, prefix: bytes
) -> None:
    assert http_request(paced.port, "GET", "/v3/models").status == 200  # the bridge's channel open (2 descriptors)
    fds = descriptors()
    # A byte every 0.25 s (4 bytes/s, RATE is 1000): due GRACE seconds and a few ms after its start.
    answer, pieces = answered_after(paced.port, head(path, MIB, content_type) + prefix, b" ", 200, 0.25)
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"request_timeout"' in answer and b'"invalid_request_error"' in answer
    assert pieces <= 4 * GRACE + 4, f"408 only after {pieces} bytes sent 0.25 s apart"
    after, handlers = settled(paced, fds)
    assert handlers == 0 and after[0] <= fds[0] and after[1] <= fds[1]


def test_an_unknown_route_drops_its_body_and_keeps_the_connection(paced: RunningBridge) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", paced.port, timeout=60)
    try:
        for _ in range(2):  # the second on the same connection
            connection.request("POST", "/v3/no-such-route", PAYLOAD[:200_000], {"Content-Type": "application/json"})
            reply = connection.getresponse()
            assert reply.status == 404 and b"Invalid URL" in reply.read()
            assert not reply.will_close
    finally:
        connection.close()


def test_keys_seen_remembers_acceptances_for_a_while_in_bounded_number_and_never_refusals() -> None:
    now = [0.0]
    seen = KeysSeen(seconds=60, count=2, clock=lambda: now[0])
    asked: list[str] = []

    def check(key: str, accepted: bool | None) -> None:
        async def ask() -> bool:
            asked.append(key)
            if accepted is None:
                raise BridgeError(401, "missing or invalid API key")
            return accepted

        asyncio.run(seen.check(key, ask))

    check("a", True)
    check("a", True)
    assert asked == ["a"]  # remembered
    with pytest.raises(BridgeError):
        check("bad", None)
    with pytest.raises(BridgeError):
        check("bad", None)
    assert asked == ["a", "bad", "bad"]  # a refusal is asked again each time
    check("down", False)
    check("down", False)
    assert asked[-2:] == ["down", "down"]  # the service did not answer: nothing learned
    check("b", True)
    check("c", True)  # two remembered at most: "a" (least recently used) goes
    check("a", True)
    assert asked[-3:] == ["b", "c", "a"]
    now[0] = 61
    check("a", True)  # forgotten after a minute
    assert asked[-2:] == ["a", "a"]


def test_an_upload_whose_client_leaves_before_the_answer_is_499_not_500(
    paced: RunningBridge, caplog: pytest.LogCaptureFixture
) -> None:
    # The body arrives whole, then the client leaves while the bridge streams the spool to the service: the
    # call is cancelled, which escaped as an uncaught CancelledError (500, a traceback at ERROR) before.
    size = 30 * MIB
    end = f'\r\n--{BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n--{BOUNDARY}--\r\n'
    assert http_request(paced.port, "GET", "/v3/models").status == 200  # the bridge's channel open
    fds = descriptors()
    with caplog.at_level(logging.INFO):
        for _ in range(4):
            with socket.create_connection(("127.0.0.1", paced.port)) as sock:
                sock.sendall(head("/v3/files", len(FILE_PART) + size + len(end), FORM) + FILE_PART)
                sock.sendall(memoryview(PAYLOAD + PAYLOAD)[:size])
                sock.sendall(end.encode())
                time.sleep(0.05)  # the bridge is sending the spool to the service now
        after, handlers = settled(paced, fds)
    assert handlers == 0 and after[1] <= fds[1]
    statuses = [record.getMessage().split()[0] for record in caplog.records if record.name == "tornado.access"]
    assert "500" not in statuses and not [r for r in caplog.records if r.name == "tornado.application"], statuses


def test_every_http_route_streams_its_body() -> None:
    """A handler that is not stream_request_body has tornado buffer its whole body (up to the server's
    max_body_size) before the handler runs: unpaced, unchecked for a key, and kept by an abandoned request."""

    async def routed() -> set[Any]:
        async with grpc.aio.insecure_channel("127.0.0.1:1") as channel:
            app = make_app(channel, figures=cast(ServerFigures, object()))  # with /metrics and /v1/loads
            return {rule.target for rule in app.wildcard_router.rules} | {NotFoundHandler}

    handlers = asyncio.run(routed())
    buffered = [
        handler.__name__
        for handler in handlers
        if isinstance(handler, type)
        and not issubclass(handler, tornado.websocket.WebSocketHandler)
        and not getattr(handler, "_stream_request_body", False)
    ]
    assert buffered == []
    assert len(handlers) > 20  # the rules were read
