"""Which models stay loaded (issue 45): loads on request, idle unloads, and a budget of models and memory.

Every API call naming a model passes ``ready`` first (the call policy's hook, service/server/interceptors.py),
counted as using that model already: a known model that is not loaded is loaded then (through ModelAdmin, so two
calls make one load), and the call waits for it at most ``--model-load-wait-s``. Each call's end is the model's
last use; a loaded model unused for its idle time (its ``idle_unload_s``, or the last request's ``keep_alive``)
is unloaded by ``run``. A load that would pass ``--max-loaded-models`` or ``--models-memory-gb`` first unloads
the least recently used idle models (ModelAdmin.unload_idle: no call names it, its process runs and queues
nothing), or waits for one to become idle; a model in use is never unloaded for room or idleness.

Memory is the models' processes' resident size, read from /proc (Linux); a model not loaded yet counts as its
weights' files plus its KV cache size when set, or as what its processes held when it was last loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path

from ovserve.clients.keep_alive import keep_alive_seconds
from ovserve.service.errors import InvalidArgument, ResourceExhausted, ServiceError, Unavailable, quote
from ovserve.service.model_states import ModelState
from ovserve.service.models import ModelRegistry, ModelSpec
from ovserve.service.residency import ResidencySettings
from ovserve.service.server.model_admin import ModelAdmin

log = logging.getLogger(__name__)

#: How often idle models are looked for (a keep_alive of 0 unloads within about this long).
IDLE_TICK_SECONDS = 0.5
#: How often a load waiting for room looks again whether a model has become idle.
ROOM_POLL_SECONDS = 0.2
#: The files a model's weights are in (OpenVINO's IR, a checkpoint's, a GGUF file).
WEIGHT_SUFFIXES = (".bin", ".safetensors", ".gguf")
GIB = 2**30


class ModelKeeper:
    """Loads the models requests name, and unloads the idle ones (``run``) and the ones in the way of a load."""

    def __init__(
        self,
        admin: ModelAdmin,
        registry: ModelRegistry,
        calls_using: Callable[[Iterable[str]], int],
        settings: ResidencySettings,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._admin, self._registry, self._calls_using = admin, registry, calls_using
        self.settings = settings
        self._clock = clock
        self._last_used: dict[str, float] = {}  # by model: when a call naming it last began or ended
        self._keep_alive: dict[str, float] = {}  # by model: the last request's keep_alive, until the next one
        self._held: dict[str, int] = {}  # by model: the most its processes held while loaded, bytes
        self._room = asyncio.Lock()  # loads that may need room made take turns
        self._waiting_for_room: dict[str, str] = {}  # loads waiting for a model to become idle: what they would pass

    async def ready(self, name: str, keep_alive: str | None = None) -> None:
        """Before a call naming ``name`` runs (it already counts as using it): note the use and its keep-alive,
        and load the model if it is known and not loaded, waiting at most ``model_load_wait_s``.

        A model that is unknown, or FAILED, or not loaded with autoload off is left to the registry, which refuses
        the call naming its state. INVALID_ARGUMENT naming ``keep_alive`` for one that is not a duration;
        UNAVAILABLE when the load outlasts the wait (it goes on); what the load raised when it failed for room.
        """
        base = self._registry.states.base(name)
        if base is None:
            return
        self._last_used[base] = self._clock()
        if keep_alive is not None:
            try:
                self._keep_alive[base] = keep_alive_seconds(keep_alive)
            except ValueError as error:
                raise InvalidArgument.of("keep_alive", str(error)) from None
        status = self._registry.states.get(base)
        if status is None or status.state in (ModelState.LOADED, ModelState.FAILED) or not self.settings.autoload:
            return
        loading = asyncio.ensure_future(self._admin.load(base))
        loading.add_done_callback(_retrieved)  # a caller gone before the load ends leaves its outcome unread
        wait = self.settings.model_load_wait_s
        await asyncio.wait([loading], timeout=wait)
        if not loading.done() and base in self._waiting_for_room:
            raise ResourceExhausted(
                f"no room to load model {quote(base)} within {wait:g} s (--model-load-wait-s): "
                f"{self._waiting_for_room[base]}, and every loaded model is in use; retry later",
                param="model",
            )
        if not loading.done():
            raise Unavailable(
                f"model {quote(base)} is still loading after {wait:g} s (--model-load-wait-s); retry shortly",
                reason="MODEL_NOT_LOADED", param="model",
            )  # fmt: skip
        failure = loading.exception()
        if isinstance(failure, ServiceError):  # no room for it, or it is being removed
            raise failure
        # A failed load leaves the model FAILED with its cause: the registry's refusal names it.

    def finished(self, name: str) -> None:
        """A call naming ``name`` ended: the model's last use."""
        if (base := self._registry.states.base(name)) is not None:
            self._last_used[base] = self._clock()

    def idle_unload_s(self, name: str) -> float:
        """How long the loaded model ``name`` stays loaded unused: the last request's keep_alive, else its
        ``idle_unload_s``; ``math.inf``: until unloaded."""
        if name in self._keep_alive:
            return self._keep_alive[name]
        spec = self._admin.specs.get(name)
        return math.inf if spec is None or spec.idle_unload_s is None else spec.idle_unload_s

    async def run(self) -> None:
        """Unload each loaded model once it has been idle for its idle time (until cancelled)."""
        while True:
            await asyncio.sleep(IDLE_TICK_SECONDS)
            now = self._clock()
            for name in self._registry.names:
                if self.settings.models_memory_gb is not None:  # (/proc reads on the loop only where they count)
                    self._note_held(name)
                idle_for = now - self._last_used.setdefault(name, now)
                if idle_for >= self.idle_unload_s(name) and await self._admin.unload_idle(name, "idle"):
                    log.info("model %r unloaded after %.0f s idle", name, idle_for)

    @contextlib.asynccontextmanager
    async def admission(self, name: str) -> AsyncIterator[None]:
        """Around the load of ``name`` (ModelAdmin's admission): idle models unloaded first, least recently used
        first, until it fits the budget; RESOURCE_EXHAUSTED after ``model_load_wait_s`` without room."""
        if self.settings.max_loaded_models is None and self.settings.models_memory_gb is None:
            yield
            return
        async with self._room:
            deadline = self._clock() + self.settings.model_load_wait_s
            while (over := self._over_budget(name)) is not None:
                self._waiting_for_room[name] = over
                if not await self._unload_one_idle(name):
                    if self._clock() >= deadline:
                        self._waiting_for_room.pop(name, None)
                        raise ResourceExhausted(
                            f"no room to load model {quote(name)}: {over}, and every loaded model is in use; "
                            "retry later",
                            param="model",
                        )
                    await asyncio.sleep(ROOM_POLL_SECONDS)
            self._waiting_for_room.pop(name, None)
            yield

    def _over_budget(self, name: str) -> str | None:
        """What loading ``name`` now would pass, in words; None when it fits (or when nothing else is loaded: a
        model is never refused for being larger than the budget alone)."""
        loaded = [other for other in self._registry.names if other != name]
        if not loaded:
            return None
        limit = self.settings.max_loaded_models
        if limit is not None and len(loaded) + 1 > limit:
            return f"{len(loaded)} models are loaded (--max-loaded-models {limit})"
        held = sum(self._note_held(other) for other in loaded)
        needed = self._needs(name)
        if held + needed > self.settings.budget_bytes:
            return (
                f"the loaded models hold {held / GIB:.2f} GB and it needs about {needed / GIB:.2f} GB "
                f"(--models-memory-gb {self.settings.models_memory_gb:g})"
            )
        return None

    async def _unload_one_idle(self, loading: str) -> bool:
        """Unload the least recently used idle model but ``loading``; whether one was."""
        others = sorted(
            (name for name in self._registry.names if name != loading),
            key=lambda name: self._last_used.get(name, -math.inf),
        )
        for name in others:
            if await self._admin.unload_idle(name, "room"):
                log.info("model %r unloaded to make room for %r (least recently used, idle)", name, loading)
                return True
        return False

    def _note_held(self, name: str) -> int:
        """What the loaded model ``name``'s processes hold now, bytes (and the most they held, for its next load)."""
        model = next((model for model in self._registry if model.name == name), None)
        pid = model.worker.pid if model is not None else None
        held = tree_rss_bytes(pid) if pid is not None else 0
        self._held[name] = max(held, self._held.get(name, 0))
        return held

    def _needs(self, name: str) -> int:
        """About what the model ``name`` will hold once loaded, bytes: what it held when last loaded, else its
        weights' files and its KV cache size when set."""
        if name in self._held:
            return self._held[name]
        spec = self._admin.specs.get(name)
        return 0 if spec is None else estimated_bytes(spec)


def estimated_bytes(spec: ModelSpec) -> int:
    """What a model not loaded yet will hold, about: its (and its draft's) weights' files, and its KV cache size
    when one is set."""
    directories = [path for path in (spec.path, spec.draft_path) if path is not None]
    weights = sum(_weights_bytes(Path(path)) for path in directories)
    cache = spec.settings.cache_size_gb or 0
    return weights + int(cache * GIB)


def _weights_bytes(path: Path) -> int:
    files = [path] if path.is_file() else [file for file in path.iterdir() if file.is_file()] if path.is_dir() else []
    return sum(file.stat().st_size for file in files if file.suffix in WEIGHT_SUFFIXES)


def tree_rss_bytes(pid: int) -> int:
    """The resident size of process ``pid`` and its descendants, bytes (0 for a process gone or unreadable)."""
    total, pending, seen = 0, [pid], set()
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        total += _rss_bytes(current)
        pending.extend(_children(current))
    return total


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    children: list[int] = []
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            children += [int(child) for child in (task / "children").read_text().split()]
    return children


def _retrieved(task: asyncio.Future[None]) -> None:
    """Read a finished load's outcome, so that one nobody waits for any more is not reported as never read."""
    if not task.cancelled():
        task.exception()
