"""The most any server can serve of one-input embedding requests on this machine, against the bare pipeline.

    python benchmarks/serving_ceiling.py [--model-dir service/bundled_models/tiny-embed] [--requests 512]

Runs, in one run and alternating within each round: the bare TextEmbeddingPipeline in this process (the inputs
``c`` clients keep outstanding in one call, as ``ovserve bench --endpoint embeddings --engine`` does), and two
servers that do no work at all in a child process (a grpc.aio EmbeddingService and a tornado ``/v3/embeddings``
answering a vector of the model's length without computing it) loaded by the bench's clients (grpc.aio, aiohttp).
A server that does nothing is the ceiling of any server written with the same stacks: its inputs per second ÷ the
bare pipeline's is the highest ratio ovserve's gRPC and REST faces could reach on this model, whatever the
service does (on 2 shared cores the clients' own CPU counts against the servers, not against the bare pipeline).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import tornado.web

from ovserve.clients.defaults import LOOPBACK
from ovserve.clients.v1 import embedding_pb2, embedding_pb2_grpc
from ovserve.service.bench.backends import http_session
from ovserve.service.pipelines.kinds import embedding_config
from ovserve.service.pipelines.worker import text_embedding_pipeline

WORDS = "the sea ships harbour light wind morning river stone bridge garden winter city road market song".split()  # noqa: SIM905
Send = Callable[[str], Awaitable[None]]


class _NoWork(embedding_pb2_grpc.EmbeddingServiceServicer):
    def __init__(self, width: int) -> None:
        self._reply = embedding_pb2.CreateEmbeddingResponse(
            object="list", model="m", data=[embedding_pb2.Embedding(object="embedding", embedding=[0.1] * width)]
        )

    async def CreateEmbedding(self, request: object, context: object) -> embedding_pb2.CreateEmbeddingResponse:
        return self._reply


def _serve(width: int, grpc_port: int, http_port: int, ready: object) -> None:
    """The two no-work servers, in a child process (as ovserve's server is apart from its clients)."""
    body = json.dumps({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.1] * width}]})

    class Handler(tornado.web.RequestHandler):
        def post(self) -> None:
            json.loads(self.request.body)
            self.set_header("Content-Type", "application/json")
            self.finish(body)

    async def main() -> None:
        server = grpc.aio.server()
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(_NoWork(width), server)
        server.add_insecure_port(f"{LOOPBACK}:{grpc_port}")
        await server.start()
        tornado.web.Application([("/v3/embeddings", Handler)]).listen(http_port, LOOPBACK)
        ready.set()  # type: ignore[attr-defined]
        await server.wait_for_termination()

    asyncio.run(main())


async def _rate(send: Send, texts: list[str], concurrency: int) -> float:
    queue = list(texts)

    async def client() -> None:
        while queue:
            await send(queue.pop())

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(concurrency)))
    return len(texts) / (time.perf_counter() - started)


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


async def main(model_dir: Path, requests: int, rounds: int, concurrency: list[int]) -> None:
    """Print inputs per second of the bare pipeline and of the no-work servers, and the ceilings."""
    config = embedding_config(model_dir)
    pipeline = text_embedding_pipeline(model_dir, config)
    grpc_port, http_port = _free_port(), _free_port()
    ready = multiprocessing.Event()
    child = multiprocessing.Process(target=_serve, args=(config.dimensions, grpc_port, http_port, ready), daemon=True)
    child.start()
    ready.wait(60)
    channel = grpc.aio.insecure_channel(f"{LOOPBACK}:{grpc_port}")
    stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
    http = http_session(max(concurrency))

    async def by_grpc(text: str) -> None:
        await stub.CreateEmbedding(embedding_pb2.CreateEmbeddingRequest(model="m", input_prompts=[{"text": text}]))

    async def by_http(text: str) -> None:
        body = json.dumps({"model": "m", "input": [text], "encoding_format": "base64"})
        url = f"http://{LOOPBACK}:{http_port}/v3/embeddings"
        async with http.post(url, data=body, headers={"Content-Type": "application/json"}) as reply:
            reply.raise_for_status()
            await reply.read()

    rng = random.Random(0)

    def texts() -> list[str]:
        return [" ".join(rng.choices(WORDS, k=8)) for _ in range(requests)]

    def engine(batch: list[str], per_call: int) -> float:
        started = time.perf_counter()
        for start in range(0, len(batch), per_call):
            pipeline.embed_documents(batch[start : start + per_call])
        return len(batch) / (time.perf_counter() - started)

    rates: dict[tuple[str, int], list[float]] = {}
    try:
        await _rate(by_grpc, texts()[:32], 4)  # warm-up
        await _rate(by_http, texts()[:32], 4)
        for _ in range(rounds):
            for clients in concurrency:
                rates.setdefault(("engine", clients), []).append(engine(texts(), min(32, clients)))
                for name, send in (("grpc", by_grpc), ("http", by_http)):
                    rates.setdefault((name, clients), []).append(await _rate(send, texts(), clients))
    finally:
        await channel.close()
        await http.close()
        child.kill()
    print("clients  engine inputs/s  no-work gRPC (÷ engine)  no-work REST (÷ engine)")
    for clients in concurrency:
        engine_rate = statistics.median(rates["engine", clients])
        served = [statistics.median(rates[name, clients]) for name in ("grpc", "http")]
        cells = [f"{rate:8.0f} ({rate / engine_rate:.2f})" for rate in served]
        print(f"{clients:>7}  {engine_rate:15.0f}  {cells[0]:>23}  {cells[1]:>23}")


if __name__ == "__main__":
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--model-dir", type=Path, default=Path("service/bundled_models/tiny-embed"))
    options.add_argument("--requests", type=int, default=512)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = options.parse_args()
    asyncio.run(main(args.model_dir, args.requests, args.rounds, args.concurrency))
