"""The pipeline process: loads one OpenVINO GenAI pipeline and runs the jobs the server sends, in order.

``python -m service.pipelines FD`` (started like the engine process, see
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
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from service.pipelines.kinds import EmbeddingConfig, PipelineKind
from service.pipelines.messages import (
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
from service.workers.child import Channel, ChildConnection
from service.workers.messages import LoadFailed, Ready, Stop

Job = Embed | Rerank | Transcribe
Send = Callable[[object], None]
SAMPLE_RATE = 16_000  # Hz: what Whisper's feature extractor takes
RERANK_TOP_N = 1_000_000  # "every document": more than a request may send


class Runner(Protocol):
    """Runs jobs of one kind on a loaded pipeline."""

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        """Pop the jobs of the next call from the front of ``queue`` (at least one)."""

    def run(self, jobs: list[Job], send: Send) -> None:
        """Run ``jobs``, sending each a Done or Failed (and a streamed one its Partials first)."""


def _failure(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"


def text_embedding_pipeline(
    model_dir: Path, config: EmbeddingConfig, device: str = "CPU", properties: dict[str, object] | None = None
) -> Any:
    """A TextEmbeddingPipeline with the model's pooling and normalisation."""
    import openvino_genai as ov_genai

    pooling = ov_genai.TextEmbeddingPipeline.PoolingType
    kind = {"cls": pooling.CLS, "mean": pooling.MEAN, "last_token": pooling.LAST_TOKEN}[config.pooling]
    settings = ov_genai.TextEmbeddingPipeline.Config(pooling_type=kind, normalize=config.normalize)
    return ov_genai.TextEmbeddingPipeline(str(model_dir), device, settings, **(properties or {}))


class EmbedRunner:
    """TextEmbeddingPipeline; the inputs of every waiting request, up to max_batch_inputs, in one call."""

    def __init__(self, spec: PipelineSpec) -> None:
        assert spec.embedding is not None
        self._pipeline = text_embedding_pipeline(spec.model_dir, spec.embedding, spec.device, spec.properties)
        self._max_inputs = spec.max_batch_inputs

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        jobs = [queue.popleft()]
        inputs = len(jobs[0].texts)  # type: ignore[union-attr]
        while queue and inputs + len(queue[0].texts) <= self._max_inputs:  # type: ignore[union-attr]
            inputs += len(queue[0].texts)  # type: ignore[union-attr]
            jobs.append(queue.popleft())
        return jobs

    def run(self, jobs: list[Job], send: Send) -> None:
        embeds = [job for job in jobs if isinstance(job, Embed)]
        try:
            vectors = self._embed([text for job in embeds for text in job.texts])
        except Exception as error:
            if len(embeds) == 1:
                send(Failed(embeds[0].job_id, _failure(error)))
                return
            for job in embeds:  # one request's input must not fail the others batched with it
                self.run([job], send)
            return
        start = 0
        for job in embeds:
            send(Done(job.job_id, vectors[start : start + len(job.texts)]))
            start += len(job.texts)

    def _embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._pipeline.embed_documents(texts), dtype=np.float32)
        if vectors.shape[0] != len(texts):  # openvino-genai 2026.4 gives one row for a batch of empty texts
            raise ValueError(f"the pipeline gave {vectors.shape[0]} vectors for {len(texts)} texts")
        return vectors


class RerankRunner:
    """TextRerankPipeline: one call per distinct document of a request.

    openvino-genai 2026.4 tokenizes a call's (query, document) pairs with the single query broadcast over the
    documents, and openvino_tokenizers' CombineSegments then writes past its output buffer when the documents are
    short next to the query ("Check 'out_offset <= flat_out_size' failed", then ``free(): corrupted unsorted
    chunks`` or SIGSEGV: the process dies). Measured on tiny-rerank: a 5-token query with 6-64 copies of a 3-token
    document, or with 6 or 16 distinct 3-token ones, failed in every run; longer documents did not. With the query
    repeated once per document the tokenizer never failed, and a call with one document has nothing to broadcast:
    1,200 random single pairs (1-200 words each) never failed. Scores equal the batched ones within 1e-6.
    """

    def __init__(self, spec: PipelineSpec) -> None:
        import openvino_genai as ov_genai

        # The pipeline keeps only its top_n best (3 by default): every document's score is asked for, the API cuts.
        config = ov_genai.TextRerankPipeline.Config(top_n=RERANK_TOP_N)
        self._pipeline = ov_genai.TextRerankPipeline(str(spec.model_dir), spec.device, config, **spec.properties)

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        return [queue.popleft()]

    def run(self, jobs: list[Job], send: Send) -> None:
        for job in jobs:
            assert isinstance(job, Rerank)
            try:
                scores = self._scores(job.query, job.documents)
            except Exception as error:
                send(Failed(job.job_id, _failure(error)))
                continue
            send(Done(job.job_id, sorted(enumerate(scores), key=lambda item: -item[1])))  # best first, as the pipeline

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        """Each document's score, in order; a text sent several times is scored once."""
        distinct = {text: 0.0 for text in documents}
        for text in distinct:
            ((_, score),) = self._pipeline.rerank(query, [text])  # one document: see the class docstring
            distinct[text] = float(score)
        return [distinct[text] for text in documents]


class TranscribeRunner:
    """WhisperPipeline: one recording per call, streamed when asked (and the pipeline can)."""

    def __init__(self, spec: PipelineSpec) -> None:
        import openvino_genai as ov_genai

        self._pipeline = ov_genai.WhisperPipeline(str(spec.model_dir), spec.device, **spec.properties)

    def take(self, queue: collections.deque[Job]) -> list[Job]:
        return [queue.popleft()]

    def run(self, jobs: list[Job], send: Send) -> None:
        for job in jobs:
            assert isinstance(job, Transcribe)
            try:
                send(Done(job.job_id, self._transcribe(job, send)))
            except Exception as error:
                send(Failed(job.job_id, _failure(error)))

    def _transcribe(self, job: Transcribe, send: Send) -> Transcript:
        samples = np.frombuffer(job.samples, dtype=np.float32)
        options: dict[str, Any] = {"task": "transcribe", "return_timestamps": job.timestamps}
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
}


def main() -> None:
    """Entry point: ``python -m service.pipelines FD``; the first message on FD is the PipelineSpec."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when its pipelines stop
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s pipeline: %(message)s")
    connection = ChildConnection(Connection(int(sys.argv[1])))
    spec: PipelineSpec = connection.recv()
    try:
        runner = RUNNERS[spec.kind](spec)
    except Exception as error:
        connection.send(LoadFailed(_failure(error)))
        return
    connection.send(Ready())
    connection.start_heartbeat()
    with contextlib.suppress(EOFError, BrokenPipeError):  # the server is gone
        serve(connection, runner)


def serve(connection: Channel, runner: Runner) -> None:
    """Read jobs, run them in order, answer each; return on Stop."""
    queue: collections.deque[Job] = collections.deque()
    while True:
        timeout: float | None = 0.0 if queue else None
        while connection.poll(timeout):
            message = connection.recv()
            if isinstance(message, Stop):
                for job in queue:
                    connection.send(Failed(job.job_id, "the pipeline is shutting down"))
                return
            if isinstance(message, CancelJob):
                queue = collections.deque(job for job in queue if job.job_id != message.job_id)
            else:
                queue.append(message)
            timeout = 0.0
        if queue:
            jobs = runner.take(queue)
            connection.send(Started([job.job_id for job in jobs]))
            runner.run(jobs, connection.send)
