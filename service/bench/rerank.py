"""``ovserve bench --endpoint rerank``: documents ranked per second (one query and ``--inputs-per-request``
documents a request) through the service, beside the bare TextRerankPipeline and another server.

The service is sent RerankService.Rerank over gRPC and ``POST /v3/rerank`` over HTTP; a peer its ``/v1/rerank``
(Cohere's shape, as infinity-emb, vLLM and Jina take it), the same body. No document text comes back
(``return_documents`` false), and every document's score does (no ``top_n``).

The engine is the bare pipeline at the best use of it that does not crash: one document per ``rerank`` call,
every document of every request in turn. openvino-genai 2026.4 broadcasts a call's single query over its
documents when it tokenises them, and openvino_tokenizers then overruns a buffer and kills the process
(service/pipelines/worker.py's RerankRunner says when). Checked here on tiny-rerank with this bench's words,
50 calls per shape, each shape in its own process: 16 documents of 6 words, or of 4, against a 4-word query died
(heap corruption, SIGABRT), 16 of 8 or 12 words did not; 4 documents of 4 words against an 8-word query died, 4 or
16 of 8 words against a 32-word one did not. No rule of lengths keeps a batched call safe, so none is made. A call
has one query, so requests in flight together could not share a call anyway: the engine's figure does not depend
on the concurrency, and it is run at each only to pair it with the service's runs of the same round.
"""

from __future__ import annotations

import time
from pathlib import Path

from ovserve.clients.v1 import rerank_pb2, rerank_pb2_grpc
from ovserve.service.bench.embeddings import Batch, Endpoint


class RerankPipeline:
    """TextRerankPipeline, one document per call (see the module's docstring); run in pipeline_process's child."""

    def __init__(self, model_dir: Path) -> None:
        import openvino_genai as ov_genai

        self._pipeline = ov_genai.TextRerankPipeline(str(model_dir), "CPU", ov_genai.TextRerankPipeline.Config(top_n=1))

    def seconds(self, batches: list[Batch], concurrency: int) -> float:
        """Every document of every request ranked against its query in turn; the seconds it took."""
        started = time.perf_counter()
        for batch in batches:
            for document in batch.texts:
                self._pipeline.rerank(batch.query, [document])
        return time.perf_counter() - started


RERANK = Endpoint(
    name="rerank",
    unit="documents",
    queries=True,
    body=lambda model, batch: {
        "model": model,
        "query": batch.query,
        "documents": batch.texts,
        "return_documents": False,
    },
    stub=rerank_pb2_grpc.RerankServiceStub,
    method="Rerank",
    request=lambda model, batch: rerank_pb2.RerankRequest(
        model=model,
        query=batch.query,
        documents=[rerank_pb2.RerankDocument(text=text) for text in batch.texts],
        return_documents=False,
    ),
    results="results",
    pipeline=RerankPipeline,
)
