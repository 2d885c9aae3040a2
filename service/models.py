"""The served models: each name with its process (an LLM engine or a pipeline), limits and defaults."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ovserve.service.engine import Engine, EngineSettings, GenerationEngine, MeterFactory, SamplingParams
from ovserve.service.engine.adapters import read_adapter
from ovserve.service.engine.chat_template import TemplateRenderer
from ovserve.service.engine.vocabulary import Spellings
from ovserve.service.errors import InvalidArgument, NotFound, Unavailable, quote
from ovserve.service.media import MediaPolicy
from ovserve.service.model_files import Vision, vision
from ovserve.service.model_states import ModelStates
from ovserve.service.parsing import REASONING_PARSERS, TOOL_PARSERS, OutputFormat
from ovserve.service.pipelines import Pipeline, PipelineKind, PipelineSettings, kind_of
from ovserve.service.sources import Provenance
from ovserve.service.store.files import UploadedFiles
from ovserve.service.workers import Served

log = logging.getLogger(__name__)

BUNDLED_MODELS_DIR = Path(__file__).resolve().parent / "bundled_models"
BUNDLED_MODEL = "tiny-chat"
BUNDLED_DRAFT = "tiny-chat-draft"
BUNDLED_SPECULATIVE = "tiny-chat-speculative"
BUNDLED_VISION = "tiny-vision"
# The bundled embedding, rerank and speech models, served beside the chat models when they are present.
BUNDLED_PIPELINES = ("tiny-embed", "tiny-rerank", "tiny-whisper", "tiny-diffusion", "tiny-speech")


@dataclass(frozen=True)
class ModelSpec:
    """How to serve one model: its public name, its OpenVINO directory, an optional draft model.

    A field with "help" metadata is a per-model setting, declared once here: service/config.py makes it a
    ``--FLAG NAME=VALUE`` flag (in field order; the path's flag, ``--model``, adds the model) and a key of the
    TOML file's ``[[models]]`` entries, and the docs' flag table (docs/operations/configuration.md) is that parser's.
    Metadata: "help"; "metavar"
    (what the flag takes); "flag" and "toml" when they are not the field's name; "default_text" (what help
    shows as the default; none when absent).
    """

    name: str
    path: Path = field(
        metadata={"help": "serve SOURCE as NAME (repeatable): an OpenVINO model directory, a Hugging Face model "
                          "directory or repository id (org/name[@revision]), or a .gguf file; the last three "
                          "are converted once into --model-cache", "flag": "model",
                  "metavar": "NAME=SOURCE", "default_text": "the bundled tiny-chat"},
    )  # fmt: skip
    draft_path: Path | None = field(
        default=None,
        metadata={"help": "use SOURCE (as --model takes) as the speculative-decoding draft of model NAME",
                  "flag": "draft-model", "metavar": "NAME=SOURCE"},
    )  # fmt: skip
    weight_format: str | None = field(
        default=None,
        metadata={"help": "weights of model NAME when converted from a Hugging Face checkpoint: int4, int8, fp16 "
                          "or fp32", "metavar": "NAME=FORMAT",
                  "default_text": "optimum-intel's choice: int8 from a billion parameters up"},
    )  # fmt: skip
    kind: PipelineKind | None = field(  # None: from the model's files (see pipelines.kind_of)
        default=None,
        metadata={"help": "what model NAME serves: generate, embed, rerank or transcribe", "flag": "task",
                  "toml": "task", "metavar": "NAME=TASK", "default_text": "from the model's config.json"},
    )  # fmt: skip
    prompt_lookup: bool = field(
        default=False, metadata={"help": "serve model NAME with prompt lookup decoding", "metavar": "NAME"}
    )
    tool_guided_generation: bool = field(
        default=True,
        metadata={"help": "do not guide model NAME's tool calls when it may answer or call (tool_choice auto); "
                          "guided, a call it opens names an offered tool, with arguments valid for its parameters "
                          "(OVMS's enable_tool_guided_generation, here on by default; a request's "
                          "tool_guided_generation overrides it)", "metavar": "NAME",
                  "flag": "no-tool-guided-generation"},
    )  # fmt: skip
    chat_template: Path | None = field(  # a template file that replaces the model's own
        default=None,
        metadata={"help": "a Jinja chat template file for model NAME, instead of its own", "metavar": "NAME=FILE",
                  "default_text": "the model's chat_template.jinja, else tokenizer_config.json's, else "
                                  "openvino_tokenizer.xml's"},
    )  # fmt: skip
    tool_parser: str | None = field(  # None: recognised from the chat template ("none": off)
        default=None,
        metadata={"help": f"tool-call parser of model NAME: {', '.join(sorted(TOOL_PARSERS))} or none",
                  "metavar": "NAME=PARSER", "default_text": "recognised from the chat template"},
    )  # fmt: skip
    reasoning_parser: str | None = field(
        default=None,
        metadata={"help": f"reasoning parser of model NAME: {', '.join(sorted(REASONING_PARSERS))} or none",
                  "metavar": "NAME=PARSER", "default_text": "recognised from the chat template"},
    )  # fmt: skip
    load_on_request: bool = field(
        default=False,
        metadata={"help": "load model NAME on the first request naming it, not at start (Ollama's and llama.cpp's "
                          "router's way; the request waits for the load)", "metavar": "NAME"},
    )  # fmt: skip
    idle_unload_s: float | None = field(
        default=None,
        metadata={"help": "unload model NAME after this many seconds without a request (its memory goes back; "
                          "the next request loads it again); a request's keep_alive overrides it",
                  "metavar": "NAME=SECONDS", "default_text": "never"},
    )  # fmt: skip
    settings: EngineSettings = field(default_factory=EngineSettings)  # the TOML entry's scheduler table
    provenance: Provenance | None = field(default=None, compare=False)  # what path was made from (service/sources)
    pipeline: PipelineSettings = field(default_factory=PipelineSettings)  # embedding, rerank, speech models
    #: LoRA adapters served on this model, by the name requests give as ``model`` (--lora NAME=BASE:PATH).
    lora: dict[str, Path] = field(default_factory=dict)

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
    rerank and speech models ``tiny-embed``, ``tiny-rerank`` and ``tiny-whisper``, and the diffusion model
    ``tiny-diffusion`` (image generations and edits) and the text-to-speech model ``tiny-speech``.
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
            if any((BUNDLED_MODELS_DIR / name / index).is_file() for index in ("config.json", "model_index.json"))
        ),
    ]


@dataclass(frozen=True)
class ModelLimits:
    """What a served model allows, for the checks that depend on it."""

    name: str
    max_model_len: int
    has_draft_model: bool = False
    prompt_lookup: bool = False
    vocab_size: int = 0  # token ids a request may name (stop_token_ids) are below it; 0: not checked

    @property
    def assisted(self) -> bool:
        """Speculative or prompt-lookup decoding: one sequence per request, no beam search."""
        return self.has_draft_model or self.prompt_lookup


@dataclass
class ServedModel:
    """A loaded generating model, ready for requests: its engine, limits, defaults and output parsers."""

    kind: ClassVar[PipelineKind] = PipelineKind.GENERATE
    spec: ModelSpec
    engine: GenerationEngine
    limits: ModelLimits
    defaults: SamplingParams  # what its generation_config.json sets
    vocab_size: int
    created: int = field(default_factory=lambda: int(time.time()))
    owned_by: str = "ovserve"
    output_format: OutputFormat = field(default_factory=OutputFormat)  # how its replies are parsed
    vision: Vision | None = None  # how it takes images; None: text only
    adapter: str = ""  # the LoRA adapter its requests run with on ``parent``'s engine ("": its own weights)
    parent: str = ""  # for an adapter: the base model it runs on
    # The characters its vocabulary writes with other pieces under a grammar ({"\n": "<0x0A>"} on a byte-fallback
    # SentencePiece: ovserve.service.engine.vocabulary), which its call grammars accept either way.
    spellings: Spellings = field(default_factory=dict)

    def adapters(self) -> list[ServedModel]:
        """A model of each LoRA adapter of this one: its name, this model's engine, template and limits, its
        requests run with the adapter."""
        return [
            dataclasses.replace(
                self,
                spec=dataclasses.replace(self.spec, name=name, lora={}),
                limits=dataclasses.replace(self.limits, name=name),
                adapter=name,
                parent=self.name,
            )
            for name in self.engine.adapters
        ]

    @property
    def name(self) -> str:
        """The public model id clients send as ``model``."""
        return self.spec.name

    @property
    def worker(self) -> Served:
        """Its engine, as the server's health, metrics and shutdown see every served model's process."""
        return self.engine

    @classmethod
    def load(cls, spec: ModelSpec, meter: MeterFactory | None = None) -> ServedModel:
        """Load the model's pipeline (and draft) from disk; ``meter`` meters each generation (None: unmetered)."""

        chosen: list[OutputFormat] = []  # found once, when the engine has the template's renderer

        def output_format_of(renderer: TemplateRenderer) -> OutputFormat:
            if not chosen:
                template = renderer.template
                chosen.append(
                    OutputFormat.choose(
                        spec.tool_parser,
                        spec.reasoning_parser,
                        template.default + (template.tool_use or ""),
                        render=lambda history, tools, context: renderer.render(history, tools, context),
                    )
                )
            return chosen[0]

        engine = Engine(
            spec.name,
            spec.path,
            spec.settings,
            draft_dir=spec.draft_path,
            prompt_lookup=spec.prompt_lookup,
            chat_template=spec.chat_template,
            markup=lambda renderer: output_format_of(renderer).markup_texts,
            meter=meter,
            adapters=tuple(read_adapter(name, path, spec.path) for name, path in spec.lora.items()),
        )
        limits = ModelLimits(
            spec.name,
            engine.max_model_len,
            has_draft_model=engine.has_draft_model,
            prompt_lookup=spec.prompt_lookup,
            vocab_size=engine.vocab_size,
        )
        template = engine.chat_template
        output_format = chosen[0]
        log.info(
            "model %r: chat template from %s (rendered by %s), tool parser %s (%s), reasoning parser %s (%s)",
            spec.name,
            template.source,
            engine.template_engine,
            output_format.tool_parser or "none",
            output_format.tool_evidence or "nothing shows one",
            output_format.reasoning_parser or "none",
            output_format.reasoning_evidence or "nothing shows one",
        )
        return cls(
            spec,
            engine,
            limits,
            engine.defaults,
            engine.vocab_size,
            output_format=output_format,
            vision=vision(spec.path),
            spellings=engine.grammar_spellings,
        )


# What a served name is: a generating model, or an embedding, rerank or speech model (a Pipeline). Each has a
# ``name``, a ``kind`` and a ``worker``: its process as a ovserve.service.workers.Served.
Model = ServedModel | Pipeline


def load_model(spec: ModelSpec, meter: MeterFactory | None = None) -> Model:
    """Load the model ``spec`` names, whatever it serves (blocking until its process is up: run it off the loop).

    ``meter`` makes each generation's Meter for a generating model (the server's: metrics.GenerationMeter).
    """
    if spec.task is PipelineKind.GENERATE:
        return ServedModel.load(spec, meter)
    return Pipeline(spec.name, spec.task, spec.path, spec.settings.process(), spec.pipeline)


class ModelRegistry:
    """Served models by name, of every kind, in configuration order; ``get`` and ``pipeline`` turn an unknown name
    into NOT_FOUND naming ``model`` and a model of another kind into INVALID_ARGUMENT.

    The server starts answering (health NOT_SERVING) before the models are
    loaded; until ``mark_ready`` a request gets UNAVAILABLE, not NOT_FOUND.
    """

    def __init__(self, models: list[Model] | None = None, media: MediaPolicy | None = None) -> None:
        self._served: dict[str, Model] = {model.name: model for model in models or []}
        self._provenance: dict[str, Provenance] = {}  # what each model was built from, when known
        self._adapters: dict[str, ServedModel] = {}  # LoRA adapters by name (each on its base model's engine)
        self._ready = models is not None
        #: Every model the server knows, loaded or not, with its state (service/model_states.py).
        self.states = ModelStates()
        self.states.know(self._served)
        self.media = media or MediaPolicy()  # what images requests to these models may carry
        #: Where a file part's ``file_id`` is read (the server's Files API); None: file ids are refused.
        self.files: UploadedFiles | None = None

    def __iter__(self) -> Iterator[Model]:
        return iter(list(self._served.values()))

    def __len__(self) -> int:
        return len(self._served)

    def add(self, model: Model, provenance: Provenance | None = None) -> None:
        """Serve one more loaded model (and its LoRA adapters), built from ``provenance`` (ovserve.service.sources) when
        known."""
        self._served[model.name] = model
        if provenance is not None:
            self._provenance[model.name] = provenance
        if isinstance(model, ServedModel):
            self._adapters.update({adapter.name: adapter for adapter in model.adapters()})

    def remove(self, name: str) -> Model:
        """Stop routing requests to the served model ``name`` and its LoRA adapters (an unload); return it."""
        model = self._served.pop(name)
        self._adapters = {key: adapter for key, adapter in self._adapters.items() if adapter.parent != name}
        return model

    def adapters(self) -> list[ServedModel]:
        """The served LoRA adapters, each a model on its base model's engine, in configuration order."""
        return list(self._adapters.values())

    def refresh_adapters(self, base: ServedModel) -> None:
        """Serve ``base``'s adapters as its engine has them now (after a change at run time)."""
        kept = {name: model for name, model in self._adapters.items() if model.parent != base.name}
        self._adapters = {**kept, **{adapter.name: adapter for adapter in base.adapters()}}

    def provenance(self, name: str) -> Provenance | None:
        """What the served model ``name`` was built from, when known."""
        return self._provenance.get(name)

    @property
    def names(self) -> list[str]:
        """Every served model's name, in configuration order."""
        return list(self._served)

    def kinds(self) -> dict[str, PipelineKind]:
        """What each served model serves, by name, in configuration order (also before ``mark_ready``)."""
        return {name: model.kind for name, model in self._served.items()}

    def workers(self) -> list[Served]:
        """Every served model's process, whatever the model serves (health, metrics and shutdown read them)."""
        return [model.worker for model in self._served.values()]

    def mark_ready(self) -> None:
        """Every configured model is loaded."""
        self._ready = True

    @property
    def ready(self) -> bool:
        """Whether every configured model is loaded."""
        return self._ready

    def get(self, name: str, field_name: str = "model") -> ServedModel:
        """The generating model called ``name`` (else 400 naming ``model``)."""
        model = self.model(name, field_name)
        if isinstance(model, ServedModel):
            return model
        raise self._serves_another_api(model, "this API", field_name)

    def pipeline(self, name: str, kind: PipelineKind, field_name: str = "model") -> Pipeline:
        """The served model called ``name``, which must be of ``kind`` (else 400 naming ``model``)."""
        model = self.model(name, field_name)
        if isinstance(model, Pipeline) and model.kind is kind:
            return model
        raise self._serves_another_api(model, kind.api, field_name)

    def model(self, name: str, field_name: str = "model") -> Model:
        """The served model called ``name``, of any kind (NOT_FOUND naming ``model`` if none is)."""
        if not self._ready:
            raise Unavailable("the server is still loading its models; retry shortly")
        if not name:
            raise InvalidArgument.of(field_name, "required: the name of a served model")
        model = self._served.get(name) or self._adapters.get(name)
        if model is None and self.states.base(name) is not None:  # known, not loaded: UNAVAILABLE naming its state
            raise self.states.refusal(name)
        if model is None:
            served = ", ".join(sorted([*self._served, *self._adapters])) or "none"
            raise NotFound(f"model {quote(name)} is not served here (served: {served})", param=field_name)
        return model

    def _serves_another_api(self, model: Model, wanted: str, field_name: str) -> InvalidArgument:
        return InvalidArgument.of(field_name, f"model {quote(model.name)} serves {model.kind.api}, not {wanted}")

    def end_requests(self, reason: str) -> None:
        """End every open request of every model with a retriable UNAVAILABLE saying ``reason``."""
        for worker in self.workers():
            worker.end_requests(reason)

    def close(self) -> None:
        """Stop every model's process, cancelling what runs."""
        for worker in self.workers():
            worker.close()
