"""A configuration reload without an engine (issue 45): the plan (old specs against the new file's), the server
settings that need a restart, the order a reload applies its changes in and how a failure is reported, and the
refusals (no file, a file that does not parse or is inconsistent). The served reload is
tests/rest_bridge/test_config_reload.py."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import model_pb2
from ovserve.rest_bridge.routes.config import ovms_reply, reload_reply
from ovserve.service.config import ServeConfig
from ovserve.service.engine import EngineSettings
from ovserve.service.errors import ServiceError
from ovserve.service.model_states import ModelState, ModelStates
from ovserve.service.models import ModelSpec
from ovserve.service.server.composition import serve_parser
from ovserve.service.server.config_reload import Change, ConfigReload, plan, restart_required, static_keys
from tests.conftest import TINY_CHAT

A, B, C = (ModelSpec(name, TINY_CHAT) for name in ("a", "b", "c"))


def test_the_plan_names_what_happens_to_each_model() -> None:
    known = {"a": A, "b": B, "runtime": ModelSpec("runtime", TINY_CHAT)}
    changed_b = dataclasses.replace(B, settings=EngineSettings(max_num_seqs=8))
    changes = plan(known, configured={"a", "b"}, new=[changed_b, C])
    assert changes == {"b": Change.CHANGED, "c": Change.ADDED, "a": Change.REMOVED, "runtime": Change.KEPT}
    assert list(changes) == ["b", "c", "a", "runtime"]  # the file's in its order, then removed, then kept


def test_the_same_spec_is_unchanged_whatever_its_provenance() -> None:
    from_elsewhere = dataclasses.replace(A, provenance=SimpleNamespace(source="org/a"))  # type: ignore[arg-type]
    assert plan({"a": A}, {"a"}, [from_elsewhere]) == {"a": Change.UNCHANGED}
    for change in ({"prompt_lookup": True}, {"tool_parser": "hermes"}, {"path": TINY_CHAT / "elsewhere"}):
        assert plan({"a": A}, {"a"}, [dataclasses.replace(A, **change)]) == {"a": Change.CHANGED}, change


def test_a_model_loaded_at_run_time_that_the_file_now_names_is_the_files() -> None:
    assert plan({"a": A}, configured=set(), new=[dataclasses.replace(A, prompt_lookup=True)]) == {"a": Change.CHANGED}
    assert plan({"a": A}, configured=set(), new=[A]) == {"a": Change.UNCHANGED}
    assert plan({"a": A}, configured=set(), new=[]) == {"a": Change.KEPT}


def test_server_settings_that_differ_need_a_restart(tmp_path: Path) -> None:
    running = ServeConfig(models=[A], port=50051, api_keys=("k",))
    new = dataclasses.replace(running, models=[B], port=50052, grace_seconds=3.0, tls_cert=Path("cert.pem"))
    assert restart_required(running, new, static_keys(running)) == ["port", "grace_seconds", "tls_cert"]
    # The scheduler defaults reach the models through their specs: not a server setting.
    assert restart_required(running, dataclasses.replace(running, engine_defaults=EngineSettings(max_num_seqs=2)),
                            static_keys(running)) == []  # fmt: skip
    assert restart_required(running, dataclasses.replace(running, api_keys=("k", "other")), {"k"}) == ["api_keys"]
    # A key file's keys are SIGHUP's to read again: a change in it is not one a restart must apply.
    key_file = tmp_path / "keys"
    key_file.write_text("from-file\n")
    keyed = dataclasses.replace(running, api_keys=("k", "from-file"), api_key_file=key_file)
    key_file.write_text("rotated\n")
    assert restart_required(keyed, dataclasses.replace(keyed, api_keys=("k", "rotated")), {"k"}) == []


class FakeAdmin:
    """ModelAdmin's part a reload uses, recording each step; ``failing``: models whose load fails."""

    def __init__(self, specs: list[ModelSpec], states: ModelStates, failing: set[str] = frozenset()) -> None:
        self._specs = {spec.name: spec for spec in specs}
        self._states = states
        self.failing = failing
        self.steps: list[tuple[str, str]] = []
        states.know(self._specs)
        for name in self._specs:
            states.set(name, ModelState.LOADED)

    @property
    def specs(self) -> dict[str, ModelSpec]:
        return dict(self._specs)

    def declare_spec(self, spec: ModelSpec) -> None:
        self.steps.append(("declare", spec.name))
        self._specs[spec.name] = spec
        self._states.know([spec.name])

    async def forget(self, name: str) -> None:
        self.steps.append(("forget", name))
        del self._specs[name]
        self._states.forget(name)

    async def unload(self, request: model_pb2.UnloadModelRequest) -> None:
        self.steps.append(("unload", request.model))
        self._states.set(request.model, ModelState.AVAILABLE)

    async def load(self, name: str) -> None:
        self.steps.append(("load", name))
        if name in self.failing:
            self._states.set(name, ModelState.FAILED, "SIGFPE")
            raise RuntimeError(f"the engine process of {name!r} died of SIGFPE while loading")
        self._states.set(name, ModelState.LOADED)


def reloader(admin: FakeAdmin, states: ModelStates, running: ServeConfig, new: ServeConfig) -> ConfigReload:
    """A ConfigReload whose file reads as ``new`` (from_arguments is patched by the caller)."""
    registry: Any = SimpleNamespace(states=states, adapters=lambda: [SimpleNamespace(name="adapter")])
    reload = ConfigReload(admin, registry, running, ready=lambda: True)  # type: ignore[arg-type]
    reload.arguments = SimpleNamespace(config=Path("serve.toml"))  # type: ignore[assignment]
    return reload


def test_a_reload_unloads_first_then_declares_then_loads_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    lazy = ModelSpec("lazy", TINY_CHAT, load_on_request=True)
    changed_b = dataclasses.replace(B, prompt_lookup=True)
    running = ServeConfig(models=[A, B, C])
    new = dataclasses.replace(running, models=[A, changed_b, ModelSpec("d", TINY_CHAT), lazy,
                                               ModelSpec("adapter", TINY_CHAT)], port=1)  # fmt: skip
    states = ModelStates()
    admin = FakeAdmin([A, B, C], states, failing={"d"})
    monkeypatch.setattr("ovserve.service.server.config_reload.from_arguments", lambda arguments: new)
    reply = asyncio.run(reloader(admin, states, running, new).reload())
    assert admin.steps == [
        ("forget", "c"), ("unload", "b"),  # what leaves or is replaced, first
        ("declare", "b"), ("declare", "d"), ("declare", "lazy"),  # the new settings
        ("load", "b"), ("load", "d"),  # the loads last; the lazy model waits for its first request
    ]  # fmt: skip
    described = {item.model: (item.change, item.state, item.error) for item in reply.models}
    assert described == {
        "a": ("unchanged", "loaded", ""),
        "b": ("changed", "loaded", ""),
        "d": ("added", "failed", "the engine process of 'd' died of SIGFPE while loading"),
        "lazy": ("added", "available", ""),
        "adapter": ("added", "", "'adapter' is the name of a served LoRA adapter: the model was not added"),
        "c": ("removed", "", ""),
    }
    assert list(reply.restart_required) == ["port"]
    # The REST faces: ovserve's and OVMS's (201: something changed; a model that does not serve is END).
    assert reload_reply(reply)["models"][5] == {"model": "c", "change": "removed", "state": None, "error": None}
    body, status = ovms_reply(reply)
    assert status == 201
    assert body["a"] == {"model_version_status": [
        {"version": "1", "state": "AVAILABLE", "status": {"error_code": "OK", "error_message": "OK"}}
    ]}  # fmt: skip
    assert body["d"]["model_version_status"][0]["state"] == "END"
    assert body["d"]["model_version_status"][0]["status"]["error_code"] == "UNKNOWN"


def test_a_changed_model_that_was_not_loaded_is_only_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    running = ServeConfig(models=[A])
    new = dataclasses.replace(running, models=[dataclasses.replace(A, prompt_lookup=True)])
    states = ModelStates()
    admin = FakeAdmin([A], states)
    states.set("a", ModelState.AVAILABLE)  # unloaded by an admin
    monkeypatch.setattr("ovserve.service.server.config_reload.from_arguments", lambda arguments: new)
    reply = asyncio.run(reloader(admin, states, running, new).reload())
    assert admin.steps == [("declare", "a")]
    assert [(item.change, item.state) for item in reply.models] == [("changed", "available")]
    assert ovms_reply(reply)[1] == 201
    monkeypatch.setattr("ovserve.service.server.config_reload.from_arguments", lambda arguments: new)
    again = asyncio.run(reloader(admin, states, new, new).reload())  # nothing differs now: OVMS's 200
    assert [item.change for item in again.models] == ["unchanged"] and ovms_reply(again)[1] == 200


def serve_arguments(*flags: str) -> Any:
    return serve_parser().parse_args(["--no-rest", *flags])


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[[models]\nname = 'a'", "(at line 1, column 9)"),  # not TOML
        (f"[[models]]\nname = 'a'\npath = '{TINY_CHAT}'\nscheduler = {{ max_seqs = 2 }}", "max_seqs"),
        (f"[[models]]\nname = 'a'\npath = '{TINY_CHAT}'\ntool_parser = 'no-such-parser'", "no-such-parser"),
        ("[[models]]\nname = 'a'\npath = '/no/such/model'", "/no/such/model"),
    ],
)
def test_a_file_that_does_not_parse_or_is_inconsistent_changes_nothing(tmp_path: Path, text: str, named: str) -> None:
    config = tmp_path / "serve.toml"
    config.write_text(text)
    states = ModelStates()
    admin = FakeAdmin([A], states)
    running = ServeConfig(models=[A])
    reload = reloader(admin, states, running, running)
    reload.arguments = serve_arguments("--config", str(config))
    with pytest.raises(ServiceError) as refused:
        asyncio.run(reload.reload())
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT and refused.value.param == "config"
    assert str(config) in str(refused.value) and named in str(refused.value)
    assert admin.steps == []


def test_without_a_file_or_before_the_models_load_there_is_no_reload() -> None:
    states = ModelStates()
    admin = FakeAdmin([A], states)
    running = ServeConfig(models=[A])
    reload = reloader(admin, states, running, running)
    reload.arguments = serve_arguments()  # started without --config
    with pytest.raises(ServiceError) as refused:
        asyncio.run(reload.reload())
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "without --config" in str(refused.value)
    reload.arguments = serve_arguments("--config", "serve.toml")
    reload._ready = lambda: False  # the start-up load still runs
    with pytest.raises(ServiceError) as starting:
        asyncio.run(reload.reload())
    assert starting.value.code == grpc.StatusCode.UNAVAILABLE
    assert admin.steps == []
