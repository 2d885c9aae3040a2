"""What a model directory serves: text generation, embeddings, reranking or transcription, from its files."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovserve.service import model_files


class PipelineKind(enum.Enum):
    """The API a served model answers."""

    GENERATE = "generate"  # completions, chat, responses (the LLM engine)
    EMBED = "embed"  # embeddings
    RERANK = "rerank"  # rerank and score
    TRANSCRIBE = "transcribe"  # audio transcriptions
    IMAGE = "image"  # image generations and edits (a diffusion model)
    SPEAK = "speak"  # audio speech (a SpeechT5 text-to-speech model)

    @property
    def api(self) -> str:
        """What the kind serves, for error messages."""
        return _APIS[self]


_APIS = {
    PipelineKind.GENERATE: "completions, chat completions and responses",
    PipelineKind.EMBED: "embeddings",
    PipelineKind.RERANK: "rerank and score",
    PipelineKind.TRANSCRIBE: "audio transcriptions",
    PipelineKind.IMAGE: "image generations and edits",
    PipelineKind.SPEAK: "audio speech",
}
# The speech models' IRs (optimum-intel's encoder-decoder export).
SPEECH_IRS = ("openvino_encoder_model.xml", "openvino_decoder_model.xml")


def kind_of(model_dir: Path) -> PipelineKind:
    """The kind of an exported model, as vLLM chooses a task: from its architecture in config.json.

    A Whisper encoder-decoder transcribes; a one-label sequence classifier (a cross-encoder) reranks; an encoder
    without a language-model head (BertModel, a sentence-transformers export) embeds; anything else generates.
    A diffusers pipeline's export (model_index.json beside its parts' folders) makes images; a SpeechT5
    text-to-speech export (encoder and decoder IRs too, with a postnet and a vocoder) speaks.
    """
    if (model_dir / "model_index.json").is_file():
        return PipelineKind.IMAGE
    try:
        config = model_files.config(model_dir)
    except (OSError, ValueError):
        return PipelineKind.GENERATE
    architectures = [str(name) for name in config.get("architectures") or []]
    if config.get("model_type") == "speecht5":
        return PipelineKind.SPEAK
    if config.get("model_type") == "whisper" or all((model_dir / name).is_file() for name in SPEECH_IRS):
        return PipelineKind.TRANSCRIBE
    if any(name.endswith("ForSequenceClassification") for name in architectures):
        return PipelineKind.RERANK
    if (model_dir / "modules.json").is_file() or any(name.endswith("Model") for name in architectures):
        return PipelineKind.EMBED
    return PipelineKind.GENERATE


# What each kind's pipeline loads (a kind not listed: config.json).
_NEEDED = {
    PipelineKind.EMBED: ("config.json", "openvino_model.xml", "openvino_tokenizer.xml"),
    PipelineKind.RERANK: ("config.json", "openvino_model.xml", "openvino_tokenizer.xml"),
    PipelineKind.TRANSCRIBE: ("config.json", *SPEECH_IRS, "openvino_tokenizer.xml", "openvino_detokenizer.xml"),
    PipelineKind.SPEAK: (
        "config.json",
        *SPEECH_IRS,
        "openvino_postnet.xml",
        "openvino_vocoder.xml",
        "openvino_tokenizer.xml",
    ),
    # A diffusers export: a folder per part (the VAE's encoder for edits).
    PipelineKind.IMAGE: (
        "model_index.json",
        "tokenizer/openvino_tokenizer.xml",
        *(f"{part}/openvino_model.xml" for part in ("text_encoder", "unet", "vae_decoder", "vae_encoder")),
    ),
}


def missing_files(model_dir: Path, kind: PipelineKind) -> str:
    """The files a pipeline of ``kind`` needs that ``model_dir`` lacks, named ("" if none)."""
    needed = _NEEDED.get(kind, ("config.json",))
    return ", ".join(name for name in needed if not (model_dir / name).is_file())


@dataclass(frozen=True)
class EmbeddingConfig:
    """How a model's token states become one vector, as its sentence-transformers files say."""

    pooling: str = "mean"  # "mean", "cls" or "last_token" (TextEmbeddingPipeline's three)
    normalize: bool = True
    prompts: tuple[tuple[str, str], ...] = ()  # (input type, instruction prefix), e.g. ("query", "query: ")
    dimensions: int = 0  # the vector's length (hidden size)
    matryoshka: tuple[int, ...] = ()  # shorter lengths the model was trained to allow ("dimensions")

    def prompt(self, input_type: str) -> str:
        """The instruction prefix for ``input_type`` ("" when the model has none for it)."""
        return dict(self.prompts).get(input_type, "")


# sentence-transformers' pooling flags -> TextEmbeddingPipeline's pooling type.
_POOLING_FLAGS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_lasttoken": "last_token",
}


def _json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def embedding_config(model_dir: Path) -> EmbeddingConfig:
    """The pooling, normalisation and instruction prompts a sentence-transformers export declares.

    modules.json lists the modules (a ``Normalize`` one means unit vectors) and names the pooling module's
    directory, whose config.json sets the pooling; config_sentence_transformers.json holds the ``prompts``
    (Qwen3-Embedding's query instruction, E5's "query: " / "passage: "). Without them: mean pooling, normalised,
    no prompts (what most embedding models are used with).
    """
    modules = json.loads((model_dir / "modules.json").read_text()) if (model_dir / "modules.json").is_file() else []
    pooling, normalize = "mean", not modules
    for module in modules if isinstance(modules, list) else []:
        kind = str(module.get("type", ""))
        if kind.endswith("Normalize"):
            normalize = True
        elif kind.endswith("Pooling"):
            flags = _json(model_dir / str(module.get("path", "")) / "config.json")
            pooling = next((name for flag, name in _POOLING_FLAGS.items() if flags.get(flag)), pooling)
    prompts = _json(model_dir / "config_sentence_transformers.json").get("prompts") or {}
    config = model_files.config(model_dir)
    matryoshka = config.get("matryoshka_dimensions") or ()
    return EmbeddingConfig(
        pooling=pooling,
        normalize=normalize,
        prompts=tuple((str(key), str(value)) for key, value in prompts.items() if isinstance(value, str)),
        dimensions=int(config.get("hidden_size") or 0),
        matryoshka=tuple(sorted(int(size) for size in matryoshka)),
    )
