"""Pipeline: one served embedding, rerank or speech model; its process supervised, its queue bounded."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ovserve.clients.defaults import MIB
from ovserve.service import model_files
from ovserve.service.pipelines.encoder import direct_encoder
from ovserve.service.pipelines.image_messages import Denoised, MakeImages
from ovserve.service.pipelines.kinds import EmbeddingConfig, PipelineKind, embedding_config
from ovserve.service.pipelines.messages import (
    CancelJob,
    Done,
    Embed,
    Failed,
    Partial,
    PipelineSpec,
    Rerank,
    Started,
    Transcribe,
    Transcript,
)
from ovserve.service.pipelines.speech_messages import Speak, Spoken
from ovserve.service.workers.codec import TokenCodec
from ovserve.service.workers.errors import EngineError, EngineOverloaded, EngineUnavailable
from ovserve.service.workers.process import WorkerProcess
from ovserve.service.workers.served import Load, ProcessSettings
from ovserve.service.workers.supervisor import Supervised, Supervisor

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PipelineSettings:
    """Queue and batch bounds of the embedding, rerank and speech pipelines."""

    max_queued_jobs: int = field(
        default=64,
        metadata={
            "help": "requests that may wait for an embedding, rerank or speech model (beyond: 429 / RESOURCE_EXHAUSTED)"
        },
    )
    max_audio_seconds: float = field(
        default=1800.0, metadata={"help": "longest recording a speech model transcribes, seconds (beyond: 400)"}
    )
    max_speech_chars: int = field(
        default=4096,  # OpenAI's bound on a speech request's input
        metadata={"help": "longest text a text-to-speech model says, characters (beyond: 400)", "metavar": "CHARS"},
    )
    max_speech_seconds: float = field(
        # The pipeline vocodes the whole spectrogram in one call: memory grows with the audio's length (tiny-speech
        # held 5 GB for 60 s) and the process keeps its peak.
        default=60.0,
        metadata={"help": "longest audio a text-to-speech model returns, seconds (longer audio is cut there)"},
    )
    max_batch_inputs: int = field(
        default=32, metadata={"help": "embedding inputs or rerank pairs, of several requests, run in one call"}
    )
    max_batch_tokens: int = field(
        default=8192,
        metadata={
            "help": "tokens of those inputs in one call, and padded tokens in one inference",
            "metavar": "TOKENS",
        },
    )
    batch_delay_ms: float = field(
        default=0.0,
        metadata={
            "help": "how long an embedding or rerank call with room for more waits for other requests' inputs",
            "metavar": "MS",
        },
    )
    max_queued_audio_bytes: int = field(
        default=512 * MIB,
        metadata={
            "help": "decoded audio (32-bit samples at 16 kHz: 230 MB an hour) that may wait for one speech model; "
            "beyond, 429 / RESOURCE_EXHAUSTED (one recording is always taken)",
            "metavar": "BYTES",
        },
    )

    max_queued_tokens: int = field(
        default=2**20,  # tokens: 2,048 inputs of 512 tokens, the largest request of a BERT-sized model
        metadata={
            "help": "tokens of embedding inputs or rerank pairs that may wait for one model; beyond, 429 / "
            "RESOURCE_EXHAUSTED (one request is always taken)",
            "metavar": "TOKENS",
        },
    )

    def problems(self) -> list[str]:
        """What is wrong with these settings (empty when they can be served)."""
        found = [
            f"--{name.replace('_', '-')} must be more than 0; got {getattr(self, name)}"
            for name in (
                "max_queued_jobs",
                "max_audio_seconds",
                "max_speech_chars",
                "max_speech_seconds",
                "max_batch_inputs",
                "max_batch_tokens",
                "max_queued_tokens",
            )
            if not getattr(self, name) > 0
        ]
        if not self.batch_delay_ms >= 0:
            found.append(f"--batch-delay-ms must be 0 or more; got {self.batch_delay_ms}")
        return found


#: What a waiting request holds, by the model's kind: the setting that bounds the sum over a model's waiting requests,
#: and its unit. 32 embeddings requests of 2,048 inputs all queued behind one another (4 M tokens, a minute of work).
QUEUE_BUDGETS = {
    PipelineKind.EMBED: ("max_queued_tokens", "tokens"),
    PipelineKind.RERANK: ("max_queued_tokens", "tokens"),
    PipelineKind.TRANSCRIBE: ("max_queued_audio_bytes", "bytes of audio"),
    PipelineKind.IMAGE: ("max_queued_jobs", "requests"),  # bounded by their count alone (size 0)
    PipelineKind.SPEAK: ("max_queued_jobs", "requests"),  # bounded by their count alone (size 0)
}
# Where a kind's tokenizer files and config.json are, under its model directory: a diffusers export keeps each
# part in a folder (the text encoder's config bounds the prompt's tokens); the others, at the top.
PART_FOLDERS = {PipelineKind.IMAGE: ("tokenizer", "text_encoder")}


class _Pending:
    """A job's answers as they come: Partials, then a Done, a Failed or an EngineUnavailable."""

    def __init__(self, size: int = 0) -> None:
        self.answers: asyncio.Queue[object] = asyncio.Queue()
        self.size = size  # what it holds against the model's queue budget (QUEUE_BUDGETS): audio bytes or tokens
        self.started = False  # the process took it from its queue (Started)


class Pipeline(Supervised):
    """A served model of a non-generating kind, in its own process (see worker.py); a
    ``ovserve.service.workers.Served``."""

    def __init__(
        self,
        name: str,
        kind: PipelineKind,
        model_dir: Path,
        process: ProcessSettings,
        settings: PipelineSettings | None = None,
    ) -> None:
        """Load the model's pipeline in a new process (blocking until it is compiled; EngineError if it fails)."""
        self.settings = settings or PipelineSettings()
        self.name, self.kind, self.model_dir = name, kind, model_dir
        started = time.monotonic()
        tokenizer_folder, config_folder = PART_FOLDERS.get(kind, ("", ""))
        self.codec = TokenCodec(model_dir / tokenizer_folder)
        self.embedding: EmbeddingConfig | None = embedding_config(model_dir) if kind is PipelineKind.EMBED else None
        #: The embedding or cross-encoder IR runs on token ids the server made (encoder.py); else its pipeline
        #: takes text. Pairs are tokenised with tokenizer.json only.
        self.takes_token_ids = direct_encoder(model_dir, kind) and (
            kind is PipelineKind.EMBED or self.codec.backend == "tokenizers"
        )
        self.max_model_len = _max_length(model_dir / config_folder)
        self.vocab_size = int(model_files.config(model_dir / config_folder).get("vocab_size") or 0)
        self.created = int(time.time())
        self.window_s = _window_seconds(model_dir)  # a speech model's audio window (Whisper's: 30 s)
        self.fft_samples = _fft_samples(model_dir)  # its analysis window: shorter recordings are padded
        spec = PipelineSpec(
            kind,
            model_dir,
            process.device,
            embedding=self.embedding,
            max_batch_inputs=self.settings.max_batch_inputs,
            max_batch_tokens=self.settings.max_batch_tokens,
            batch_delay_s=self.settings.batch_delay_ms / 1000,
            token_ids=self.takes_token_ids,
            properties=process.properties,
        )
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count()
        self._supervisor = Supervisor(
            f"the {kind.value} pipeline of {name!r}",
            # Its process reads the pipe only between calls, which last seconds for 2,048 inputs or a long
            # recording: a write from the event loop into a full pipe waited that long (/health stalled 7.6 s
            # beside 32 embeddings requests of 2,048 inputs), so every message goes through the sender thread.
            lambda: WorkerProcess(spec, name, "pipeline", queued_writes=True),
            self._dispatch,
            self._lost,
            waiting=lambda: len(self._pending),
            stall_timeout_s=process.stall_timeout_s,
            heartbeat_timeout_s=process.heartbeat_timeout_s,
        )
        log.info("%s model %r ready in %.1f s", kind.value, name, time.monotonic() - started)

    @property
    def worker(self) -> Pipeline:
        """Itself: a pipeline is its own process's Served (a generating model's is its engine)."""
        return self

    @property
    def queued(self) -> int:
        """Requests sent and not answered yet."""
        return len(self._pending)

    async def load(self) -> Load:
        """The jobs the process runs now (its current call's) and those waiting in its queue or on the pipe."""
        if not self.up:
            raise self._supervisor.unavailable()
        running = sum(pending.started for pending in self._pending.values())
        return Load(running, len(self._pending) - running)

    def close(self) -> None:
        """End the process; what waits fails."""
        self._supervisor.close()

    def end_requests(self, reason: str) -> None:
        """Fail every waiting request with a retriable EngineUnavailable(``reason``)."""
        self._lost(EngineUnavailable(reason))

    async def embed(self, ids: list[list[int]], texts: list[str]) -> np.ndarray:
        """One float32 vector per input (a row each), as the model's pooling and normalisation make them: from
        its token ``ids``, or its text when the model does not take ids (``takes_token_ids``)."""
        vectors: np.ndarray = await self._result(lambda job_id: Embed(job_id, ids, texts), sum(map(len, ids)))
        return vectors

    async def rerank(self, pairs: list[tuple[str, str]], ids: list[list[int]], types: list[list[int]]) -> list[float]:
        """The relevance of each (query, document) pair, in order: from its token ``ids`` and ``types``
        (``TokenCodec.encode_pairs``) when the model takes ids (``takes_token_ids``), else from its texts."""
        scores: list[float] = await self._result(
            lambda job_id: Rerank(job_id, [] if ids else pairs, ids, types), sum(map(len, ids))
        )  # a pipeline that takes text (no ids) is bounded by --max-queued-jobs alone
        return scores

    async def transcribe(self, samples: np.ndarray, **options: object) -> AsyncIterator[str | Transcript]:
        """The transcription of 16 kHz mono ``samples``: streamed text pieces (with ``stream=True``), then the
        Transcript. ``options``: Transcribe's fields (language, prompt, temperature, timestamps, stream)."""
        samples = np.asarray(samples, dtype=np.float32)  # asarray: no copy before the one tobytes makes
        if samples.size < self.fft_samples:  # a few milliseconds: silence after it, as the model hears a pause
            samples = np.pad(samples, (0, self.fft_samples - samples.size))
        data = samples.tobytes()

        def job(job_id: int) -> Transcribe:
            return Transcribe(job_id, data, **options)  # type: ignore[arg-type]

        async with contextlib.aclosing(self._answers(job, size=len(data))) as answers:
            async for answer in answers:
                yield answer

    async def make_images(self, job: Callable[[int], MakeImages]) -> AsyncIterator[Denoised | Any]:
        """A MakeImages job's answers: a Denoised per denoising step (with its partial image when one is due),
        then the MadeImages. ``job``: the job for a job id."""
        async with contextlib.aclosing(self._answers(job)) as answers:
            async for answer in answers:
                yield answer

    async def speak(self, job: Callable[[int], Speak]) -> Spoken:
        """A Speak job's encoded audio. ``job``: the job for a job id."""
        spoken: Spoken = await self._result(job, 0)
        return spoken

    def check_room(self, size: int = 1) -> None:
        """EngineUnavailable or EngineOverloaded unless a request holding ``size`` (QUEUE_BUDGETS' unit) fits the
        model's queue now; with the default, whether the queue has any room (before a request's costly preparation,
        so a full queue refuses at once)."""
        if not self._supervisor.started or not self.up:
            raise self._supervisor.unavailable()
        if len(self._pending) >= self.settings.max_queued_jobs:
            raise EngineOverloaded(
                f"{self.name!r} has {len(self._pending)} requests waiting (--max-queued-jobs); retry shortly"
            )
        setting, unit = QUEUE_BUDGETS[self.kind]
        held = sum(pending.size for pending in self._pending.values())
        if size and held and held + size > getattr(self.settings, setting):
            flag = "--" + setting.replace("_", "-")
            raise EngineOverloaded(f"{self.name!r} holds {held} {unit} waiting ({flag}); retry shortly")

    async def _result(self, make_job: Callable[[int], object], size: int) -> Any:
        # Closed on return, not whenever the event loop finalises it: its finally lets go of the job, which until
        # then still counted as queued after its answer had gone out (against --max-queued-jobs).
        async with contextlib.aclosing(self._answers(make_job, size)) as answers:
            async for answer in answers:
                return answer
        raise EngineError("the pipeline gave no answer")  # unreachable: _answers ends with one

    async def _answers(self, make_job: Callable[[int], object], size: int = 0) -> AsyncGenerator[Any, None]:
        """The job's answers; ``size``: what it holds, counted against the model's queue budget (QUEUE_BUDGETS)."""
        self.check_room(size)
        job_id = next(self._ids)
        pending = self._pending[job_id] = _Pending(size)
        finished = False
        try:
            self._supervisor.send(make_job(job_id))
            while True:
                answer = await pending.answers.get()
                match answer:
                    case Partial(_, text):
                        yield text
                    case Denoised() as step:
                        yield step
                    case Done(_, result):
                        finished = True
                        yield result
                        return
                    case Failed(_, message):
                        finished = True
                        raise EngineError(f"the {self.kind.value} pipeline of {self.name!r} failed: {message}")
                    case EngineError() as error:
                        finished = True
                        raise error
        finally:
            del self._pending[job_id]
            if not finished and self.up:  # the caller went away: drop the job if it has not started
                with contextlib.suppress(OSError, EngineUnavailable):
                    self._supervisor.send(CancelJob(job_id))

    def _dispatch(self, message: object) -> None:
        if isinstance(message, Started):
            for started in message.job_ids:
                if (pending := self._pending.get(started)) is not None:
                    pending.started = True
            return
        job_id = getattr(message, "job_id", None)
        pending = self._pending.get(job_id) if isinstance(job_id, int) else None
        if pending is not None:
            pending.answers.put_nowait(message)

    def _lost(self, error: EngineUnavailable) -> None:
        for pending in self._pending.values():
            pending.answers.put_nowait(error)


def _preprocessor(model_dir: Path) -> dict[str, Any]:
    """A speech model's preprocessor_config.json ({} if it has none or it cannot be read)."""
    try:
        config = json.loads((model_dir / "preprocessor_config.json").read_text())
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _window_seconds(model_dir: Path) -> float:
    """The audio a speech model reads at once (preprocessor_config.json's chunk_length; Whisper's 30 s)."""
    value = _preprocessor(model_dir).get("chunk_length")
    return float(value) if isinstance(value, int | float) and value > 0 else 30.0


def _fft_samples(model_dir: Path) -> int:
    """The samples of a speech model's analysis window (n_fft; Whisper's 400): its feature extractor pads a
    recording by reflecting half a window, and fails on one no longer than that."""
    value = _preprocessor(model_dir).get("n_fft")
    return int(value) if isinstance(value, int) and value > 0 else 400


def _max_length(model_dir: Path) -> int:
    """The longest input in tokens: config.json's max_position_embeddings, or the tokenizer's model_max_length
    when smaller (RoBERTa's positions start at 2); 0 for a speech model, whose audio is bounded instead."""
    config = model_files.config(model_dir)
    if config.get("model_type") == "whisper":
        return 0
    limits = [config.get("max_position_embeddings")]
    with contextlib.suppress(OSError, ValueError):
        limits.append(json.loads((model_dir / "tokenizer_config.json").read_text()).get("model_max_length"))
    known = [int(limit) for limit in limits if isinstance(limit, int | float) and 0 < limit < 1e9]
    return min(known, default=512)
