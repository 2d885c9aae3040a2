"""Models unloaded and loaded again at run time, on the real engine (issue 45): ModelService.LoadModel and
UnloadModel over gRPC, with another model streaming meanwhile; drain and force; the engine process gone after."""

from __future__ import annotations

import os
import shutil
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients import OvserveClient
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, model_pb2, model_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.residency import ResidencySettings
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

OTHER = "other-chat"  # a second engine of the same weights: it streams while tiny-chat is unloaded
NO_AUTOLOAD = ResidencySettings(autoload=False)  # requests do not load models here: only the admin calls
MODELS = [
    ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS),
    ModelSpec(OTHER, TINY_CHAT, settings=TEST_SETTINGS),
]
WAIT_S = 60  # the bound of every wait: an RPC's deadline, a future's result


def stream_request(model: str, max_tokens: int) -> chat_pb2.StreamChatCompletionRequest:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Tell me a long story."}],
        "max_tokens": max_tokens,
        "ignore_eos": True,
        "stream_options": {"include_usage": True},
    }
    return parse(chat_pb2.StreamChatCompletionRequest, body)


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    running = start_server(MODELS, residency=NO_AUTOLOAD)  # an unloaded model stays so (refused, named)
    yield running
    running.stop()


@pytest.fixture
def channel(server: ServerThread) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.target) as opened:
        yield opened
    # Each test leaves both models loaded for the next one.
    with grpc.insecure_channel(server.target) as opened:
        for name in ("tiny-chat", OTHER):
            list(model_pb2_grpc.ModelServiceStub(opened).LoadModel(load(name), timeout=WAIT_S))


def load(name: str) -> model_pb2.LoadModelRequest:
    return model_pb2.LoadModelRequest(model=name)


def state(channel: grpc.Channel, name: str) -> str:
    return (
        model_pb2_grpc.ModelServiceStub(channel)
        .GetModel(model_pb2.GetModelRequest(model=name), timeout=WAIT_S)
        .model.state
    )


def finish_reasons(chunks: list[chat_pb2.ChatCompletionChunk]) -> list[int]:
    return [choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason]


def engine_pid(server: ServerThread, name: str) -> int:
    pid = server.server.registry.model(name).worker.pid
    assert pid is not None
    return pid


def gone(pid: int) -> bool:
    """Whether no process ``pid`` runs (a zombie not reaped yet counts as gone: it holds no memory)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except FileNotFoundError:
        return True


def test_unload_while_another_model_streams_then_load_again(server: ServerThread, channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    chat = chat_pb2_grpc.ChatServiceStub(channel)
    pid = engine_pid(server, "tiny-chat")
    other = chat.StreamChatCompletion(stream_request(OTHER, 1500), timeout=WAIT_S)
    first = next(other)  # the other model is streaming
    unloaded = models.UnloadModel(model_pb2.UnloadModelRequest(model="tiny-chat"), timeout=WAIT_S).model
    assert (unloaded.id, unloaded.state) == ("tiny-chat", "available")
    rest = list(other)  # the other model's stream ends as it would have: every token, no error
    assert rest[-1].usage.completion_tokens == 1500
    assert finish_reasons([first, *rest]) == [common_pb2.FINISH_REASON_LENGTH]
    assert gone(pid)  # the engine process ended with the unload
    listed = {model.id: model.state for model in models.ListModels(model_pb2.ListModelsRequest()).data}
    assert listed == {"tiny-chat": "available", OTHER: "loaded"}
    with pytest.raises(grpc.RpcError) as refused:
        chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {
            "model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4
        }), timeout=WAIT_S)  # fmt: skip
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # it exists: not NOT_FOUND
    assert "'tiny-chat' is not loaded" in (refused.value.details() or "")
    events = list(models.LoadModel(load("tiny-chat"), timeout=WAIT_S))
    assert [event.state for event in events] == ["loading", "loaded"]
    assert (events[-1].model.id, events[-1].model.state, events[-1].model.task) == ("tiny-chat", "loaded", "generate")
    assert engine_pid(server, "tiny-chat") != pid
    reply = chat.CreateChatCompletion(
        parse(chat_pb2.CreateChatCompletionRequest, {
            "model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4
        }), timeout=WAIT_S,
    )  # fmt: skip
    assert reply.usage.completion_tokens > 0


def test_an_unload_drains_the_running_stream_first(server: ServerThread, channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
        stream_request("tiny-chat", 300), timeout=WAIT_S
    )
    first = next(stream)
    pid = engine_pid(server, "tiny-chat")
    os.kill(pid, signal.SIGSTOP)  # the engine holds still: the stream is certainly running when the unload comes
    with ThreadPoolExecutor(1) as pool:
        try:
            unloading: Future[model_pb2.UnloadModelResponse] = pool.submit(
                models.UnloadModel, model_pb2.UnloadModelRequest(model="tiny-chat"), timeout=WAIT_S
            )
            while state(channel, "tiny-chat") != "unloading":  # bounded by the unload's own deadline
                assert not unloading.done()
            assert server.server.policy.calls_using({"tiny-chat"}) == 1  # the stream it waits for
            assert not unloading.done() and not gone(pid)
        finally:
            os.kill(pid, signal.SIGCONT)
        rest = list(stream)
        assert rest[-1].usage.completion_tokens == 300  # every token came: the unload waited
        assert finish_reasons([first, *rest]) == [common_pb2.FINISH_REASON_LENGTH]
        assert unloading.result(timeout=WAIT_S).model.state == "available"
    assert gone(pid)


def test_a_forced_unload_fails_the_running_stream_saying_why(server: ServerThread, channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
        stream_request("tiny-chat", 300), timeout=WAIT_S
    )
    next(stream)
    pid = engine_pid(server, "tiny-chat")
    os.kill(pid, signal.SIGSTOP)  # the stream cannot end on its own before the unload
    try:
        with ThreadPoolExecutor(1) as pool:
            unloading = pool.submit(
                models.UnloadModel, model_pb2.UnloadModelRequest(model="tiny-chat", force=True), timeout=WAIT_S
            )
            with pytest.raises(grpc.RpcError) as failed:
                list(stream)
            os.kill(pid, signal.SIGCONT)
            assert unloading.result(timeout=WAIT_S).model.state == "available"
    finally:
        os.kill(pid, signal.SIGCONT) if not gone(pid) else None
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert "'tiny-chat' was unloaded (force)" in (failed.value.details() or "")
    assert gone(pid)


def test_a_load_of_an_unknown_model_is_refused_naming_it(channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    for call in (
        lambda: list(models.LoadModel(load("no-such-model"), timeout=WAIT_S)),
        lambda: models.UnloadModel(model_pb2.UnloadModelRequest(model="no-such-model"), timeout=WAIT_S),
    ):
        with pytest.raises(grpc.RpcError) as refused:
            call()
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        assert "'no-such-model' is not known" in (refused.value.details() or "")
        assert "tiny-chat" in (refused.value.details() or "")  # the known ones are listed


def test_loading_a_loaded_model_answers_at_once_and_unloading_twice_is_harmless(
    server: ServerThread, channel: grpc.Channel
) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    pid = engine_pid(server, OTHER)
    assert [event.state for event in models.LoadModel(load(OTHER), timeout=WAIT_S)] == ["loaded"]
    assert engine_pid(server, OTHER) == pid  # no second engine
    for _ in range(2):
        assert models.UnloadModel(model_pb2.UnloadModelRequest(model=OTHER), timeout=WAIT_S).model.state == "available"


def test_the_typed_client_loads_and_unloads_with_an_admin_key_and_a_user_key_cannot() -> None:
    running = start_server(MODELS[:1], api_keys=("user-key",), admin_keys=("admin-key",))
    try:
        with OvserveClient(running.target, api_key="user-key", timeout=WAIT_S) as user:
            for call in (lambda: user.unload_model("tiny-chat"), lambda: list(user.load_model("tiny-chat"))):
                with pytest.raises(grpc.RpcError) as refused:
                    call()
                assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert user.get_model("tiny-chat").state == "loaded"
            with OvserveClient(running.target, api_key="admin-key", timeout=WAIT_S) as admin:
                assert admin.unload_model("tiny-chat", force=True).state == "available"
                assert user.get_model("tiny-chat").state == "available"
                assert [event.state for event in admin.load_model("tiny-chat")] == ["loading", "loaded"]
            assert user.chat("tiny-chat", [{"role": "user", "content": "Hi"}], max_tokens=4).usage.completion_tokens
        with OvserveClient(running.target, timeout=WAIT_S) as nobody, pytest.raises(grpc.RpcError) as refused:
            nobody.unload_model("tiny-chat")
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    finally:
        running.stop()


def test_health_and_metrics_follow_the_models_state(server: ServerThread, channel: grpc.Channel) -> None:
    health = health_pb2_grpc.HealthStub(channel)
    watch = health.Watch(health_pb2.HealthCheckRequest(service="tiny-chat"), timeout=WAIT_S)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    models = model_pb2_grpc.ModelServiceStub(channel)
    models.UnloadModel(model_pb2.UnloadModelRequest(model="tiny-chat"), timeout=WAIT_S)
    assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING  # the model's own name
    watch.cancel()
    overall = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=WAIT_S).status
    assert overall == health_pb2.HealthCheckResponse.SERVING  # the other model serves
    exposition = server.run(server.server.metrics_exposition())[0].decode()
    assert 'ovserve_model_state{model="tiny-chat",state="available"} 1.0' in exposition
    assert 'ovserve_model_state{model="tiny-chat",state="loaded"} 0.0' in exposition
    assert f'ovserve_model_state{{model="{OTHER}",state="loaded"}} 1.0' in exposition
    assert 'ovserve_engine_up{model="tiny-chat"} 0.0' in exposition
    loads = server.run(server.server.loads())
    assert [entry["model"] for entry in loads["models"]] == [OTHER]  # no process, no load to report


def test_a_failed_load_is_reported_with_its_cause_and_a_later_load_recovers(tmp_path: Path) -> None:
    copy = shutil.copytree(TINY_CHAT, tmp_path / "tiny-chat")
    running = start_server([ModelSpec("copy", copy, settings=TEST_SETTINGS)])
    try:
        with grpc.insecure_channel(running.target) as opened:
            models = model_pb2_grpc.ModelServiceStub(opened)
            models.UnloadModel(model_pb2.UnloadModelRequest(model="copy"), timeout=WAIT_S)
            weights = copy / "openvino_model.xml"
            kept = weights.read_bytes()
            weights.write_text("not an OpenVINO model")
            with pytest.raises(grpc.RpcError) as failed:
                list(models.LoadModel(load("copy"), timeout=WAIT_S))
            assert failed.value.code() == grpc.StatusCode.INTERNAL
            assert "model 'copy' failed to load" in (failed.value.details() or "")
            described = models.GetModel(model_pb2.GetModelRequest(model="copy"), timeout=WAIT_S).model
            assert described.state == "failed"
            assert described.state_reason == failed.value.details()  # the cause, with the settings it used
            with pytest.raises(grpc.RpcError) as refused:
                chat_pb2_grpc.ChatServiceStub(opened).CreateChatCompletion(
                    parse(chat_pb2.CreateChatCompletionRequest, {
                        "model": "copy", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4
                    }), timeout=WAIT_S,
                )  # fmt: skip
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "its last load failed (model 'copy' failed to load" in (refused.value.details() or "")
            weights.write_bytes(kept)
            assert [event.state for event in models.LoadModel(load("copy"), timeout=WAIT_S)] == ["loading", "loaded"]
    finally:
        running.stop()


def test_a_model_not_declared_at_start_is_loaded_from_its_source_with_its_settings() -> None:
    running = start_server(MODELS[:1], admin_keys=("admin-key",))
    try:
        with OvserveClient(running.target, api_key="admin-key", timeout=WAIT_S) as admin:

            def add(name: str, source: str, settings: dict[str, object]) -> list[model_pb2.LoadModelResponse]:
                return list(admin.load_model(name, source=source, settings=settings))

            events = add("added-chat", str(TINY_CHAT), {"tool_parser": "hermes", "reasoning_parser": "none"})
            assert [event.state for event in events] == ["loading", "loaded"]
            added = events[-1].model
            assert (added.id, added.state, added.tool_parser, added.reasoning_parser) == (
                "added-chat",
                "loaded",
                "hermes",
                "",
            )
            assert added.tool_parser_evidence == "--tool-parser"  # the request's setting, as the flag's
            assert admin.chat("added-chat", [{"role": "user", "content": "Hi"}], max_tokens=4).usage.completion_tokens
            assert admin.unload_model("added-chat").state == "available"  # it stays known
            assert [event.state for event in admin.load_model("added-chat")] == ["loading", "loaded"]
            refusals = [
                (("added-chat", str(TINY_CHAT), {}), grpc.StatusCode.ALREADY_EXISTS, "'added-chat' is known already"),
                (("tiny-chat", str(TINY_CHAT), {}), grpc.StatusCode.ALREADY_EXISTS, "'tiny-chat' is known already"),
                (("new", "/no/such/dir", {}), grpc.StatusCode.INVALID_ARGUMENT, "source: model 'new'"),
                (("new", str(TINY_CHAT), {"tool_parsr": "hermes"}), grpc.StatusCode.INVALID_ARGUMENT, "'tool_parsr'"),
                (("new", str(TINY_CHAT), {"tool_parser": "nope"}), grpc.StatusCode.INVALID_ARGUMENT, "nope"),
                (("new", "", {"tool_parser": "hermes"}), grpc.StatusCode.INVALID_ARGUMENT, "source: required"),
                (("\x00", str(TINY_CHAT), {}), grpc.StatusCode.INVALID_ARGUMENT, "model: must be printable"),
            ]
            for arguments, code, said in refusals:
                with pytest.raises(grpc.RpcError) as refused:
                    add(*arguments)
                assert (refused.value.code(), said in (refused.value.details() or "")) == (code, True), refused.value
            assert "new" not in {model.id for model in admin.list_models()}
    finally:
        running.stop()
    plain = start_server(MODELS[:1])  # no admin keys: no path of the server's is a caller's to name
    try:
        with grpc.insecure_channel(plain.target) as opened, pytest.raises(grpc.RpcError) as refused:
            request = model_pb2.LoadModelRequest(model="added-chat", source=str(TINY_CHAT))
            list(model_pb2_grpc.ModelServiceStub(opened).LoadModel(request, timeout=WAIT_S))
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "--admin-key-file" in (refused.value.details() or "")
    finally:
        plain.stop()


def test_two_loads_of_an_unloaded_model_make_one_load(server: ServerThread, channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    models.UnloadModel(model_pb2.UnloadModelRequest(model="tiny-chat"), timeout=WAIT_S)
    admin = server.server.admin
    original, loads, release = admin._load, [], threading.Event()

    def held(spec: ModelSpec) -> object:  # the first load waits until the second call is under way
        loads.append(spec.name)
        assert release.wait(WAIT_S)
        return original(spec)

    admin._load = held  # type: ignore[method-assign]
    try:
        first = models.LoadModel(load("tiny-chat"), timeout=WAIT_S)
        second = models.LoadModel(load("tiny-chat"), timeout=WAIT_S)
        assert next(first).state == next(second).state == "loading"  # both asked while it is not loaded
        release.set()
        assert [event.state for event in first] == [event.state for event in second] == ["loaded"]
    finally:
        admin._load = original  # type: ignore[method-assign]
        release.set()
    assert loads == ["tiny-chat"]  # one load served both


def test_a_force_cuts_a_draining_unload_short(server: ServerThread, channel: grpc.Channel) -> None:
    models = model_pb2_grpc.ModelServiceStub(channel)
    stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
        stream_request("tiny-chat", 300), timeout=WAIT_S
    )
    next(stream)
    pid = engine_pid(server, "tiny-chat")
    os.kill(pid, signal.SIGSTOP)  # wedged: the drain would wait for ever
    try:
        with ThreadPoolExecutor(2) as pool:
            draining = pool.submit(models.UnloadModel, model_pb2.UnloadModelRequest(model="tiny-chat"), timeout=WAIT_S)
            while state(channel, "tiny-chat") != "unloading":  # bounded by the unload's deadline
                assert not draining.done()
            forcing = pool.submit(
                models.UnloadModel, model_pb2.UnloadModelRequest(model="tiny-chat", force=True), timeout=WAIT_S
            )
            with pytest.raises(grpc.RpcError) as failed:
                list(stream)
            os.kill(pid, signal.SIGCONT)  # (so that it ends when asked, not when killed)
            assert draining.result(timeout=WAIT_S).model.state == forcing.result(timeout=WAIT_S).model.state
    finally:
        if not gone(pid):
            os.kill(pid, signal.SIGCONT)
    assert "'tiny-chat' was unloaded (force)" in (failed.value.details() or "")
    assert state(channel, "tiny-chat") == "available" and gone(pid)
