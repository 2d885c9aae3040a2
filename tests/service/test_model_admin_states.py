"""ModelAdmin's bookkeeping over fake processes (no engine): what a stopping server does with a model still
draining, a load that ends after the stop, a drain that waits on a process that does not answer."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ovserve.clients.v1 import model_pb2
from ovserve.service.model_states import ModelState
from ovserve.service.models import ModelRegistry, ModelSpec
from ovserve.service.pipelines import PipelineKind
from ovserve.service.server.model_admin import ModelAdmin
from ovserve.service.workers import Load


@dataclass
class FakeWorker:
    """A model's process that always has a request running (a drain waits on it) or never answers."""

    name: str
    answers: bool = True
    ended: list[str] = field(default_factory=list)
    closed: int = 0
    up: bool = True
    restarts: int = 0
    pid: int | None = None
    load_failure: str | None = None

    async def load(self) -> Load:
        if not self.answers:
            await asyncio.Event().wait()  # a wedged process
        return Load(running=1, waiting=0)

    def watch(self, listener: Callable[[bool], None]) -> None: ...

    def start(self) -> None: ...

    def end_requests(self, reason: str) -> None:
        self.ended.append(reason)

    def close(self) -> None:
        self.closed += 1


@dataclass
class FakeModel:
    name: str
    worker: FakeWorker
    kind: PipelineKind = PipelineKind.EMBED


def admin_of(
    model: FakeModel, load: Callable[[ModelSpec], FakeModel] | None = None
) -> tuple[ModelAdmin, ModelRegistry]:
    registry = ModelRegistry([model])  # type: ignore[list-item]
    spec = ModelSpec(model.name, Path("/nowhere"), kind=PipelineKind.EMBED)
    admin = ModelAdmin(
        registry, [spec], load=load or (lambda spec: model), started=lambda model: None, changed=lambda: None,
        calls_using=lambda names: 0,
    )  # type: ignore[arg-type]  # fmt: skip
    return admin, registry


async def until(condition: Callable[[], bool]) -> None:
    while not condition():
        await asyncio.sleep(0)


def test_a_stopping_server_ends_the_process_of_a_model_still_draining() -> None:
    async def scenario() -> FakeWorker:
        worker = FakeWorker("m")
        admin, registry = admin_of(FakeModel("m", worker))
        unloading = asyncio.create_task(admin.unload(model_pb2.UnloadModelRequest(model="m")))
        await until(lambda: registry.states.get("m").state is ModelState.UNLOADING)  # type: ignore[union-attr]
        assert worker.closed == 0  # it drains: a request runs
        admin.close()  # the server stops; its registry no longer holds this model
        unloading.cancel()
        return worker

    worker = asyncio.run(scenario())
    assert worker.closed == 1
    assert worker.ended == ["the server is shutting down while model 'm' was being unloaded"]


def test_a_force_is_heard_while_the_process_does_not_answer() -> None:
    async def scenario() -> tuple[FakeWorker, str]:
        worker = FakeWorker("m", answers=False)
        admin, registry = admin_of(FakeModel("m", worker))
        draining = asyncio.create_task(admin.unload(model_pb2.UnloadModelRequest(model="m")))
        await until(lambda: registry.states.get("m").state is ModelState.UNLOADING)  # type: ignore[union-attr]
        forced = await admin.unload(model_pb2.UnloadModelRequest(model="m", force=True))
        await draining
        return worker, forced.model.state

    worker, state = asyncio.run(scenario())
    assert state == "available"
    assert (worker.ended, worker.closed) == (["model 'm' was unloaded (force)"], 1)


def test_a_load_that_ends_after_the_stop_ends_its_process() -> None:
    async def scenario() -> tuple[FakeWorker, list[str]]:
        old, new = FakeWorker("m"), FakeWorker("m")
        admin, registry = admin_of(FakeModel("m", old), load=lambda spec: FakeModel("m", new))
        await admin.unload(model_pb2.UnloadModelRequest(model="m", force=True))
        admin.close()
        await admin.load("m")
        return new, registry.names

    new, served = asyncio.run(scenario())
    assert (new.closed, served) == (1, [])
