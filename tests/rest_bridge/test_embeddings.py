"""Embeddings end to end: the bundled tiny-embed through the openai client, plain HTTP and the gRPC stubs.

Every reply validates against OpenAI's OpenAPI document; the vectors come from the real TextEmbeddingPipeline.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import numpy as np
import openai
import pytest
from tokenizers import Tokenizer

from ovserve.clients.v1 import completion_pb2, embedding_pb2, embedding_pb2_grpc, model_pb2
from ovserve.service.models import BUNDLED_MODELS_DIR
from ovserve.service.pipelines import Pipeline, PipelineKind, PipelineSettings
from tests.conformance import violations
from tests.conftest import TEST_SETTINGS, ServerThread, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-embed"
MODEL_DIR = BUNDLED_MODELS_DIR / MODEL
CARD = json.loads((MODEL_DIR / "sentences.json").read_text())  # the held-out sentences its model card names
TEXTS = ["the cat sat on the mat", "prices rose again this year", "how do I reset my password"]


def _tokens(text: str) -> int:
    return len(Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json")).encode(text).ids)


def _vectors(response: openai.types.CreateEmbeddingResponse) -> np.ndarray:
    return np.array([item.embedding for item in response.data], dtype=np.float32)


def _post(bridge: RunningBridge, body: dict) -> tuple[int, dict]:
    reply = http_request(bridge.port, "POST", "/v3/embeddings", body)
    return reply.status, reply.json()


def test_embeddings_through_the_openai_client(client: openai.OpenAI, bridge: RunningBridge) -> None:
    """One unit vector per input, in order; base64 (the client's default) and float give the same numbers;
    usage counts every token embedded (special tokens and the document prefix included)."""
    as_base64 = client.embeddings.create(model=MODEL, input=TEXTS)  # the openai client asks for base64
    as_float = client.embeddings.create(model=MODEL, input=TEXTS, encoding_format="float")
    vectors = _vectors(as_float)
    assert [item.index for item in as_float.data] == [0, 1, 2] and as_float.model == MODEL
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(_vectors(as_base64), vectors)
    prefix = dict(CARD["prompts"]).get("document", "")
    assert as_float.usage.prompt_tokens == sum(_tokens(prefix + text) for text in TEXTS)
    assert as_float.usage.total_tokens == as_float.usage.prompt_tokens
    status, body = _post(bridge, {"model": MODEL, "input": TEXTS[0], "encoding_format": "base64"})
    assert status == 200, body  # (OpenAI's schema types the vector as numbers only: base64 is checked by value)
    decoded = np.frombuffer(base64.b64decode(body["data"][0]["embedding"]), dtype="<f4")
    # One text alone against the same text in a batch of three: the CPU kernels may sum in another order for
    # another batch shape (equal bits with AVX-512, a few ulp apart on an AMD EPYC without it). The components
    # of a unit vector are at most 1: 1e-5 (the norm check's tolerance) is ~80 float32 ulp at 1, room for
    # reordered sums through the model's layers and far below what a wrong vector would change.
    np.testing.assert_allclose(decoded, vectors[0], rtol=0, atol=1e-5)
    status, body = _post(bridge, {"model": MODEL, "input": TEXTS, "user": "u-1"})
    assert status == 200 and not violations("CreateEmbeddingResponse", body), body


def test_paraphrases_are_closer_than_unrelated_sentences(client: openai.OpenAI) -> None:
    """The property tiny-embed was trained for, on sentences it never saw (its model card's)."""
    for first, paraphrase, unrelated in CARD["paraphrases"]:
        a, b, c = _vectors(client.embeddings.create(model=MODEL, input=[first, paraphrase, unrelated]))
        assert float(a @ b) > float(a @ c) + 0.05, (first, paraphrase, unrelated, float(a @ b), float(a @ c))


def test_token_ids_embed_as_their_text(client: openai.OpenAI) -> None:
    """Token ids are the model's input as sent (no prefix or special tokens added, as vLLM): the ids the model's
    tokenizer makes of the prefixed text embed as the text, and usage counts them."""
    tokenizer = Tokenizer.from_file(str(MODEL_DIR / "tokenizer.json"))
    ids = tokenizer.encode(dict(CARD["prompts"])["document"] + TEXTS[0]).ids
    from_text = _vectors(client.embeddings.create(model=MODEL, input=TEXTS[0], encoding_format="float"))
    from_ids = client.embeddings.create(model=MODEL, input=ids, encoding_format="float")
    from_lists = _vectors(client.embeddings.create(model=MODEL, input=[ids, ids], encoding_format="float"))
    assert np.allclose(_vectors(from_ids), from_text, atol=1e-5) and np.allclose(from_lists, np.vstack([from_text] * 2))
    assert from_ids.usage.prompt_tokens == len(ids)
    # Without the special tokens the model reads other input: another vector (the ids are not re-tokenised).
    bare = tokenizer.encode(dict(CARD["prompts"])["document"] + TEXTS[0], add_special_tokens=False).ids
    from_bare = client.embeddings.create(model=MODEL, input=bare, encoding_format="float")
    assert from_bare.usage.prompt_tokens == len(bare) < len(ids)
    assert not np.allclose(_vectors(from_bare), from_text, atol=1e-3)


def test_queries_and_documents_get_the_models_prefixes(client: openai.OpenAI) -> None:
    """input_type picks the instruction prefix the model was trained with (config_sentence_transformers.json)."""
    prompts = dict(CARD["prompts"])
    query = client.embeddings.create(model=MODEL, input=TEXTS[0], extra_body={"input_type": "query"})
    document = client.embeddings.create(model=MODEL, input=TEXTS[0], extra_body={"input_type": "document"})
    default = client.embeddings.create(model=MODEL, input=TEXTS[0])
    assert query.usage.prompt_tokens == _tokens(prompts["query"] + TEXTS[0])
    assert not np.allclose(_vectors(query), _vectors(document), atol=1e-3)
    assert np.array_equal(_vectors(document), _vectors(default))


def test_concurrent_requests_batched_together_get_their_own_vectors(bridge: RunningBridge) -> None:
    """The pipeline process runs the inputs of requests that wait together in one call: each request still gets
    exactly the vectors it gets alone."""
    inputs = [[f"{text} number {i}" for text in TEXTS[: 1 + i % 3]] for i in range(12)]

    async def run() -> list[np.ndarray]:
        async with openai.AsyncOpenAI(base_url=bridge.url, api_key="k", max_retries=0) as client:
            alone = [_vectors(await client.embeddings.create(model=MODEL, input=batch)) for batch in inputs[:3]]
            together = await asyncio.gather(*(client.embeddings.create(model=MODEL, input=batch) for batch in inputs))
            return alone + [_vectors(reply) for reply in together]

    vectors = asyncio.run(run())
    alone, together = vectors[:3], vectors[3:]
    for one, same in zip(alone, together[:3], strict=True):
        assert np.allclose(one, same, atol=1e-5)
    assert [len(batch) for batch in together] == [len(batch) for batch in inputs]


@pytest.mark.parametrize(
    ("body", "param", "status"),
    [
        ({"input": ""}, "input", 400),
        ({"input": []}, "input", 400),
        ({"input": ["ok", ""]}, "input", 400),
        ({"input": [1, "a"]}, "input", 400),
        ({"input": {"text": "a"}}, "input", 400),
        ({"input": [[]]}, "input", 400),
        ({"input": [10**9]}, "input", 400),
        ({"input": ["a"] * 2049}, "input", 400),
        ({"input": "word " * 5000}, "input", 400),
        ({"input": "a", "dimensions": 3}, "dimensions", 400),
        ({"input": "a", "encoding_format": "int8"}, "encoding_format", 400),
        ({"input": "a", "encoding_format": ""}, "encoding_format", 400),  # OpenAI's answer; gRPC's "" is the default
        ({"input": "a", "input_type": "question"}, "input_type", 400),
        ({"input": "a", "temperature": 1}, "temperature", 400),
        ({"input": "a", "model": "tiny-chat"}, "model", 400),
        ({"input": "a", "model": "nope"}, "model", 404),
    ],
)
def test_bad_input_is_refused_naming_the_field(bridge: RunningBridge, body: dict, param: str, status: int) -> None:
    reply_status, reply = _post(bridge, {"model": MODEL, **body})
    assert reply_status == status and reply["error"]["param"] == param, reply
    assert not violations("ErrorResponse", reply)


def test_grpc_takes_an_empty_encoding_format_as_the_default(channel: grpc.Channel) -> None:
    """proto3 cannot tell "" from unset, and the proto documents float as the default: the gRPC face answers floats
    (the bridge refuses a JSON "", as OpenAI does); an unknown name is refused naming the field."""
    stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
    request = embedding_pb2.CreateEmbeddingRequest(model=MODEL, input=TEXTS[0], encoding_format="")
    as_default = stub.CreateEmbedding(request, timeout=60).data[0].embedding
    request.encoding_format = "float"
    assert list(as_default) == list(stub.CreateEmbedding(request, timeout=60).data[0].embedding)
    request.encoding_format = "int8"
    with pytest.raises(grpc.RpcError) as refused:
        stub.CreateEmbedding(request, timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "encoding_format" in (refused.value.details() or "")


def test_chat_on_an_embedding_model_is_a_400_naming_model(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.body["param"] == "model" and "embeddings" in raised.value.body["message"]  # type: ignore[index]


def test_models_say_what_each_serves(server: ServerThread) -> None:
    with grpc.insecure_channel(server.target) as channel:
        from ovserve.clients.v1 import model_pb2_grpc

        listed = model_pb2_grpc.ModelServiceStub(channel).ListModels(model_pb2.ListModelsRequest())
    tasks = {model.id: model.task for model in listed.data}
    assert tasks[MODEL] == "embed" and tasks["tiny-chat"] == "generate"


# ---- the pipeline process: bounded queue, cancellation, supervision (a server of their own) ----


# These tests stop the pipeline process (SIGSTOP) to hold its queue: on a loaded machine that can outlast the
# default heartbeat timeout, which would replace the process under the test.
PAUSABLE = dataclasses.replace(TEST_SETTINGS, heartbeat_timeout_s=600.0)


@pytest.fixture
def own_server() -> Iterator[ServerThread]:
    from ovserve.service.models import ModelSpec

    running = start_server(
        [ModelSpec(MODEL, MODEL_DIR, settings=PAUSABLE, pipeline=PipelineSettings(max_queued_jobs=2))]
    )
    yield running
    running.stop()


def _until(condition: Callable[[], bool], seconds: float = 60.0) -> None:
    """Wait for ``condition`` (set by the server's thread), polling; fail after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _pipeline(running: ServerThread) -> Pipeline:
    return running.server.registry.pipeline(MODEL, PipelineKind.EMBED)


def _embed(stub: embedding_pb2_grpc.EmbeddingServiceStub, text: str, timeout: float = 60) -> grpc.Future:
    return stub.CreateEmbedding.future(embedding_pb2.CreateEmbeddingRequest(model=MODEL, input=text), timeout=timeout)


def test_a_full_queue_refuses_with_resource_exhausted_and_cancelled_jobs_leave_it(own_server: ServerThread) -> None:
    pipeline = _pipeline(own_server)
    assert pipeline.pid is not None
    with grpc.insecure_channel(own_server.target) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        os.kill(pipeline.pid, signal.SIGSTOP)  # the process holds what it is sent
        try:
            waiting = [_embed(stub, "first"), _embed(stub, "second")]
            _until(lambda: pipeline.queued == 2)
            with pytest.raises(grpc.RpcError) as refused:
                stub.CreateEmbedding(embedding_pb2.CreateEmbeddingRequest(model=MODEL, input="third"), timeout=30)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            waiting[1].cancel()
            late = _embed(stub, "fourth")  # the cancelled one made room
        finally:
            os.kill(pipeline.pid, signal.SIGCONT)
        assert len(waiting[0].result().data[0].embedding) == len(late.result().data[0].embedding) > 0
    assert pipeline.queued == 0


def test_waiting_tokens_past_the_budget_are_refused_and_one_request_is_always_taken() -> None:
    """--max-queued-tokens: the tokens of a model's waiting requests are bounded (32 requests of 2,048 inputs all
    waited before, 4 M tokens); a request alone in the queue is taken whatever its size."""
    from ovserve.service.models import ModelSpec

    budget = 100
    running = start_server(
        [ModelSpec(MODEL, MODEL_DIR, settings=PAUSABLE, pipeline=PipelineSettings(max_queued_tokens=budget))]
    )
    try:
        pipeline = _pipeline(running)
        assert pipeline.pid is not None
        with grpc.insecure_channel(running.target) as channel:
            stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
            large = embedding_pb2.CreateEmbeddingRequest(
                model=MODEL, input_prompts=[completion_pb2.Prompt(text=TEXTS[0])] * 20
            )  # 20 x 8 tokens: over the budget on its own
            os.kill(pipeline.pid, signal.SIGSTOP)  # the process holds what it is sent
            try:
                taken = stub.CreateEmbedding.future(large, timeout=60)
                _until(lambda: pipeline.queued == 1)
                with pytest.raises(grpc.RpcError) as refused:
                    stub.CreateEmbedding(embedding_pb2.CreateEmbeddingRequest(model=MODEL, input="more"), timeout=30)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "--max-queued-tokens" in (refused.value.details() or "")
            finally:
                os.kill(pipeline.pid, signal.SIGCONT)
            assert len(taken.result().data) == 20
            assert stub.CreateEmbedding(embedding_pb2.CreateEmbeddingRequest(model=MODEL, input="now"), timeout=60).data
    finally:
        running.stop()


def test_a_full_queue_refuses_a_large_request_before_tokenising_it(own_server: ServerThread) -> None:
    """The queue is checked before a large request waits for the embeddings thread
    (ovserve.service.api.embeddings.WORKER):
    its 429 comes at once, not after every request ahead has been tokenised only to be refused too."""
    from ovserve.service.api import embeddings

    pipeline = _pipeline(own_server)
    assert pipeline.pid is not None
    busy, release = threading.Event(), threading.Event()
    with grpc.insecure_channel(own_server.target) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        os.kill(pipeline.pid, signal.SIGSTOP)  # the process holds what it is sent
        try:
            waiting = [_embed(stub, "first"), _embed(stub, "second")]  # --max-queued-jobs 2: full
            _until(lambda: pipeline.queued == 2)
            embeddings.WORKER.submit(lambda: (busy.set(), release.wait(60)))  # the thread is taken meanwhile
            assert busy.wait(30)
            large = embedding_pb2.CreateEmbeddingRequest(
                model=MODEL, input_prompts=[completion_pb2.Prompt(text="word " * 40)] * 200
            )  # more characters than are tokenised on the event loop
            with pytest.raises(grpc.RpcError) as refused:
                stub.CreateEmbedding(large, timeout=10)
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value
        finally:
            release.set()
            os.kill(pipeline.pid, signal.SIGCONT)
        assert all(future.result().data for future in waiting)


def test_a_killed_pipeline_fails_its_requests_retriably_and_comes_back(own_server: ServerThread) -> None:
    pipeline = _pipeline(own_server)
    pid = pipeline.pid
    assert pid is not None
    with grpc.insecure_channel(own_server.target) as channel:
        stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
        os.kill(pid, signal.SIGSTOP)
        waiting = _embed(stub, "doomed")
        _until(lambda: pipeline.queued == 1)
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(grpc.RpcError) as failed:
            waiting.result()
        assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
        # The supervisor counts the restart after the new process is up (ovserve.service.workers.supervisor): wait for
        # the count, the last thing it sets, or a check of it right after "up" races the server's thread.
        _until(lambda: pipeline.restarts >= 1)
        assert pipeline.restarts == 1 and pipeline.up and pipeline.pid != pid
        assert stub.CreateEmbedding(embedding_pb2.CreateEmbeddingRequest(model=MODEL, input="back"), timeout=60).data


def test_the_model_directory_declares_what_the_server_reads() -> None:
    """Pooling, normalisation and prompts come from the sentence-transformers files beside the IR."""
    from ovserve.service.pipelines.kinds import embedding_config

    config = embedding_config(Path(MODEL_DIR))
    assert config.normalize and config.pooling in ("mean", "cls", "last_token")
    assert dict(config.prompts) == dict(CARD["prompts"])


def test_an_answered_job_leaves_the_queue_before_its_answer_is_used(own_server: ServerThread) -> None:
    """Once ``embed`` returns, its job no longer counts against --max-queued-jobs: the answers' generator is
    closed on return, not whenever the event loop finalises it (a clean-clone run saw a job still queued)."""
    pipeline = _pipeline(own_server)

    async def embed_then_count() -> int:
        await pipeline.embed([[2, 100, 3]], ["hello"])
        return pipeline.queued

    assert own_server.run(embed_then_count()) == 0
