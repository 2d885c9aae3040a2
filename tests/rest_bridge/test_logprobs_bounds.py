"""Logprobs bounded per request (service.api.logprobs.MAX_REQUEST_SCORES), end to end on tiny-chat.

Issue 43: the bound was per prompt, so 16 prompts of ~1,000 tokens with n 16, prompt_logprobs 20 and logprobs 5
ran 23.5 s before a 429 (the reply past gRPC's message limit), stalling /health and a running stream ~10 s and
leaving the engine process 1.3 GB larger; 64 prompts of 1,000 tokens with prompt_logprobs 20 answered a 91 MB
body. Now a request's scores over all its prompts and choices are counted before any work (the engine never sees
a refused request), and the largest request allowed stalls neither /health nor a running stream past the ratio
the other heavy routes are held to (tests/rest_bridge/test_heavy_requests.py), the engine's memory coming back.
"""

from __future__ import annotations

import json
from typing import Any

import grpc
import pytest

from clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc
from service.api import logprobs
from service.api.logprobs import MAX_REQUEST_SCORES
from service.observability.metrics import PROMPT_TOKENS
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import failure, parse

MODEL = "tiny-chat"
TOKENS = 1_000  # tokens per prompt, as in the issue
ASK = [{"role": "user", "content": "Tell me a story."}]


def prompts(count: int) -> list[list[int]]:
    """``count`` distinct token-id prompts of TOKENS tokens each."""
    return [[100 + (i * 7 + j) % 900 for j in range(TOKENS)] for i in range(count)]


FIRST = {"model": MODEL, "prompt": prompts(16), "n": 16, "prompt_logprobs": 20, "logprobs": 5, "max_tokens": 16,
         "temperature": 1.0}  # fmt: skip
SECOND = {"model": MODEL, "prompt": prompts(64), "prompt_logprobs": 20, "max_tokens": 1}


def submitted_tokens() -> float:
    """Prompt tokens the server has submitted to tiny-chat's engine so far."""
    return PROMPT_TOKENS.labels(model=MODEL)._value.get()


def refusal(bridge: RunningBridge, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The 400 error ``body`` gets, checked to have cost the engine nothing."""
    before = submitted_tokens()
    reply = http_request(bridge.port, "POST", path, body)
    assert reply.status == 400, reply.body
    assert submitted_tokens() == before  # refused before any engine work
    return dict(json.loads(reply.body)["error"])


def test_the_issues_first_request_is_refused_at_once_naming_prompt_logprobs(bridge: RunningBridge) -> None:
    error = refusal(bridge, "/v3/completions", FIRST)
    assert error["param"] == "prompt_logprobs"
    # 16 prompts x 16 choices x 1,000 tokens x 21, and 256 choices x 16 tokens x 6
    assert "5,400,576 logprobs" in error["message"] and f"{MAX_REQUEST_SCORES:,}" in error["message"], error


def test_the_issues_second_request_is_refused_naming_prompt_logprobs(bridge: RunningBridge) -> None:
    error = refusal(bridge, "/v3/completions", SECOND)
    assert error["param"] == "prompt_logprobs" and "1,344,000 logprobs" in error["message"], error


REFUSED: dict[str, tuple[str, dict[str, Any], str]] = {
    # one choice per prompt would fit: n takes it over
    "completions-n": ("/v3/completions", {"prompt": prompts(1), "n": 16, "prompt_logprobs": 20, "max_tokens": 1,
                                          "temperature": 1.0}, "n"),
    # 64 x 1,000 output tokens x 6
    "completions-logprobs": ("/v3/completions", {"prompt": [p[:10] for p in prompts(64)], "logprobs": 5,
                                                 "max_tokens": 1000}, "logprobs"),
    # 64 x 1,000 echoed prompt tokens x 6
    "completions-echo": ("/v3/completions", {"prompt": prompts(64), "echo": True, "logprobs": 5, "max_tokens": 1},
                         "echo"),
    "chat-n": ("/v3/chat/completions", {"messages": ASK, "n": 16, "logprobs": True, "top_logprobs": 20,
                                        "max_tokens": 1000, "temperature": 1.0}, "n"),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_each_api_refuses_too_many_scores_naming_the_field(bridge: RunningBridge, case: str) -> None:
    path, body, field = REFUSED[case]
    error = refusal(bridge, path, {"model": MODEL, **body})
    assert error["param"] == field and f"at most {MAX_REQUEST_SCORES:,}" in error["message"], error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"top_logprobs": 20, "max_output_tokens": 100}, "top_logprobs"),  # 100 x 21
        ({"include": ["message.output_text.logprobs"], "max_output_tokens": 1500}, "max_output_tokens"),
    ],
    ids=["alternatives", "chosen"],
)
def test_responses_bound_top_logprobs_per_request(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch, body: dict[str, Any], field: str
) -> None:
    """One choice of at most 2,048 tokens stays under the bound on tiny-chat: lowered here to 1,000."""
    monkeypatch.setattr(logprobs, "MAX_REQUEST_SCORES", 1_000)
    error = refusal(bridge, "/v3/responses", {"model": MODEL, "input": "Tell me a story.", "store": False, **body})
    assert error["param"] == field and "at most 1,000" in error["message"], error
    allowed = {"model": MODEL, "input": "Tell me a story.", "store": False, **body, "max_output_tokens": 40}
    assert http_request(bridge.port, "POST", "/v3/responses", allowed).status == 200


def test_grpc_refuses_with_a_bad_request_naming_the_field(channel: grpc.Channel) -> None:
    completions = completion_pb2_grpc.CompletionServiceStub(channel)
    fields = {name: value for name, value in FIRST.items() if name != "prompt"}
    prompts_ = [{"token_ids": {"ids": ids}} for ids in FIRST["prompt"]]
    request = parse(completion_pb2.CreateCompletionRequest, {**fields, "prompts": prompts_})
    with pytest.raises(grpc.RpcError) as caught:
        completions.CreateCompletion(request, timeout=60)
    refused = failure(caught.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["prompt_logprobs"], refused
    assert "5,400,576 logprobs" in refused.message
    chat = chat_pb2_grpc.ChatServiceStub(channel)
    asked = {"model": MODEL, "messages": ASK, "n": 16, "logprobs": True, "top_logprobs": 20, "max_tokens": 1000,
             "temperature": 1.0}  # fmt: skip
    with pytest.raises(grpc.RpcError) as caught:
        chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, asked), timeout=60)
    refused = failure(caught.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["n"], refused
