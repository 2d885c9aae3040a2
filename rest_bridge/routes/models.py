"""GET /models and /models/{id}: OpenAI's model objects, with what each model serves and its state; POST
/models/{id}/load and /unload (and llama.cpp's /models/load and /models/unload): models loaded and unloaded at run
time (an admin key's calls, once the server has keys)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ovserve.clients.v1 import model_pb2
from ovserve.rest_bridge.handler import BridgeHandler, JsonBodyHandler
from ovserve.rest_bridge.translate.message import message_from_body
from ovserve.rest_bridge.translate.proto_json import without_nulls

T = TypeVar("T")


def model(value: model_pb2.Model) -> dict[str, Any]:
    """OpenAI's model object, with vLLM's max_model_len, what the model serves (task) and, for a generating
    model, where its chat template came from and which parsers read its output (null: none), and what it was
    built from."""
    body: dict[str, Any] = {
        "id": value.id,
        "object": "model",
        "created": value.created,
        "owned_by": value.owned_by,
        "max_model_len": value.max_model_len,
        "task": value.task,
        "state": value.state or None,  # available, loading, loaded, unloading or failed
    }
    if value.state_reason:
        body["state_reason"] = value.state_reason
    if value.chat_template_source:
        body["chat_template_source"] = value.chat_template_source
        body["chat_template_engine"] = value.chat_template_engine or None
        body["chat_template_engine_reason"] = value.chat_template_engine_reason or None
        body["tool_parser"] = value.tool_parser or None
        body["reasoning_parser"] = value.reasoning_parser or None
        # Why each was chosen (the template's evidence, or the flag), so a wrong guess can be seen and overridden.
        body["tool_parser_evidence"] = value.tool_parser_evidence or None
        body["reasoning_parser_evidence"] = value.reasoning_parser_evidence or None
    if value.source:  # what it was built from (service/sources): null where it does not apply
        body.update({name: getattr(value, name) or None for name in PROVENANCE})
    body["parent"] = value.parent or None  # vLLM's: a LoRA adapter's base model (null for a model of its own)
    if value.root:
        body["root"] = value.root
    return body


# The model object's provenance fields, named as in the contract.
PROVENANCE = ("source", "source_kind", "revision", "weight_format", "precision")


def model_list(response: model_pb2.ListModelsResponse) -> dict[str, Any]:
    """OpenAI's model list object."""
    return {"object": "list", "data": [model(item) for item in response.data]}


class ModelsHandler(BridgeHandler):
    """GET /v3/models."""

    async def get(self) -> None:
        await self.answer(self.backend.models.ListModels, model_pb2.ListModelsRequest(), model_list)


class ModelHandler(BridgeHandler):
    """GET /v3/models/{model}; the id may contain "/"."""

    async def get(self, model_id: str) -> None:
        request = model_pb2.GetModelRequest(model=model_id)
        await self.answer(self.backend.models.GetModel, request, lambda reply: model(reply.model))


def load_request(body: dict[str, Any]) -> model_pb2.LoadLoraAdapterRequest:
    """vLLM's LoadLoRAAdapterRequest: ``lora_name``, ``lora_path``, ``load_inplace`` (and ``base_model_name``)."""
    return message_from_body(
        body,
        model_pb2.LoadLoraAdapterRequest,
        without_nulls,
        allowed={"lora_name", "lora_path", "load_inplace", "base_model_name"},
    )


def unload_request(body: dict[str, Any]) -> model_pb2.UnloadLoraAdapterRequest:
    """vLLM's UnloadLoRAAdapterRequest: ``lora_name`` (its ``lora_int_id`` accepted, unused: names are unique)."""
    body = {key: value for key, value in body.items() if key != "lora_int_id"}
    return message_from_body(body, model_pb2.UnloadLoraAdapterRequest, without_nulls, allowed={"lora_name"})


class LoadLoraHandler(JsonBodyHandler):
    """POST /v1/load_lora_adapter: 200 with vLLM's plain-text line once the adapter is served."""

    async def post(self) -> None:
        request = await self.translated(load_request)
        await self.unary(self.backend.models.LoadLoraAdapter, request)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"Success: LoRA adapter '{request.lora_name}' added successfully.")


class UnloadLoraHandler(JsonBodyHandler):
    """POST /v1/unload_lora_adapter: 200 with vLLM's plain-text line once the adapter is gone."""

    async def post(self) -> None:
        request = await self.translated(unload_request)
        await self.unary(self.backend.models.UnloadLoraAdapter, request)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(f"Success: LoRA adapter '{request.lora_name}' removed successfully.")


async def loaded(handler: BridgeHandler, request: model_pb2.LoadModelRequest) -> model_pb2.Model:
    """The model once LoadModel's stream says it is loaded (its events before are progress)."""
    handler.call = handler.backend.models.LoadModel(request, **handler.grpc_options())
    last = model_pb2.LoadModelResponse()
    async with handler.call_errors():
        async for event in handler.call:
            last = event
    return last.model


class AdminBodyHandler(JsonBodyHandler):
    """A load or unload whose JSON body may be left out (an empty body is ``{}``, as curl -X POST sends it)."""

    async def optional(self, translate: Callable[[dict[str, Any]], T]) -> T:
        """The body (``{}`` when there is none) passed through ``translate``, as ``translated`` does."""
        return await self.translated(translate) if self._size or self._too_large else translate({})


class LoadModelHandler(AdminBodyHandler):
    """POST /v3/models/{model}/load: the model object once it is loaded; for a model not declared at start the body
    gives ``source`` (as --model takes it) and ``settings`` (a [[models]] entry's keys)."""

    async def post(self, model_id: str) -> None:
        request = await self.optional(
            lambda body: message_from_body(body, model_pb2.LoadModelRequest, allowed={"source", "settings"})
        )
        request.model = model_id
        self.write_json(model(await loaded(self, request)))


class UnloadModelHandler(AdminBodyHandler):
    """POST /v3/models/{model}/unload: the model object once it is unloaded; body ``{"force": true}`` fails its
    running requests instead of waiting for them."""

    async def post(self, model_id: str) -> None:
        request = await self.optional(
            lambda body: message_from_body(body, model_pb2.UnloadModelRequest, allowed={"force"})
        )
        request.model = model_id
        reply = await self.unary(self.backend.models.UnloadModel, request)
        self.write_json(model(reply.model))


class RouterLoadHandler(JsonBodyHandler, ModelHandler):
    """llama.cpp's router: POST /models/load with ``{"model": ID}``, ``{"success": true}`` once it is loaded.
    (GET on the same path still describes a model called "load".)"""

    async def post(self, _: str) -> None:
        request = await self.translated(
            lambda body: message_from_body(body, model_pb2.LoadModelRequest, allowed={"model"})
        )
        await loaded(self, request)
        self.write_json({"success": True})


class RouterUnloadHandler(JsonBodyHandler, ModelHandler):
    """llama.cpp's router: POST /models/unload with ``{"model": ID}`` (and ovserve's ``force``),
    ``{"success": true}`` once it is unloaded."""

    async def post(self, _: str) -> None:
        request = await self.translated(
            lambda body: message_from_body(body, model_pb2.UnloadModelRequest, allowed={"model", "force"})
        )
        await self.unary(self.backend.models.UnloadModel, request)
        self.write_json({"success": True})


# llama.cpp's router paths, served at the root too (where llama.cpp has them) as well as under /v3 and /v1.
ROUTER_ROUTES = [
    ("/models/(load)", RouterLoadHandler),
    ("/models/(unload)", RouterUnloadHandler),
]

ROUTES = [
    ("/models", ModelsHandler),
    *ROUTER_ROUTES,
    ("/models/(.+)/load", LoadModelHandler),
    ("/models/(.+)/unload", UnloadModelHandler),
    ("/models/(.+)", ModelHandler),  # model ids may contain "/"
    ("/load_lora_adapter", LoadLoraHandler),
    ("/unload_lora_adapter", UnloadLoraHandler),
]
