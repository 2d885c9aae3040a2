"""EmbeddingService semantics: OpenAI's embeddings API on a served embedding model.

Inputs are checked before any work (count, characters, token ids in the vocabulary), the model's instruction
prefix for the input type is prepended, every input is tokenised (off the event loop when large) to refuse one
longer than the model takes, naming it, and to count usage; the vectors come from the model's pipeline process,
batched there with other requests' inputs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from ovserve.clients.v1 import embedding_pb2
from ovserve.service.api.prompting import INLINE_PROMPT_CHARS
from ovserve.service.api.runs import service_error
from ovserve.service.engine import EngineError
from ovserve.service.errors import FieldViolation, InvalidArgument
from ovserve.service.models import ModelRegistry
from ovserve.service.pipelines import Pipeline, PipelineKind

#: Most inputs in one request (OpenAI's limit).
MAX_INPUTS = 2048
#: Most characters over all inputs of one request (8 MiB of ASCII).
MAX_INPUT_CHARS = 8 * 1024 * 1024
# input_type -> the instruction prompt it selects (config_sentence_transformers.json's "prompts"), with the
# names Cohere, Voyage and NVIDIA's retrievers use for the same two roles.
INPUT_TYPES = {
    "": "document",
    "document": "document",
    "passage": "document",
    "search_document": "document",
    "query": "query",
    "search_query": "query",
}
ENCODING_FORMATS = ("", "float", "base64")
# One thread does every large request's tokenising and reply building: that work holds the GIL in turns, and each
# thread taking turns lengthens the event loop's wait for the GIL. With asyncio's default executor (6 threads here),
# 32 requests of 2,048 inputs held /health's answer ~0.2-0.5 s at a time; queued behind one another here instead.
WORKER = ThreadPoolExecutor(1, thread_name_prefix="embeddings")
T = TypeVar("T")


Input = str | list[int]  # a text (instruction prefix applied) or token ids as sent


def _inputs(
    pipeline: Pipeline, request: embedding_pb2.CreateEmbeddingRequest, prefix: str
) -> tuple[list[Input], list[str]]:
    """Each input, and the field that names it in errors: a text input with the instruction ``prefix``, token
    ids as sent."""
    if request.input_prompts and request.input:
        raise InvalidArgument.of("input", "give input as a string or a list, not both")
    if not request.input_prompts:
        if not request.input:
            raise InvalidArgument.of("input", "required: a non-empty string or list")
        return [prefix + request.input], ["input"]
    if len(request.input_prompts) > MAX_INPUTS:
        raise InvalidArgument.of("input", f"{len(request.input_prompts)} inputs: at most {MAX_INPUTS}")
    vocab = pipeline.vocab_size
    inputs: list[Input] = []
    fields, violations = [], []
    for index, prompt in enumerate(request.input_prompts):
        where = f"input_prompts[{index}]"
        if prompt.WhichOneof("prompt") == "token_ids":
            ids = list(prompt.token_ids.ids)
            if not ids or min(ids) < 0 or max(ids) >= vocab:  # min/max in C: fast for long lists
                bad = next((token for token in ids if not 0 <= token < vocab), None)
                problem = (
                    "an empty token list" if not ids else f"token id {bad} is not in the vocabulary (0..{vocab - 1})"
                )
                violations.append(FieldViolation(where, problem))
                continue
            inputs.append(ids)
        elif not prompt.text:
            violations.append(FieldViolation(where, "an empty string"))
            continue
        else:
            inputs.append(prefix + prompt.text)
        fields.append(where)
    InvalidArgument.check(violations)
    return inputs, fields


def _tokenized(pipeline: Pipeline, inputs: list[Input], fields: list[str]) -> tuple[list[list[int]], list[str]]:
    """The token ids the model reads for each input (the one tokenisation: usage counts them), and the texts
    for a pipeline that takes text only (none when the model takes the ids themselves).

    Text is tokenised with the model's special tokens; token ids go in as sent. A pipeline that takes text gets
    token ids decoded to their text, which it tokenises again.
    """
    codec = pipeline.codec
    assert codec is not None
    texts = [item for item in inputs if isinstance(item, str)]
    encoded = iter(codec.encode_many(texts, add_special_tokens=True))
    rows = [item if isinstance(item, list) else next(encoded) for item in inputs]
    if pipeline.takes_token_ids:
        return rows, []
    windows = [item for item in inputs if isinstance(item, list)]
    decoded = iter(codec.decode_windows(windows, True))
    texts = [item if isinstance(item, str) else next(decoded) for item in inputs]
    InvalidArgument.check(
        [  # the pipeline embeds text: ids of special tokens alone have none
            FieldViolation(where, "these token ids decode to no text (special tokens only?)")
            for where, text in zip(fields, texts, strict=True)
            if not text
        ]
    )
    retexts = [text for text, item in zip(texts, inputs, strict=True) if isinstance(item, list)]
    again = iter(codec.encode_many(retexts, add_special_tokens=True))
    return [next(again) if isinstance(item, list) else row for item, row in zip(inputs, rows, strict=True)], texts


def _dimensions(pipeline: Pipeline, request: embedding_pb2.CreateEmbeddingRequest) -> int:
    """The vector length asked for: the model's own, or one of its matryoshka lengths."""
    config = pipeline.embedding
    assert config is not None
    if not request.HasField("dimensions") or request.dimensions == config.dimensions:
        return config.dimensions
    allowed = [*config.matryoshka, config.dimensions] if config.matryoshka else [config.dimensions]
    if request.dimensions not in allowed:
        lengths = ", ".join(map(str, sorted(set(allowed))))
        raise InvalidArgument.of(
            "dimensions", f"{request.dimensions}: model {pipeline.name!r} makes vectors of length {lengths}"
        )
    return request.dimensions


def _shorten(vectors: np.ndarray, dimensions: int, normalize: bool) -> np.ndarray:
    """Matryoshka truncation: the first ``dimensions`` values, unit length again if the model's are."""
    if dimensions >= vectors.shape[1]:
        return vectors
    short = vectors[:, :dimensions]
    if normalize:
        short = short / np.maximum(np.linalg.norm(short, axis=1, keepdims=True), 1e-12)
    return short


async def create_embedding(
    registry: ModelRegistry, request: embedding_pb2.CreateEmbeddingRequest
) -> embedding_pb2.CreateEmbeddingResponse:
    """EmbeddingService.CreateEmbedding."""
    pipeline = registry.pipeline(request.model, PipelineKind.EMBED)
    config = pipeline.embedding
    assert config is not None and pipeline.codec is not None
    if request.input_type not in INPUT_TYPES:
        raise InvalidArgument.of("input_type", f"{request.input_type!r}: one of query, document")
    if request.encoding_format not in ENCODING_FORMATS:
        raise InvalidArgument.of("encoding_format", f"{request.encoding_format!r}: one of float, base64")
    dimensions = _dimensions(pipeline, request)
    size = len(request.input) + sum(len(prompt.text) for prompt in request.input_prompts)
    if size > MAX_INPUT_CHARS:
        raise InvalidArgument.of("input", f"{size} characters: at most {MAX_INPUT_CHARS} in all")
    prefix = config.prompt(INPUT_TYPES[request.input_type])

    def prepare() -> tuple[list[list[int]], list[str], list[str]]:
        inputs, fields = _inputs(pipeline, request, prefix)
        return (*_tokenized(pipeline, inputs, fields), fields)

    # Token ids count like characters here: decoding 2,048 inputs of 1,000 ids is work for a thread too.
    work = size + sum(len(prompt.token_ids.ids) for prompt in request.input_prompts)
    try:
        pipeline.check_room()  # a full queue refuses before the tokenising, not after waiting its turn for WORKER
    except EngineError as error:
        raise service_error(error) from None
    rows, texts, fields = await _off_the_loop_if_large(work, prepare)
    longest = pipeline.max_model_len
    InvalidArgument.check(
        [
            FieldViolation(where, f"{len(row)} tokens: model {pipeline.name!r} takes at most {longest}")
            for where, row in zip(fields, rows, strict=True)
            if len(row) > longest
        ]
    )
    try:
        vectors = await pipeline.embed(rows, texts)
    except EngineError as error:
        raise service_error(error) from None
    tokens = sum(map(len, rows))

    def reply() -> embedding_pb2.CreateEmbeddingResponse:
        return _reply(pipeline.name, _shorten(vectors, dimensions, config.normalize), tokens)

    # Building 2,048 Embedding messages took 36-120 ms of the event loop: /health waited for it (values count).
    return await _off_the_loop_if_large(vectors.size, reply)


async def _off_the_loop_if_large(size: int, work: Callable[[], T]) -> T:
    """``work()``, inline when ``size`` (characters, token ids or values) is small, else in WORKER."""
    if size <= INLINE_PROMPT_CHARS:
        return work()
    return await asyncio.get_running_loop().run_in_executor(WORKER, work)


def _reply(model: str, vectors: np.ndarray, tokens: int) -> embedding_pb2.CreateEmbeddingResponse:
    """The answer: a vector per input, in order, and the tokens read."""
    return embedding_pb2.CreateEmbeddingResponse(
        object="list",
        data=[
            embedding_pb2.Embedding(object="embedding", index=index, embedding=vector.tolist())
            for index, vector in enumerate(vectors)
        ],
        model=model,
        usage=embedding_pb2.EmbeddingUsage(prompt_tokens=tokens, total_tokens=tokens),
    )
