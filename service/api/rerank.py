"""RerankService semantics: Cohere's / OVMS's / vLLM's rerank, and vLLM's pairwise score, on a cross-encoder.

The query and each document are read together by the model (a sequence classifier with one label); its score,
through a sigmoid, is the document's relevance. Inputs are bounded (count, characters) before any work.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from ovserve.clients.v1 import rerank_pb2
from ovserve.service.api.prompting import INLINE_PROMPT_CHARS
from ovserve.service.api.runs import service_error
from ovserve.service.engine import EngineError
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ModelRegistry
from ovserve.service.pipelines import Pipeline, PipelineKind

#: Most documents (or pairs) in one request (Cohere's limit).
MAX_DOCUMENTS = 1000
#: Most characters over the query and all documents of one request (8 MiB of ASCII).
MAX_RERANK_CHARS = 8 * 1024 * 1024


def _check_texts(field: str, texts: Sequence[str], violations: list[FieldViolation]) -> None:
    if not texts:
        violations.append(FieldViolation(field, "required: at least one"))
    elif len(texts) > MAX_DOCUMENTS:
        violations.append(FieldViolation(field, f"{len(texts)} given: at most {MAX_DOCUMENTS}"))
    else:
        empty = next((index for index, text in enumerate(texts) if not text), None)
        if empty is not None:
            violations.append(FieldViolation(f"{field}[{empty}]", "an empty text"))


def _check_size(field: str, texts: Sequence[str]) -> int:
    size = sum(map(len, texts))
    if size > MAX_RERANK_CHARS:
        raise InvalidArgument.of(field, f"{size} characters: at most {MAX_RERANK_CHARS} in all")
    return size


async def _scored(pipeline: Pipeline, pairs: list[tuple[str, str]], size: int) -> tuple[list[float], int]:
    """Each pair's relevance, in order, and the tokens the model read over all pairs (usage).

    The pairs are tokenised once, off the event loop when the texts are large: as the model's input when it runs
    on token ids, else only to count (its pipeline tokenises the texts). Either way a pair is cut to the model's
    length: usage counts what it reads, not what was sent.
    """
    codec = pipeline.codec
    assert codec is not None
    longest = pipeline.max_model_len

    def tokenize() -> tuple[list[list[int]], list[list[int]], int]:
        if codec.backend != "tokenizers":  # no tokenizer.json: the pipeline's own tokenizer, counted per text
            return [], [], sum(min(codec.count_pair(first, second), longest) for first, second in pairs)
        ids, types = codec.encode_pairs(pairs, longest)
        return (ids, types, sum(map(len, ids))) if pipeline.takes_token_ids else ([], [], sum(map(len, ids)))

    ids, types, tokens = tokenize() if size <= INLINE_PROMPT_CHARS else await asyncio.to_thread(tokenize)
    try:
        return await pipeline.rerank(pairs, ids, types), tokens
    except EngineError as error:
        raise service_error(error) from None


async def rerank(registry: ModelRegistry, request: rerank_pb2.RerankRequest) -> rerank_pb2.RerankResponse:
    """RerankService.Rerank."""
    pipeline = registry.pipeline(request.model, PipelineKind.RERANK)
    documents = [document.text for document in request.documents]
    violations: list[FieldViolation] = []
    if not request.query:
        violations.append(FieldViolation("query", "required: a non-empty string"))
    _check_texts("documents", documents, violations)
    if request.HasField("top_n") and request.top_n < 1:
        violations.append(FieldViolation("top_n", f"{request.top_n}: at least 1"))
    InvalidArgument.check(violations)
    size = _check_size("documents", [request.query, *documents])
    scores, tokens = await _scored(pipeline, [(request.query, document) for document in documents], size)
    top_n = min(request.top_n, len(documents)) if request.HasField("top_n") else len(documents)
    with_documents = not request.HasField("return_documents") or request.return_documents
    results = [
        rerank_pb2.RerankResult(
            index=index,
            relevance_score=score,
            document=rerank_pb2.RerankDocument(text=documents[index]) if with_documents else None,
        )
        for index, score in sorted(enumerate(scores), key=lambda item: -item[1])[:top_n]
    ]
    return rerank_pb2.RerankResponse(
        id=f"rerank-{uuid.uuid4().hex}",
        model=pipeline.name,
        results=results,
        usage=rerank_pb2.RerankUsage(total_tokens=tokens),
    )


async def score(registry: ModelRegistry, request: rerank_pb2.ScoreRequest) -> rerank_pb2.ScoreResponse:
    """RerankService.Score: text_1 against each text_2, or pairwise when there are as many of each."""
    pipeline = registry.pipeline(request.model, PipelineKind.RERANK)
    firsts, seconds = list(request.text_1), list(request.text_2)
    violations: list[FieldViolation] = []
    _check_texts("text_1", firsts, violations)
    _check_texts("text_2", seconds, violations)
    if len(firsts) not in (1, len(seconds)) and not violations:
        violations.append(FieldViolation("text_1", f"{len(firsts)} texts: one, or as many as text_2 ({len(seconds)})"))
    InvalidArgument.check(violations)
    size = _check_size("text_2", [*firsts, *seconds])
    pairs = [(firsts[0] if len(firsts) == 1 else firsts[index], second) for index, second in enumerate(seconds)]
    scores, tokens = await _scored(pipeline, pairs, size)
    return rerank_pb2.ScoreResponse(
        id=f"score-{uuid.uuid4().hex}",
        object="list",
        created=int(time.time()),
        model=pipeline.name,
        data=[rerank_pb2.ScoreData(index=index, object="score", score=scores[index]) for index in range(len(pairs))],
        usage=rerank_pb2.RerankUsage(total_tokens=tokens),
    )
