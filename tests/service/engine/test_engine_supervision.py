"""A dead or wedged engine process is replaced: its streams fail retriably, health says so, then it serves again.

Real engine processes of tiny-chat, killed (SIGKILL) or frozen (SIGSTOP) under
load; each test prints how long the model was out.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.engine import engine as engine_module
from ovserve.service.models import ModelSpec
from ovserve.service.workers import process as process_module
from ovserve.service.workers.process import WorkerProcess
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

STREAMS = 4
RECOVERY_BOUND_S = 120  # a generous cap for the test; the measured time is printed
STALL_TIMEOUT_S = 2.0
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING
GREEDY = {"model": "tiny-chat", "temperature": 0, "messages": [{"role": "user", "content": "Tell me about Paris."}]}


@pytest.fixture(scope="module")
def running() -> Iterator[ServerThread]:
    settings = dataclasses.replace(TEST_SETTINGS, stall_timeout_s=STALL_TIMEOUT_S)
    server = start_server([ModelSpec("tiny-chat", TINY_CHAT, settings=settings)])
    yield server
    server.stop()


def health(channel: grpc.Channel, service: str = "") -> int:
    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=service), timeout=10)
    return int(reply.status)


def wait_for(channel: grpc.Channel, status: int, bound: float) -> float:
    """Seconds until the server's health and tiny-chat's are ``status``; fails past ``bound``."""
    start = time.monotonic()
    while (health(channel), health(channel, "tiny-chat")) != (status, status):
        assert time.monotonic() - start < bound, f"health did not turn {status} within {bound} s"
        time.sleep(0.02)
    return time.monotonic() - start


def streams_broken_by(running: ServerThread, channel: grpc.Channel, harm: int) -> list[grpc.StatusCode]:
    """Start STREAMS long streams, send ``harm`` to the engine process once all have output; their endings."""
    chat = chat_pb2_grpc.ChatServiceStub(channel)
    body = {**GREEDY, "max_tokens": 1900, "ignore_eos": True}
    started = threading.Barrier(STREAMS + 1, timeout=60)
    endings: list[grpc.StatusCode] = []

    def stream() -> None:
        calls = chat.StreamChatCompletion(parse(chat_pb2.StreamChatCompletionRequest, body), timeout=120)
        try:
            next(calls)  # the role chunk
            next(calls)  # output
            started.wait()
            for _ in calls:
                pass
            endings.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            endings.append(error.code())

    threads = [threading.Thread(target=stream) for _ in range(STREAMS)]
    for thread in threads:
        thread.start()
    started.wait()
    pid = running.server.registry.get("tiny-chat").engine.pid
    assert pid is not None
    os.kill(pid, harm)
    for thread in threads:
        thread.join(timeout=120)
    return endings


@pytest.mark.parametrize("harm", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "wedged"])
def test_a_lost_engine_is_replaced_and_serves_again(running: ServerThread, harm: int) -> None:
    engine = running.server.registry.get("tiny-chat").engine
    with grpc.insecure_channel(running.target) as channel:
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        request = parse(chat_pb2.CreateChatCompletionRequest, {**GREEDY, "max_tokens": 24})
        before = chat.CreateChatCompletion(request, timeout=60).choices[0].message.content
        restarts, old_pid = engine.restarts, engine.pid
        assert health(channel) == SERVING

        began = time.monotonic()
        endings = streams_broken_by(running, channel, harm)
        # Every stream ended at once with a retriable error, none hung, none claimed success.
        assert endings == [grpc.StatusCode.UNAVAILABLE] * STREAMS
        broken_after = time.monotonic() - began
        # Serving again (NOT_SERVING meanwhile: see the next test) ...
        out = wait_for(channel, SERVING, RECOVERY_BOUND_S)
        print(
            f"\n{signal.Signals(harm).name}: streams ended after {broken_after:.2f} s; serving again {out:.2f} s later"
        )
        assert engine.restarts == restarts + 1 and engine.pid != old_pid
        # ... and the new engine answers as the old one did.
        assert chat.CreateChatCompletion(request, timeout=60).choices[0].message.content == before


def test_health_is_not_serving_while_the_engine_is_replaced(
    running: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = running.server.registry.get("tiny-chat").engine
    seen: list[bool] = []
    engine.watch(seen.append)
    # Hold the replacement back until the test has looked, so "meanwhile" lasts as long as needed.
    release = threading.Event()

    def held_back(*args: object) -> WorkerProcess:
        assert release.wait(timeout=60)
        return WorkerProcess(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine_module, "WorkerProcess", held_back)
    with grpc.insecure_channel(running.target) as channel:
        assert health(channel) == SERVING
        pid = engine.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        wait_for(channel, NOT_SERVING, 30)
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {**GREEDY, "max_tokens": 4}))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "restarting" in (refused.value.details() or "")
        release.set()
        wait_for(channel, SERVING, RECOVERY_BOUND_S)
    assert seen == [False, True]


def test_an_engine_idle_past_the_stall_timeout_serves_its_next_request(running: ServerThread) -> None:
    engine = running.server.registry.get("tiny-chat").engine
    with grpc.insecure_channel(running.target) as channel:
        wait_for(channel, SERVING, RECOVERY_BOUND_S)
        restarts = engine.restarts
        time.sleep(3 * STALL_TIMEOUT_S)  # idle: the engine has nothing to say for longer than the stall timeout
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        request = parse(chat_pb2.CreateChatCompletionRequest, {**GREEDY, "max_tokens": 24})
        for _ in range(3):
            assert chat.CreateChatCompletion(request, timeout=60).choices[0].message.content
            time.sleep(3 * STALL_TIMEOUT_S)
    assert engine.restarts == restarts


def test_a_replacement_that_dies_while_loading_is_named_in_errors_health_and_the_log(
    running: ServerThread, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 45: the cause of a failed load (the signal) and the settings reach the refused request, /health's
    reason and the log, while the supervisor keeps trying; once a replacement loads, they are gone."""
    engine = running.server.registry.get("tiny-chat").engine
    started = process_module.start_child
    healed = threading.Event()

    def killed_while_loading(module: str) -> tuple[object, object]:
        child, connection = started(module)
        if not healed.is_set():
            child.send_signal(signal.SIGKILL)  # it is still importing: far from Ready
        return child, connection

    monkeypatch.setattr(process_module, "start_child", killed_while_loading)
    cause = (
        "model 'tiny-chat' failed to load: the engine process was killed by SIGKILL (Killed) while loading; "
        "settings: device CPU; precision f32; inference threads unset"
    )
    with grpc.insecure_channel(running.target) as channel, caplog.at_level(logging.ERROR):
        wait_for(channel, SERVING, RECOVERY_BOUND_S)
        pid = engine.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        began = time.monotonic()
        while engine.load_failure is None:
            assert time.monotonic() - began < RECOVERY_BOUND_S, "no replacement failed to load"
            time.sleep(0.02)
        assert engine.load_failure.startswith(cause)
        assert running.server.not_serving_reason().startswith(cause)  # /health's reason
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {**GREEDY, "max_tokens": 4}))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert f"the engine of 'tiny-chat' is restarting (the last try failed: {cause}" in (
            refused.value.details() or ""
        )
        assert any(cause in record.getMessage() for record in caplog.records)
        healed.set()
        wait_for(channel, SERVING, RECOVERY_BOUND_S)
    assert engine.load_failure is None and running.server.not_serving_reason() == ""
