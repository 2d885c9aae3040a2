"""Assistant prefill's rule (service/api/prefill.py) without a server, and the issue 49 fields over gRPC on tiny-chat:
continue_final_message, min_tokens and stop_token_ids as a gRPC client sends them (the REST face: tests/rest_bridge/
test_assistant_prefill.py and test_min_tokens_stop_ids.py)."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from tokenizers import Tokenizer

from ovserve.clients.v1 import chat_pb2, tokenizer_pb2, tokenizer_pb2_grpc
from ovserve.service.api.prefill import Prefill, cut_after_final_message, prefill_of
from ovserve.service.errors import FieldViolation, InvalidArgument
from tests.conftest import TINY_CHAT
from tests.rpc import failure, parse

HELLO = {"role": "user", "content": "Hello"}


def rule(body: dict[str, Any], history: list[dict[str, Any]]) -> tuple[Prefill, list[FieldViolation]]:
    violations: list[FieldViolation] = []
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "m", "messages": [HELLO], **body})
    return prefill_of(request, history, violations), violations


def test_the_rule() -> None:
    said = [HELLO, {"role": "assistant", "content": "Sure, "}]
    assert rule({}, said) == (Prefill(), [])  # a final assistant message is history unless asked
    assert rule({"add_generation_prompt": False}, [HELLO]) == (Prefill(generation_prompt=False), [])
    assert rule({"continue_final_message": True}, said) == (Prefill(generation_prompt=False, text="Sure,"), [])
    empty = [HELLO, {"role": "assistant", "content": ""}]  # continued as a new turn begins
    assert rule({"continue_final_message": True}, empty) == (Prefill(drop_final=True), [])
    _, refused = rule({"continue_final_message": True, "add_generation_prompt": True}, said)
    assert [v.field for v in refused] == ["add_generation_prompt"]
    _, refused = rule({"continue_final_message": True}, [HELLO])
    assert [v.field for v in refused] == ["continue_final_message"] and "it is user" in refused[0].description
    called = [HELLO, {"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}]
    assert [v.field for v in rule({"continue_final_message": True}, called)[1]] == ["continue_final_message"]


def test_the_cut() -> None:
    rendered = "<s>user\nHi</s>\n<s>assistant\nSure, I can</s>\n"
    assert cut_after_final_message(rendered, Prefill(False, "Sure, I can"), "messages") == rendered[:-5]
    trimmed = "[INST]Hi[/INST]Sure[EOT]"  # a template that trims content (Llama 3's): the stripped text is found
    assert cut_after_final_message(trimmed, Prefill(False, "  Sure"), "messages") == "[INST]Hi[/INST]Sure"
    with pytest.raises(InvalidArgument) as raised:
        cut_after_final_message("<s>assistant\nrewritten</s>", Prefill(False, "Sure"), "messages")
    assert raised.value.violations[0].field == "messages"


def test_over_grpc(chat: Any, tokenizer_stub: Any) -> None:
    prefilled = [HELLO, {"role": "assistant", "content": "Hello! How"}]
    request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "tiny-chat", "messages": prefilled,
                    "temperature": 0, "max_tokens": 30, "continue_final_message": True})  # fmt: skip
    reply = chat.CreateChatCompletion(request)
    assert reply.choices[0].message.content.startswith("Hello! How")
    body = {"model": "tiny-chat", "messages": prefilled, "continue_final_message": True}
    counted = tokenizer_stub.Tokenize(parse(tokenizer_pb2.TokenizeRequest, body))
    assert counted.count == reply.usage.prompt_tokens
    how = Tokenizer.from_file(str(TINY_CHAT / "tokenizer.json")).token_to_id("How")
    stopped = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {
        "model": "tiny-chat", "messages": [HELLO], "temperature": 0, "max_tokens": 30, "stop_token_ids": [how],
    }))  # fmt: skip
    assert stopped.choices[0].message.content.endswith("How")
    with pytest.raises(grpc.RpcError) as raised:
        chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {
            "model": "tiny-chat", "messages": [HELLO], "max_tokens": 5, "min_tokens": 6,
        }))  # fmt: skip
    refused = failure(raised.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["min_tokens"]


@pytest.fixture
def tokenizer_stub(channel: grpc.Channel) -> Any:
    return tokenizer_pb2_grpc.TokenizerServiceStub(channel)
