"""The REST bridge on a free local port, in front of the session gRPC server, plus small HTTP helpers."""

from __future__ import annotations

import contextlib
import http.client
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import openai
import pytest

from ovserve.rest_bridge.config import BridgeSettings
from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import ModelSpec
from tests.conformance import SpecCheck
from tests.conftest import ServerThread, start_server


@dataclass
class RunningBridge:
    """A started bridge: where it listens and the gRPC server behind it."""

    bridge: Bridge
    server: ServerThread

    @property
    def port(self) -> int:
        """The REST port."""
        return self.bridge.port

    @property
    def url(self) -> str:
        """Base URL of the OpenAI API (/v3)."""
        return f"http://127.0.0.1:{self.port}/v3"


@contextlib.contextmanager
def served_with_bridge(models: list[ModelSpec], **config: Any) -> Iterator[RunningBridge]:
    """A server of its own (``start_server``'s arguments) with a bridge in front, both stopped after."""
    server = start_server(models, **config)
    running = Bridge(server.target, "127.0.0.1", 0)
    server.run(running.start())
    try:
        yield RunningBridge(running, server)
    finally:
        server.run(running.stop())
        server.stop()


@pytest.fixture(scope="session")
def bridge(server: ServerThread) -> Iterator[RunningBridge]:
    """The bridge on the server's own event loop (as ``ovserve serve`` runs it), with its own grpc.aio channel."""
    running = Bridge(server.target, "127.0.0.1", 0)
    server.run(running.start())
    yield RunningBridge(running, server)
    server.run(running.stop())


# The paced bridge's body_grace_seconds and min_body_rate: far below the defaults, so a slow body is refused soon.
GRACE, RATE = 1.0, 1000


@pytest.fixture(scope="module")
def paced(server: ServerThread) -> Iterator[RunningBridge]:
    """A bridge on the session server whose bodies must keep up RATE bytes/s after GRACE seconds."""
    running = Bridge(
        server.target, "127.0.0.1", 0, settings=BridgeSettings(body_grace_seconds=GRACE, min_body_rate=RATE)
    )
    server.run(running.start())
    yield RunningBridge(running, server)
    server.run(running.stop())


@pytest.fixture(scope="session")
def client(bridge: RunningBridge) -> Iterator[openai.OpenAI]:
    """The official openai client pointed at the bridge, as a new user would point it."""
    with openai.OpenAI(base_url=bridge.url, api_key="any-key", max_retries=0, timeout=120) as opened:
        yield opened


@pytest.fixture
def async_client(bridge: RunningBridge) -> openai.AsyncOpenAI:
    """The official async openai client; each test closes it inside its own event loop."""
    return openai.AsyncOpenAI(base_url=bridge.url, api_key="any-key", max_retries=0, timeout=120)


@dataclass(frozen=True)
class Reply:
    """A raw HTTP reply."""

    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        """The body as JSON."""
        return json.loads(self.body)

    def events(self) -> list[str]:
        """The ``data:`` payloads of an SSE body, in order (the framing itself is checked by the caller)."""
        return [block.removeprefix("data: ") for block in self.body.decode().split("\n\n") if block]


def http_request(
    port: int,
    method: str,
    path: str,
    body: bytes | dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """One request on a fresh connection; a dict body is sent as application/json."""
    sent_headers = dict(headers or {})
    if isinstance(body, dict):
        body = json.dumps(body).encode()
        sent_headers.setdefault("Content-Type", "application/json")
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request(method, path, body=body, headers=sent_headers)
        response = connection.getresponse()
        return Reply(response.status, response.headers, response.read())
    finally:
        connection.close()


@pytest.fixture
def spec(request: pytest.FixtureRequest) -> Iterator[SpecCheck]:
    """Every JSON body an ``spec_client`` receives, checked against the test module's ``SCHEMAS``; at the end, at
    least one was, and none broke its schema."""
    checks = SpecCheck(request.module.SCHEMAS)
    yield checks
    assert checks.checked and not checks.problems, checks.problems


def spec_client(bridge: RunningBridge, spec: SpecCheck, key: str = "any-key") -> openai.OpenAI:
    """The openai client on ``bridge`` (as ``key``), every reply passed to ``spec``."""
    http = httpx.Client(event_hooks={"response": [spec]}, timeout=120)
    return openai.OpenAI(base_url=bridge.url, api_key=key, max_retries=0, http_client=http)


@pytest.fixture
def spec_checked_client(bridge: RunningBridge, spec: SpecCheck) -> Iterator[openai.OpenAI]:
    """The session bridge's openai client, its replies checked by ``spec``."""
    with spec_client(bridge, spec) as opened:
        yield opened
