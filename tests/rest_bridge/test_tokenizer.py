"""POST /v3/tokenize and /v3/detokenize through the bridge, and TokenizerService over gRPC, on tiny-chat."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import openai
import pytest

from ovserve.clients.v1 import tokenizer_pb2, tokenizer_pb2_grpc
from ovserve.service.api import tokenizer as tokenizer_api
from tests.conftest import ServerThread
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import failure

MESSAGES = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Tell me a story."}]


def _post(bridge: RunningBridge, path: str, body: dict[str, Any]) -> Any:
    reply = http_request(bridge.port, "POST", f"/v3/{path}", body)
    return reply.status, reply.json()


def test_messages_count_what_a_chat_completion_counts(bridge: RunningBridge, client: openai.OpenAI) -> None:
    status, body = _post(bridge, "tokenize", {"model": "tiny-chat", "messages": MESSAGES})
    assert status == 200 and set(body) == {"tokens", "count", "max_model_len"}
    completion = client.chat.completions.create(model="tiny-chat", messages=MESSAGES, max_tokens=1)  # type: ignore[arg-type]
    assert completion.usage is not None and body["count"] == completion.usage.prompt_tokens == len(body["tokens"])
    models = client.models.retrieve("tiny-chat")
    assert body["max_model_len"] == models.model_extra["max_model_len"]
    _, without = _post(bridge, "tokenize", {"model": "tiny-chat", "messages": MESSAGES, "add_generation_prompt": False})
    assert without["count"] < body["count"] and body["tokens"][: without["count"]] == without["tokens"]


def test_a_prompt_round_trips_through_detokenize(bridge: RunningBridge) -> None:
    prompt = "Once upon a time, a small robot"
    _, plain = _post(bridge, "tokenize", {"model": "tiny-chat", "prompt": prompt, "add_special_tokens": False,
                                          "return_token_strs": True})  # fmt: skip
    assert "".join(plain["token_strs"]).replace("\u2581", " ").strip() != ""
    assert len(plain["token_strs"]) == plain["count"]
    status, text = _post(bridge, "detokenize", {"model": "tiny-chat", "tokens": plain["tokens"]})
    assert status == 200 and text == {"prompt": prompt}
    _, special = _post(bridge, "tokenize", {"model": "tiny-chat", "prompt": prompt})  # default: special tokens on
    assert special["count"] >= plain["count"]


@pytest.mark.parametrize(
    ("path", "body", "status", "param"),
    [
        ("tokenize", {"model": "tiny-chat"}, 400, "prompt"),
        ("tokenize", {"model": "tiny-chat", "prompt": "a", "messages": MESSAGES}, 400, "prompt"),
        ("tokenize", {"model": "tiny-chat", "messages": [{"role": "robot", "content": "x"}]}, 400, "messages[0].role"),
        ("tokenize", {"model": "tiny-chat", "prompt": "a", "colour": 1}, 400, "colour"),
        ("tokenize", {"model": "tiny-chat", "prompt": 5}, 400, "prompt"),
        ("tokenize", {"model": "nope", "prompt": "a"}, 404, "model"),
        ("detokenize", {"model": "tiny-chat", "tokens": [1, -1]}, 400, "tokens[1]"),
        ("detokenize", {"model": "tiny-chat", "tokens": [1, 10**7]}, 400, "tokens[1]"),
        ("detokenize", {"model": "tiny-chat", "tokens": "hi"}, 400, "tokens"),
    ],
)
def test_bad_input_is_refused_naming_the_field(bridge: RunningBridge, path, body, status, param) -> None:
    got, reply = _post(bridge, path, body)
    assert got == status and reply["error"]["param"] == param, reply


def test_grpc_tokenize_and_detokenize(server: ServerThread) -> None:
    with grpc.insecure_channel(server.target) as channel:
        stub = tokenizer_pb2_grpc.TokenizerServiceStub(channel)
        reply = stub.Tokenize(tokenizer_pb2.TokenizeRequest(model="tiny-chat", prompt="hello there"))
        assert reply.count == len(reply.tokens) > 0 and not reply.token_strs
        text = stub.Detokenize(tokenizer_pb2.DetokenizeRequest(model="tiny-chat", tokens=reply.tokens))
        assert text.prompt.endswith("hello there")
        with pytest.raises(grpc.RpcError) as raised:
            stub.Detokenize(tokenizer_pb2.DetokenizeRequest(model="tiny-chat", tokens=[2**30]))
        status = failure(raised.value)
        assert status.code == grpc.StatusCode.INVALID_ARGUMENT and status.fields == ["tokens[0]"]


def test_big_inputs_are_tokenised_and_decoded_off_the_event_loop(server: ServerThread, monkeypatch) -> None:
    threaded: list[str] = []
    to_thread = asyncio.to_thread

    async def recording(function, *args, **kwargs):
        threaded.append(getattr(function, "__name__", repr(function)))
        return await to_thread(function, *args, **kwargs)

    monkeypatch.setattr(tokenizer_api.asyncio, "to_thread", recording)
    registry = server.server.registry
    small = server.run(tokenizer_api.tokenize(registry, tokenizer_pb2.TokenizeRequest(model="tiny-chat", prompt="hi")))
    assert threaded == []
    prompt = "the little robot walked home. " * 2000  # 60,000 characters, over INLINE_PROMPT_CHARS
    big = server.run(tokenizer_api.tokenize(registry, tokenizer_pb2.TokenizeRequest(model="tiny-chat", prompt=prompt)))
    assert threaded == ["work"] and big.count > small.count
    assert big.tokens == registry.get("tiny-chat").engine.encode(prompt, add_special_tokens=True)
    request = tokenizer_pb2.DetokenizeRequest(model="tiny-chat", tokens=big.tokens)
    decoded = server.run(tokenizer_api.detokenize(registry, request))
    assert len(threaded) == 2 and decoded.prompt.endswith(prompt)


def test_limits_are_refused_before_any_work(server: ServerThread) -> None:
    registry = server.server.registry
    huge = tokenizer_pb2.TokenizeRequest(model="tiny-chat", prompt="x" * (tokenizer_api.MAX_TOKENIZE_CHARS + 1))
    with pytest.raises(Exception, match="at most"):
        server.run(tokenizer_api.tokenize(registry, huge))
    many = tokenizer_pb2.DetokenizeRequest(model="tiny-chat", tokens=[1] * (tokenizer_api.MAX_DETOKENIZE_TOKENS + 1))
    with pytest.raises(Exception, match="at most"):
        server.run(tokenizer_api.detokenize(registry, many))
