"""ModelService semantics: which models are served."""

from __future__ import annotations

from clients.v1 import model_pb2
from service.models import Model, ModelRegistry
from service.pipelines import Pipeline, PipelineKind


def _model(model: Model) -> model_pb2.Model:
    if isinstance(model, Pipeline):
        return model_pb2.Model(
            id=model.name,
            object="model",
            created=model.created,
            owned_by="ovserve",
            max_model_len=model.max_model_len,
            task=model.kind.value,
        )
    return model_pb2.Model(
        id=model.name,
        object="model",
        created=model.created,
        owned_by=model.owned_by,
        max_model_len=model.limits.max_model_len,
        task=model.kind.value,
        chat_template_source=model.engine.chat_template.source,
        tool_parser=model.output_format.tool_parser or "",
        reasoning_parser=model.output_format.reasoning_parser or "",
    )


def list_models(registry: ModelRegistry) -> model_pb2.ListModelsResponse:
    """Every served model: the generating ones, then the others, each in configuration order."""
    served = sorted(registry, key=lambda model: model.kind is not PipelineKind.GENERATE)  # a stable sort
    return model_pb2.ListModelsResponse(object="list", data=[_model(model) for model in served])


def get_model(registry: ModelRegistry, request: model_pb2.GetModelRequest) -> model_pb2.GetModelResponse:
    """One served model; NOT_FOUND naming ``model`` if it is not served."""
    return model_pb2.GetModelResponse(model=_model(registry.model(request.model)))
