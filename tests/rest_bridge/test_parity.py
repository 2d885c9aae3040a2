"""Parity: greedy text over REST equals greedy text over gRPC equals openvino_genai directly."""

from __future__ import annotations

import json

import grpc
import openvino_genai as ov_genai
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc
from tests.conftest import TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import parse

CONVERSATIONS = [
    [{"role": "user", "content": "Tell me a short story."}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is a cat?"}],
]
PROMPTS = ["Once upon a time", "The little dog"]
MAX_TOKENS = 40


@pytest.fixture(scope="module")
def pipeline() -> ov_genai.LLMPipeline:
    """tiny-chat through openvino_genai alone."""
    return ov_genai.LLMPipeline(str(TINY_CHAT), "CPU")


def direct(pipeline: ov_genai.LLMPipeline, prompt: str) -> str:
    """Greedy text from openvino_genai for an already rendered prompt (as tests/service do it)."""
    config = pipeline.get_generation_config()
    config.max_new_tokens, config.do_sample, config.apply_chat_template = MAX_TOKENS, False, False
    result = pipeline.generate(prompt, config)
    return result if isinstance(result, str) else result.texts[0]  # a str prompt gives a str in 2026.4


def sse_text(body: bytes, key: str) -> str:
    """The streamed text of choice 0, joined from the SSE events."""
    events = [block.removeprefix("data: ") for block in body.decode().split("\n\n") if block]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    if key == "content":
        return "".join(c["delta"].get("content") or "" for chunk in chunks for c in chunk["choices"])
    return "".join(c["text"] for chunk in chunks for c in chunk["choices"])


@pytest.mark.parametrize("messages", CONVERSATIONS)
def test_chat_rest_equals_grpc_equals_openvino_genai(bridge: RunningBridge, channel: grpc.Channel, pipeline,
                                                     messages) -> None:  # fmt: skip
    rendered = pipeline.get_tokenizer().apply_chat_template(messages, add_generation_prompt=True)
    expected = direct(pipeline, rendered)
    body = {"model": "tiny-chat", "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS}
    rest = http_request(bridge.port, "POST", "/v3/chat/completions", body).json()["choices"][0]["message"]["content"]
    streamed = sse_text(http_request(bridge.port, "POST", "/v3/chat/completions", {**body, "stream": True}).body,
                        "content")  # fmt: skip
    over_grpc = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
        parse(chat_pb2.CreateChatCompletionRequest, body)
    )
    assert expected.strip(), "tiny-chat said nothing"
    assert rest == over_grpc.choices[0].message.content == expected
    assert streamed == rest


@pytest.mark.parametrize("prompt", PROMPTS)
def test_completions_rest_equals_grpc_equals_openvino_genai(bridge: RunningBridge, channel: grpc.Channel, pipeline,
                                                            prompt) -> None:  # fmt: skip
    expected = direct(pipeline, prompt)
    body = {"model": "tiny-chat", "prompt": prompt, "temperature": 0, "max_tokens": MAX_TOKENS}
    rest = http_request(bridge.port, "POST", "/v3/completions", body).json()["choices"][0]["text"]
    streamed = sse_text(http_request(bridge.port, "POST", "/v3/completions", {**body, "stream": True}).body, "text")
    over_grpc = completion_pb2_grpc.CompletionServiceStub(channel).CreateCompletion(
        parse(completion_pb2.CreateCompletionRequest, body)
    )
    assert expected.strip(), "tiny-chat said nothing"
    assert rest == over_grpc.choices[0].text == expected
    assert streamed == rest
