"""Every kind of served model's process, killed, is replaced, and looks the same from outside while it is.

One server with the bundled chat, embedding, rerank and speech models, and the REST bridge in front of it as
``ovserve serve`` runs them; for each model its process is SIGKILLed (or SIGSTOPped: its heartbeat stops) and
its replacement held back until the outside has seen it down: the model's health and its service's NOT_SERVING
while the server's and the other models' stay SERVING, ``ovserve_engine_up`` 0 in /metrics and ``"up": false``
in /v1/loads; then SERVING again, ``ovserve_engine_restarts`` one higher and ``ovserve_engine_up`` 1. Every wait
polls with a bound.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients.client import OvserveClient
from ovserve.clients.v1 import embedding_pb2, embedding_pb2_grpc
from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import BUNDLED_MODELS_DIR, ModelSpec
from ovserve.service.workers.process import WorkerProcess
from tests.conftest import TEST_SETTINGS, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.service.test_metrics import Samples, samples, value

MODELS = ("tiny-chat", "tiny-embed", "tiny-rerank", "tiny-whisper")  # one of each kind
DOWN_BOUND_S = 30.0  # for the outside to see a killed process
RECOVERY_BOUND_S = 120.0  # for a replacement to load (a generous cap; tiny models take a second or two)
POLL_S = 0.05
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
STOPPED_TIMEOUT_S = 2.0  # the heartbeat timeout while a test stops a process (10 s by default)
SPEECH = (Path(__file__).parents[1] / "data" / "speech" / "held-out-0.wav").read_bytes()
REQUESTS: dict[str, Callable[[OvserveClient], object]] = {  # one request per model, whatever its kind
    "tiny-chat": lambda client: client.chat("tiny-chat", [{"role": "user", "content": "hi"}], max_tokens=8),
    "tiny-embed": lambda client: client.embed("tiny-embed", "hello"),
    "tiny-rerank": lambda client: client.rerank("tiny-rerank", "fruit", ["plum", "stone"]),
    "tiny-whisper": lambda client: client.transcribe("tiny-whisper", SPEECH),
}
SERVICE_OF = {  # the service each model answers for
    "tiny-chat": "ovserve.v1.ChatService",
    "tiny-embed": "ovserve.v1.EmbeddingService",
    "tiny-rerank": "ovserve.v1.RerankService",
    "tiny-whisper": "ovserve.v1.AudioService",
}
T = TypeVar("T")


@pytest.fixture(scope="module")
def running() -> Iterator[RunningBridge]:
    # Heartbeats timed out only where a test shortens the timeout (a stopped process is replaced): the waiting test
    # stops a process too, and on a loaded machine that may outlast the default 10 s.
    settings = dataclasses.replace(TEST_SETTINGS, heartbeat_timeout_s=600.0)
    server = start_server([ModelSpec(name, BUNDLED_MODELS_DIR / name, settings=settings) for name in MODELS])
    bridge = Bridge(server.target, "127.0.0.1", 0, figures=server.server)  # /metrics and /v1/loads, as served
    server.run(bridge.start())
    yield RunningBridge(bridge, server)
    server.run(bridge.stop())
    server.stop()


def awaited(look: Callable[[], T], wanted: Callable[[T], bool], bound: float, what: str) -> T:
    """Look again every POLL_S until what is seen is ``wanted``; fail past ``bound`` seconds, saying the last look."""
    deadline = time.monotonic() + bound
    while not wanted(seen := look()):
        assert time.monotonic() < deadline, f"{what} not seen within {bound} s; last seen: {seen!r}"
        time.sleep(POLL_S)
    return seen


def health(channel: grpc.Channel, service: str) -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    return int(reply.status)


def healths(channel: grpc.Channel, name: str) -> tuple[int, ...]:
    """The health of ``name`` and of the service it answers for, of the server, then of every other model and
    the services they answer for."""
    others = [other for other in MODELS if other != name]
    names = (name, SERVICE_OF[name], "", *others, *(SERVICE_OF[other] for other in others))
    return tuple(health(channel, service) for service in names)


def down(name: str) -> tuple[int, ...]:
    """``healths`` while ``name`` alone is down: a model's health is its own (and its service's, the only model of
    its kind here)."""
    return (NOT_SERVING, NOT_SERVING, SERVING, *(SERVING for _ in range(2 * (len(MODELS) - 1))))


def metrics(running: RunningBridge) -> Samples:
    reply = http_request(running.port, "GET", "/metrics")
    assert reply.status == 200
    return samples(reply.body.decode())


def loaded(running: RunningBridge, name: str) -> dict[str, Any]:
    """The model's entry in /v1/loads."""
    reply = http_request(running.port, "GET", "/v1/loads")
    assert reply.status == 200
    (entry,) = [entry for entry in reply.json()["models"] if entry["model"] == name]
    return dict(entry)


@pytest.fixture
def held_back(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Every new worker process waits for the event before it starts: "meanwhile" lasts as long as a test looks."""
    release = threading.Event()
    start = WorkerProcess.__init__

    def waiting(self: WorkerProcess, *args: Any, **kwargs: Any) -> None:
        assert release.wait(timeout=RECOVERY_BOUND_S)
        start(self, *args, **kwargs)

    monkeypatch.setattr(WorkerProcess, "__init__", waiting)
    yield release
    release.set()  # a failed test must not leave a restart waiting


@pytest.mark.parametrize("name", MODELS)
def test_a_killed_process_is_seen_down_then_serving_again(
    running: RunningBridge, held_back: threading.Event, name: str
) -> None:
    worker = running.server.server.registry.model(name).worker
    with grpc.insecure_channel(running.server.target) as channel:
        awaited(lambda: health(channel, ""), lambda status: status == SERVING, RECOVERY_BOUND_S, "the server serving")
        before = metrics(running)
        assert value(before, "ovserve_engine_up", model=name) == 1 and loaded(running, name)["up"] is True
        restarts = value(before, "ovserve_engine_restarts", model=name)
        pid = worker.pid
        assert pid is not None

        os.kill(pid, signal.SIGKILL)
        awaited(lambda: healths(channel, name), lambda seen: seen == down(name), DOWN_BOUND_S,
                f"{name} NOT_SERVING, the server and the other models SERVING")  # fmt: skip
        assert value(metrics(running), "ovserve_engine_up", model=name) == 0
        assert loaded(running, name)["up"] is False

        held_back.set()
        awaited(lambda: (health(channel, name), health(channel, "")), lambda seen: seen == (SERVING,) * 2,
                RECOVERY_BOUND_S, f"{name} and the server SERVING")  # fmt: skip
        # The restart is counted once the new process is up (see ovserve.service.workers.supervisor): await the count.
        after = awaited(lambda: metrics(running), lambda found: value(found, "ovserve_engine_restarts", model=name)
                        == restarts + 1, RECOVERY_BOUND_S, f"ovserve_engine_restarts of {name} one higher")  # fmt: skip
        assert value(after, "ovserve_engine_up", model=name) == 1
        assert ("ovserve_process_cpu_seconds", (("model", name), ("process", "engine"))) in after  # the new process's
        assert loaded(running, name)["up"] is True
    assert worker.pid not in (None, pid)


def test_a_pipeline_reports_what_waits_on_it(running: RunningBridge) -> None:
    """An embedding model's requests show in /metrics and /v1/loads as they do for a chat model's."""
    name = "tiny-embed"
    worker = running.server.server.registry.model(name).worker
    assert worker.pid is not None
    with grpc.insecure_channel(running.server.target) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        os.kill(worker.pid, signal.SIGSTOP)  # the process holds what it is sent: nothing starts
        try:
            waiting = [
                stub.CreateEmbedding.future(embedding_pb2.CreateEmbeddingRequest(model=name, input=text), timeout=60)
                for text in ("one", "two")
            ]
            entry = awaited(lambda: loaded(running, name), lambda seen: seen["num_waiting_reqs"] == 2, DOWN_BOUND_S,
                            "two requests waiting in /v1/loads")  # fmt: skip
            assert entry["num_running_reqs"] == 0 and entry["max_total_num_tokens"] == 0 and entry["up"] is True
            found = metrics(running)
            assert value(found, "ovserve_engine_requests_waiting", model=name) == 2
            assert value(found, "ovserve_engine_requests_running", model=name) == 0
        finally:
            os.kill(worker.pid, signal.SIGCONT)
        assert all(future.result().data for future in waiting)
    awaited(lambda: loaded(running, name), lambda seen: seen["num_waiting_reqs"] == seen["num_running_reqs"] == 0,
            DOWN_BOUND_S, "nothing waiting once answered")  # fmt: skip


@pytest.mark.parametrize("name", MODELS)
def test_a_stopped_process_fails_its_request_and_is_replaced_while_the_others_serve(
    running: RunningBridge, held_back: threading.Event, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """SIGSTOP: the process's heartbeat stops, so it is killed after the heartbeat timeout (not the minute a
    silent step may take): the request it held ends UNAVAILABLE, its health is NOT_SERVING while the server and
    the other models serve, and a replacement takes over."""
    worker = running.server.server.registry.model(name).worker
    monkeypatch.setattr(worker._supervisor, "_heartbeat_timeout_s", STOPPED_TIMEOUT_S)  # type: ignore[attr-defined]
    with (
        grpc.insecure_channel(running.server.target) as channel,
        OvserveClient(running.server.target, timeout=RECOVERY_BOUND_S, retries=0) as client,
    ):
        awaited(lambda: healths(channel, name), lambda seen: set(seen) == {SERVING}, RECOVERY_BOUND_S, "all serving")
        REQUESTS[name](client)  # answered while the process runs
        restarts, pid = worker.restarts, worker.pid
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        try:
            began = time.monotonic()
            with pytest.raises(grpc.RpcError) as failed:
                REQUESTS[name](client)
            ended_after = time.monotonic() - began
            assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
            awaited(lambda: healths(channel, name), lambda seen: seen == down(name), DOWN_BOUND_S,
                    f"{name} NOT_SERVING, the server and the other models SERVING")  # fmt: skip
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)  # if it was not killed, it must not stay stopped
        # Ended by the heartbeat watch (a few rounds of STOPPED_TIMEOUT_S), not by the request's deadline.
        assert ended_after < RECOVERY_BOUND_S / 4
        held_back.set()
        awaited(lambda: healths(channel, name), lambda seen: set(seen) == {SERVING}, RECOVERY_BOUND_S, "serving")
        awaited(lambda: worker.restarts, lambda count: count == restarts + 1, RECOVERY_BOUND_S, "the restart counted")
        assert worker.pid not in (None, pid)
        REQUESTS[name](client)
