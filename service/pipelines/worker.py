"""The pipeline process: loads one OpenVINO GenAI pipeline and runs the jobs the server sends, in order.

``python -m ovserve.service.pipelines FD`` (started like the engine process, see
service/workers/process.py). Jobs wait in a queue here; between calls every
message waiting on the pipe is read first, so that a cancelled job is dropped
before it runs and the embedding inputs of all waiting requests go into one call.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import signal
import sys
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ovserve.service.pipelines.encoder import EncoderModel
from ovserve.service.pipelines.image_runner import ImageRunner
from ovserve.service.pipelines.kinds import EmbeddingConfig, PipelineKind
from ovserve.service.pipelines.messages import (
    CancelJob,
    Done,
    Embed,
    Failed,
    Partial,
    PipelineSpec,
    Rerank,
    Segment,
    Started,
    Transcribe,
    Transcript,
)
from ovserve.service.pipelines.one_job import OneJobRunner, failure_text
from ovserve.service.pipelines.speech_runner import SpeakRunner
from ovserve.service.workers.child import Channel, ChildConnection
from ovserve.service.workers.messages import LoadFailed, Ready, Stop

Job = Embed | Rerank | Transcribe
Send = Callable[[object], None]
SAMPLE_RATE = 16_000  # Hz: what Whisper's feature extractor takes
RERANK_TOP_N = 1_000_000  # "every document": more than a request may send


class Runner(Protocol):
    """Runs jobs of one kind on a loaded pipeline."""

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        """Pop the jobs of the next call from the front of ``queue`` (at least one)."""

    def room(self, queue: collections.deque[Job]) -> bool:
        """Whether the next call could take more than ``queue`` holds (worth a short wait for more)."""

    def run(self, jobs: list[Job], send: Send) -> None:
        """Run ``jobs``, sending each a Done or Failed (and a streamed one its Partials first)."""


def text_embedding_pipeline(
    model_dir: Path, config: EmbeddingConfig, device: str = "CPU", properties: dict[str, object] | None = None
) -> Any:
    """A TextEmbeddingPipeline with the model's pooling and normalisation."""
    import openvino_genai as ov_genai

    pooling = ov_genai.TextEmbeddingPipeline.PoolingType
    kind = {"cls": pooling.CLS, "mean": pooling.MEAN, "last_token": pooling.LAST_TOKEN}[config.pooling]
    settings = ov_genai.TextEmbeddingPipeline.Config(pooling_type=kind, normalize=config.normalize)
    return ov_genai.TextEmbeddingPipeline(str(model_dir), device, settings, **(properties or {}))


class _Batched:
    """Takes the waiting jobs, in order, while their inputs and tokens fit one call's budgets."""

    def __init__(self, spec: PipelineSpec) -> None:
        self._max_inputs, self._max_tokens = spec.max_batch_inputs, spec.max_batch_tokens
        self._encoder = (
            EncoderModel(spec.model_dir, spec.device, spec.properties, spec.max_batch_tokens)
            if spec.token_ids
            else None
        )

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        jobs: list[Embed | Rerank] = [queue.popleft()]  # type: ignore[list-item]
        inputs, tokens = jobs[0].size, jobs[0].tokens
        while queue and isinstance(job := queue[0], Embed | Rerank):
            inputs, tokens = inputs + job.size, tokens + job.tokens
            if inputs > self._max_inputs or tokens > self._max_tokens:
                break
            jobs.append(queue.popleft())  # type: ignore[arg-type]
        return jobs  # type: ignore[return-value]

    def room(self, queue: collections.deque[Job]) -> bool:
        waiting = [job for job in queue if isinstance(job, Embed | Rerank)]
        return sum(job.size for job in waiting) < self._max_inputs and sum(job.tokens for job in waiting) < (
            self._max_tokens
        )

    def run(self, jobs: list[Job], send: Send) -> None:
        batched = [job for job in jobs if isinstance(job, Embed | Rerank)]
        try:
            results = self._results(batched)
        except Exception as error:
            if len(batched) == 1:
                send(Failed(batched[0].job_id, failure_text(error)))
                return
            for job in batched:  # one request's input must not fail the others batched with it
                self.run([job], send)
            return
        start = 0
        for job in batched:
            send(Done(job.job_id, results[start : start + job.size]))
            start += job.size

    def _results(self, jobs: list[Any]) -> Any:
        """The results of every input of ``jobs``, in order (a sequence sliced per job)."""
        raise NotImplementedError


class EmbedRunner(_Batched):
    """Embedding inputs of every waiting request in one call: on the model's IR directly (token ids; see
    encoder.py) or, for an IR that cannot run so, TextEmbeddingPipeline (texts)."""

    def __init__(self, spec: PipelineSpec) -> None:
        super().__init__(spec)
        assert spec.embedding is not None
        self._config = spec.embedding
        self._pipeline = (
            None
            if spec.token_ids
            else text_embedding_pipeline(spec.model_dir, self._config, spec.device, spec.properties)
        )

    def _results(self, jobs: list[Embed]) -> np.ndarray:
        if self._encoder is not None:
            return self._encoder.embed(
                [row for job in jobs for row in job.ids], self._config.pooling, self._config.normalize
            )
        assert self._pipeline is not None
        texts = [text for job in jobs for text in job.texts]
        vectors = np.asarray(self._pipeline.embed_documents(texts), dtype=np.float32)
        if vectors.shape[0] != len(texts):  # openvino-genai 2026.4 gives one row for a batch of empty texts
            raise ValueError(f"the pipeline gave {vectors.shape[0]} vectors for {len(texts)} texts")
        return vectors


class RerankRunner(_Batched):
    """Cross-encoder pairs of every waiting request in one call on the model's IR directly (encoder.py), or
    TextRerankPipeline one document per call.

    openvino-genai 2026.4 tokenizes a call's (query, document) pairs with the single query broadcast over the
    documents, and openvino_tokenizers' CombineSegments then writes past its output buffer when the documents are
    short next to the query ("Check 'out_offset <= flat_out_size' failed", then ``free(): corrupted unsorted
    chunks`` or SIGSEGV: the process dies). Measured on tiny-rerank: a 5-token query with 6-64 copies of a 3-token
    document, or with 6 or 16 distinct 3-token ones, failed in every run; longer documents did not. With the query
    repeated once per document the tokenizer never failed, and a call with one document has nothing to broadcast:
    1,200 random single pairs (1-200 words each) never failed. Scores equal the batched ones within 1e-6.
    """

    def __init__(self, spec: PipelineSpec) -> None:
        super().__init__(spec)
        self._pipeline: Any = None
        if not spec.token_ids:
            import openvino_genai as ov_genai

            # The pipeline keeps only its top_n best (3 by default): every document's score is asked for.
            config = ov_genai.TextRerankPipeline.Config(top_n=RERANK_TOP_N)
            self._pipeline = ov_genai.TextRerankPipeline(str(spec.model_dir), spec.device, config, **spec.properties)

    def _results(self, jobs: list[Rerank]) -> list[float]:
        if self._encoder is not None:
            rows = [row for job in jobs for row in job.ids]
            return [float(score) for score in self._encoder.score(rows, [types for job in jobs for types in job.types])]
        distinct = {pair: 0.0 for job in jobs for pair in job.pairs}  # a pair sent several times is scored once
        for query, document in distinct:
            ((_, score),) = self._pipeline.rerank(query, [document])  # one document: see the class docstring
            distinct[query, document] = float(score)
        return [distinct[pair] for job in jobs for pair in job.pairs]


class TranscribeRunner(OneJobRunner):
    """WhisperPipeline: one recording per call, streamed when asked (and the pipeline can)."""

    def __init__(self, spec: PipelineSpec) -> None:
        import openvino_genai as ov_genai

        self._pipeline = ov_genai.WhisperPipeline(str(spec.model_dir), spec.device, **spec.properties)

    def answer(self, job: Transcribe, send: Send) -> Transcript:
        return self._transcribe(job, send)

    def _transcribe(self, job: Transcribe, send: Send) -> Transcript:
        samples = np.frombuffer(job.samples, dtype=np.float32)
        options: dict[str, Any] = {"task": job.task, "return_timestamps": job.timestamps}
        if job.language:
            options["language"] = f"<|{job.language}|>"
        if job.prompt:
            options["initial_prompt"] = job.prompt
        if job.temperature > 0:
            options.update(do_sample=True, temperature=job.temperature)
        streamer = None
        if job.stream:

            def streamer(text: str) -> bool:
                send(Partial(job.job_id, text))
                return False  # go on

        result = self._pipeline.generate(samples.tolist(), streamer=streamer, **options)
        duration = len(samples) / SAMPLE_RATE
        # A segment without an end timestamp (the model wrote none) ends with the audio: -1 means unknown.
        segments = [
            Segment(
                max(0.0, chunk.start_ts),
                chunk.end_ts if chunk.end_ts >= 0 else duration,
                chunk.text,
                [int(token) for token in getattr(chunk, "token_ids", None) or []],
            )
            for chunk in result.chunks or []
        ]
        languages = list(getattr(result, "languages", None) or [])
        language = job.language or (languages[0].strip("<|>") if languages else None)
        return Transcript(result.texts[0].strip(), language, segments, duration)


RUNNERS: dict[PipelineKind, Callable[[PipelineSpec], Runner]] = {
    PipelineKind.EMBED: EmbedRunner,
    PipelineKind.RERANK: RerankRunner,
    PipelineKind.TRANSCRIBE: TranscribeRunner,
    PipelineKind.IMAGE: ImageRunner,
    PipelineKind.SPEAK: SpeakRunner,
}


def main() -> None:
    """Entry point: ``python -m ovserve.service.pipelines FD``; the first message on FD is the PipelineSpec."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when its pipelines stop
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s pipeline: %(message)s")
    connection = ChildConnection(Connection(int(sys.argv[1])))
    spec: PipelineSpec = connection.recv()
    try:
        runner = RUNNERS[spec.kind](spec)
    except Exception as error:
        connection.send(LoadFailed(failure_text(error)))
        return
    connection.send(Ready())
    connection.start_heartbeat()
    with contextlib.suppress(EOFError, BrokenPipeError):  # the server is gone
        serve(connection, runner, spec.batch_delay_s)


def serve(connection: Channel, runner: Runner, delay_s: float = 0.0) -> None:
    """Read jobs, run them in order, answer each; return on Stop.

    Every message waiting on the pipe is read before a call; while the runner has room for more, the call also
    waits up to ``delay_s`` after its oldest job arrived, for other requests' inputs to share it.
    """
    queue: collections.deque[Job] = collections.deque()
    arrived: dict[int, float] = {}  # job id -> when it came (time.monotonic)
    while True:
        if not queue:
            timeout: float | None = None
        elif delay_s and runner.room(queue):
            timeout = max(0.0, arrived[queue[0].job_id] + delay_s - time.monotonic())
        else:
            timeout = 0.0
        if connection.poll(timeout):
            message = connection.recv()
            if isinstance(message, Stop):
                for job in queue:
                    connection.send(Failed(job.job_id, "the pipeline is shutting down"))
                return
            if isinstance(message, CancelJob):
                queue = collections.deque(job for job in queue if job.job_id != message.job_id)
                arrived.pop(message.job_id, None)
            else:
                queue.append(message)
                arrived[message.job_id] = time.monotonic()
            continue
        if queue:
            jobs = runner.take(queue)
            for job in jobs:
                del arrived[job.job_id]
            connection.send(Started([job.job_id for job in jobs]))
            runner.run(jobs, connection.send)
