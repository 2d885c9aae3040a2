"""``ovserve bench --endpoint embeddings|rerank``: inputs per second through the service, beside the bare pipeline
and beside another server.

Every request carries ``--inputs-per-request`` texts of ``--input-tokens`` words: the inputs to embed, or the
documents to rank against a query of its own (rerank). The same requests go to each runner in turn at each
concurrency: the service over gRPC and HTTP, ``--engine``'s bare OpenVINO GenAI pipeline in a process of its own
(pipeline_process.py; run as the service's pipeline process would run it at best, each endpoint's module says
how), and ``--peer``'s server (its OpenAI-style ``/v1/embeddings``, or the Cohere-style ``/v1/rerank`` of
infinity-emb, vLLM or Jina). Each ratio (service ÷ engine, service ÷ peer, in inputs per second) is taken within
a round, its runs back to back, and the median over rounds reported. Every answer is checked to cover every input
sent; one that does not ends the bench with one line naming the runner.

This module holds what both endpoints share and the embeddings endpoint; ``rerank.py`` the rerank one.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ovserve.clients.v1 import embedding_pb2, embedding_pb2_grpc
from ovserve.service.bench.backends import http_session
from ovserve.service.bench.urls import ApiBase, first_grpc_model, first_model

WORDS = (
    "the", "sea", "ships", "harbour", "light", "wind", "morning", "river",
    "stone", "bridge", "garden", "winter", "city", "road", "market", "song",
)  # fmt: skip
QUERY_WORDS = 4  # a rerank query's length, in words


@dataclass(frozen=True)
class Batch:
    """One request's texts: the inputs to embed, or the documents to rank against ``query``."""

    texts: list[str]
    query: str = ""


@dataclass(frozen=True)
class InputLoad:
    """What an embeddings or rerank bench sends."""

    requests: int = 64
    inputs_per_request: int = 1
    input_words: int = 32
    concurrency: tuple[int, ...] = (1, 8)
    rounds: int = 1
    seed: int = 0

    def batches(self, rng: random.Random, queries: bool = False, count: int | None = None) -> list[Batch]:
        """``count`` (default ``requests``) requests of new random word sequences, each with a
        query of QUERY_WORDS words when ``queries``."""

        def words(count: int) -> str:
            return " ".join(rng.choices(WORDS, k=count))

        return [
            Batch(
                [words(self.input_words) for _ in range(self.inputs_per_request)],
                words(QUERY_WORDS) if queries else "",
            )
            for _ in range(self.requests if count is None else count)
        ]


class BarePipeline(Protocol):
    """An endpoint's bare OpenVINO GenAI pipeline, as pipeline_process's child runs it."""

    def seconds(self, batches: list[Batch], concurrency: int) -> float:
        """Every request's inputs through the pipeline, at its best for ``concurrency``; the seconds it took."""
        ...


class Runner(Protocol):
    """Something that runs a list of requests at a concurrency and says how long it took."""

    name: str

    async def run(self, batches: list[Batch], concurrency: int) -> float:
        """Every request answered, ``concurrency`` in flight (or as the runner best can); the seconds it took."""
        ...

    async def close(self) -> None:
        """Release connections or the pipeline."""
        ...


class RequestFailed(SystemExit):
    """A request that failed, or whose answer did not cover every input: the bench stops with this one line."""


Send = Callable[[Batch], Awaitable[int]]  # sends one request; how many inputs its answer covers


class Remote:
    """A server, through ``send``: the service over gRPC or HTTP, or the peer over HTTP."""

    def __init__(self, name: str, send: Send, close: Callable[[], Awaitable[None]]) -> None:
        self.name, self._send, self._close = name, send, close

    async def run(self, batches: list[Batch], concurrency: int) -> float:
        queue = list(reversed(batches))

        async def worker() -> None:
            while queue:
                batch = queue.pop()
                try:
                    answered = await self._send(batch)
                except Exception as error:  # gRPC's AioRpcError, a refused connection, a reply that is not JSON
                    message = f"{type(error).__name__}: {error}".splitlines()[0][:300]
                    raise RequestFailed(f"ovserve bench: a {self.name} request failed: {message}") from None
                if answered != len(batch.texts):
                    raise RequestFailed(
                        f"ovserve bench: {self.name} answered {answered} results for {len(batch.texts)} inputs"
                    )

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started

    async def close(self) -> None:
        await self._close()


def http_runner(name: str, base: ApiBase, endpoint: Endpoint, model: str) -> Remote:
    """POSTs the endpoint's body for ``model`` as JSON to its route under ``base``, on connections kept open (as
    the chat bench's HttpBackend, which says why); the answer's list ``endpoint.results`` has one entry per
    input. Made in the running event loop."""
    session = http_session(256)
    url = base.route(endpoint.name)
    headers = {"Content-Type": "application/json"}

    async def send(batch: Batch) -> int:
        async with session.post(url, data=json.dumps(endpoint.body(model, batch)), headers=headers) as response:
            body = await response.read()
        if response.status >= 400:
            raise RequestFailed(f"ovserve bench: a {name} request failed: HTTP {response.status} {body[:200]!r}")
        return len(json.loads(body)[endpoint.results])

    return Remote(name, send, session.close)


def grpc_runner(target: str, endpoint: Endpoint, model: str) -> Remote:
    """The endpoint's gRPC call for ``model`` on one channel to ``target``; the answer's list ``endpoint.results``
    has one entry per input."""
    import grpc

    channel = grpc.aio.insecure_channel(target)
    call = getattr(endpoint.stub(channel), endpoint.method)

    async def send(batch: Batch) -> int:
        reply = await call(endpoint.request(model, batch), timeout=600)
        return len(getattr(reply, endpoint.results))

    return Remote("grpc", send, channel.close)


@dataclass(frozen=True)
class Endpoint:
    """How one endpoint is benched: its requests over each face, its answers, its bare pipeline."""

    name: str  # "embeddings" or "rerank": the route's name under the API base too
    unit: str  # what an input is, for the table
    queries: bool  # whether each request has a query (rerank)
    body: Callable[[str, Batch], dict[str, Any]]  # the REST body for a model: OpenAI's (or Cohere's) shape
    stub: Callable[[Any], Any]  # the gRPC service's stub class, made on a channel
    method: str  # the stub's method
    request: Callable[[str, Batch], Any]  # its request message for a model
    results: str  # the answer's list (gRPC and REST alike) with one entry per input
    pipeline: Callable[[Path], BarePipeline]  # the bare pipeline on a model directory (run in pipeline_process)


async def bench(
    endpoint: Endpoint,
    load: InputLoad,
    backends: Sequence[str],
    target: str,
    url: str,
    model: str,
    model_dir: Path | None = None,
    peer: str | None = None,
    peer_model: str | None = None,
) -> dict[str, Any]:
    """Inputs per second by (runner, concurrency), medians over rounds, and the ratios of each service backend
    to the engine (with ``model_dir``) and to the peer (with ``peer``), each taken within a round."""
    rng = random.Random(load.seed)
    service = ApiBase.parse(url)
    for name in backends:  # a wrong URL or target ends in one line naming it, before any load
        await (first_grpc_model(target) if name == "grpc" else first_model(service))
    runners: list[Runner] = []
    try:
        if model_dir is not None:
            from ovserve.service.bench.pipeline_process import PipelineProcess  # which imports this module

            runners.append(await asyncio.to_thread(PipelineProcess, model_dir, endpoint.name))
        for name in backends:
            runners.append(grpc_runner(target, endpoint, model) if name == "grpc" else
                           http_runner("http", service, endpoint, model))  # fmt: skip
        if peer:
            other = ApiBase.parse(peer, default_prefix="/v1")  # the OpenAI path other servers use
            runners.append(http_runner("peer", other, endpoint, peer_model or await first_model(other)))
        for runner in runners:  # warm-up: connections, the pipeline's first shapes
            await runner.run(load.batches(rng, endpoint.queries, count=4), 1)
        seconds: dict[tuple[str, int], list[float]] = {}
        for _ in range(load.rounds):
            for concurrency in load.concurrency:
                batches = load.batches(rng, endpoint.queries)  # every runner gets the round's same texts
                for runner in runners:
                    seconds.setdefault((runner.name, concurrency), []).append(await runner.run(batches, concurrency))
    finally:
        for runner in runners:
            await runner.close()
    return rates_and_ratios(endpoint, load, seconds)


def rates_and_ratios(
    endpoint: Endpoint, load: InputLoad, seconds: dict[tuple[str, int], list[float]]
) -> dict[str, Any]:
    """The report: inputs per second from the median of each runner's seconds, and each service backend's ratio
    to the engine and to the peer, round by round (their runs back to back), then the median."""
    inputs = load.requests * load.inputs_per_request
    ratios = {}
    for (name, concurrency), ours in seconds.items():
        for other in ("engine", "peer"):
            theirs = seconds.get((other, concurrency))
            if name in ("grpc", "http") and theirs:
                # Inputs per second, ours ÷ theirs, is their seconds ÷ ours: each round's, then the median.
                ratios[f"{name} / {other}, c={concurrency}"] = statistics.median(
                    t / o for t, o in zip(theirs, ours, strict=True)
                )
    return {
        "endpoint": endpoint.name,
        "unit": endpoint.unit,
        "load": {
            "requests": load.requests,
            "inputs_per_request": load.inputs_per_request,
            "input_words": load.input_words,
            "query_words": QUERY_WORDS if endpoint.queries else 0,
            "rounds": load.rounds,
            "seed": load.seed,
        },
        "inputs_per_s": [
            {"backend": name, "concurrency": concurrency, "inputs_per_s": inputs / statistics.median(values)}
            for (name, concurrency), values in seconds.items()
        ],
        "ratios": ratios,
    }


def table(result: dict[str, Any]) -> str:
    """The result as text: inputs per second by runner and concurrency, then the ratios."""
    header = f"{result['unit']}/s"
    lines = [f"backend  load   {header:>10}", "-" * 28]
    for row in result["inputs_per_s"]:
        lines.append(f"{row['backend']:>7}  c={row['concurrency']:<4} {row['inputs_per_s']:>10.1f}")
    lines += ["", *(f"{name:<24} {value:.3f}" for name, value in result["ratios"].items())]
    return "\n".join(lines)


class EmbeddingsPipeline:
    """The bare TextEmbeddingPipeline: the inputs the concurrency keeps outstanding, up to the service's batch,
    in each call (as the service's pipeline process joins waiting requests); run in pipeline_process's child."""

    def __init__(self, model_dir: Path) -> None:
        from ovserve.service.pipelines import PipelineSettings
        from ovserve.service.pipelines.kinds import embedding_config
        from ovserve.service.pipelines.worker import text_embedding_pipeline

        self._pipeline = text_embedding_pipeline(model_dir, embedding_config(model_dir))
        self._batch = PipelineSettings().max_batch_inputs

    def seconds(self, batches: list[Batch], concurrency: int) -> float:
        """Every input embedded, in calls as large as ``concurrency`` requests'; the seconds it took."""
        texts = [text for batch in batches for text in batch.texts]
        per_call = max(1, min(self._batch, concurrency * len(batches[0].texts)))
        started = time.perf_counter()
        for start in range(0, len(texts), per_call):
            self._pipeline.embed_documents(texts[start : start + per_call])
        return time.perf_counter() - started


EMBEDDINGS = Endpoint(
    name="embeddings",
    unit="inputs",
    queries=False,
    body=lambda model, batch: {"model": model, "input": batch.texts, "encoding_format": "base64"},
    stub=embedding_pb2_grpc.EmbeddingServiceStub,
    method="CreateEmbedding",
    request=lambda model, batch: embedding_pb2.CreateEmbeddingRequest(
        model=model, input_prompts=[{"text": text} for text in batch.texts]
    ),
    results="data",
    pipeline=EmbeddingsPipeline,
)
