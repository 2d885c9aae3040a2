"""The TOML configuration reloaded on a running server, on the real engine (issue 45): a server started from a file
of two bundled tiny-chat copies; the file edited (a model changed, one added, then one removed) and reloaded over
gRPC and over HTTP while the unchanged model streams (its engine held still meanwhile: the reload neither waits
for it nor touches it, and the stream ends complete); the removed model NOT_FOUND / 404, the added one answers; a
user key refused; OVMS's reply shape; a file that does not parse changes nothing; SIGHUP's reload (a model loaded
at run time kept) and admin keys.
The tests run in order on one server. The plan and the apply order are tests/service/test_config_reload.py's."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import openai
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, model_pb2, model_pb2_grpc
from ovserve.rest_bridge.server import Bridge
from ovserve.service.config import from_arguments
from ovserve.service.server.composition import serve_parser
from tests.conftest import TINY_CHAT, ServerThread
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import parse
from tests.service.test_model_admin import finish_reasons, gone, stream_request

USER, ADMIN = "user-key", "admin-key"
WAIT_S = 120  # the bound of every call (a reload loads two models)
POLL_S = 0.05  # how often a test looks whether a background reload has ended
SCHEDULER = '[scheduler]\nmax_num_seqs = 64\ninference_precision = "f32"\n'  # tests/conftest.py's TEST_SETTINGS
# The model that streams through the reloads: its engine is held still (SIGSTOP) while one runs, so its
# supervisor must not take the silence for a wedged process.
STEADY = (
    f'[[models]]\nname = "tiny-chat"\npath = "{TINY_CHAT}"\n'
    "scheduler = { heartbeat_timeout_s = 600, stall_timeout_s = 600 }\n"
)


def entry(name: str, scheduler: str = "") -> str:
    """A [[models]] entry of a tiny-chat copy named ``name`` (``scheduler``: its inline table's settings)."""
    table = f"scheduler = {{ {scheduler} }}\n" if scheduler else ""
    return f'[[models]]\nname = "{name}"\npath = "{TINY_CHAT}"\n{table}'


START = SCHEDULER + STEADY + entry("other-chat")


def as_(key: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {key}"),)


def headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningBridge, Path]]:
    """``ovserve serve --config FILE`` (with a user key and an admin key file), a bridge in front; the file."""
    directory = tmp_path_factory.mktemp("reload")
    config_file, admin_file = directory / "serve.toml", directory / "admin-keys"
    config_file.write_text(START)
    admin_file.write_text(f"{ADMIN}\n")
    arguments = serve_parser().parse_args([
        "--no-rest", "--config", str(config_file), "--host", "127.0.0.1", "--port", "0", "--grace-seconds", "1",
        "--api-key", USER, "--admin-key-file", str(admin_file),
    ])  # fmt: skip
    server = ServerThread(from_arguments(arguments))
    server.server.reloader.arguments = arguments  # as `ovserve serve` gives it
    server.start()
    bridge = Bridge(server.target, "127.0.0.1", 0)
    server.run(bridge.start())
    try:
        yield RunningBridge(bridge, server), config_file
    finally:
        server.run(bridge.stop())
        server.stop()


def reload_over_grpc(target: str, key: str) -> model_pb2.ReloadConfigResponse:
    with grpc.insecure_channel(target) as channel:
        stub = model_pb2_grpc.ModelServiceStub(channel)
        return stub.ReloadConfig(model_pb2.ReloadConfigRequest(), metadata=as_(key), timeout=WAIT_S)


def listed(bridge: RunningBridge) -> dict[str, str]:
    data = http_request(bridge.port, "GET", "/v3/models", headers=headers(USER)).json()["data"]
    return {model["id"]: model["state"] for model in data}


def chat(bridge: RunningBridge, model: str) -> openai.types.chat.ChatCompletion:
    with openai.OpenAI(base_url=bridge.url, api_key=USER, max_retries=0, timeout=WAIT_S) as client:
        return client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)


def test_a_user_key_cannot_reload(served: tuple[RunningBridge, Path]) -> None:
    bridge, _ = served
    with pytest.raises(grpc.RpcError) as refused:
        reload_over_grpc(bridge.server.target, USER)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "admin key" in (refused.value.details() or "")
    for path in ("/v3/config/reload", "/v1/config/reload"):
        assert http_request(bridge.port, "POST", path, headers=headers(USER)).status == 403
        assert http_request(bridge.port, "POST", path).status == 401  # no key at all


def test_a_file_that_does_not_parse_changes_nothing(served: tuple[RunningBridge, Path]) -> None:
    bridge, config_file = served
    before, text = listed(bridge), config_file.read_text()
    config_file.write_text(text + "[[models]\n")  # not TOML
    try:
        refused = http_request(bridge.port, "POST", "/v3/config/reload", headers=headers(ADMIN))
        ovms = http_request(bridge.port, "POST", "/v1/config/reload", headers=headers(ADMIN))
    finally:
        config_file.write_text(text)
    assert refused.status == 400, refused.body
    assert refused.json()["error"]["param"] == "config"
    assert str(config_file) in refused.json()["error"]["message"]
    assert ovms.status == 400 and str(config_file) in ovms.json()["error"]  # OVMS's {"error": message}
    assert listed(bridge) == before
    unchanged = http_request(bridge.port, "POST", "/v1/config/reload", headers=headers(ADMIN))
    assert unchanged.status == 200, unchanged.body  # OVMS's: nothing needed reloading
    assert {status["model_version_status"][0]["state"] for status in unchanged.json().values()} == {"AVAILABLE"}


def test_models_changed_added_and_removed_while_the_unchanged_one_streams(served: tuple[RunningBridge, Path]) -> None:
    bridge, config_file = served
    registry = bridge.server.server.registry
    steady, other = registry.model("tiny-chat").worker.pid, registry.model("other-chat").worker.pid
    assert steady is not None and other is not None
    with grpc.insecure_channel(bridge.server.target) as channel:
        stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
            stream_request("tiny-chat", 1500), metadata=as_(USER), timeout=WAIT_S
        )
        first = next(stream)
        os.kill(steady, signal.SIGSTOP)  # the stream is certainly running while the file is reloaded
        try:
            assert bridge.server.server.policy.calls_using({"tiny-chat"}) == 1
            config_file.write_text(SCHEDULER + STEADY + entry("other-chat", "max_num_seqs = 32") + entry("new-chat"))
            reply = reload_over_grpc(bridge.server.target, ADMIN)
            assert bridge.server.server.policy.calls_using({"tiny-chat"}) == 1  # not drained, not ended
        finally:
            os.kill(steady, signal.SIGCONT)
        rest = list(stream)
    assert [(item.model, item.change, item.state, item.error) for item in reply.models] == [
        ("tiny-chat", "unchanged", "loaded", ""),
        ("other-chat", "changed", "loaded", ""),
        ("new-chat", "added", "loaded", ""),
    ]
    assert list(reply.restart_required) == []
    assert rest[-1].usage.completion_tokens == 1500  # every token, no error
    assert finish_reasons([first, *rest]) == [common_pb2.FINISH_REASON_LENGTH]
    assert registry.model("tiny-chat").worker.pid == steady
    assert gone(other) and registry.model("other-chat").worker.pid != other  # loaded again with its new settings
    assert registry.model("other-chat").spec.settings.max_num_seqs == 32
    assert chat(bridge, "new-chat").usage.completion_tokens > 0

    config_file.write_text(SCHEDULER + STEADY + entry("new-chat"))  # other-chat removed, over HTTP this time
    removed = http_request(bridge.port, "POST", "/v3/config/reload", headers=headers(ADMIN))
    assert removed.status == 200, removed.body
    assert removed.json() == {
        "models": [
            {"model": "tiny-chat", "change": "unchanged", "state": "loaded", "error": None},
            {"model": "new-chat", "change": "unchanged", "state": "loaded", "error": None},
            {"model": "other-chat", "change": "removed", "state": None, "error": None},
        ],
        "restart_required": [],
    }
    assert listed(bridge) == {"tiny-chat": "loaded", "new-chat": "loaded"}
    with pytest.raises(openai.NotFoundError):
        chat(bridge, "other-chat")
    with grpc.insecure_channel(bridge.server.target) as channel, pytest.raises(grpc.RpcError) as unknown:
        request = {"model": "other-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
        chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
            parse(chat_pb2.CreateChatCompletionRequest, request), metadata=as_(USER), timeout=WAIT_S
        )
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    with grpc.insecure_channel(bridge.server.target) as channel:  # its health name and its state series are gone
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="other-chat"))
        assert health.status == health_pb2.HealthCheckResponse.SERVICE_UNKNOWN
    exposition = bridge.server.run(bridge.server.server.metrics_exposition())[0].decode()
    assert 'ovserve_model_state{model="other-chat"' not in exposition
    assert 'ovserve_model_state{model="new-chat",state="loaded"} 1.0' in exposition
    assert chat(bridge, "tiny-chat").usage.completion_tokens > 0


async def hang_up(running: ServerThread) -> None:
    """What SIGHUP runs (``ovserve serve``'s handler), on the server's loop."""
    running.server.on_hangup()


def test_sighup_reads_the_admin_keys_and_the_file_again(served: tuple[RunningBridge, Path]) -> None:
    bridge, config_file = served
    admin_file = config_file.parent / "admin-keys"
    added = http_request(
        bridge.port, "POST", "/v3/models/runtime-chat/load", {"source": str(TINY_CHAT)}, headers=headers(ADMIN)
    )  # loaded at run time: not the file's, so a reload keeps it
    assert added.status == 200, added.body
    config_file.write_text(SCHEDULER + STEADY)  # every other model of the file removed
    admin_file.write_text("rotated-admin-key\n")
    bridge.server.run(hang_up(bridge.server))
    deadline = time.monotonic() + WAIT_S  # the reload runs in the background: its outcome awaited
    while listed(bridge) != {"tiny-chat": "loaded", "runtime-chat": "loaded"}:
        assert time.monotonic() < deadline, listed(bridge)
        time.sleep(POLL_S)
    rotated = http_request(bridge.port, "POST", "/v3/config/reload", headers=headers("rotated-admin-key"))
    assert rotated.status == 200, rotated.body
    assert [(item["model"], item["change"]) for item in rotated.json()["models"]] == [
        ("tiny-chat", "unchanged"),
        ("runtime-chat", "kept"),
    ]
    assert http_request(bridge.port, "POST", "/v3/config/reload", headers=headers(ADMIN)).status == 401
    admin_file.write_text("")  # emptied: the previous admin keys stay (logged), loads are not opened to all keys
    bridge.server.run(hang_up(bridge.server))
    assert http_request(bridge.port, "POST", "/v3/config/reload", headers=headers("rotated-admin-key")).status == 200
    assert http_request(bridge.port, "POST", "/v3/config/reload", headers=headers(USER)).status == 403
