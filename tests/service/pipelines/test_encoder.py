"""The encoder IR run directly (service/pipelines/encoder.py) against openvino-genai's own pipelines on the same
bundled models: the same vectors for every pooling, the same relevance scores, cut pairs included."""

from __future__ import annotations

import dataclasses
import random
import time

import numpy as np
import openvino_genai as ov_genai
import pytest

from ovserve.service.models import BUNDLED_MODELS_DIR
from ovserve.service.pipelines.encoder import POOLINGS, EncoderModel, direct_encoder, plan
from ovserve.service.pipelines.kinds import PipelineKind, embedding_config
from ovserve.service.pipelines.worker import text_embedding_pipeline
from ovserve.service.workers.codec import TokenCodec

EMBED, RERANK = BUNDLED_MODELS_DIR / "tiny-embed", BUNDLED_MODELS_DIR / "tiny-rerank"
WORDS = "the cat kitten dog naps sleeps runs in yard park garden market where does a old green".split()  # noqa: SIM905
# float32 through a 2-layer model, in batches of other shapes than the pipeline's: kernels may sum in another
# order. Components of unit vectors and sigmoid scores are at most 1; a wrong pooling or pad moves them by >1e-2.
TOLERANCE = 1e-5


def _texts(count: int, seed: int, longest: int = 12) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, longest))) for _ in range(count)]


def test_which_models_run_directly() -> None:
    """tiny-embed's IR gives token states, tiny-rerank's one logit; tiny-chat's (stateful, logits) runs on its
    pipeline, and neither encoder runs as the other kind."""
    assert direct_encoder(EMBED, PipelineKind.EMBED) and direct_encoder(RERANK, PipelineKind.RERANK)
    assert not direct_encoder(EMBED, PipelineKind.RERANK) and not direct_encoder(RERANK, PipelineKind.EMBED)
    assert not direct_encoder(BUNDLED_MODELS_DIR / "tiny-chat", PipelineKind.EMBED)


@pytest.mark.parametrize("pooling", POOLINGS)
@pytest.mark.parametrize("normalize", [True, False])
def test_vectors_equal_the_embedding_pipelines(pooling: str, normalize: bool) -> None:
    """Mixed lengths planned into several calls (64 padded tokens each) give TextEmbeddingPipeline's vectors."""
    config = dataclasses.replace(embedding_config(EMBED), pooling=pooling, normalize=normalize)
    texts = _texts(24, seed=len(pooling) + normalize)
    expected = np.asarray(text_embedding_pipeline(EMBED, config).embed_documents(texts), dtype=np.float32)
    rows = TokenCodec(EMBED).encode_many(texts, add_special_tokens=True)
    assert len(plan([len(row) for row in rows], 64)) > 3  # the rows really were split, and put back in order
    got = EncoderModel(EMBED, max_batch_tokens=64).embed(rows, pooling, normalize)
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOLERANCE)


def test_scores_equal_the_rerank_pipelines_also_for_pairs_cut_to_the_models_length() -> None:
    codec, limit = TokenCodec(RERANK), 64
    query = "where does the kitten sleep"
    documents = [*_texts(10, seed=3), " ".join(["garden"] * 200)]  # the last is far past 64 tokens
    pairs = [(query, document) for document in documents] + [(" ".join(["where"] * 150), "a kitten naps")]
    ids, types = codec.encode_pairs(pairs, limit)
    assert max(map(len, ids)) == limit and [len(row) for row in types] == [len(row) for row in ids]
    pipeline = ov_genai.TextRerankPipeline(str(RERANK), "CPU", ov_genai.TextRerankPipeline.Config(top_n=1000))
    expected = [pipeline.rerank(first, [second])[0][1] for first, second in pairs]
    got = EncoderModel(RERANK, max_batch_tokens=128).score(ids, types)
    np.testing.assert_allclose(got, expected, rtol=0, atol=TOLERANCE)


def test_a_plan_keeps_each_call_within_its_padded_tokens() -> None:
    rng = random.Random(5)
    lengths = [rng.randint(1, 300) for _ in range(200)]
    calls = plan(lengths, 512)
    assert sorted(index for call in calls for index in call) == list(range(200))
    for call in calls:
        longest = max(lengths[index] for index in call)
        assert len(call) * longest <= 512 or len(call) == 1
    assert plan([600, 3], 512) == [[1], [0]]  # one input longer than a call runs alone


@pytest.mark.alone
def test_a_long_query_costs_no_more_than_a_short_one() -> None:
    """200 documents against a 200,000-word query cost about what they cost against a 5-word one: the query is
    tokenised once, and only as far as the model reads (whole, per pair, it cost ~1,000 times as much).
    A ratio within one run."""
    codec = TokenCodec(RERANK)
    short = "where does the kitten sleep"
    documents = _texts(200, seed=9)

    def seconds(query: str) -> float:
        started = time.perf_counter()
        ids, _ = codec.encode_pairs([(query, document) for document in documents], 64)
        assert len(ids) == len(documents) and max(map(len, ids)) <= 64
        return time.perf_counter() - started

    long = " ".join([short] * 40_000)
    seconds(short)  # warm-up
    # The fastest of five interleaved runs each: a 5 ms baseline is within reach of a busy machine's stalls (one
    # single measurement in CI took 26 ms against 5 ms).
    runs = [(seconds(long), seconds(short)) for _ in range(5)]
    assert min(run[0] for run in runs) < 5 * min(run[1] for run in runs)
