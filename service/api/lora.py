"""LoRA adapters loaded and unloaded at run time (ModelService.LoadLoraAdapter / UnloadLoraAdapter; vLLM's
/v1/load_lora_adapter and /v1/unload_lora_adapter).

Off unless the server runs with ``--allow-runtime-lora DIR``: an adapter is then read only from under DIR (a
request never names an arbitrary server path: every component of the path and of each file's, symlinks
included, resolves under DIR), checked as a start-up adapter is (service/engine/adapters.py) before anything
changes, and the base model's engine builds its pipeline again with the new set once its running requests end
(openvino-genai hooks an adapter's layers when a pipeline is built). The files are read and checked in a thread
of their own, bounded in time, outside the lock that makes the changes one at a time: a slow read holds up no
other load or unload.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc

from ovserve.clients.v1 import model_pb2
from ovserve.service.api.models import get_model
from ovserve.service.engine.adapters import AdapterError, LoraAdapter, read_adapter
from ovserve.service.errors import InvalidArgument, NotFound, ServiceError, quote
from ovserve.service.models import ModelRegistry, ServedModel
from ovserve.service.pipelines import PipelineKind

#: Linux's PATH_MAX and NAME_MAX: a longer path, or a longer name within one, names no file.
MAX_PATH_BYTES, MAX_NAME_BYTES = 4096, 255
#: The longest adapter name served (Hugging Face's repository ids, ``org/name``, stay under 100 characters).
MAX_LORA_NAME_CHARS = 256
#: How long reading and checking an adapter's files may take (a rank-256 adapter of a 70B model, some GB, is read
#: in seconds); past it the load is refused, and the thread left reading holds nothing else up.
LOAD_TIMEOUT_SECONDS = 60.0
T = TypeVar("T")


class RuntimeLora:
    """Loads and unloads the adapters of ``registry``'s models, from under ``directory`` (None: off)."""

    def __init__(self, registry: ModelRegistry, directory: Path | None) -> None:
        self._registry = registry
        self._directory = directory.resolve() if directory is not None else None
        self._changing = asyncio.Lock()

    async def load(self, request: model_pb2.LoadLoraAdapterRequest) -> model_pb2.Model:
        """LoadLoraAdapter: the adapter, served once the base model's engine took it."""
        directory = self._allowed()
        _check_name(request.lora_name)
        source = _source(request.lora_path, directory)
        base = self._base(request)
        self._check_free(request, base)
        adapter = await self._read(request.lora_name, source, base, directory)
        async with self._changing:
            self._check_free(request, base)  # (another load may have taken the name meanwhile)
            kept = tuple(value for name, value in base.engine.adapters.items() if name != request.lora_name)
            await base.engine.set_adapters((*kept, adapter))
            self._registry.refresh_adapters(base)
        return get_model(self._registry, model_pb2.GetModelRequest(model=request.lora_name)).model

    async def unload(self, request: model_pb2.UnloadLoraAdapterRequest) -> model_pb2.UnloadLoraAdapterResponse:
        """UnloadLoraAdapter."""
        self._allowed()
        async with self._changing:
            adapter = next((a for a in self._registry.adapters() if a.name == request.lora_name), None)
            if adapter is None:
                raise NotFound(f"no LoRA adapter {quote(request.lora_name)} is served", param="lora_name")
            base = self._registry.get(adapter.parent)
            kept = tuple(value for name, value in base.engine.adapters.items() if name != request.lora_name)
            await base.engine.set_adapters(kept)
            self._registry.refresh_adapters(base)
        return model_pb2.UnloadLoraAdapterResponse(lora_name=request.lora_name)

    async def _read(self, name: str, source: Path, base: ServedModel, directory: Path) -> LoraAdapter:
        """The adapter read and checked off the event loop, within LOAD_TIMEOUT_SECONDS; a 400 naming the field
        (``lora_path``, or the adapter_config.json field) if it cannot be served."""
        try:
            return await asyncio.wait_for(
                _in_thread(lambda: read_adapter(name, source, base.spec.path, directory)), LOAD_TIMEOUT_SECONDS
            )
        except AdapterError as error:
            raise InvalidArgument.of(error.field, str(error)) from None
        except TimeoutError:
            raise InvalidArgument.of(
                "lora_path", f"reading the adapter took longer than {LOAD_TIMEOUT_SECONDS:g} s"
            ) from None
        except OSError as error:  # a file the checks did not foresee (TimeoutError, an OSError, is caught above)
            raise InvalidArgument.of("lora_path", f"the adapter cannot be read: {error}") from None

    def _check_free(self, request: model_pb2.LoadLoraAdapterRequest, base: ServedModel) -> None:
        """409 if the name is served already, unless the request replaces an adapter of that name."""
        replacing = request.lora_name in base.engine.adapters
        if request.lora_name in self._served_names() and not (request.load_inplace and replacing):
            raise ServiceError(
                f"model {quote(request.lora_name)} is served already (load_inplace replaces an adapter)",
                code=grpc.StatusCode.ALREADY_EXISTS, reason="ALREADY_EXISTS", param="lora_name",
            )  # fmt: skip

    def _allowed(self) -> Path:
        if self._directory is None:
            raise ServiceError(
                "loading LoRA adapters at run time is off on this server (ovserve serve --allow-runtime-lora DIR)",
                code=grpc.StatusCode.PERMISSION_DENIED, reason="PERMISSION_DENIED",
            )  # fmt: skip
        return self._directory

    def _base(self, request: model_pb2.LoadLoraAdapterRequest) -> ServedModel:
        """The base model the request names, or the one generating model served."""
        if request.HasField("base_model_name"):
            base = self._registry.get(request.base_model_name, "base_model_name")
        else:
            generating = [m for m in self._registry if m.kind is PipelineKind.GENERATE]
            if len(generating) != 1:
                raise InvalidArgument.of("base_model_name", "required: several models are served")
            base = generating[0]  # type: ignore[assignment]
        assert isinstance(base, ServedModel)
        if base.parent:
            raise InvalidArgument.of("base_model_name", f"{quote(base.name)} is an adapter, not a base model")
        if base.engine.has_draft_model or base.spec.prompt_lookup or base.vision is not None:
            raise InvalidArgument.of(
                "base_model_name", "LoRA adapters are served on a text model without a draft model or prompt lookup"
            )
        return base

    def _served_names(self) -> set[str]:
        return {*self._registry.names, *(adapter.name for adapter in self._registry.adapters())}


def _check_name(name: str) -> None:
    """A name requests can give as ``model``: printable (no NUL, no control character), of bounded length."""
    if not name:
        raise InvalidArgument.of("lora_name", "required: the name requests will give as model")
    if len(name) > MAX_LORA_NAME_CHARS or not name.isprintable():
        raise InvalidArgument.of("lora_name", f"must be printable text of at most {MAX_LORA_NAME_CHARS} characters")


def _source(lora_path: str, directory: Path) -> Path:
    """``lora_path`` (relative to ``directory``, or absolute) with every component resolved, refused unless it is
    a path at all (no NUL, within Linux's lengths) and lies under ``directory``."""
    if not lora_path:
        raise InvalidArgument.of("lora_path", f"required: a directory under the server's {directory}")
    encoded = os.fsencode(lora_path)
    if b"\0" in encoded:
        raise InvalidArgument.of("lora_path", "contains a NUL character")
    if len(encoded) > MAX_PATH_BYTES or max(len(name) for name in encoded.split(b"/")) > MAX_NAME_BYTES:
        raise InvalidArgument.of(
            "lora_path", f"longer than a path can be ({MAX_PATH_BYTES} bytes, {MAX_NAME_BYTES} a name within it)"
        )
    resolved = Path(os.path.realpath(directory / lora_path))
    if not resolved.is_relative_to(directory) or len(os.fsencode(resolved)) > MAX_PATH_BYTES:
        raise InvalidArgument.of("lora_path", f"must be a directory under the server's {directory}")
    return resolved


def _in_thread(function: Callable[[], T]) -> asyncio.Future[T]:
    """``function``'s result, computed in a daemon thread of its own: unlike an executor's, a thread stuck past
    its caller's timeout takes no pool's place and does not hold up the process's exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: T | None, error: BaseException | None) -> None:
        if future.done():  # (the caller gave up)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        try:
            outcome: tuple[T | None, BaseException | None] = (function(), None)
        except BaseException as error:  # handed to the caller, who raises it
            outcome = (None, error)
        with contextlib.suppress(RuntimeError):  # (the loop closed meanwhile: nobody waits)
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=run, name="lora-read", daemon=True).start()
    return future
