"""The TOML configuration reloaded at run time (issue 45): ModelService.ReloadConfig, POST /v3/config/reload, OVMS's
POST /v1/config/reload and SIGHUP.

The file (``--config``) is read again with the command-line flags the server started with (``from_arguments`` on
the same argparse Namespace, in a thread: a new model may be converted), and the new list of models is compared
with the ones the server knows (``plan``): a new model is declared and loaded (unless it loads on request); one
gone from the file is forgotten (drained, unloaded, then NOT_FOUND); a changed one (its spec differs; where its
weights came from does not count) is unloaded once its calls end and loaded with its new settings if it was
loaded, else only declared; an unchanged one is not touched, so its streams go on. Models added at run time by
LoadModel with a source are not the file's: they stay ("kept"). The server's own settings (host, port, TLS, the
stores...) cannot change while it runs: those that differ are named in the reply as needing a restart. A file
that does not parse or is inconsistent changes nothing (INVALID_ARGUMENT naming it).

One reload at a time: a second waits for the first, then reads the file as it is then (a SIGHUP and an admin's
call, or two admins, do not interleave their unloads and loads). Once asked, a reload finishes even if its caller
leaves (as an unload does).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import enum
import logging
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc

from ovserve.clients.v1 import model_pb2
from ovserve.service.config import ServeConfig, from_arguments, key_file_keys
from ovserve.service.errors import InvalidArgument, ServiceError, Unavailable
from ovserve.service.model_states import ModelState
from ovserve.service.models import ModelRegistry, ModelSpec
from ovserve.service.server.model_admin import ModelAdmin

log = logging.getLogger(__name__)


class Change(enum.Enum):
    """What a reload does to one model; its value is what ReloadConfig's reply says."""

    ADDED = "added"  # new in the file: declared, then loaded unless it loads on request
    REMOVED = "removed"  # gone from the file: drained, unloaded, forgotten
    CHANGED = "changed"  # its settings differ: loaded again with them if it was loaded
    UNCHANGED = "unchanged"  # untouched
    KEPT = "kept"  # loaded at run time with a source, not the file's: untouched


# ServeConfig's fields a reload does not compare: the models (compared one by one), what reaches them only through
# their specs (the [scheduler] defaults, the pipeline flags), and the keys, which SIGHUP reads again from their
# files (the static ones are compared apart: see ``restart_required``).
NOT_SERVER_SETTINGS = frozenset({"models", "engine_defaults", "pipelines", "api_keys", "api_key_file", "admin_keys"})


def plan(known: Mapping[str, ModelSpec], configured: Collection[str], new: Iterable[ModelSpec]) -> dict[str, Change]:
    """What a reload to the models ``new`` does to each model, by name: the new ones in their order, then those
    it removes, then those it keeps.

    ``known``: every model the server knows now, with its spec; ``configured``: those of them that came from the
    configuration (the others were loaded at run time with a source, and are kept unless the file names them).
    """
    changes: dict[str, Change] = {}
    for spec in new:
        old = known.get(spec.name)
        changes[spec.name] = Change.ADDED if old is None else Change.UNCHANGED if old == spec else Change.CHANGED
    for name in known:
        if name not in changes:
            changes[name] = Change.REMOVED if name in configured else Change.KEPT
    return changes


def static_keys(config: ServeConfig) -> set[str]:
    """The API keys of ``config`` that are not its key file's ([server] api_keys and --api-key): those a reload
    cannot change (the key file's are read again on SIGHUP)."""
    from_file = set(key_file_keys(config.api_key_file)) if config.api_key_file else set()
    return set(config.api_keys) - from_file


def restart_required(running: ServeConfig, new: ServeConfig, running_keys: set[str]) -> list[str]:
    """The server settings of ``new`` that differ from the ``running`` server's: they apply at the next start.
    ``running_keys``: the running server's static API keys (``static_keys`` of its start configuration)."""
    differing = [
        setting.name
        for setting in dataclasses.fields(ServeConfig)
        if setting.name not in NOT_SERVER_SETTINGS and getattr(running, setting.name) != getattr(new, setting.name)
    ]
    if static_keys(new) != running_keys:
        differing.append("api_keys")
    return differing


@dataclasses.dataclass
class _Outcome:
    """What happened to one model while a reload applied its change."""

    change: Change
    error: str = ""


class ConfigReload:
    """Reloads the configuration of a running server: its models through ``admin``, what the reply shows from
    ``registry``; ``running``: the configuration the server started from.

    ``arguments`` is the parsed command line the server started from (set by the composition root; None, or one
    without ``--config``: there is no file, and a reload is FAILED_PRECONDITION).
    """

    def __init__(
        self, admin: ModelAdmin, registry: ModelRegistry, running: ServeConfig, ready: Callable[[], bool]
    ) -> None:
        self.arguments: argparse.Namespace | None = None
        self._admin = admin
        self._registry = registry
        self._running = running
        self._running_keys = static_keys(running)
        self._ready = ready  # whether the start-up load is over (a reload before then would race it)
        self._configured = {spec.name for spec in running.models}  # the file's and the flags' models
        self._turn = asyncio.Lock()  # one reload at a time
        self._background: set[asyncio.Task[Any]] = set()

    @property
    def config_file(self) -> Path | None:
        """The TOML file reloads read; None when the server was started without one."""
        return None if self.arguments is None else getattr(self.arguments, "config", None)

    async def reload(self) -> model_pb2.ReloadConfigResponse:
        """ReloadConfig: read the file again and apply what changed in its models (see the module's docstring)."""
        if self.config_file is None:
            raise ServiceError(
                "this server was started without --config: there is no configuration file to reload",
                code=grpc.StatusCode.FAILED_PRECONDITION, reason="FAILED_PRECONDITION", param="config",
            )  # fmt: skip
        if not self._ready():
            raise Unavailable("the server is still loading the models it started with; reload once it serves")
        task = asyncio.get_running_loop().create_task(self._reload_in_turn())
        self._background.add(task)
        task.add_done_callback(self._finished)
        return await asyncio.shield(task)  # asked once, it finishes even if its caller leaves

    def reload_in_background(self) -> None:
        """SIGHUP: reload when there is a file (a server started without one reloads only its keys); the outcome
        is logged."""
        if self.config_file is None:
            return
        task = asyncio.get_running_loop().create_task(self._logged_reload())
        self._background.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        """A reload's task ended: its caller (if still there) has its outcome; a bug is logged even if none is."""
        self._background.discard(task)
        error = None if task.cancelled() else task.exception()
        if error is not None and not isinstance(error, ServiceError):
            log.error("the configuration reload failed", exc_info=error)

    async def _logged_reload(self) -> None:
        try:
            await self.reload()
        except ServiceError as error:
            log.error("configuration not reloaded: %s", error)

    async def _reload_in_turn(self) -> model_pb2.ReloadConfigResponse:
        async with self._turn:
            arguments = self.arguments
            assert arguments is not None  # (checked by reload)
            try:
                new = await asyncio.to_thread(from_arguments, arguments)
            except (ValueError, OSError) as error:  # ConfigError, SourceError, TOMLDecodeError, an unreadable file
                raise InvalidArgument.of("config", f"{self.config_file}: {error}; nothing was changed") from None
            restart = restart_required(self._running, new, self._running_keys)
            outcomes = await self._apply(new.models)
            self._configured = {spec.name for spec in new.models}
        done = {change: [name for name, outcome in outcomes.items() if outcome.change is change] for change in Change}
        log.info(
            "configuration reloaded from %s: added %s, removed %s, changed %s%s%s",
            self.config_file,
            done[Change.ADDED] or "none",
            done[Change.REMOVED] or "none",
            done[Change.CHANGED] or "none",
            "".join(f"; {name} failed: {outcome.error}" for name, outcome in outcomes.items() if outcome.error),
            f"; not applied until a restart: {', '.join(restart)}" if restart else "",
        )
        return model_pb2.ReloadConfigResponse(
            models=[self._described(name, outcome) for name, outcome in outcomes.items()], restart_required=restart
        )

    async def _apply(self, models: Sequence[ModelSpec]) -> dict[str, _Outcome]:
        """Apply ``plan``'s changes: what leaves or is replaced first (concurrently: each drains its own calls, and
        their memory goes back before new models load), then the new settings, then the loads one at a time (as
        at start: two models compiling at once would share the cores and the memory)."""
        specs = {spec.name: spec for spec in models}
        outcomes = {
            name: _Outcome(change) for name, change in plan(self._admin.specs, self._configured, models).items()
        }
        adapters = {adapter.name for adapter in self._registry.adapters()}
        for name, outcome in outcomes.items():
            if outcome.change is Change.ADDED and name in adapters:
                outcome.error = f"{name!r} is the name of a served LoRA adapter: the model was not added"
        reloading = {
            name for name, outcome in outcomes.items() if outcome.change is Change.CHANGED and self._loaded(name)
        }
        leaving = [
            self._attempt(outcomes[name], self._admin.forget(name))
            for name, outcome in outcomes.items()
            if outcome.change is Change.REMOVED
        ]
        unloading = [
            self._attempt(outcomes[name], self._admin.unload(model_pb2.UnloadModelRequest(model=name)))
            for name in reloading
        ]
        await asyncio.gather(*leaving, *unloading)
        loads = []
        for name, outcome in outcomes.items():
            if outcome.change in (Change.ADDED, Change.CHANGED) and not outcome.error:
                self._admin.declare_spec(specs[name])
                if (outcome.change is Change.ADDED or name in reloading) and not specs[name].load_on_request:
                    loads.append(name)
        for name in loads:
            await self._attempt(outcomes[name], self._admin.load(name))
        return outcomes

    def _loaded(self, name: str) -> bool:
        """Whether ``name`` serves, or is on its way to (a changed model is then loaded again after the reload)."""
        status = self._registry.states.get(name)
        return status is not None and status.state in (ModelState.LOADED, ModelState.LOADING)

    async def _attempt(self, outcome: _Outcome, step: Coroutine[Any, Any, Any]) -> None:
        """Run one model's step; a failure is that model's outcome, not the reload's (the others go on)."""
        try:
            await step
        except Exception as error:  # an EngineError names the signal or exception and the settings
            outcome.error = str(error) or type(error).__name__

    def _described(self, name: str, outcome: _Outcome) -> model_pb2.ModelChange:
        status = self._registry.states.get(name)
        state = "" if status is None else status.state.value
        return model_pb2.ModelChange(model=name, change=outcome.change.value, state=state, error=outcome.error)
