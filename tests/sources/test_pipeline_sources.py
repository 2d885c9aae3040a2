"""Serving an embedding model and a reranker from their Hugging Face checkpoints.

The bundled tiny-embed (a BertModel in sentence-transformers' layout) and tiny-rerank (a one-label
BertForSequenceClassification) are rebuilt as Hugging Face directories from their IRs' own weights
(tests/sources/checkpoints.py), converted through ``ovserve.service.sources.resolve`` (optimum-intel, tasks
feature-extraction and text-classification, picked from config.json) and served beside the bundled IRs on one
gRPC server: each converted model must say the same task and give the bundled model's vectors and scores.

Measured (openvino 2026.4, CPU): the converted IRs' outputs equal the bundled ones bit for bit (max abs
difference 0.0 in last_hidden_state and logits), and so do the served vectors and scores; the tolerances below
only leave room for CPU kernels that sum in another order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import numpy as np
import pytest
from tokenizers import Tokenizer

from ovserve.clients.v1 import (
    completion_pb2,
    embedding_pb2,
    embedding_pb2_grpc,
    model_pb2,
    model_pb2_grpc,
    rerank_pb2,
    rerank_pb2_grpc,
)
from ovserve.service.models import ModelSpec
from ovserve.service.sources import resolve
from tests.conftest import channel_to
from tests.sources.checkpoints import EMBED, RERANK, hf_embedding_checkpoint, hf_rerank_checkpoint

EMBED_HF, RERANK_HF = "tiny-embed-from-hf", "tiny-rerank-from-hf"
CARD = json.loads((EMBED / "sentences.json").read_text())  # held-out sentences and rerank cases
SENTENCES = [sentence for case in CARD["paraphrases"][:3] for sentence in case]
# Per component of a unit vector (at most 1): ~80 float32 ulp at 1, as tests/rest_bridge/test_embeddings.py
# allows between batch shapes; a wrong weight moves components by orders of magnitude more.
VECTOR_ATOL = 1e-5
# Rerank scores are sigmoid probabilities in (0, 1).
SCORE_ATOL = 1e-6


@pytest.fixture(scope="module")
def retrieval(tmp_path_factory: pytest.TempPathFactory) -> Iterator[grpc.Channel]:
    """The bundled tiny-embed and tiny-rerank, and their checkpoints converted into a fresh model cache."""
    root = tmp_path_factory.mktemp("pipeline-sources")
    specs = [ModelSpec(EMBED.name, EMBED), ModelSpec(RERANK.name, RERANK)]
    for name, checkpoint in ((EMBED_HF, hf_embedding_checkpoint(root / "tiny-embed-hf")),
                             (RERANK_HF, hf_rerank_checkpoint(root / "tiny-rerank-hf"))):  # fmt: skip
        directory, provenance = resolve(str(checkpoint), cache_dir=root / "cache", task=None)
        specs.append(ModelSpec(name, directory, provenance=provenance))
    with channel_to(specs) as channel:
        yield channel


def embed(channel: grpc.Channel, model: str, inputs: list[completion_pb2.Prompt], input_type: str = "") -> np.ndarray:
    """The served vectors of ``inputs``, one row each."""
    reply = embedding_pb2_grpc.EmbeddingServiceStub(channel).CreateEmbedding(
        embedding_pb2.CreateEmbeddingRequest(model=model, input_prompts=inputs, input_type=input_type), timeout=60
    )
    assert [item.index for item in reply.data] == list(range(len(inputs)))
    return np.array([list(item.embedding) for item in reply.data], dtype=np.float32)


def texts(*items: str) -> list[completion_pb2.Prompt]:
    return [completion_pb2.Prompt(text=item) for item in items]


def token_ids(*items: str) -> list[completion_pb2.Prompt]:
    """``items`` as the bundled tokenizer's ids (the two models share the tokenizer; ids get no prefix)."""
    tokenizer = Tokenizer.from_file(str(EMBED / "tokenizer.json"))
    return [completion_pb2.Prompt(token_ids=completion_pb2.TokenIds(ids=tokenizer.encode(item).ids)) for item in items]


def rerank(channel: grpc.Channel, model: str, query: str, documents: list[str]) -> dict[int, float]:
    """Every document's served score, by index."""
    reply = rerank_pb2_grpc.RerankServiceStub(channel).Rerank(
        rerank_pb2.RerankRequest(model=model, query=query, top_n=len(documents),
                                 documents=[rerank_pb2.RerankDocument(text=text) for text in documents]),
        timeout=60,
    )  # fmt: skip
    return {result.index: result.relevance_score for result in reply.results}


def test_each_converted_model_serves_the_bundled_models_task(retrieval: grpc.Channel) -> None:
    """Conversion keeps what a model is: the task comes from the checkpoint's config.json (BertModel embeds, a
    one-label BertForSequenceClassification reranks), and the listing says where each model came from."""
    reply = model_pb2_grpc.ModelServiceStub(retrieval).ListModels(model_pb2.ListModelsRequest())
    listed = {model.id: model for model in reply.data}
    assert {name: listed[name].task for name in listed} == {
        EMBED.name: "embed", EMBED_HF: "embed", RERANK.name: "rerank", RERANK_HF: "rerank",
    }  # fmt: skip
    for name in (EMBED_HF, RERANK_HF):
        assert (listed[name].source_kind, listed[name].precision) == ("huggingface", "fp32"), listed[name]


def test_the_converted_embedder_gives_the_bundled_vectors(retrieval: grpc.Channel) -> None:
    """The same input gives the same unit vectors: the checkpoint holds the IR's weights under transformers'
    names, and the export rebuilds the same graph. Inputs are token ids with the document prefix spelled out,
    so that what each model embeds does not depend on its prompts (see the next test)."""
    inputs = token_ids(*(CARD["prompts"]["document"] + sentence for sentence in SENTENCES))
    bundled, converted = embed(retrieval, EMBED.name, inputs), embed(retrieval, EMBED_HF, inputs)
    assert bundled.shape == converted.shape == (len(SENTENCES), 64)
    assert np.allclose(np.linalg.norm(converted, axis=1), 1.0, atol=1e-5)  # mean pooling, normalised
    print(f"\nembeddings: max abs difference {np.abs(converted - bundled).max():.3g}, "
          f"min cosine {np.min(np.sum(converted * bundled, axis=1)):.9f}")  # fmt: skip
    np.testing.assert_allclose(converted, bundled, rtol=0, atol=VECTOR_ATOL)
    assert float(np.min(np.sum(converted * bundled, axis=1))) > 0.9999  # cosine


def test_the_converted_embedder_keeps_the_checkpoints_prompts(retrieval: grpc.Channel) -> None:
    """Texts as a client sends them, as queries and as documents: the checkpoint's
    config_sentence_transformers.json prompts ("query: ", "passage: ") must be prepended as for the bundled
    model, or the vectors are not the ones the model was trained to give."""
    for input_type in ("query", "document"):
        bundled = embed(retrieval, EMBED.name, texts(*SENTENCES), input_type)
        converted = embed(retrieval, EMBED_HF, texts(*SENTENCES), input_type)
        np.testing.assert_allclose(converted, bundled, rtol=0, atol=VECTOR_ATOL, err_msg=input_type)


def test_the_converted_reranker_gives_the_bundled_scores(retrieval: grpc.Channel) -> None:
    """Every held-out case of the model card ranks the same with the same scores, the answer first."""
    worst = 0.0
    for case in CARD["rerank"]:
        bundled = rerank(retrieval, RERANK.name, case["query"], case["documents"])
        converted = rerank(retrieval, RERANK_HF, case["query"], case["documents"])
        assert set(converted) == set(range(len(case["documents"]))), converted
        assert max(converted, key=converted.__getitem__) == case["match"], (case, converted)
        worst = max(worst, *(abs(converted[i] - bundled[i]) for i in bundled))
        assert worst <= SCORE_ATOL, (bundled, converted)
    print(f"\nrerank: max abs score difference {worst:.3g} over {len(CARD['rerank'])} cases")
