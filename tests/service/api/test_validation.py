"""The bad-input battery, end to end over real gRPC: every refusal is INVALID_ARGUMENT naming its field.

Each case is one bad request, sent to the unary RPC and to its streaming twin
(where the rule applies to both); the test asserts the status code, the field
paths in ``google.rpc.BadRequest`` and that the message names them. The values
just inside each range are sent too, and must succeed. Last, random junk must
never crash, hang or INTERNAL the server.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc, model_pb2, model_pb2_grpc
from ovserve.service.api.generation import MAX_SEED, MAX_STOP_STRINGS
from ovserve.service.errors import MAX_QUOTED, MAX_VIOLATIONS, MAX_VIOLATIONS_IN_MESSAGE, quote
from ovserve.service.models import BUNDLED_SPECULATIVE
from tests.conftest import SERVED_BY_DEFAULT, TINY_CHAT, ServerThread
from tests.rpc import Failure, failure, parse

pytestmark = pytest.mark.skipif(
    not (TINY_CHAT / "openvino_model.xml").is_file(), reason="the bundled tiny-chat model is not built"
)

MODEL = "tiny-chat"  # plain continuous batching: no draft model
SPECULATIVE = BUNDLED_SPECULATIVE  # tiny-chat with tiny-chat-draft as its speculative-decoding draft
TIMEOUT = 30.0  # seconds per call: a validation error must never wait on generation
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
DROP = object()  # a body value that removes the base request's key

BASES = {
    "chat": {"model": MODEL, "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 2},
    "completion": {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 2},
}
REQUESTS = {
    ("chat", "create"): chat_pb2.CreateChatCompletionRequest,
    ("chat", "stream"): chat_pb2.StreamChatCompletionRequest,
    ("completion", "create"): completion_pb2.CreateCompletionRequest,
    ("completion", "stream"): completion_pb2.StreamCompletionRequest,
}


@dataclass(frozen=True)
class Stubs:
    chat: chat_pb2_grpc.ChatServiceStub
    completions: completion_pb2_grpc.CompletionServiceStub

    def call(self, api: str, rpc: str, request: Message, timeout: float = TIMEOUT) -> list[Message]:
        """Send ``request``; the unary response or every streamed chunk, as a list."""
        if api == "chat":
            if rpc == "create":
                return [self.chat.CreateChatCompletion(request, timeout=timeout)]
            return list(self.chat.StreamChatCompletion(request, timeout=timeout))
        if rpc == "create":
            return [self.completions.CreateCompletion(request, timeout=timeout)]
        return list(self.completions.StreamCompletion(request, timeout=timeout))

    def send(self, api: str, rpc: str, body: dict[str, Any], timeout: float = TIMEOUT) -> list[Message]:
        """Send the base request of ``api`` updated with ``body`` (DROP removes a key)."""
        merged = {**BASES[api], **body}
        merged = {key: value for key, value in merged.items() if value is not DROP}
        return self.call(api, rpc, parse(REQUESTS[api, rpc], merged), timeout)

    def refusal(self, api: str, rpc: str, body: dict[str, Any]) -> Failure:
        """The failure the request gets; fails the test if it succeeds."""
        with pytest.raises(grpc.RpcError) as caught:
            self.send(api, rpc, body)
        return failure(caught.value)


@pytest.fixture
def stubs(chat: chat_pb2_grpc.ChatServiceStub, completions: completion_pb2_grpc.CompletionServiceStub) -> Stubs:
    return Stubs(chat, completions)


@pytest.fixture(scope="module")
def max_len(server: ServerThread) -> int:
    """tiny-chat's maximum length in tokens, as ModelService.GetModel reports it."""
    with grpc.insecure_channel(server.target) as channel:
        model = model_pb2_grpc.ModelServiceStub(channel).GetModel(model_pb2.GetModelRequest(model=MODEL)).model
    assert model.max_model_len > 0
    return model.max_model_len


def words(count: int) -> str:
    """A prompt of ``count`` words: at least ``count`` tokens."""
    return " ".join(["hello"] * count)


# --- the table -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bad:
    """One bad request: which API, what differs from the base request, what the refusal must name."""

    name: str
    api: str  # chat | completion | both
    body: dict[str, Any] | Callable[[int], dict[str, Any]]  # or a function of the model's max length
    fields: tuple[str, ...]
    rpcs: tuple[str, ...] = ("create", "stream")
    code: grpc.StatusCode = INVALID
    xfail: str | None = None  # a known service bug: the reason says what the service does instead


# The draft-model fields are range-checked on the model that has a draft (on tiny-chat they are refused outright).
DRAFT_FIELDS = {"num_assistant_tokens", "assistant_confidence_threshold"}


def _ranges() -> list[Bad]:
    """Each RULES range just outside its edges, plus NaN / infinities and negative counts."""
    outside: dict[str, list[Any]] = {
        "temperature": [-0.01, 2.01, "NaN", "Infinity"],
        "top_p": [0.0, 1.01, "NaN"],
        "top_k": [0, -2],
        "min_p": [-0.01, 1.0, "-Infinity"],
        "repetition_penalty": [0.0, -1.0, "Infinity"],
        "frequency_penalty": [-2.01, 2.01],
        "presence_penalty": [-2.01, 2.01, "NaN"],
        "seed": [-1, MAX_SEED + 1],
        "length_penalty": ["NaN", "-Infinity"],
        "num_assistant_tokens": [0, 65, -1],
        "assistant_confidence_threshold": [0.0, 1.0],
        "n": [0, -1, 17],
        "best_of": [0, 17, -3],
    }
    cases = []
    for field, values in outside.items():
        for value in values:
            extra: dict[str, Any] = {"temperature": 1.0} if field == "n" and value == 17 else {}
            if field in DRAFT_FIELDS:
                extra["model"] = SPECULATIVE
            cases.append(Bad(f"{field}={value}", "both", {field: value, **extra}, (field,)))
    return cases


CASES: list[Bad] = [
    *_ranges(),
    # --- sampling combinations
    Bad("n>best_of", "both", {"n": 3, "best_of": 2}, ("best_of",)),
    Bad("best_of>1-sampling", "both", {"best_of": 2, "temperature": 0.7}, ("temperature",)),
    Bad("diversity_penalty-without-beams", "both", {"diversity_penalty": 0.5}, ("diversity_penalty",)),
    Bad("diversity_penalty-negative", "both", {"diversity_penalty": -1.0, "best_of": 2}, ("diversity_penalty",)),
    Bad("stop+stop_sequences", "both", {"stop": "x", "stop_sequences": ["y"]}, ("stop",)),
    Bad("empty-stop_sequence", "both", {"stop_sequences": ["ok", ""]}, ("stop_sequences[1]",)),
    Bad("17-stop_sequences", "both", {"stop_sequences": [f"s{i}" for i in range(MAX_STOP_STRINGS + 1)]},
        ("stop_sequences",)),
    Bad("empty-stop", "both", {"stop": ""}, ("stop",)),
    Bad("several-empty-stop_sequences", "both", {"stop_sequences": ["", "ok", ""]},
        ("stop_sequences[0]", "stop_sequences[2]")),
    Bad("speculative-both", "both",
        {"model": SPECULATIVE, "num_assistant_tokens": 3, "assistant_confidence_threshold": 0.5},
        ("assistant_confidence_threshold",)),
    Bad("num_assistant_tokens-without-draft", "both", {"num_assistant_tokens": 3}, ("num_assistant_tokens",)),
    Bad("assistant_confidence_threshold-without-draft", "both", {"assistant_confidence_threshold": 0.5},
        ("assistant_confidence_threshold",)),
    Bad("max_ngram_size-without-prompt-lookup", "both", {"max_ngram_size": 3}, ("max_ngram_size",)),
    Bad("max_ngram_size-on-the-draft-model", "both", {"model": SPECULATIVE, "max_ngram_size": 3}, ("max_ngram_size",)),
    # --- beam search (best_of > 1)
    Bad("best_of>1+repetition_penalty", "both", {"best_of": 2, "repetition_penalty": 1.5}, ("repetition_penalty",)),
    Bad("best_of>1+presence_penalty", "both", {"best_of": 2, "presence_penalty": 1.0}, ("presence_penalty",)),
    Bad("best_of>1+frequency_penalty", "both", {"best_of": 2, "frequency_penalty": -1.0}, ("frequency_penalty",)),
    Bad("best_of>1+every-penalty", "both",
        {"best_of": 3, "repetition_penalty": 0.5, "presence_penalty": 2.0, "frequency_penalty": 2.0},
        ("repetition_penalty", "presence_penalty", "frequency_penalty")),
    # --- the speculative model: one sequence per request, sampled or greedy, never beam search
    Bad("best_of>1-on-the-draft-model", "both", {"model": SPECULATIVE, "best_of": 2}, ("best_of",)),
    Bad("n=best_of=2-on-the-draft-model", "both", {"model": SPECULATIVE, "n": 2, "best_of": 2}, ("best_of",)),
    Bad("several-at-once", "both", {"temperature": 9, "top_p": 0, "seed": -1},
        ("temperature", "top_p", "seed")),
    # --- streaming fields
    Bad("stream-on-create", "both", {"stream": True}, ("stream",), rpcs=("create",)),
    Bad("stream_options-on-create", "both", {"stream_options": {"include_usage": True}}, ("stream_options",),
        rpcs=("create",)),
    # --- structured outputs (more in test_structured.py)
    Bad("response_format-unknown-type", "both", {"response_format": {"type": "yaml"}}, ("response_format.type",)),
    Bad("guided_regex-unclosed", "both", {"guided_regex": "[a-z"}, ("guided_regex",)),
    Bad("guided_choice-empty-choice", "both", {"guided_choice": ["yes", ""]}, ("guided_choice[1]",)),
    Bad("guided_json-bad-type", "both", {"guided_json": {"type": "objekt"}}, ("guided_json.type",)),
    # --- model
    Bad("unknown-model", "both", {"model": "no-such-model"}, (), code=NOT_FOUND),
    Bad("empty-model", "both", {"model": ""}, ("model",)),
    # --- length
    Bad("max_tokens=0", "both", {"max_tokens": 0}, ("max_tokens",)),
    Bad("max_tokens<0", "both", {"max_tokens": -5}, ("max_tokens",)),
    Bad("max_tokens=model-length", "both", lambda limit: {"max_tokens": limit}, ("max_tokens",)),
    Bad("max_tokens-huge", "both", {"max_tokens": 2**31 - 1}, ("max_tokens",)),
    Bad("max_completion_tokens=0", "chat", {"max_completion_tokens": 0}, ("max_completion_tokens",)),
    Bad("max_completion_tokens=model-length", "chat", lambda limit: {"max_completion_tokens": limit},
        ("max_completion_tokens",)),
    Bad("messages-longer-than-model", "chat",
        lambda limit: {"messages": [{"role": "user", "content": words(2 * limit)}]}, ("messages",)),
    Bad("prompt-longer-than-model", "completion", lambda limit: {"prompt": words(2 * limit)}, ("prompt",)),
    Bad("prompts[1]-longer-than-model", "completion",
        lambda limit: {"prompt": DROP, "prompts": [{"text": "hi"}, {"text": words(2 * limit)}]}, ("prompts[1]",)),
    # --- chat messages
    Bad("empty-messages", "chat", {"messages": []}, ("messages",)),
    Bad("unknown-role", "chat", {"messages": [{"role": "user", "content": "hi"}, {"role": "wizard", "content": "x"}]},
        ("messages[1].role",)),
    Bad("empty-role", "chat", {"messages": [{"content": "hi"}]}, ("messages[0].role",)),
    Bad("enum-style-role", "chat", {"messages": [{"role": "ROLE_USER", "content": "hi"}]}, ("messages[0].role",)),
    Bad("missing-content", "chat", {"messages": [{"role": "user"}]}, ("messages[0].content",)),
    Bad("assistant-without-content-or-tool-calls", "chat",
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant"}]}, ("messages[1].content",)),
    Bad("tool-without-tool_call_id", "chat",
        {"messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                  "function": {"name": "weather", "arguments": "{}"}}]},
            {"role": "tool", "content": "sunny"},
        ]}, ("messages[2].tool_call_id",)),
    Bad("tool-call-arguments-not-json", "chat",
        {"messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                  "function": {"name": "weather", "arguments": "{city: Oslo"}}]},
        ]}, ("messages[1].tool_calls[0].function.arguments",)),
    Bad("tool-call-without-name", "chat",
        {"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"arguments": "{}"}}]},
        ]}, ("messages[1].tool_calls[0].function.name",)),
    Bad("tool-call-unknown-type", "chat",
        {"messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "magic", "function": {"name": "f"}}]},
        ]}, ("messages[1].tool_calls[0].type",)),
    Bad("tool_calls-on-user", "chat",
        {"messages": [{"role": "user", "content": "hi", "tool_calls": [{"id": "c1", "function": {"name": "f"}}]}]},
        ("messages[0].tool_calls",)),
    Bad("image_url-part", "chat",
        {"messages": [{"role": "user", "content_parts": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]}]}, ("messages[0].content_parts[1].image_url",)),
    Bad("unknown-part-type", "chat",
        {"messages": [{"role": "user", "content_parts": [{"type": "input_audio", "text": "x"}]}]},
        ("messages[0].content_parts[0].type",)),
    Bad("content-and-content_parts", "chat",
        {"messages": [{"role": "user", "content": "a", "content_parts": [{"type": "text", "text": "b"}]}]},
        ("messages[0].content_parts",)),
    Bad("several-messages-wrong", "chat",
        {"messages": [{"role": "robot", "content": "a"}, {"role": "user"}, {"role": "tool", "content": "x"}]},
        ("messages[0].role", "messages[1].content", "messages[2].tool_call_id")),
    Bad("message-and-sampling-wrong", "chat",
        {"messages": [{"role": "robot", "content": "a"}], "temperature": 9}, ("messages[0].role", "temperature")),
    Bad("stream-and-sampling-wrong", "both", {"stream": True, "top_p": 0}, ("stream", "top_p"), rpcs=("create",)),
    Bad("prompt-and-sampling-wrong", "completion", {"prompt": "", "seed": -1, "n": 0}, ("prompt", "seed", "n")),
    # --- chat tools, reasoning, logprobs
    Bad("tool_choice-required", "chat", {"tool_choice": "required"}, ("tool_choice",)),
    Bad("tool_choice-unknown", "chat", {"tool_choice": "sometimes"}, ("tool_choice",)),
    Bad("tool_choice-without-tools", "chat", {"tool_choice": "auto"}, ("tool_choice",)),
    Bad("named_tool_choice", "chat", {"named_tool_choice": {"type": "function", "function": {"name": "f"}}},
        ("named_tool_choice",)),
    Bad("tool-unknown-type", "chat", {"tools": [{"type": "retrieval", "function": {"name": "f"}}]},
        ("tools[0].type",)),
    Bad("tool-without-name", "chat", {"tools": [{"type": "function", "function": {"description": "d"}}]},
        ("tools[0].function.name",)),
    Bad("129-tools", "chat", {"tools": [{"type": "function", "function": {"name": f"f{i}"}} for i in range(129)]},
        ("tools",)),
    Bad("reasoning_effort-unknown", "chat", {"reasoning_effort": "extreme"}, ("reasoning_effort",)),
    Bad("top_logprobs-without-logprobs", "chat", {"top_logprobs": 0}, ("top_logprobs",)),
    Bad("top_logprobs>20", "chat", {"logprobs": True, "top_logprobs": 21}, ("top_logprobs",)),
    Bad("prompt_logprobs>20", "chat", {"prompt_logprobs": 21}, ("prompt_logprobs",)),
    Bad("prompt_logprobs<0", "chat", {"prompt_logprobs": -1}, ("prompt_logprobs",)),
    Bad("top_logprobs-negative", "chat", {"logprobs": True, "top_logprobs": -1}, ("top_logprobs",)),
    # --- completion prompts
    Bad("prompt-and-prompts", "completion", {"prompts": [{"text": "b"}]}, ("prompts",)),
    Bad("empty-prompt", "completion", {"prompt": ""}, ("prompt",)),
    Bad("no-prompt", "completion", {"prompt": DROP}, ("prompt",)),
    Bad("empty-prompts-entry", "completion", {"prompt": DROP, "prompts": [{"text": "a"}, {"text": ""}]},
        ("prompts[1]",)),
    Bad("empty-token-ids", "completion", {"prompt": DROP, "prompts": [{"token_ids": {"ids": []}}]}, ("prompts[0]",)),
    Bad("unset-prompts-entry", "completion", {"prompt": DROP, "prompts": [{"text": "a"}, {}]}, ("prompts[1]",)),
    Bad("65-prompts", "completion", {"prompt": DROP, "prompts": [{"text": "a"}] * 65}, ("prompts",)),
    Bad("token-id-beyond-vocabulary", "completion",
        {"prompt": DROP, "prompts": [{"text": "hi"}, {"token_ids": {"ids": [999_999]}}]},
        ("prompts[1].token_ids.ids[0]",)),
    Bad("negative-token-id", "completion", {"prompt": DROP, "prompts": [{"token_ids": {"ids": [1, 2, -1]}}]},
        ("prompts[0].token_ids.ids[2]",)),
    Bad("suffix", "completion", {"suffix": "The end."}, ("suffix",)),
    Bad("logprobs=6", "completion", {"logprobs": 6}, ("logprobs",)),
    Bad("prompt_logprobs>20", "completion", {"prompt_logprobs": 21}, ("prompt_logprobs",)),
    Bad("logprobs<0", "completion", {"logprobs": -1}, ("logprobs",)),
    Bad("max_tokens=0-without-echo", "completion", {"max_tokens": 0, "logprobs": 1}, ("max_tokens",)),
    Bad("several-completion-fields", "completion", {"suffix": "x", "logprobs": 6, "stream": True},
        ("stream", "suffix", "logprobs"), rpcs=("create",)),
]  # fmt: skip


def _params() -> Iterator[Any]:
    for case in CASES:
        for api in ("chat", "completion") if case.api == "both" else (case.api,):
            for rpc in case.rpcs:
                marks = [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
                yield pytest.param(case, api, rpc, id=f"{api}-{rpc}-{case.name}", marks=marks)


PARAMS = list(_params())


def test_the_battery_is_large() -> None:
    assert len(CASES) >= 40
    assert len(PARAMS) >= 150


@pytest.mark.parametrize(("case", "api", "rpc"), PARAMS)
def test_bad_request_names_the_field(stubs: Stubs, max_len: int, case: Bad, api: str, rpc: str) -> None:
    body = case.body(max_len) if callable(case.body) else case.body
    refused = stubs.refusal(api, rpc, body)
    assert refused.code == case.code, refused.message
    if case.code == NOT_FOUND:
        assert refused.param == "model"
        assert "no-such-model" in refused.message
        assert f"(served: {', '.join(sorted(SERVED_BY_DEFAULT))})" in refused.message  # all, sorted
        return
    assert refused.fields == list(case.fields), refused.message
    assert refused.param == case.fields[0]
    for field in case.fields:
        assert f"{field}: " in refused.message
    assert "Traceback" not in refused.message


def test_several_violations_are_reported_together(stubs: Stubs) -> None:
    refused = stubs.refusal(
        "chat",
        "create",
        {"temperature": -1, "top_p": 2, "top_k": 0, "min_p": 1, "stop_sequences": [""], "n": 0, "max_tokens": 0},
    )
    assert refused.code == INVALID
    assert len(refused.fields) >= 2
    assert set(refused.fields) == {"temperature", "top_p", "top_k", "min_p", "stop_sequences[0]", "n", "max_tokens"}


def test_server_still_serves_after_the_battery(stubs: Stubs) -> None:
    [response] = stubs.send("chat", "create", {"max_tokens": 4})
    assert response.choices[0].message.content is not None
    assert response.usage.completion_tokens >= 1


# --- just inside every edge: accepted ------------------------------------------------------------------------

GOOD: list[tuple[str, str, dict[str, Any]]] = [
    *[
        (f"{field}={value}", "both", {field: value, **extra})
        for field, values, extra in [
            ("temperature", [0.0, 2.0], {}),
            ("top_p", [1e-6, 1.0], {"temperature": 1.0}),
            ("top_k", [-1, 1], {"temperature": 1.0}),
            ("min_p", [0.0, 0.99], {"temperature": 1.0}),
            ("repetition_penalty", [0.01, 100.0], {}),
            ("frequency_penalty", [-2.0, 2.0], {}),
            ("presence_penalty", [-2.0, 2.0], {}),
            ("seed", [0, MAX_SEED], {"temperature": 1.0}),
            ("length_penalty", [-3.0, 3.0], {}),
            ("num_assistant_tokens", [1, 64], {"model": SPECULATIVE}),
            ("assistant_confidence_threshold", [0.01, 0.99], {"model": SPECULATIVE}),
            ("max_tokens", [1], {}),
            ("n", [1, 16], {"temperature": 1.0}),
            ("best_of", [1], {}),
            ("best_of", [16], {"n": 16}),
        ]
        for value in values
    ],
    ("best_of>1+diversity_penalty", "both", {"n": 2, "best_of": 4, "diversity_penalty": 1.0}),
    ("best_of>1+penalties-off", "both",
     {"best_of": 2, "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}),
    ("speculative-defaults", "both", {"model": SPECULATIVE}),
    ("speculative-n=3-sampling", "both", {"model": SPECULATIVE, "n": 3, "temperature": 1.0}),
    ("speculative-n=16-seeded", "both", {"model": SPECULATIVE, "n": 16, "temperature": 1.0, "seed": MAX_SEED}),
    ("16-stop-strings", "both", {"stop_sequences": [f"zz{i}" for i in range(MAX_STOP_STRINGS)]}),
    ("stop", "both", {"stop": "\n"}),
    ("ignore_eos", "both", {"ignore_eos": True}),
    ("include_stop_str_in_output", "both", {"include_stop_str_in_output": True, "stop": "."}),
    ("stream-false-on-create", "both", {"stream": False}),
    ("max_completion_tokens=1", "chat", {"max_completion_tokens": 1}),
    ("developer-role", "chat", {"messages": [{"role": "developer", "content": "Be brief."},
                                             {"role": "user", "content": "hi"}]}),
    ("text-content-parts", "chat", {"messages": [{"role": "user", "content_parts": [{"type": "text", "text": "hi"}]}]}),
    ("logprobs+top_logprobs=0", "chat", {"logprobs": True, "top_logprobs": 0}),
    ("tool_choice=none", "chat", {"tool_choice": "none", "tools": [{"type": "function", "function": {"name": "f"}}]}),
    ("tool_choice=auto", "chat", {"tool_choice": "auto", "tools": [{"type": "function", "function": {"name": "f"}}]}),
    ("reasoning_effort=none", "chat", {"reasoning_effort": "none"}),
    ("reasoning_effort=high", "chat", {"reasoning_effort": "high"}),
    ("completion-logprobs=1", "completion", {"logprobs": 1}),
    ("echo", "completion", {"echo": True}),
    ("empty-suffix", "completion", {"suffix": ""}),
    ("token-ids-prompt", "completion", {"prompt": DROP, "prompts": [{"token_ids": {"ids": [1, 2, 3]}}]}),
    ("two-prompts", "completion", {"prompt": DROP, "prompts": [{"text": "a"}, {"text": "b"}]}),
]  # fmt: skip


def _good_params() -> Iterator[Any]:
    for name, api, body in GOOD:
        for one in ("chat", "completion") if api == "both" else (api,):
            yield pytest.param(one, body, id=f"{one}-{name}")


@pytest.mark.parametrize(("api", "body"), list(_good_params()))
def test_just_inside_is_accepted(stubs: Stubs, api: str, body: dict[str, Any]) -> None:
    [response] = stubs.send(api, "create", {"max_tokens": 2, **body})
    choices = body.get("n", 1) * max(1, len(body.get("prompts", [])))
    assert response.model == body.get("model", MODEL)
    assert sorted(choice.index for choice in response.choices) == list(range(choices))
    assert all(choice.finish_reason for choice in response.choices)
    assert choices <= response.usage.completion_tokens <= 2 * choices


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_streaming_twins_accept_their_own_options(stubs: Stubs, api: str) -> None:
    chunks = stubs.send(
        api, "stream", {"stream": True, "stream_options": {"include_usage": True}, "include_stop_str_in_output": True}
    )
    assert chunks[-1].usage.total_tokens > 0


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_max_tokens_exactly_filling_the_model(stubs: Stubs, max_len: int, api: str) -> None:
    [probe] = stubs.send(api, "create", {"max_tokens": 1})
    room = max_len - probe.usage.prompt_tokens
    [response] = stubs.send(api, "create", {"max_tokens": room}, timeout=120)
    assert response.usage.prompt_tokens + response.usage.completion_tokens <= max_len
    refused = stubs.refusal(api, "create", {"max_tokens": room + 1})
    assert (refused.code, refused.fields) == (INVALID, ["max_tokens"])
    assert f"maximum length of {max_len} tokens" in refused.message


# --- tiny-chat (no draft) and tiny-chat-speculative (with tiny-chat-draft), side by side -------------------------


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize("rpc", ["create", "stream"])
@pytest.mark.parametrize(
    ("model", "body"),
    [
        (MODEL, {"num_assistant_tokens": 3}),
        (MODEL, {"assistant_confidence_threshold": 0.5}),
        (MODEL, {"max_ngram_size": 2}),
        (SPECULATIVE, {"max_ngram_size": 2}),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else value,
)
def test_speculative_fields_need_a_draft_model(
    stubs: Stubs, api: str, rpc: str, model: str, body: dict[str, Any]
) -> None:
    [field] = body
    refused = stubs.refusal(api, rpc, {"model": model, **body})
    assert (refused.code, refused.fields, refused.param) == (INVALID, [field], field)
    kind = "prompt lookup" if field == "max_ngram_size" else "a draft model"
    assert f"{field}: model {model!r} is not served with {kind}" in refused.message


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize(
    "body", [{"n": 3, "temperature": 1.0}, {"n": 2, "best_of": 3}, {"best_of": 4}], ids=lambda body: str(body)
)
def test_n_and_best_of_work_on_the_plain_model(stubs: Stubs, api: str, body: dict[str, Any]) -> None:
    [response] = stubs.send(api, "create", {"max_tokens": 3, **body})
    assert sorted(choice.index for choice in response.choices) == list(range(body.get("n", 1)))


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_best_of_is_refused_on_the_speculative_model_by_name(stubs: Stubs, api: str) -> None:
    refused = stubs.refusal(api, "create", {"model": SPECULATIVE, "best_of": 3, "temperature": 0})
    assert (refused.code, refused.fields) == (INVALID, ["best_of"])
    assert f"model {SPECULATIVE!r} runs speculative decoding, which has no beam search" in refused.message


def _texts(api: str, rpc: str, responses: list[Message]) -> dict[int, tuple[str, int]]:
    """Each choice's whole text and finish reason, from the unary response or the streamed chunks."""
    texts: dict[int, str] = {}
    finished: dict[int, int] = {}
    for response in responses:
        for choice in response.choices:
            if api == "completion":
                text = choice.text
            else:
                text = choice.message.content if rpc == "create" else choice.delta.content
            texts[choice.index] = texts.get(choice.index, "") + text
            if choice.finish_reason:
                assert choice.index not in finished, f"choice {choice.index} finished twice"
                finished[choice.index] = choice.finish_reason
    assert set(finished) == set(texts), f"unfinished choices: {set(texts) - set(finished)}"
    return {index: (texts[index], finished[index]) for index in texts}


SPECULATIVE_SAMPLED = {"model": SPECULATIVE, "temperature": 1.0, "max_tokens": 6}


@pytest.mark.parametrize("api", ["chat", "completion"])
@pytest.mark.parametrize("rpc", ["create", "stream"])
def test_n_on_the_speculative_model_is_n_runs_with_consecutive_seeds(stubs: Stubs, api: str, rpc: str) -> None:
    seed = 1234
    choices = _texts(api, rpc, stubs.send(api, rpc, {**SPECULATIVE_SAMPLED, "n": 3, "seed": seed}))
    assert sorted(choices) == [0, 1, 2]
    assert len({text for text, _ in choices.values()}) > 1  # different seeds, different samples
    for index in range(3):  # choice i is what a single request seeded seed + i gets
        alone = _texts(api, rpc, stubs.send(api, rpc, {**SPECULATIVE_SAMPLED, "seed": seed + index}))
        assert alone == {0: choices[index]}, f"choice {index}"


@pytest.mark.parametrize("rpc", ["create", "stream"])
def test_n_on_the_speculative_model_wraps_the_seed(stubs: Stubs, rpc: str) -> None:
    choices = _texts(
        "completion", rpc, stubs.send("completion", rpc, {**SPECULATIVE_SAMPLED, "n": 2, "seed": MAX_SEED})
    )
    wrapped = _texts("completion", rpc, stubs.send("completion", rpc, {**SPECULATIVE_SAMPLED, "seed": 0}))
    assert wrapped == {0: choices[1]}


@pytest.mark.parametrize("rpc", ["create", "stream"])
def test_n_on_the_speculative_model_numbers_choices_across_prompts(stubs: Stubs, rpc: str) -> None:
    body = {**SPECULATIVE_SAMPLED, "prompt": DROP, "prompts": [{"text": "a"}, {"text": "b"}], "n": 2, "seed": 7}
    responses = stubs.send("completion", rpc, body)
    assert sorted(_texts("completion", rpc, responses)) == [0, 1, 2, 3]
    if rpc == "create":
        [response] = responses
        assert 4 <= response.usage.completion_tokens <= 4 * SPECULATIVE_SAMPLED["max_tokens"]


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_streaming_n_on_the_speculative_model_reports_usage(stubs: Stubs, api: str) -> None:
    body = {**SPECULATIVE_SAMPLED, "n": 4, "stream_options": {"include_usage": True}}
    chunks = stubs.send(api, "stream", body)
    if api == "chat":  # the first chunk opens every choice with the assistant role
        assert sorted(choice.index for choice in chunks[0].choices) == [0, 1, 2, 3]
    assert sorted(_texts(api, "stream", chunks)) == [0, 1, 2, 3]
    assert 4 <= chunks[-1].usage.completion_tokens <= 4 * SPECULATIVE_SAMPLED["max_tokens"]


# --- robustness: junk never crashes, hangs or INTERNALs the server -------------------------------------------

ACCEPTABLE = {grpc.StatusCode.OK, INVALID, NOT_FOUND}
STRUCT = "google.protobuf.Struct"


class Junk:
    """Deterministic random values for every field type of a request message."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def text(self) -> str:
        rng = self.rng
        kind = rng.randrange(8)
        if kind == 0:
            return ""
        if kind == 1:
            return rng.choice(string.ascii_letters) * rng.choice([10_000, 200_000])  # huge
        if kind == 2:
            return "".join(chr(rng.randrange(0, 32)) for _ in range(rng.randint(1, 40)))  # control characters
        if kind == 3:  # any unicode scalar value (no lone surrogates: they cannot be encoded)
            return "".join(chr(rng.choice([rng.randrange(0xD800), rng.randrange(0xE000, 0x110000)])) for _ in range(50))
        if kind == 4:
            return rng.choice(["{{", "{% raw %}", "<|im_end|>", "</s>", "<s>", "\x00", "{}", "null", "tiny-chat"])
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(1, 30)))

    def integer(self, bits: int) -> int:
        top = 2 ** (bits - 1)
        return self.rng.choice([0, 1, -1, 2, 3, 16, 17, 64, 65, 1000, top - 1, -top, self.rng.randint(-top, top - 1)])

    def double(self) -> float:
        return self.rng.choice(
            [0.0, -0.0, 0.5, 1.0, 2.0, -2.0, 1e-300, 5e-324, 1e308, -1e308, math.nan, math.inf, -math.inf,
             self.rng.uniform(-3, 3)]
        )  # fmt: skip

    def json_value(self, depth: int) -> Any:
        """A Struct value: finite numbers only (NaN in a Struct has its own tests below)."""
        rng = self.rng
        if depth <= 0 or rng.random() < 0.3:
            return rng.choice([None, True, False, rng.uniform(-1e9, 1e9), self.text()[:100], 0])
        if rng.random() < 0.5:
            return [self.json_value(depth - 1) for _ in range(rng.randint(0, 3))]
        return {self.text()[:20] or "k": self.json_value(depth - 1) for _ in range(rng.randint(1, 3))}

    def nested(self, depth: int) -> dict[str, Any]:
        """A dict nested ``depth`` levels deep (Struct -> Value -> Struct: 3 message levels each)."""
        value: Any = self.text()[:50]
        for level in range(depth):
            value = {f"k{level}": value, "enable_thinking": self.rng.random() < 0.5}
        return value

    def scalar(self, field: FieldDescriptor) -> Any:
        kind = field.type
        if kind == FieldDescriptor.TYPE_BOOL:
            return self.rng.random() < 0.5
        if kind == FieldDescriptor.TYPE_DOUBLE:
            return self.double()
        if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64):
            return self.integer(64)
        if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32):
            return self.integer(32)
        if kind == FieldDescriptor.TYPE_STRING:
            if field.name == "role":
                return self.rng.choice(["user", "assistant", "system", "developer", "tool", self.text()])
            if field.name == "type":
                return self.rng.choice(["text", "image_url", "function", "json_schema", self.text()])
            return self.text()
        if kind == FieldDescriptor.TYPE_BYTES:  # image data: empty, noise, or a PNG signature with junk after it
            noise = self.rng.randbytes(self.rng.randint(0, 64))
            return self.rng.choice([b"", noise, b"\x89PNG\r\n\x1a\n" + noise])
        raise AssertionError(f"no junk for {field.full_name}")

    def fill(self, message: Message, density: float, depth: int = 0) -> None:
        """Set a random subset of ``message``'s fields to random values."""
        rng = self.rng
        for field in message.DESCRIPTOR.fields:
            if rng.random() > density:
                continue
            target = getattr(message, field.name)
            if field.message_type is not None and field.message_type.full_name == STRUCT:
                target.update(self.nested(rng.randint(1, 25)) if rng.random() < 0.5 else {"v": self.json_value(4)})
            elif field.message_type is not None and field.message_type.GetOptions().map_entry:
                value = field.message_type.fields_by_name["value"]  # metadata's strings, logit_bias's numbers
                for _ in range(rng.randint(1, 5)):
                    target[self.text()[:1000]] = self.scalar(value)
            elif field.message_type is not None:
                if depth > 3:
                    continue
                if field.is_repeated:
                    for _ in range(rng.choice([0, 1, 2, 3, 20])):
                        self.fill(target.add(), 0.6, depth + 1)
                else:
                    target.SetInParent()
                    self.fill(target, 0.6, depth + 1)
            elif field.is_repeated:
                target.extend(self.scalar(field) for _ in range(rng.choice([0, 1, 2, 17, 100])))
            else:
                setattr(message, field.name, self.scalar(field))

    def request(self, api: str, rpc: str) -> Message:
        """A valid base request with 1-4 fields set to junk, or (one in four) junk everywhere."""
        message = parse(REQUESTS[api, rpc], BASES[api])
        if self.rng.random() < 0.25:
            self.fill(message, density=0.3)
        else:
            fields = self.rng.sample(list(message.DESCRIPTOR.fields), self.rng.randint(1, 4))
            for field in fields:
                message.ClearField(field.name)
            junk = REQUESTS[api, rpc]()
            self.fill(junk, density=1.0)
            for field in fields:
                if field.is_repeated or field.message_type is not None:
                    getattr(message, field.name).MergeFrom(getattr(junk, field.name))
                else:
                    setattr(message, field.name, getattr(junk, field.name))
        if self.rng.random() < 0.9:
            message.model = MODEL
        # Bound generation: a junk request that is valid must still end quickly.
        if not message.HasField("max_tokens") or not -2 <= message.max_tokens <= 17:
            message.max_tokens = self.rng.choice([-1, 0, 1, 2, 16, 2**31 - 1])
        if message.DESCRIPTOR.fields_by_name.get("max_completion_tokens") and message.HasField("max_completion_tokens"):
            message.max_completion_tokens = self.rng.choice([-1, 0, 1, 8, 2**31 - 1])
        return message


@pytest.mark.parametrize("seed", range(50))
def test_junk_never_crashes_or_hangs(stubs: Stubs, seed: int) -> None:
    junk = Junk(seed)
    api, rpc = junk.rng.choice(sorted(REQUESTS))
    request = junk.request(api, rpc)
    try:
        stubs.call(api, rpc, request)
    except grpc.RpcError as error:
        code, details = error.code(), error.details() or ""
    else:
        code, details = grpc.StatusCode.OK, ""
    assert code in ACCEPTABLE, f"{api} {rpc} seed {seed}: {code} {details[:500]}"


def test_server_still_serves_after_the_junk(stubs: Stubs) -> None:
    for api in ("chat", "completion"):
        for rpc in ("create", "stream"):
            assert stubs.send(api, rpc, {"max_tokens": 3})


# --- Struct fields the template or JSON cannot carry -----------------------------------------------------------


@pytest.mark.parametrize("rpc", ["create", "stream"])
@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf], ids=str)
def test_non_finite_number_in_chat_template_kwargs(stubs: Stubs, rpc: str, number: float) -> None:
    request = parse(REQUESTS["chat", rpc], BASES["chat"])
    request.chat_template_kwargs.update({"enable_thinking": False, "hints": {"temperature_hint": number}})
    with pytest.raises(grpc.RpcError) as caught:
        stubs.call("chat", rpc, request)
    refused = failure(caught.value)
    assert (refused.code, refused.fields, refused.param) == (INVALID, ["chat_template_kwargs"], "chat_template_kwargs")
    assert refused.message.startswith("chat_template_kwargs: must be valid JSON")


@pytest.mark.parametrize("rpc", ["create", "stream"])
@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf], ids=str)
def test_non_finite_number_in_tool_parameters(stubs: Stubs, rpc: str, number: float) -> None:
    tools = [{"type": "function", "function": {"name": f"f{i}", "parameters": {"type": "object"}}} for i in range(3)]
    request = parse(REQUESTS["chat", rpc], {**BASES["chat"], "tools": tools})
    request.tools[1].function.parameters.update({"maximum": number})
    with pytest.raises(grpc.RpcError) as caught:
        stubs.call("chat", rpc, request)
    refused = failure(caught.value)
    assert (refused.code, refused.fields) == (INVALID, ["tools[1]"])
    assert refused.message.startswith("tools[1]: must be valid JSON")


def test_non_finite_number_is_reported_with_the_other_violations(stubs: Stubs) -> None:
    body = {**BASES["chat"], "messages": [{"role": "robot", "content": "hi"}], "temperature": 9}
    request = parse(REQUESTS["chat", "create"], body)
    request.chat_template_kwargs.update({"x": math.nan})
    with pytest.raises(grpc.RpcError) as caught:
        stubs.call("chat", "create", request)
    refused = failure(caught.value)
    assert (refused.code, refused.fields) == (INVALID, ["messages[0].role", "chat_template_kwargs", "temperature"])


def _too_deep() -> Message:
    request = parse(REQUESTS["chat", "create"], BASES["chat"])
    request.chat_template_kwargs.update(Junk(0).nested(60))  # 180 message levels: protobuf parses 100 at most
    return request


def test_struct_nested_beyond_the_parser_depth_limit_leaves_the_server_serving(stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError):
        stubs.call("chat", "create", _too_deep())
    assert stubs.send("chat", "create", {})


def test_struct_nested_beyond_the_parser_depth_limit_is_invalid_argument(stubs: Stubs) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        stubs.call("chat", "create", _too_deep())
    assert caught.value.code() == INVALID
    assert "nested deeper" in (caught.value.details() or "")
    assert "upb" not in (caught.value.details() or "")  # no decoder internals


# --- a refusal must not echo an unbounded client value -------------------------------------------------------

HUGE = "x" * 20_000  # gRPC clients refuse status metadata over 16 KiB: the service quotes at most MAX_QUOTED chars
ECHOED = [
    pytest.param("chat", {"messages": [{"role": HUGE, "content": "hi"}]}, INVALID, "messages[0].role", id="role"),
    pytest.param("chat", {"tool_choice": HUGE}, INVALID, "tool_choice", id="tool_choice"),
    pytest.param("chat", {"tools": [{"type": HUGE, "function": {"name": "f"}}]}, INVALID, "tools[0].type",
                 id="tool-type"),
    pytest.param("chat", {"messages": [{"role": "user", "content_parts": [{"type": HUGE}]}]}, INVALID,
                 "messages[0].content_parts[0].type", id="part-type"),
    pytest.param("completion", {"model": HUGE}, NOT_FOUND, None, id="model"),
]  # fmt: skip


@pytest.mark.parametrize(("api", "body", "code", "field"), ECHOED)
def test_huge_bad_value_is_refused_by_name(
    stubs: Stubs, api: str, body: dict[str, Any], code: grpc.StatusCode, field: str | None
) -> None:
    refused = stubs.refusal(api, "create", body)
    assert refused.code == code
    assert refused.fields == ([field] if field else [])
    assert refused.param == (field or "model")
    assert len(refused.message) < 1024
    assert quote(HUGE) in refused.message  # the value is quoted, shortened
    assert len(quote(HUGE)) <= MAX_QUOTED


def test_many_huge_bad_values_are_capped_at_max_violations(stubs: Stubs) -> None:
    messages = [{"role": HUGE, "content": "hi"} for _ in range(MAX_VIOLATIONS + 5)]
    refused = stubs.refusal("chat", "create", {"messages": messages, "temperature": 9})
    assert refused.code == INVALID
    assert refused.fields == [f"messages[{i}].role" for i in range(MAX_VIOLATIONS)]
    # The message names the first few; the details list MAX_VIOLATIONS; the rest are counted.
    assert refused.message.endswith(f"; and {len(messages) + 1 - MAX_VIOLATIONS_IN_MESSAGE} more")


@pytest.mark.parametrize("api", ["chat", "completion"])
def test_huge_valid_values_are_fine(stubs: Stubs, api: str) -> None:
    [response] = stubs.send(api, "create", {"stop": HUGE, "user": HUGE, "metadata": {"k": HUGE}})
    assert response.choices
