"""LoRA adapters loaded and unloaded at run time (ModelService.LoadLoraAdapter / UnloadLoraAdapter; vLLM's
/v1/load_lora_adapter and /v1/unload_lora_adapter).

Off unless the server runs with ``--allow-runtime-lora DIR``: an adapter is then read only from under DIR (a
request never names an arbitrary server path), checked as a start-up adapter is (service/engine/adapters.py)
before anything changes, and the base model's engine builds its pipeline again with the new set once its running
requests end (openvino-genai hooks an adapter's layers when a pipeline is built). Changes are made one at a time.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc

from clients.v1 import model_pb2
from service.api.models import get_model
from service.engine.adapters import AdapterError, read_adapter
from service.errors import InvalidArgument, NotFound, ServiceError, quote
from service.models import ModelRegistry, ServedModel
from service.pipelines import PipelineKind


class RuntimeLora:
    """Loads and unloads the adapters of ``registry``'s models, from under ``directory`` (None: off)."""

    def __init__(self, registry: ModelRegistry, directory: Path | None) -> None:
        self._registry = registry
        self._directory = directory.resolve() if directory is not None else None
        self._changing = asyncio.Lock()

    async def load(self, request: model_pb2.LoadLoraAdapterRequest) -> model_pb2.Model:
        """LoadLoraAdapter: the adapter, served once the base model's engine took it."""
        directory = self._allowed()
        if not request.lora_name:
            raise InvalidArgument.of("lora_name", "required: the name requests will give as model")
        path = Path(request.lora_path).expanduser()
        resolved = (directory / path).resolve()
        if not request.lora_path or not resolved.is_relative_to(directory):
            raise InvalidArgument.of("lora_path", f"must be a directory under the server's {directory}")
        base = self._base(request)
        async with self._changing:
            served = self._served_names()
            replacing = request.lora_name in base.engine.adapters
            if request.lora_name in served and not (request.load_inplace and replacing):
                raise ServiceError(
                    f"model {quote(request.lora_name)} is served already (load_inplace replaces an adapter)",
                    code=grpc.StatusCode.ALREADY_EXISTS, reason="ALREADY_EXISTS", param="lora_name",
                )  # fmt: skip
            try:
                adapter = await asyncio.to_thread(read_adapter, request.lora_name, resolved, base.spec.path)
            except AdapterError as error:
                raise InvalidArgument.of("lora_path", str(error)) from None
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
