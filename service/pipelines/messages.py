"""What the server and a pipeline process say to each other: one record type per message.

server -> pipeline: the PipelineSpec once, then jobs (``Embed``, ``Rerank``, ``Transcribe``) and ``CancelJob``,
and ``Stop`` (ovserve.service.workers.messages);
pipeline -> server: ``Ready`` or ``LoadFailed`` once (ovserve.service.workers.messages), then ``Started`` for each call
it makes (the jobs it takes from its queue), and per job any number of ``Partial`` (streamed transcription text)
and one ``Done`` or ``Failed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovserve.service.pipelines.kinds import EmbeddingConfig, PipelineKind


@dataclass(frozen=True)
class PipelineSpec:
    """What the pipeline process loads."""

    kind: PipelineKind
    model_dir: Path
    device: str
    embedding: EmbeddingConfig | None = None  # embedding models: pooling and normalisation
    max_batch_inputs: int = 32  # embedding inputs or rerank pairs (of several requests) run in one call
    max_batch_tokens: int = 8192  # and their tokens, padded, in one inference
    batch_delay_s: float = 0.0  # how long a call that could take more inputs waits for them
    token_ids: bool = False  # the IR runs here on token ids (encoder.direct_encoder)
    properties: dict[str, object] = field(default_factory=dict)  # device properties


@dataclass(frozen=True)
class Embed:
    """Embed each input: its token ids when the model runs on ids, else its text (instruction prefixes already
    applied to both)."""

    job_id: int
    ids: list[list[int]]
    texts: list[str] = field(default_factory=list)  # for a pipeline that takes text only

    @property
    def size(self) -> int:
        """Inputs."""
        return len(self.ids)

    @property
    def tokens(self) -> int:
        """Tokens over all inputs."""
        return sum(map(len, self.ids))


@dataclass(frozen=True)
class Rerank:
    """Score each (query, document) pair: its token ids and types when the model runs on ids, else its texts."""

    job_id: int
    pairs: list[tuple[str, str]]  # for a pipeline that takes text only
    ids: list[list[int]] = field(default_factory=list)
    types: list[list[int]] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Pairs."""
        return len(self.ids) or len(self.pairs)

    @property
    def tokens(self) -> int:
        """Tokens over all pairs (0 for texts)."""
        return sum(map(len, self.ids))


@dataclass(frozen=True)
class Transcribe:
    """Transcribe 16 kHz mono float32 samples (or translate them into English: ``task`` "translate")."""

    job_id: int
    samples: bytes  # float32, native byte order
    language: str | None = None  # a language token's code ("en"); None: the model's default or detected
    prompt: str | None = None  # text of a previous segment, to steer spelling and style
    temperature: float = 0.0
    timestamps: bool = False  # segments with their start and end
    stream: bool = False  # send the text as it is decoded (Partial)
    task: str = "transcribe"  # Whisper's task: "transcribe" or "translate"


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
    """A job's result: vectors (a float32 array), scores (floats, in pair order), or a Transcript."""

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
