"""What the server and a pipeline process say to each other: one record type per message.

server -> pipeline: the PipelineSpec once, then jobs (``Embed``, ``Rerank``, ``Transcribe``) and ``CancelJob``,
and ``Stop`` (service.workers.messages);
pipeline -> server: ``Ready`` or ``LoadFailed`` once (service.workers.messages), then ``Started`` for each call
it makes (the jobs it takes from its queue), and per job any number of ``Partial`` (streamed transcription text)
and one ``Done`` or ``Failed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from service.pipelines.kinds import EmbeddingConfig, PipelineKind


@dataclass(frozen=True)
class PipelineSpec:
    """What the pipeline process loads."""

    kind: PipelineKind
    model_dir: Path
    device: str
    embedding: EmbeddingConfig | None = None  # embedding models: pooling and normalisation
    max_batch_inputs: int = 32  # embedding inputs (of several requests) run in one call
    properties: dict[str, object] = field(default_factory=dict)  # device properties


@dataclass(frozen=True)
class Embed:
    """Embed each text (instruction prefixes already applied)."""

    job_id: int
    texts: list[str]


@dataclass(frozen=True)
class Rerank:
    """Score each document against the query."""

    job_id: int
    query: str
    documents: list[str]


@dataclass(frozen=True)
class Transcribe:
    """Transcribe 16 kHz mono float32 samples."""

    job_id: int
    samples: bytes  # float32, native byte order
    language: str | None = None  # a language token's code ("en"); None: the model's default or detected
    prompt: str | None = None  # text of a previous segment, to steer spelling and style
    temperature: float = 0.0
    timestamps: bool = False  # segments with their start and end
    stream: bool = False  # send the text as it is decoded (Partial)


@dataclass(frozen=True)
class CancelJob:
    """Drop a job that has not started (one that runs finishes, and its answer is ignored)."""

    job_id: int


@dataclass(frozen=True)
class Started:
    """The jobs of the call the process starts now: they leave its queue (the server counts them as running)."""

    job_ids: list[int]


@dataclass(frozen=True)
class Partial:
    """Text a streamed job decoded since the last Partial."""

    job_id: int
    text: str


@dataclass(frozen=True)
class Done:
    """A job's result: vectors (float32 arrays), (index, score) pairs, or a Transcript."""

    job_id: int
    result: Any


@dataclass(frozen=True)
class Failed:
    """A job's failure, in the pipeline's words."""

    job_id: int
    message: str


@dataclass(frozen=True)
class Segment:
    """A stretch of transcribed speech."""

    start: float  # seconds
    end: float
    text: str
    token_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Transcript:
    """What a transcription job gives."""

    text: str
    language: str | None
    segments: list[Segment]
    duration: float  # seconds of audio
