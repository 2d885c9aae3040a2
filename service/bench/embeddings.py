"""``ovserve bench --endpoint embeddings``: inputs embedded per second through the service, beside the bare pipeline.

The service side sends embedding requests (``--inputs-per-request`` texts of ``--input-tokens`` tokens each) over
gRPC or HTTP at each concurrency; the engine side runs the same texts through a TextEmbeddingPipeline in this
process, as the service's pipeline process would at best: every input that the same concurrency would have
outstanding (up to the service's batch) in one call. The ratio is service ÷ engine inputs per second.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

from clients.v1 import embedding_pb2, embedding_pb2_grpc
from service.bench.urls import ApiBase, first_grpc_model, first_model
from service.pipelines import PipelineSettings

WORDS = (
    "the", "sea", "ships", "harbour", "light", "wind", "morning", "river",
    "stone", "bridge", "garden", "winter", "city", "road", "market", "song",
)  # fmt: skip


@dataclass(frozen=True)
class EmbeddingLoad:
    """What an embeddings bench sends."""

    requests: int = 64
    inputs_per_request: int = 1
    input_words: int = 32
    concurrency: tuple[int, ...] = (1, 8)
    rounds: int = 1
    seed: int = 0

    def texts(self, rng: random.Random) -> list[list[str]]:
        """Each request's inputs: new random word sequences (no two alike)."""
        return [
            [" ".join(rng.choices(WORDS, k=self.input_words)) for _ in range(self.inputs_per_request)]
            for _ in range(self.requests)
        ]


Send = Callable[[list[str]], Awaitable[None]]


async def _run(send: Send, batches: list[list[str]], concurrency: int) -> float:
    """Send every batch with ``concurrency`` in flight; the seconds it took."""
    queue = list(reversed(batches))

    async def worker() -> None:
        while queue:
            await send(queue.pop())

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


class _Grpc:
    name = "grpc"

    def __init__(self, target: str, model: str) -> None:
        import grpc

        self._channel = grpc.aio.insecure_channel(target)
        self._stub = embedding_pb2_grpc.EmbeddingServiceStub(self._channel)
        self._model = model

    async def send(self, texts: list[str]) -> None:
        request = embedding_pb2.CreateEmbeddingRequest(model=self._model, input_prompts=[{"text": t} for t in texts])
        await self._stub.CreateEmbedding(request, timeout=600)

    async def close(self) -> None:
        await self._channel.close()


class _Http:
    name = "http"

    def __init__(self, url: str, model: str) -> None:
        self._client = AsyncHTTPClient(force_instance=True, max_clients=256)
        self._url, self._model = ApiBase.parse(url).route("embeddings"), model

    async def send(self, texts: list[str]) -> None:
        body = json.dumps({"model": self._model, "input": texts, "encoding_format": "base64"})
        await self._client.fetch(
            HTTPRequest(self._url, "POST", {"Content-Type": "application/json"}, body, request_timeout=600)
        )

    async def close(self) -> None:
        self._client.close()


class _Engine:
    """The bare pipeline: the inputs the concurrency keeps outstanding, up to the service's batch, per call."""

    name = "engine"

    def __init__(self, model_dir: Path) -> None:
        from service.pipelines.kinds import embedding_config
        from service.pipelines.worker import text_embedding_pipeline

        self._pipeline = text_embedding_pipeline(model_dir, embedding_config(model_dir))
        self._batch = PipelineSettings().max_batch_inputs

    async def run(self, batches: list[list[str]], concurrency: int) -> float:
        texts = [text for batch in batches for text in batch]
        per_call = max(1, min(self._batch, concurrency * len(batches[0])))

        def work() -> float:
            started = time.perf_counter()
            for start in range(0, len(texts), per_call):
                self._pipeline.embed_documents(texts[start : start + per_call])
            return time.perf_counter() - started

        return await asyncio.to_thread(work)


async def bench_embeddings(
    load: EmbeddingLoad, backends: list[str], target: str, url: str, model: str, model_dir: Path | None
) -> dict[str, Any]:
    """Inputs per second by (backend, concurrency), medians over rounds, and service ÷ engine ratios."""
    rng = random.Random(load.seed)
    for name in backends:  # a wrong URL or target ends in one line naming it, before any load
        await (first_grpc_model(target) if name == "grpc" else first_model(ApiBase.parse(url)))
    services = [_Grpc(target, model) if name == "grpc" else _Http(url, model) for name in backends]
    engine = _Engine(model_dir) if model_dir is not None else None
    seconds: dict[tuple[str, int], list[float]] = {}
    try:
        for runner in services:  # warm-up: connections, the pipeline's first shapes
            await _run(runner.send, load.texts(rng)[:4], 1)
        for _ in range(load.rounds):
            for concurrency in load.concurrency:
                if engine is not None:
                    seconds.setdefault(("engine", concurrency), []).append(
                        await engine.run(load.texts(rng), concurrency)
                    )
                for runner in services:
                    seconds.setdefault((runner.name, concurrency), []).append(
                        await _run(runner.send, load.texts(rng), concurrency)
                    )
    finally:
        for runner in services:
            await runner.close()
    inputs = load.requests * load.inputs_per_request
    rates = {key: inputs / statistics.median(values) for key, values in seconds.items()}
    ratios = {
        f"{name} / engine, c={concurrency}": rate / rates[("engine", concurrency)]
        for (name, concurrency), rate in rates.items()
        if name != "engine" and ("engine", concurrency) in rates
    }
    return {
        "inputs_per_s": [
            {"backend": name, "concurrency": concurrency, "inputs_per_s": rate}
            for (name, concurrency), rate in rates.items()
        ],
        "ratios": ratios,
    }


def table(result: dict[str, Any]) -> str:
    """The result as text: inputs per second by backend and concurrency, then the ratios."""
    lines = ["backend  load   inputs/s", "-" * 26]
    for row in result["inputs_per_s"]:
        lines.append(f"{row['backend']:>7}  c={row['concurrency']:<4} {row['inputs_per_s']:>8.1f}")
    lines += ["", *(f"{name:<24} {value:.3f}" for name, value in result["ratios"].items())]
    return "\n".join(lines)
