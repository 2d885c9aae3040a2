"""ModelService semantics: which models are served."""

from __future__ import annotations

from clients.v1 import model_pb2
from service.models import ModelRegistry, ServedModel


def _model(model: ServedModel) -> model_pb2.Model:
    return model_pb2.Model(
        id=model.name,
        object="model",
        created=model.created,
        owned_by=model.owned_by,
        max_model_len=model.limits.max_model_len,
    )


def list_models(registry: ModelRegistry) -> model_pb2.ListModelsResponse:
    """Every served model, in configuration order."""
    return model_pb2.ListModelsResponse(object="list", data=[_model(model) for model in registry])


def get_model(registry: ModelRegistry, request: model_pb2.GetModelRequest) -> model_pb2.GetModelResponse:
    """One served model; NOT_FOUND naming ``model`` if it is not served."""
    return model_pb2.GetModelResponse(model=_model(registry.get(request.model)))
