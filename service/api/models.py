"""ModelService semantics: which models are served."""

from __future__ import annotations

from dataclasses import asdict

from clients.v1 import model_pb2
from service.models import Model, ModelRegistry, ServedModel
from service.pipelines import Pipeline, PipelineKind
from service.sources import Provenance


def _model(model: Model, provenance: Provenance | None) -> model_pb2.Model:
    built_from = asdict(provenance) if provenance else {}
    if isinstance(model, Pipeline):
        return model_pb2.Model(
            id=model.name,
            object="model",
            created=model.created,
            owned_by="ovserve",
            max_model_len=model.max_model_len,
            task=model.kind.value,
            **built_from,
        )
    return model_pb2.Model(
        id=model.name,
        object="model",
        created=model.created,
        owned_by=model.owned_by,
        max_model_len=model.limits.max_model_len,
        task=model.kind.value,
        chat_template_source=model.engine.chat_template.source,
        chat_template_engine=model.engine.template_engine,
        chat_template_engine_reason=model.engine.template_engine_reason,
        tool_parser=model.output_format.tool_parser or "",
        reasoning_parser=model.output_format.reasoning_parser or "",
        tool_parser_evidence=model.output_format.tool_evidence,
        reasoning_parser_evidence=model.output_format.reasoning_evidence,
        parent=model.parent,
        root=str(model.engine.adapters[model.adapter].path) if model.adapter else "",
        **built_from,
    )


def list_models(registry: ModelRegistry) -> model_pb2.ListModelsResponse:
    """Every served model: the generating ones, their LoRA adapters, then the others, each in configuration
    order."""
    served = sorted(registry, key=lambda model: model.kind is not PipelineKind.GENERATE)  # a stable sort
    generating = sum(model.kind is PipelineKind.GENERATE for model in served)
    served[generating:generating] = registry.adapters()
    data = [_model(model, registry.provenance(_base(model))) for model in served]
    return model_pb2.ListModelsResponse(object="list", data=data)


def get_model(registry: ModelRegistry, request: model_pb2.GetModelRequest) -> model_pb2.GetModelResponse:
    """One served model; NOT_FOUND naming ``model`` if it is not served."""
    model = registry.model(request.model)
    return model_pb2.GetModelResponse(model=_model(model, registry.provenance(_base(model))))


def _base(model: Model) -> str:
    """The model whose weights it serves: itself, or an adapter's base model (its provenance is the base's)."""
    return model.parent if isinstance(model, ServedModel) and model.parent else model.name
