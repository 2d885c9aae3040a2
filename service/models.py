"""The served models: each name with its engine, limits and generation defaults."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from service.engine import ChatTemplate, Engine, EngineSettings, SamplingParams
from service.errors import InvalidArgument, NotFound, Unavailable, quote
from service.media import MediaPolicy
from service.model_files import Vision, vision
from service.parsing import OutputFormat
from service.pipelines import Pipeline, PipelineKind, PipelineSettings, kind_of

log = logging.getLogger(__name__)

BUNDLED_MODELS_DIR = Path(__file__).resolve().parent / "bundled_models"
BUNDLED_MODEL = "tiny-chat"
BUNDLED_DRAFT = "tiny-chat-draft"
BUNDLED_SPECULATIVE = "tiny-chat-speculative"
BUNDLED_VISION = "tiny-vision"
# The bundled embedding, rerank and speech models, served beside the chat models when they are present.
BUNDLED_PIPELINES = ("tiny-embed", "tiny-rerank", "tiny-whisper")


@dataclass(frozen=True)
class ModelSpec:
    """How to serve one model: its public name, its OpenVINO directory, an optional draft model."""

    name: str
    path: Path
    draft_path: Path | None = None
    prompt_lookup: bool = False
    settings: EngineSettings = field(default_factory=EngineSettings)
    tool_parser: str | None = None  # None: recognised from the chat template ("none": off)
    reasoning_parser: str | None = None
    chat_template: Path | None = None  # a template file that replaces the model's own
    kind: PipelineKind | None = None  # None: from the model's files (see pipelines.kind_of)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)  # embedding, rerank, speech models

    @property
    def task(self) -> PipelineKind:
        """What the model serves: the configured kind, else what its files say."""
        return self.kind or kind_of(self.path)


def bundled_model_specs(settings: EngineSettings | None = None) -> list[ModelSpec]:
    """What ``ovserve serve`` serves with no model configured.

    ``tiny-chat`` with plain continuous batching (every feature, full
    concurrency), and ``tiny-chat-speculative``: the same model with
    ``tiny-chat-draft`` as its speculative-decoding draft. They are two models
    because speculative decoding in openvino-genai 2026.4 has no beam search or
    parallel sampling and runs one request at a time here (see engine/core.py).
    And ``tiny-vision``, a LLaVA model that names an image's colour (image inputs), and the embedding,
    rerank and speech models ``tiny-embed``, ``tiny-rerank`` and ``tiny-whisper``.
    """
    settings = settings or EngineSettings()
    main = BUNDLED_MODELS_DIR / BUNDLED_MODEL
    return [
        ModelSpec(BUNDLED_MODEL, main, settings=settings),
        ModelSpec(BUNDLED_SPECULATIVE, main, draft_path=BUNDLED_MODELS_DIR / BUNDLED_DRAFT, settings=settings),
        ModelSpec(BUNDLED_VISION, BUNDLED_MODELS_DIR / BUNDLED_VISION, settings=settings),
        *(
            ModelSpec(name, BUNDLED_MODELS_DIR / name, settings=settings)
            for name in BUNDLED_PIPELINES
            if (BUNDLED_MODELS_DIR / name / "config.json").is_file()
        ),
    ]


@dataclass(frozen=True)
class ModelLimits:
    """What a served model allows, for the checks that depend on it."""

    name: str
    max_model_len: int
    has_draft_model: bool = False
    prompt_lookup: bool = False

    @property
    def assisted(self) -> bool:
        """Speculative or prompt-lookup decoding: one sequence per request, no beam search."""
        return self.has_draft_model or self.prompt_lookup


@dataclass
class ServedModel:
    """A loaded model, ready for requests."""

    spec: ModelSpec
    engine: Engine
    limits: ModelLimits
    defaults: SamplingParams  # what its generation_config.json sets
    vocab_size: int
    created: int = field(default_factory=lambda: int(time.time()))
    owned_by: str = "ovserve"
    output_format: OutputFormat = field(default_factory=OutputFormat)  # how its replies are parsed
    vision: Vision | None = None  # how it takes images; None: text only

    @property
    def name(self) -> str:
        """The public model id clients send as ``model``."""
        return self.spec.name

    @classmethod
    def load(cls, spec: ModelSpec) -> ServedModel:
        """Load the model's pipeline (and draft) from disk."""

        def output_format_of(template: ChatTemplate) -> OutputFormat:
            return OutputFormat.choose(
                spec.tool_parser, spec.reasoning_parser, template.default + (template.tool_use or "")
            )

        engine = Engine(
            spec.name,
            spec.path,
            spec.settings,
            draft_dir=spec.draft_path,
            prompt_lookup=spec.prompt_lookup,
            chat_template=spec.chat_template,
            markup=lambda template: output_format_of(template).markup_texts,
        )
        limits = ModelLimits(
            spec.name, engine.max_model_len, has_draft_model=engine.has_draft_model, prompt_lookup=spec.prompt_lookup
        )
        template = engine.chat_template
        output_format = output_format_of(template)
        log.info(
            "model %r: chat template from %s (rendered by %s), tool parser %s, reasoning parser %s",
            spec.name,
            template.source,
            engine.template_engine,
            output_format.tool_parser or "none",
            output_format.reasoning_parser or "none",
        )
        return cls(
            spec,
            engine,
            limits,
            engine.defaults,
            engine.vocab_size,
            output_format=output_format,
            vision=vision(spec.path),
        )


class ModelRegistry:
    """Served models by name; ``get`` turns an unknown name into NOT_FOUND naming ``model``.

    The server starts answering (health NOT_SERVING) before the models are
    loaded; until ``mark_ready`` a request gets UNAVAILABLE, not NOT_FOUND.
    """

    def __init__(
        self,
        models: list[ServedModel] | None = None,
        media: MediaPolicy | None = None,
        pipelines: list[Pipeline] | None = None,
    ) -> None:
        self._models = {model.name: model for model in models or []}
        self._pipelines = {pipeline.name: pipeline for pipeline in pipelines or []}
        self._ready = models is not None
        self.media = media or MediaPolicy()  # what images requests to these models may carry

    def __iter__(self) -> Iterator[ServedModel]:
        return iter(list(self._models.values()))

    def __len__(self) -> int:
        return len(self._models)

    def add(self, model: ServedModel) -> None:
        """Serve one more loaded model."""
        self._models[model.name] = model

    def add_pipeline(self, pipeline: Pipeline) -> None:
        """Serve one more loaded embedding, rerank or speech model."""
        self._pipelines[pipeline.name] = pipeline

    @property
    def names(self) -> list[str]:
        """Every served model's name: the generating ones, then the others."""
        return [*self._models, *self._pipelines]

    @property
    def pipelines(self) -> list[Pipeline]:
        """The served embedding, rerank and speech models, in configuration order."""
        return list(self._pipelines.values())

    def pipeline(self, name: str, kind: PipelineKind, field_name: str = "model") -> Pipeline:
        """The served model called ``name``, which must be of ``kind`` (else 400 naming ``model``)."""
        self._check_ready(name, field_name)
        pipeline = self._pipelines.get(name)
        if pipeline is not None and pipeline.kind is kind:
            return pipeline
        if pipeline is None and name not in self._models:
            raise self._not_found(name, field_name)
        serves = pipeline.kind.api if pipeline is not None else PipelineKind.GENERATE.api
        raise InvalidArgument.of(field_name, f"model {quote(name)} serves {serves}, not {kind.api}")

    def mark_ready(self) -> None:
        """Every configured model is loaded."""
        self._ready = True

    @property
    def ready(self) -> bool:
        """Whether every configured model is loaded."""
        return self._ready

    def get(self, name: str, field_name: str = "model") -> ServedModel:
        """The served model called ``name``."""
        self._check_ready(name, field_name)
        model = self._models.get(name)
        if model is None:
            if name in self._pipelines:
                serves = self._pipelines[name].kind.api
                raise InvalidArgument.of(field_name, f"model {quote(name)} serves {serves}, not this API")
            raise self._not_found(name, field_name)
        return model

    def _check_ready(self, name: str, field_name: str) -> None:
        if not self._ready:
            raise Unavailable("the server is still loading its models; retry shortly")
        if not name:
            raise InvalidArgument.of(field_name, "required: the name of a served model")

    def _not_found(self, name: str, field_name: str) -> NotFound:
        served = ", ".join(sorted([*self._models, *self._pipelines])) or "none"
        return NotFound(f"model {quote(name)} is not served here (served: {served})", param=field_name)

    def end_requests(self, reason: str) -> None:
        """End every open request of every model with a retriable UNAVAILABLE saying ``reason``."""
        for model in self:
            model.engine.end_requests(reason)
        for pipeline in self.pipelines:
            pipeline.end_requests(reason)

    def close(self) -> None:
        """Stop every engine and pipeline, cancelling what runs."""
        for model in self:
            model.engine.close()
        for pipeline in self.pipelines:
            pipeline.close()
