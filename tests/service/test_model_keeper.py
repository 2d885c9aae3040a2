"""Which models stay loaded, on the real engine (issue 45): a model loaded on its first request (two requests, one
load), an idle model unloaded after its idle time and loaded again by the next request (never while a request
runs), a request's keep-alive, and a budget of loaded models or memory that unloads the least recently used idle
model to make room (or refuses when every model is in use)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients.keep_alive import KEEP_ALIVE_KEY
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, model_pb2, model_pb2_grpc, response_pb2, response_pb2_grpc
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.config import offered_models
from ovserve.service.models import BUNDLED_MODELS_DIR, ModelSpec
from ovserve.service.pipelines import PipelineSettings
from ovserve.service.residency import ResidencySettings
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse
from tests.sources.checkpoints import gguf_file

WAIT_S = 60  # the bound of every wait: an RPC's deadline, a state awaited
IDLE_S = 1.0  # the idle time of the model that has one
ACTIVE = (objects_pb2.RESPONSE_STATUS_QUEUED, objects_pb2.RESPONSE_STATUS_IN_PROGRESS)
CAPITALS = BUNDLED_MODELS_DIR / "tiny-chat-capitals"  # the bundled LoRA adapter of tiny-chat


def spec(name: str, **settings: object) -> ModelSpec:
    return ModelSpec(name, TINY_CHAT, settings=TEST_SETTINGS, **settings)  # type: ignore[arg-type]


def ask(model: str, max_tokens: int = 4) -> chat_pb2.CreateChatCompletionRequest:
    return parse(chat_pb2.CreateChatCompletionRequest, {
        "model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": max_tokens,
    })  # fmt: skip


def states(channel: grpc.Channel) -> dict[str, str]:
    listed = model_pb2_grpc.ModelServiceStub(channel).ListModels(model_pb2.ListModelsRequest(), timeout=WAIT_S)
    return {model.id: model.state for model in listed.data}


def await_state(channel: grpc.Channel, name: str, wanted: str) -> None:
    """Until ``name`` is in state ``wanted`` (a bounded wait: the idle loop looks every half second)."""
    deadline = time.monotonic() + WAIT_S
    while states(channel)[name] != wanted:
        assert time.monotonic() < deadline, f"{name} never became {wanted}: {states(channel)}"
        time.sleep(0.1)


def await_true(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def unloads(server: ServerThread, model: str, reason: str) -> float:
    """ovserve_model_unloads_total{model, reason} in the server's /metrics (0 before the first)."""
    exposition = server.run(server.server.metrics_exposition())[0].decode()
    found = re.search(rf'^ovserve_model_unloads_total{{model="{model}",reason="{reason}"}} (\S+)$', exposition, re.M)
    return float(found.group(1)) if found else 0.0


def chat(channel: grpc.Channel, model: str, keep_alive: str | None = None) -> chat_pb2.CreateChatCompletionResponse:
    metadata = () if keep_alive is None else ((KEEP_ALIVE_KEY, keep_alive),)
    return chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(ask(model), timeout=WAIT_S, metadata=metadata)


@contextlib.contextmanager
def call_held_open(server: ServerThread, model: str) -> Iterator[Future[chat_pb2.CreateChatCompletionResponse]]:
    """A chat call naming ``model`` held open (in use: made ready, not answered) for the block, then let finish;
    yields its reply's future. Deterministic where a long generation would race the checks."""
    policy, release, entered = server.server.policy, asyncio.Event(), threading.Event()
    ready = policy.model_ready

    async def held(name: str, keep_alive: str | None) -> None:
        await ready(name, keep_alive)
        if name == model:
            entered.set()
            await release.wait()

    policy.model_ready = held
    with grpc.insecure_channel(server.target) as channel, ThreadPoolExecutor(1) as pool:
        reply = pool.submit(chat, channel, model)
        try:
            assert entered.wait(WAIT_S)
            yield reply
        finally:
            policy.model_ready = ready
            server.loop.call_soon_threadsafe(release.set)
        assert reply.result(WAIT_S).usage.completion_tokens > 0


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    running = start_server([spec("idle", idle_unload_s=IDLE_S), spec("lazy", load_on_request=True)])
    yield running
    running.stop()


@pytest.fixture
def channel(server: ServerThread) -> Iterator[grpc.Channel]:
    with grpc.insecure_channel(server.target) as opened:
        yield opened


def test_a_lazy_model_loads_on_its_first_requests_once_and_serves_them_all(
    server: ServerThread, channel: grpc.Channel
) -> None:
    assert states(channel)["lazy"] == "available"  # known, not loaded at start
    admin = server.server.admin
    original, loads, release = admin._load, [], threading.Event()

    def held(loaded: ModelSpec) -> object:  # the load waits until both requests wait for it
        loads.append(loaded.name)
        assert release.wait(WAIT_S)
        return original(loaded)

    admin._load = held  # type: ignore[method-assign]
    try:
        with ThreadPoolExecutor(2) as pool:
            replies = [pool.submit(chat, channel, "lazy") for _ in range(2)]
            await_true(
                lambda: loads == ["lazy"] and server.server.policy.calls_using(["lazy"]) == 2,
                "the load under way (held) and both requests waiting for it",
            )
            assert states(channel)["lazy"] == "loading"
            release.set()
            assert all(reply.result(WAIT_S).usage.completion_tokens > 0 for reply in replies)
    finally:
        admin._load = original  # type: ignore[method-assign]
        release.set()
    assert loads == ["lazy"]  # one load served both
    assert states(channel)["lazy"] == "loaded"


def test_an_idle_model_is_unloaded_after_its_idle_time_never_while_in_use_and_reloaded_on_request(
    server: ServerThread, channel: grpc.Channel
) -> None:
    chat(channel, "idle")  # (loaded again if an earlier test left it unloaded)
    with call_held_open(server, "idle"):
        time.sleep(3 * IDLE_S)  # past its idle time, with a call naming it open
        assert states(channel)["idle"] == "loaded"  # a model in use is not idle
        # Read while the call holds it: once it ends the model may go within IDLE_S.
        pid, idle_unloads = server.server.registry.model("idle").worker.pid, unloads(server, "idle", "idle")
    await_state(channel, "idle", "available")  # unloaded once idle for IDLE_S
    assert unloads(server, "idle", "idle") == idle_unloads + 1  # counted, and why
    assert pid is not None and not _running(pid)  # its process, and its memory, are gone
    assert chat(channel, "idle").usage.completion_tokens > 0  # the next request loads it again
    assert states(channel)["idle"] == "loaded"


def test_a_requests_keep_alive_overrides_the_idle_time(server: ServerThread, channel: grpc.Channel) -> None:
    assert chat(channel, "lazy", keep_alive="0").usage.completion_tokens > 0
    await_state(channel, "lazy", "available")  # 0: unloaded as soon as it is idle
    assert chat(channel, "idle", keep_alive="-1").usage.completion_tokens > 0  # kept until unloaded
    time.sleep(3 * IDLE_S)
    assert states(channel)["idle"] == "loaded"
    assert chat(channel, "idle", keep_alive="1s").usage.completion_tokens > 0  # the next request's counts
    await_state(channel, "idle", "available")
    with pytest.raises(grpc.RpcError) as refused:
        chat(channel, "idle", keep_alive="soon")
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "keep_alive" in (refused.value.details() or "")


def test_a_server_of_lazy_models_serves_before_any_is_loaded() -> None:
    running = start_server([spec("lazy", load_on_request=True)])
    try:
        with grpc.insecure_channel(running.target) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            overall = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=WAIT_S).status
            assert overall == health_pb2.HealthCheckResponse.SERVING  # a request would load its model
            assert states(channel) == {"lazy": "available"}
            assert chat(channel, "lazy").usage.completion_tokens > 0
    finally:
        running.stop()


def test_a_budget_of_two_models_unloads_the_least_recently_used_idle_one() -> None:
    budget = ResidencySettings(max_loaded_models=2)
    running = start_server([spec("a"), spec("b"), spec("c", load_on_request=True)], residency=budget)
    try:
        with grpc.insecure_channel(running.target) as channel:
            chat(channel, "a")
            chat(channel, "b")  # b used last
            evictions = unloads(running, "a", "room")
            assert chat(channel, "c").usage.completion_tokens > 0  # a third: a, the least recently used, goes
            assert states(channel) == {"a": "available", "b": "loaded", "c": "loaded"}
            assert unloads(running, "a", "room") == evictions + 1
            # b is in use although c was used after it: a's load makes room from c, the idle one.
            with call_held_open(running, "b"):
                assert chat(channel, "a").usage.completion_tokens > 0
                assert states(channel) == {"a": "loaded", "b": "loaded", "c": "available"}
    finally:
        running.stop()


def test_a_load_with_every_model_in_use_waits_for_room_then_is_refused() -> None:
    budget = ResidencySettings(max_loaded_models=1, model_load_wait_s=1.0)
    running = start_server([spec("a"), spec("b", load_on_request=True)], residency=budget)
    try:
        with grpc.insecure_channel(running.target) as channel:
            with call_held_open(running, "a"):
                with pytest.raises(grpc.RpcError) as refused:
                    chat(channel, "b")
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "no room to load model 'b'" in (refused.value.details() or "")
                assert states(channel) == {"a": "loaded", "b": "available"}  # b's state did not change
            running.server.keeper.settings = ResidencySettings(max_loaded_models=1)  # waits long enough to load
            assert chat(channel, "b").usage.completion_tokens > 0  # a is idle now: it makes room
            assert states(channel) == {"a": "available", "b": "loaded"}
    finally:
        running.stop()


def test_a_memory_budget_counts_what_the_models_processes_hold() -> None:
    budget = ResidencySettings(models_memory_gb=0.01)  # smaller than any one model: each load unloads the others
    running = start_server([spec("a"), spec("b"), spec("c", load_on_request=True)], residency=budget)
    try:
        keeper = running.server.keeper
        with grpc.insecure_channel(running.target) as channel:
            assert states(channel) == {"a": "available", "b": "loaded", "c": "available"}  # b made room at start
            assert chat(channel, "c").usage.completion_tokens > 0
            assert states(channel) == {"a": "available", "b": "available", "c": "loaded"}
            assert keeper._held["b"] > 10 * 2**20  # what b's process held, measured (tiny-chat's: ~150 MiB)
    finally:
        running.stop()


def _running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie not reaped yet holds no memory: not running)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return False


def test_a_gguf_file_offered_by_a_models_directory_is_converted_and_loaded_on_its_first_request(
    tmp_path: Path,
) -> None:
    offered = tmp_path / "offered"
    gguf_file(offered / "tiny.gguf")
    models = offered_models(offered, set(), TEST_SETTINGS, PipelineSettings())
    running = start_server(models, model_cache=tmp_path / "cache")
    try:
        with grpc.insecure_channel(running.target) as channel:
            assert states(channel) == {"tiny": "available"}  # listed, not converted at start
            assert not (tmp_path / "cache").exists()
            assert chat(channel, "tiny").usage.completion_tokens > 0  # converted, loaded, served
            assert states(channel) == {"tiny": "loaded"}
            assert any((tmp_path / "cache").iterdir())
            described = (
                model_pb2_grpc.ModelServiceStub(channel)
                .GetModel(model_pb2.GetModelRequest(model="tiny"), timeout=WAIT_S)
                .model
            )
            assert (described.source_kind, described.source) == ("gguf", str(offered / "tiny.gguf"))
    finally:
        running.stop()


@pytest.mark.parametrize("autoload", [True, False])
def test_a_request_for_a_lora_adapter_of_an_unloaded_model_loads_its_base_or_names_it(autoload: bool) -> None:
    base = spec("base", load_on_request=True, lora={"capitals": CAPITALS})
    running = start_server([base], residency=ResidencySettings(autoload=autoload))
    try:
        with grpc.insecure_channel(running.target) as channel:
            if autoload:
                assert chat(channel, "capitals").usage.completion_tokens > 0  # its base loaded for it
                assert states(channel) == {"base": "loaded", "capitals": "loaded"}
                return
            with pytest.raises(grpc.RpcError) as refused:
                chat(channel, "capitals")
            assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # it exists: not NOT_FOUND
            assert "LoRA adapter 'capitals' runs on model 'base', which is not loaded" in (
                refused.value.details() or ""
            )
    finally:
        running.stop()


def test_a_background_response_waiting_for_its_place_keeps_its_model_from_being_idle() -> None:
    running = start_server([spec("idle", idle_unload_s=IDLE_S), spec("other")], max_concurrent_requests=1)
    try:
        with grpc.insecure_channel(running.target) as channel:
            responses = response_pb2_grpc.ResponseServiceStub(channel)
            with call_held_open(running, "other"):  # holds the server's one place
                queued = responses.CreateResponse(parse(response_pb2.CreateResponseRequest, {
                    "model": "idle", "input": "Hi", "background": True, "max_output_tokens": 4,
                }), timeout=WAIT_S).response  # fmt: skip
                assert queued.status == objects_pb2.RESPONSE_STATUS_QUEUED
                time.sleep(3 * IDLE_S)  # past its idle time, no call naming it: a queued response uses it
                assert states(channel)["idle"] == "loaded"

            def status() -> int:
                got = responses.GetResponse(response_pb2.GetResponseRequest(response_id=queued.id), timeout=WAIT_S)
                return int(got.response.status)

            await_true(lambda: status() not in ACTIVE, "the background response ended")
            ran = (objects_pb2.RESPONSE_STATUS_COMPLETED, objects_pb2.RESPONSE_STATUS_INCOMPLETE)  # (max tokens)
            assert status() in ran  # on its model, still loaded: not failed
            await_state(channel, "idle", "available")  # and then the model is idle
    finally:
        running.stop()
