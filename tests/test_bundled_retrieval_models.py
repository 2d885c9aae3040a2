"""The bundled tiny-embed and tiny-rerank do what their model cards say, on openvino_genai directly (the
held-out sentences of their sentences.json, never seen in training)."""

from __future__ import annotations

import json

import numpy as np
import openvino_genai as ov_genai

from service.models import BUNDLED_MODELS_DIR
from service.pipelines.kinds import PipelineKind, embedding_config, kind_of
from service.pipelines.worker import text_embedding_pipeline

EMBED, RERANK = BUNDLED_MODELS_DIR / "tiny-embed", BUNDLED_MODELS_DIR / "tiny-rerank"
CASES = json.loads((EMBED / "sentences.json").read_text())


def test_the_server_reads_what_each_model_is() -> None:
    assert kind_of(EMBED) is PipelineKind.EMBED and kind_of(RERANK) is PipelineKind.RERANK
    config = embedding_config(EMBED)
    assert (config.pooling, config.normalize, dict(config.prompts)) == ("mean", True, CASES["prompts"])


def test_held_out_paraphrases_are_closer_than_unrelated_sentences() -> None:
    pipeline = text_embedding_pipeline(EMBED, embedding_config(EMBED))
    prefix = CASES["prompts"]["document"]
    for first, paraphrase, unrelated in CASES["paraphrases"]:
        a, b, c = np.asarray(pipeline.embed_documents([prefix + text for text in (first, paraphrase, unrelated)]))
        assert np.isclose(np.linalg.norm(a), 1.0, atol=1e-5)
        assert a @ b > a @ c + 0.3, (first, paraphrase, unrelated)


def test_the_answering_statement_ranks_first_for_held_out_questions() -> None:
    pipeline = ov_genai.TextRerankPipeline(str(RERANK), "CPU", ov_genai.TextRerankPipeline.Config(top_n=4))
    for case in CASES["rerank"]:
        ranked = pipeline.rerank(case["query"], case["documents"])
        assert ranked[0][0] == case["match"] and ranked[0][1] > ranked[1][1] + 0.03, (case, ranked)
