"""Rerank and score end to end: the bundled tiny-rerank through plain HTTP (Cohere's / vLLM's shapes) and gRPC."""

from __future__ import annotations

import json
import random

import grpc
import pytest

from ovserve.clients.v1 import rerank_pb2, rerank_pb2_grpc
from ovserve.service.models import BUNDLED_MODELS_DIR
from ovserve.service.pipelines import Pipeline, PipelineKind
from tests.conftest import REFERENCE_PROPERTIES, ServerThread
from tests.rest_bridge.conftest import RunningBridge, http_request

MODEL = "tiny-rerank"
CARD = json.loads((BUNDLED_MODELS_DIR / MODEL / "sentences.json").read_text())  # its model card's held-out cases


def _post(bridge: RunningBridge, path: str, body: dict) -> tuple[int, dict]:
    reply = http_request(bridge.port, "POST", path, body)
    return reply.status, reply.json()


def test_the_matching_document_ranks_first(bridge: RunningBridge) -> None:
    """The property tiny-rerank was trained for, on queries it never saw (its model card's)."""
    for case in CARD["rerank"]:
        status, body = _post(
            bridge, "/v3/rerank", {"model": MODEL, "query": case["query"], "documents": case["documents"]}
        )
        assert status == 200, body
        results = body["results"]
        assert results[0]["index"] == case["match"], (case, results)
        assert [r["relevance_score"] for r in results] == sorted((r["relevance_score"] for r in results), reverse=True)
        assert all(0 < r["relevance_score"] < 1 for r in results)
        assert {r["index"] for r in results} == set(range(len(case["documents"])))
        assert results[0]["document"] == {"text": case["documents"][case["match"]]}
        assert body["usage"]["total_tokens"] > 0 and body["id"].startswith("rerank-")


def test_top_n_documents_as_objects_and_without_documents(bridge: RunningBridge) -> None:
    case = CARD["rerank"][0]
    documents = [{"text": text} for text in case["documents"]]
    status, full = _post(bridge, "/v3/rerank", {"model": MODEL, "query": case["query"], "documents": case["documents"]})
    status, top = _post(bridge, "/v3/rerank", {"model": MODEL, "query": case["query"], "documents": documents,
                                               "top_n": 2, "return_documents": False})  # fmt: skip
    assert status == 200, top
    assert [r["index"] for r in top["results"]] == [r["index"] for r in full["results"][:2]]
    assert all("document" not in r for r in top["results"])


def test_score_matches_rerank_one_to_many_and_pairwise(bridge: RunningBridge, server: ServerThread) -> None:
    case = CARD["rerank"][0]
    _, ranked = _post(bridge, "/v3/rerank", {"model": MODEL, "query": case["query"], "documents": case["documents"]})
    by_index = {r["index"]: r["relevance_score"] for r in ranked["results"]}
    status, scored = _post(bridge, "/v3/score", {"model": MODEL, "text_1": case["query"], "text_2": case["documents"]})
    assert status == 200, scored
    assert [d["index"] for d in scored["data"]] == list(range(len(case["documents"])))
    assert all(abs(d["score"] - by_index[d["index"]]) < 1e-5 and d["object"] == "score" for d in scored["data"])
    pairwise = {"model": MODEL, "text_1": [case["query"]] * 2, "text_2": case["documents"][:2]}
    status, pairs = _post(bridge, "/v3/score", pairwise)
    assert status == 200 and [round(d["score"], 5) for d in pairs["data"]] == [round(by_index[i], 5) for i in (0, 1)]
    with grpc.insecure_channel(server.target) as channel:
        reply = rerank_pb2_grpc.RerankServiceStub(channel).Rerank(
            rerank_pb2.RerankRequest(
                model=MODEL,
                query=case["query"],
                documents=[rerank_pb2.RerankDocument(text=t) for t in case["documents"]],
            )
        )
    assert reply.results[0].index == case["match"]


@pytest.mark.parametrize(
    ("path", "body", "param"),
    [
        ("/v3/rerank", {"query": "q", "documents": []}, "documents"),
        ("/v3/rerank", {"query": "", "documents": ["a"]}, "query"),
        ("/v3/rerank", {"query": "q", "documents": ["a", ""]}, "documents[1]"),
        ("/v3/rerank", {"query": "q", "documents": ["a"], "top_n": 0}, "top_n"),
        ("/v3/rerank", {"query": "q", "documents": ["a"] * 1001}, "documents"),
        ("/v3/rerank", {"query": "q", "documents": [3]}, "documents[0]"),
        ("/v3/rerank", {"query": "q", "documents": ["a"], "rank_fields": ["x"]}, "rank_fields"),
        ("/v3/rerank", {"query": "q", "documents": ["a"], "model": "tiny-embed"}, "model"),
        ("/v3/score", {"text_1": ["a", "b", "c"], "text_2": ["a", "b"]}, "text_1"),
        ("/v3/score", {"text_1": "a", "text_2": []}, "text_2"),
        ("/v3/score", {"text_1": 5, "text_2": "a"}, "text_1"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(bridge: RunningBridge, path: str, body: dict, param: str) -> None:
    status, reply = _post(bridge, path, {"model": MODEL, **body})
    assert status == 400 and reply["error"]["param"] == param, reply


def _rerank_pipeline(server: ServerThread) -> Pipeline:
    return server.server.registry.pipeline(MODEL, PipelineKind.RERANK)


def _scores_by_text(status: int, body: dict, texts: list[str], path: str) -> dict[str, set[float]]:
    """Each text's scores in one answer (a set: one element when identical texts score alike)."""
    assert status == 200, body
    if path == "/v3/rerank":
        pairs = [(r["index"], r["relevance_score"]) for r in body["results"]]
        assert [value for _, value in pairs] == sorted((value for _, value in pairs), reverse=True)  # best first
    else:
        pairs = [(d["index"], d["score"]) for d in body["data"]]
    assert sorted(index for index, _ in pairs) == list(range(len(texts)))
    scores: dict[str, set[float]] = {}
    for index, value in pairs:
        scores.setdefault(texts[index], set()).add(value)
    return scores


def test_short_documents_repeated_do_not_kill_the_pipeline(bridge: RunningBridge, server: ServerThread) -> None:
    """The fuzz run's crash: one query and the same short document 8-32 times killed the rerank process.

    openvino-genai 2026.4 overran a buffer when it tokenized many documents short next to their query in one call
    (see RerankRunner); every shape here crashed it before the fix, and the process must still be the same one.
    """
    pipeline = _rerank_pipeline(server)
    pid, restarts = pipeline.pid, pipeline.restarts
    query = "where does the cat sleep in the afternoon"
    shapes = [["a kitten naps"] * n for n in (8, 16, 32, 64)] + [
        ["kitten"] * 16,
        ["a kitten naps", "a dog runs"] * 8,
        ["a dog runs fast in the park"] + ["a kitten naps"] * 15,
        [f"a {animal} naps" for animal in ("kitten", "puppy", "dog", "cat", "bird", "fox")] * 3,
    ]
    for documents in shapes:
        for _ in range(3):
            for path, body in (
                ("/v3/rerank", {"query": query, "documents": documents}),
                ("/v3/score", {"text_1": query, "text_2": documents}),
            ):
                status, reply = _post(bridge, path, {"model": MODEL, **body})
                scores = _scores_by_text(status, reply, documents, path)
                assert all(len(values) == 1 for values in scores.values()), scores
    assert pipeline.up and pipeline.pid == pid and pipeline.restarts == restarts


def test_scores_and_order_are_those_of_one_batched_pipeline_call(bridge: RunningBridge) -> None:
    """One call per document (the fix) answers as one call over all documents did, where that call was safe."""
    import openvino_genai as ov_genai

    config = ov_genai.TextRerankPipeline.Config(top_n=1000)
    # In f32, as the test server computes (TEST_SETTINGS): scores within 1e-5 on any CPU.
    direct = ov_genai.TextRerankPipeline(str(BUNDLED_MODELS_DIR / MODEL), "CPU", config, **REFERENCE_PROPERTIES)
    for case in CARD["rerank"]:
        expected = direct.rerank(case["query"], case["documents"])
        _, body = _post(bridge, "/v3/rerank", {"model": MODEL, "query": case["query"], "documents": case["documents"]})
        assert [r["index"] for r in body["results"]] == [index for index, _ in expected]
        assert all(
            abs(r["relevance_score"] - score) < 1e-5 for r, (_, score) in zip(body["results"], expected, strict=True)
        )


def _expected_fields(path: str, body: dict) -> set[str]:
    """The fields a 400 may name for ``body`` (empty when the input is valid)."""
    if path == "/v3/rerank":
        fields = {"query"} if not body["query"] else set()
        texts = {"documents": body["documents"]}
    else:
        first = body["text_1"]
        texts = {"text_1": [first] if isinstance(first, str) else first, "text_2": body["text_2"]}
        fields = set()
    for name, values in texts.items():
        fields |= {f"{name}[{index}]" for index, text in enumerate(values) if not text}
    return fields


def test_generated_rerank_and_score_inputs_never_fail_the_server(bridge: RunningBridge, server: ServerThread) -> None:
    """A bounded fuzz over counts (1-64), duplicates, empty and long texts: no 5xx, no restart, 400s name a field."""
    rng = random.Random(20260401)
    words = [
        "a",
        "the",
        "cat",
        "kitten",
        "dog",
        "puppy",
        "naps",
        "sleeps",
        "runs",
        "in",
        "yard",
        "park",
        "green",
        "old",
        "door",
        "where",
        "does",
    ]
    pool = ["kitten", "a kitten naps", "a dog runs", " ".join(words)]

    def text() -> str:
        choice = rng.random()
        if choice < 0.05:
            return ""
        if choice < 0.1:
            return " ".join(rng.choices(words, k=rng.randint(100, 4000)))  # far past the model's 64 tokens
        if choice < 0.6:
            return rng.choice(pool)  # duplicates
        return " ".join(rng.choices(words, k=rng.randint(1, 12)))

    pipeline = _rerank_pipeline(server)
    pid, restarts = pipeline.pid, pipeline.restarts
    for _ in range(30):
        count = rng.randint(1, 64)
        texts = [text() for _ in range(count)]
        path = rng.choice(["/v3/rerank", "/v3/score"])
        if path == "/v3/rerank":
            body: dict = {"query": text(), "documents": texts}
        else:
            body = {"text_1": text() if rng.random() < 0.7 else [text() for _ in range(count)], "text_2": texts}
        status, reply = _post(bridge, path, {"model": MODEL, **body})
        expected = _expected_fields(path, body)
        if expected:
            assert status == 400 and reply["error"]["param"] in expected, (body, reply)
            continue
        scores = _scores_by_text(status, reply, texts, path)
        if path == "/v3/rerank" or isinstance(body["text_1"], str):  # one query: identical texts score alike
            assert all(len(values) == 1 for values in scores.values()), scores
    assert pipeline.up and pipeline.pid == pid and pipeline.restarts == restarts
