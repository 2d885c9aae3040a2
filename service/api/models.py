"""ModelService semantics: which models are served, and which are known but not loaded (with their state)."""

from __future__ import annotations

from dataclasses import asdict

from ovserve.clients.v1 import model_pb2
from ovserve.service.model_states import ModelState
from ovserve.service.models import Model, ModelRegistry, ServedModel
from ovserve.service.pipelines import Pipeline, PipelineKind
from ovserve.service.sources import Provenance
from ovserve.service.store.tenancy import models_allowed


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
            state=ModelState.LOADED.value,
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
        state=ModelState.LOADED.value,
        **built_from,
    )


def _not_loaded(registry: ModelRegistry, name: str) -> model_pb2.Model:
    """A known model that is not loaded: its id, what it serves, what it is built from, its state and why."""
    provenance = registry.provenance(name)
    status = registry.states.get(name)
    assert status is not None
    return model_pb2.Model(
        id=name,
        object="model",
        owned_by="ovserve",
        task=registry.states.task(name),
        state=status.state.value,
        state_reason=status.reason,
        **(asdict(provenance) if provenance else {}),
    )


def list_models(registry: ModelRegistry) -> model_pb2.ListModelsResponse:
    """Every served model: the generating ones, their LoRA adapters, then the others, each in configuration
    order; then the known models that are not loaded, with their state."""
    served = sorted(registry, key=lambda model: model.kind is not PipelineKind.GENERATE)  # a stable sort
    generating = sum(model.kind is PipelineKind.GENERATE for model in served)
    served[generating:generating] = registry.adapters()
    data = [_model(model, registry.provenance(_base(model))) for model in served]
    loaded = set(registry.names)
    data += [_not_loaded(registry, name) for name in registry.states.names if name not in loaded]
    if (allowed := models_allowed.get()) is not None:  # a key limited to some models sees only those
        data = [model for model in data if model.id in allowed]
    return model_pb2.ListModelsResponse(object="list", data=data)


def describe(registry: ModelRegistry, name: str) -> model_pb2.Model:
    """The model ``name`` as ListModels shows it, loaded or only known; NOT_FOUND naming ``model`` if neither."""
    if name in registry.states and name not in registry.names:
        return _not_loaded(registry, name)
    model = registry.model(name)
    return _model(model, registry.provenance(_base(model)))


def get_model(registry: ModelRegistry, request: model_pb2.GetModelRequest) -> model_pb2.GetModelResponse:
    """One served or known model; NOT_FOUND naming ``model`` if the server knows none of that name."""
    return model_pb2.GetModelResponse(model=describe(registry, request.model))


def _base(model: Model) -> str:
    """The model whose weights it serves: itself, or an adapter's base model (its provenance is the base's)."""
    return model.parent if isinstance(model, ServedModel) and model.parent else model.name
