"""The bundled tiny-embed and tiny-rerank do what their model cards say, on openvino_genai directly (the
held-out sentences of their sentences.json, never seen in training, which the cards list)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import openvino_genai as ov_genai
import pytest
from tokenizers import Tokenizer

from ovserve.service.models import BUNDLED_MODELS_DIR
from ovserve.service.pipelines.kinds import PipelineKind, embedding_config, kind_of
from ovserve.service.pipelines.worker import text_embedding_pipeline
from tools.model_builder.retrieval import MAX_LENGTH, vocabulary

EMBED, RERANK = BUNDLED_MODELS_DIR / "tiny-embed", BUNDLED_MODELS_DIR / "tiny-rerank"
CASES = json.loads((EMBED / "sentences.json").read_text())
# Far below what the cards report (0.62 and 0.70 at the last build), far above noise.
MARGIN = 0.3


@pytest.fixture(scope="module")
def embed() -> ov_genai.TextEmbeddingPipeline:
    """tiny-embed as the server configures it (pooling and normalisation read from its sentence-transformers files)."""
    return text_embedding_pipeline(EMBED, embedding_config(EMBED))


@pytest.fixture(scope="module")
def rerank() -> ov_genai.TextRerankPipeline:
    """tiny-rerank keeping every score (the pipeline keeps only its best 3 by default)."""
    return ov_genai.TextRerankPipeline(str(RERANK), "CPU", ov_genai.TextRerankPipeline.Config(top_n=10))


def test_the_server_reads_what_each_model_is() -> None:
    assert kind_of(EMBED) is PipelineKind.EMBED and kind_of(RERANK) is PipelineKind.RERANK
    config = embedding_config(EMBED)
    assert (config.pooling, config.normalize, dict(config.prompts)) == ("mean", True, CASES["prompts"])


@pytest.mark.parametrize("model", [EMBED, RERANK], ids=["tiny-embed", "tiny-rerank"])
def test_the_shipped_tokenizer_is_the_builders(model: Path) -> None:
    """The vocabulary is written out by the builder (a trained one numbered its pieces differently each build)."""
    vocab = json.loads((model / "tokenizer.json").read_text())["model"]["vocab"]
    assert sorted(vocab, key=vocab.get) == vocabulary()
    config = json.loads((model / "config.json").read_text())
    assert (
        config["max_position_embeddings"]
        == MAX_LENGTH
        == json.loads((model / "tokenizer_config.json").read_text())["model_max_length"]
    )
    assert Tokenizer.from_file(str(model / "tokenizer.json")).encode("a kitten naps").tokens == [
        "[CLS]", "a", "kitten", "naps", "[SEP]",
    ]  # fmt: skip


def test_held_out_paraphrases_are_closer_than_unrelated_sentences(embed: ov_genai.TextEmbeddingPipeline) -> None:
    prefix = CASES["prompts"]["document"]
    for first, paraphrase, unrelated in CASES["paraphrases"]:
        vectors = np.asarray(embed.embed_documents([prefix + text for text in (first, paraphrase, unrelated)]))
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        a, b, c = vectors
        assert a @ b > a @ c + MARGIN, (first, paraphrase, unrelated)


def test_a_held_out_question_is_nearest_its_answer_as_query_and_passage(
    embed: ov_genai.TextEmbeddingPipeline,
) -> None:
    prompts = CASES["prompts"]
    for case in CASES["rerank"]:
        query = np.asarray(embed.embed_query(prompts["query"] + case["query"]))
        documents = np.asarray(embed.embed_documents([prompts["document"] + d for d in case["documents"]]))
        similarity = documents @ query
        assert similarity.argmax() == case["match"], (case, similarity)
        assert similarity[case["match"]] > np.delete(similarity, case["match"]).max() + 0.1, (case, similarity)


def test_the_answering_statement_ranks_first_for_held_out_questions(rerank: ov_genai.TextRerankPipeline) -> None:
    for case in CASES["rerank"]:
        ranked = rerank.rerank(case["query"], case["documents"])
        assert sorted(index for index, _ in ranked) == list(range(len(case["documents"])))
        # One-label models get a sigmoid from the pipeline: scores are probabilities.
        assert all(0.0 < score < 1.0 for _, score in ranked)
        assert ranked[0][0] == case["match"] and ranked[0][1] > ranked[1][1] + MARGIN, (case, ranked)
