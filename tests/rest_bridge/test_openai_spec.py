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
CUSTOM = {"type": "custom", "custom": {"name": "count", "format": {"type": "grammar", "grammar": {
    "syntax": "lark", "definition": 'start: /[0-9]{1,3}/'}}}}  # fmt: skip
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
    # issue 49's parameters: each reply as OpenAI's document types it
    "n-greedy": {"n": 2, "temperature": 0},
    "logit-bias": {"logit_bias": {"1159": -100}, "bad_words": ["time"]},
    "custom-tool-named": {"tools": [CUSTOM], "tool_choice": {"type": "custom", "custom": {"name": "count"}},
                          "max_tokens": 300},  # room for the whole call
    "custom-and-function-required": {"tools": [TOOL, CUSTOM], "tool_choice": "required", "max_tokens": 300},
    "function-role": {"messages": [*HI, {"role": "assistant", "function_call": {"name": "get_weather",
                      "arguments": "{}"}}, {"role": "function", "name": "get_weather", "content": "sunny"}]},
    "min-tokens-stop-ids": {"min_tokens": 2, "stop_token_ids": [13]},
    "prefill": {"messages": [*HI, {"role": "assistant", "content": "Once"}], "continue_final_message": True,
                "add_generation_prompt": False},
    "grammar": {"grammar": 'root ::= "yes" | "no"'},
    "structured-outputs": {"structured_outputs": {"regex": "[0-9]{2}"}},
    "thinking-budget": {"thinking_token_budget": 2},
    "prompt-cache-retention": {"prompt_cache_retention": "in_memory", "prompt_cache_key": "k"},
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
    # issue 49's parameters
    "n-greedy": {"n": 2, "temperature": 0},
    "logit-bias": {"logit_bias": {"1159": 5}, "bad_words": ["time"], "logprobs": 2},
    "min-tokens-stop-ids": {"min_tokens": 2, "stop_token_ids": [13]},
    "grammar": {"grammar": "root ::= [a-z ]{1,8}"},
    "structured-outputs": {"structured_outputs": {"choice": ["yes", "no"]}},
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


def custom_call_deltas(payload: dict[str, Any]) -> list[str]:
    """The problems of a chunk's streamed custom tool calls, taken out of ``payload`` (checked on their own).

    The document's chunk schema knows function calls only (``type`` enum ["function"]), though OpenAI streams a
    custom call as ``{"index", "id", "type": "custom", "custom": {"name", "input"}}``: a gap of the document
    (openai/openai-openapi#576). Each such delta is checked against the unary custom call's schema instead."""
    problems = []
    for choice in payload.get("choices", []):
        calls = choice.get("delta", {}).get("tool_calls") or []
        custom = [call for call in calls if call.get("type") == "custom"]
        for call in custom:
            whole = {key: value for key, value in call.items() if key != "index"}
            problems += [
                f"custom call: {problem}" for problem in violations("ChatCompletionMessageCustomToolCall", whole)
            ]
        if custom:
            choice["delta"]["tool_calls"] = [call for call in calls if call not in custom] or None
            if choice["delta"]["tool_calls"] is None:
                del choice["delta"]["tool_calls"]
    return problems


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
        found += [f"chunk {i}: {problem}" for problem in custom_call_deltas(payload) + violations(chunk, payload)]
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
