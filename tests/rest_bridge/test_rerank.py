"""Rerank and score end to end: the bundled tiny-rerank through plain HTTP (Cohere's / vLLM's shapes) and gRPC."""

from __future__ import annotations

import json

import grpc
import pytest

from clients.v1 import rerank_pb2, rerank_pb2_grpc
from service.models import BUNDLED_MODELS_DIR
from tests.conftest import ServerThread
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
