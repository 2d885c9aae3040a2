"""--inference-threads reaches OpenVINO: on a tiny model, whose steps are too short to split, an engine told to
use one inference thread spends clearly less CPU per generated token than one left to OpenVINO's default (one
thread per core), for the same requests (measured side by side in one run: a ratio, not a time)."""

from __future__ import annotations

import dataclasses
import os

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.observability.metrics import process_cpu_seconds
from tests.conftest import TEST_SETTINGS, TINY_CHAT, start_server
from tests.rpc import parse

REQUESTS, TOKENS = 24, 64


def engine_cpu_per_token(threads: int | None) -> float:
    """The engine process's CPU seconds per generated token over REQUESTS chats, one at a time."""
    settings = dataclasses.replace(TEST_SETTINGS, inference_threads=threads)
    server = start_server([ModelSpec("tiny-chat", TINY_CHAT, settings=settings)])
    try:
        [model] = list(server.server.registry)
        body = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Tell me a story."}],
                "max_tokens": TOKENS, "ignore_eos": True}  # fmt: skip
        request = parse(chat_pb2.CreateChatCompletionRequest, body)
        with grpc.insecure_channel(server.target) as channel:
            stub = chat_pb2_grpc.ChatServiceStub(channel)
            stub.CreateChatCompletion(request)  # warm
            assert model.engine.pid is not None
            before = process_cpu_seconds(model.engine.pid)
            for _ in range(REQUESTS):
                assert stub.CreateChatCompletion(request).usage.completion_tokens == TOKENS
            after = process_cpu_seconds(model.engine.pid)
        assert before is not None and after is not None
        return (after - before) / (REQUESTS * TOKENS)
    finally:
        server.stop()


@pytest.mark.alone
def test_one_inference_thread_spends_less_cpu_per_token_than_the_default() -> None:
    assert (os.cpu_count() or 1) >= 2  # on one core OpenVINO's default is one thread already
    one, default = engine_cpu_per_token(1), engine_cpu_per_token(None)
    print(f"\nengine CPU per token: 1 thread {one * 1e6:.0f} us, default {default * 1e6:.0f} us")
    assert one < 0.85 * default
