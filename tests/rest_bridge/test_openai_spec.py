"""Every body and stream chunk the bridge returns, checked against OpenAI's own OpenAPI document.

A broad matrix of chat and completions requests (unary and streamed, n, stop,
sampling, seeds, logprobs, echo, tools with forced calls, structured output,
usage in streams), models, and error bodies, each validated with jsonschema
against the document's component schemas (tests/conformance, vendored).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conformance import violations
from tests.rest_bridge.conftest import RunningBridge, http_request

HI = [{"role": "user", "content": "Tell me a short story."}]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOL = {
    "type": "function",
    "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": CITY},
}
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
    "additionalProperties": False,
}

CHAT_CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "max-completion-tokens": {"max_completion_tokens": 5},
    "n-3": {"n": 3, "temperature": 0.8, "seed": 1},
    "n-default": {"n": 2},
    "stop": {"stop": [".", ","], "temperature": 1.0, "seed": 2},
    "stop-at-once": {"stop": ["Once", "The", "A", "I"], "temperature": 0},
    "sampling": {"temperature": 0.7, "top_p": 0.9, "seed": 3, "presence_penalty": 0.5, "frequency_penalty": 0.5},
    "logprobs": {"logprobs": True, "top_logprobs": 0},
    "top-logprobs-5": {"logprobs": True, "top_logprobs": 5},
    "top-logprobs-20-n-2": {"logprobs": True, "top_logprobs": 20, "n": 2, "temperature": 0.8, "seed": 9},
    "prompt-logprobs": {"prompt_logprobs": 2, "logprobs": True, "top_logprobs": 1},
    "tools-required": {"tools": [TOOL], "tool_choice": "required"},
    "tools-named": {"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    "tools-none": {"tools": [TOOL], "tool_choice": "none"},
    "tools-allowed": {"tools": [TOOL], "tool_choice": {"type": "allowed_tools", "allowed_tools": {
        "mode": "auto", "tools": [{"type": "function", "function": {"name": "get_weather"}}]}}},
    "tools-and-schema": {"tools": [TOOL], "response_format": {"type": "json_object"}, "temperature": 1.0, "seed": 5},
    "json-object": {"response_format": {"type": "json_object"}},
    "json-schema": {"response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": SCHEMA,
                                                                              "strict": True}}},
    "metadata-user": {"metadata": {"team": "a"}, "user": "u-1"},
    "stored": {"store": True},
}  # fmt: skip
COMPLETION_CASES: dict[str, dict[str, Any]] = {
    "plain": {},
    "prompt-list": {"prompt": ["Once upon a time", "The sea"]},
    "token-prompt": {"prompt": [1159, 220, 1096]},
    "n-2": {"n": 2, "temperature": 0.9, "seed": 4},
    "echo": {"echo": True},
    "logprobs": {"logprobs": 1},
    "logprobs-0": {"logprobs": 0},
    "logprobs-5": {"logprobs": 5},
    "logprobs-5-n-2": {"logprobs": 5, "n": 2, "temperature": 0.9, "seed": 6},
    "echo-logprobs": {"echo": True, "logprobs": 3},
    "echo-logprobs-0": {"echo": True, "logprobs": 0},
    "echo-score-only": {"echo": True, "logprobs": 1, "max_tokens": 0},
    "prompt-logprobs": {"prompt_logprobs": 3},
    "stop": {"stop": "."},
    "best-of": {"best_of": 2, "n": 1},
}


def chat_body(case: dict[str, Any], stream: bool) -> dict[str, Any]:
    extra = {"stream_options": {"include_usage": True}} if stream else {}
    return {"model": "tiny-chat", "messages": HI, "max_tokens": 12, "stream": stream, **extra, **case}


def completion_body(case: dict[str, Any], stream: bool) -> dict[str, Any]:
    extra = {"stream_options": {"include_usage": True}} if stream else {}
    return {"model": "tiny-chat", "prompt": "Once upon a time", "max_tokens": 8, "stream": stream, **extra, **case}


def echoed_first_token(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with the echoed first prompt token's null logprob and null alternatives let through.

    With echo and logprobs, OpenAI's API answers null for the prompt's first token (nothing comes before it to
    predict it) in token_logprobs and top_logprobs; the document types their items as never null. Only a first
    item that is null in both lists, in a choice whose text starts with the echoed prompt, is let through."""
    for choice in payload.get("choices", []):
        logprobs = choice.get("logprobs") or {}
        values, tops = logprobs.get("token_logprobs") or [], logprobs.get("top_logprobs") or []
        if values and values[0] is None and tops and tops[0] is None and logprobs.get("text_offset", [None])[0] == 0:
            logprobs["token_logprobs"], logprobs["top_logprobs"] = [0.0, *values[1:]], [{}, *tops[1:]]
    return payload


def checked(port: int, path: str, body: dict[str, Any], unary: str, chunk: str) -> list[str]:
    """The violations of one request's reply: the body, or every stream chunk."""
    reply = http_request(port, "POST", path, body)
    assert reply.status == 200, reply.body
    if not body["stream"]:
        return violations(unary, echoed_first_token(reply.json()))
    events = reply.events()
    assert events[-1] == "[DONE]"
    found = []
    for i, event in enumerate(events[:-1]):
        payload = echoed_first_token(json.loads(event))
        if chunk == "CreateCompletionResponse":
            # The document has no schema of its own for streamed completions and reuses the unary one, whose
            # finish_reason and usage are never null; OpenAI's API streams null in both until a choice ends
            # and until the last chunk (with include_usage), as this does. Only those nulls are let through.
            payload["choices"] = [{**c, "finish_reason": c["finish_reason"] or "stop"} for c in payload["choices"]]
            if payload.get("usage", {}) is None:
                del payload["usage"]
        found += [f"chunk {i}: {problem}" for problem in violations(chunk, payload)]
    return found


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("case", CHAT_CASES.values(), ids=CHAT_CASES)
def test_chat_replies_follow_openais_schema(bridge: RunningBridge, case: dict[str, Any], stream: bool) -> None:
    problems = checked(bridge.port, "/v3/chat/completions", chat_body(case, stream),
                       "CreateChatCompletionResponse", "CreateChatCompletionStreamResponse")  # fmt: skip
    assert not problems, problems


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
@pytest.mark.parametrize("case", COMPLETION_CASES.values(), ids=COMPLETION_CASES)
def test_completion_replies_follow_openais_schema(bridge: RunningBridge, case: dict[str, Any], stream: bool) -> None:
    # OpenAI streams completions as CreateCompletionResponse objects too.
    problems = checked(bridge.port, "/v3/completions", completion_body(case, stream),
                       "CreateCompletionResponse", "CreateCompletionResponse")  # fmt: skip
    assert not problems, problems


def test_models_follow_openais_schema(bridge: RunningBridge) -> None:
    listed = http_request(bridge.port, "GET", "/v3/models").json()
    assert not violations("ListModelsResponse", listed)
    one = http_request(bridge.port, "GET", "/v3/models/tiny-chat").json()
    assert not violations("Model", one)


def test_stored_chat_completions_follow_openais_schema(bridge: RunningBridge) -> None:
    made = http_request(bridge.port, "POST", "/v3/chat/completions", chat_body({"store": True}, False)).json()
    path = f"/v3/chat/completions/{made['id']}"
    checks = [
        ("CreateChatCompletionResponse", http_request(bridge.port, "GET", path)),
        ("ChatCompletionList", http_request(bridge.port, "GET", "/v3/chat/completions?limit=2")),
        ("ChatCompletionMessageList", http_request(bridge.port, "GET", f"{path}/messages")),
        ("CreateChatCompletionResponse", http_request(bridge.port, "POST", path, {"metadata": {"k": "v"}})),
        ("ChatCompletionDeleted", http_request(bridge.port, "DELETE", path)),
    ]
    for component, reply in checks:
        assert reply.status == 200, reply.body
        body = reply.json()
        if component == "ChatCompletionMessageList":
            # The document types each listed message as an assistant reply (role: assistant only), but the
            # list holds the request's messages, as OpenAI's API answers: the role is checked apart.
            assert {message["role"] for message in body["data"]} <= {"system", "developer", "user", "assistant", "tool"}
            body["data"] = [{**message, "role": "assistant"} for message in body["data"]]
        assert not violations(component, body), (component, violations(component, body))


ERRORS = [
    ("POST", "/v3/chat/completions", {"model": "tiny-chat", "messages": HI, "top_p": 5}),
    ("POST", "/v3/chat/completions", {"model": "nope", "messages": HI}),
    ("POST", "/v3/completions", {"model": "tiny-chat", "prompt": "x", "best_of": 2, "stop": "."}),
    ("POST", "/v3/completions", {"model": "tiny-chat"}),
    ("GET", "/v3/models/nope", None),
    ("GET", "/v3/nothing-here", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ERRORS)
def test_errors_follow_openais_schema(bridge: RunningBridge, method: str, path: str, body: Any) -> None:
    reply = http_request(bridge.port, method, path, body)
    assert reply.status >= 400
    assert not violations("ErrorResponse", reply.json())
