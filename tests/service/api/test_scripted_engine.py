"""Chat and completions over a scripted engine: engine failures, split tool calls, n choices, usage, early close.

These go through ovserve's own gRPC server and servicers (tests/fakes.py) or
its API functions, with a FakeEngine in place of the OpenVINO pipeline, for
what the real engine cannot be made to do on demand. The same features run end
to end on the real pipeline in test_chat.py, test_completions.py and test_tool_calls.py.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, completion_pb2, completion_pb2_grpc
from ovserve.service.api import chat
from ovserve.service.engine import EngineError, EngineOverloaded, EngineRejected, EngineUnavailable, FinishReason
from ovserve.service.models import ModelRegistry
from tests.fakes import HOLD, FakeEngine, Script, choices, fake_model, scripted_server, splits, text
from tests.rpc import parse

ENGINE_ERRORS = [
    (EngineRejected("settings the engine cannot run"), grpc.StatusCode.INVALID_ARGUMENT),
    (EngineOverloaded("no room in the KV cache"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (EngineUnavailable("the engine process stopped"), grpc.StatusCode.UNAVAILABLE),
    (EngineError("the pipeline failed"), grpc.StatusCode.INTERNAL),
]
WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2]}}\n</tool_call>'


def chat_body(**fields: Any) -> dict[str, Any]:
    """A chat request to the fake model."""
    return {"model": "fake", "messages": [{"role": "user", "content": "Hi"}], **fields}


def served(engine: FakeEngine, body: Callable[[grpc.aio.Channel], Awaitable[None]]) -> None:
    """Run ``body`` against a scripted server over ``engine``, on a fresh event loop."""

    async def main() -> None:
        async with scripted_server(fake_model(engine)) as channel:
            await body(channel)

    asyncio.run(main())


async def _chat_unary(channel: grpc.aio.Channel) -> None:
    await chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
        parse(chat_pb2.CreateChatCompletionRequest, chat_body())
    )


async def _chat_stream(channel: grpc.aio.Channel) -> None:
    call = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
        parse(chat_pb2.StreamChatCompletionRequest, chat_body())
    )
    async for _ in call:
        pass


async def _completion_unary(channel: grpc.aio.Channel) -> None:
    request = completion_pb2.CreateCompletionRequest(model="fake", prompt="Once")
    await completion_pb2_grpc.CompletionServiceStub(channel).CreateCompletion(request)


async def _completion_stream(channel: grpc.aio.Channel) -> None:
    request = completion_pb2.StreamCompletionRequest(model="fake", prompt="Once")
    async for _ in completion_pb2_grpc.CompletionServiceStub(channel).StreamCompletion(request):
        pass


CALLS = {"chat": _chat_unary, "chat-stream": _chat_stream, "completion": _completion_unary,
         "completion-stream": _completion_stream}  # fmt: skip


@pytest.mark.parametrize("rpc", CALLS)
@pytest.mark.parametrize(("error", "code"), ENGINE_ERRORS, ids=lambda value: type(value).__name__)
@pytest.mark.parametrize("when", ["at-submit", "mid-stream"])
def test_engine_errors_reach_the_client_as_their_status(rpc: str, error: EngineError, code, when: str) -> None:
    engine = FakeEngine()
    engine.script(Script(refuse=error) if when == "at-submit" else [*text("Hel", "lo", finish=None), error])

    async def body(channel: grpc.aio.Channel) -> None:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await CALLS[rpc](channel)
        assert failed.value.code() == code
        assert str(error) in (failed.value.details() or "")

    served(engine, body)
    assert engine.in_flight == 0
    assert len(engine.generations) == (0 if when == "at-submit" else 1)


@pytest.mark.parametrize(("error", "code"), ENGINE_ERRORS[1:], ids=lambda value: type(value).__name__)
def test_a_chat_stream_that_fails_midway_sends_its_chunks_then_the_status(error: EngineError, code) -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", "lo", finish=None), error])
    received: list[chat_pb2.StreamChatCompletionResponse] = []

    async def body(channel: grpc.aio.Channel) -> None:
        request = parse(chat_pb2.StreamChatCompletionRequest, chat_body())
        call = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(request)
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            async for chunk in call:
                received.append(chunk)
        assert failed.value.code() == code

    served(engine, body)
    assert received[0].choices[0].delta.role == common_pb2.ROLE_ASSISTANT
    assert [chunk.choices[0].delta.content for chunk in received[1:]] == ["Hel", "lo"]
    assert all(chunk.choices[0].finish_reason == common_pb2.FINISH_REASON_UNSPECIFIED for chunk in received)
    assert not engine.generations[0].cancelled  # the engine ended it; nothing was left to cancel


async def _stream_chat(engine: FakeEngine, **fields: Any) -> list[chat_pb2.StreamChatCompletionResponse]:
    registry = ModelRegistry([fake_model(engine)])
    request = parse(chat_pb2.StreamChatCompletionRequest, chat_body(**fields))
    return [chunk async for chunk in chat.stream_chat_completion(registry, request)]


def test_a_streamed_tool_call_is_the_same_however_the_engine_splits_its_text() -> None:
    for pieces in splits(CALL, seed=11):
        engine = FakeEngine()
        engine.script(text(*pieces))
        chunks = asyncio.run(_stream_chat(engine, tools=[WEATHER]))
        deltas = [choice.delta for chunk in chunks for choice in chunk.choices]
        calls = [call for delta in deltas for call in delta.tool_calls]
        names = [call.function.name for call in calls if call.function.name]
        arguments = "".join(call.function.arguments for call in calls)
        assert names == ["get_weather"], pieces
        assert {call.id for call in calls if call.id} and len({call.index for call in calls}) == 1, pieces
        assert json.loads(arguments) == {"city": "Paris", "days": [1, 2]}, pieces
        assert "".join(delta.content for delta in deltas) == "", pieces  # no markup leaks out as text
        assert chunks[-1].choices[0].finish_reason == common_pb2.FINISH_REASON_TOOL_CALLS, pieces


def test_unary_chat_parses_the_same_tool_call() -> None:
    engine = FakeEngine()
    engine.script(text(CALL[:17], CALL[17:]))
    registry = ModelRegistry([fake_model(engine)])
    request = parse(chat_pb2.CreateChatCompletionRequest, chat_body(tools=[WEATHER]))
    reply = asyncio.run(chat.create_chat_completion(registry, request))
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments) == {"city": "Paris", "days": [1, 2]}
    assert reply.choices[0].finish_reason == common_pb2.FINISH_REASON_TOOL_CALLS


def test_n_choices_stream_under_their_own_index_with_usage() -> None:
    engine = FakeEngine()
    engine.script(choices(["Hi", "Yo"], [" there", ""], ["!", " man"]))
    chunks = asyncio.run(_stream_chat(engine, n=2, temperature=0.8, stream_options={"include_usage": True}))
    texts: dict[int, str] = {0: "", 1: ""}
    finishes: dict[int, int] = {}
    for chunk in chunks[:-1]:
        for choice in chunk.choices:
            texts[choice.index] += choice.delta.content
            if choice.finish_reason:
                finishes[choice.index] = choice.finish_reason
    assert texts == {0: "Hi there!", 1: "Yo man"}
    assert finishes == {0: common_pb2.FINISH_REASON_STOP, 1: common_pb2.FINISH_REASON_STOP}
    (generation,) = engine.generations
    assert generation.params.num_return_sequences == 2
    usage = chunks[-1].usage
    assert not chunks[-1].choices
    assert usage.prompt_tokens == len(generation.prompt_ids) > 0
    assert usage.completion_tokens == len("Hi there!Yo man")
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


def test_n_choices_on_an_assisted_model_are_separate_requests_merged_by_index() -> None:
    engine = FakeEngine()
    engine.script(text("A", "B", "C"), text("x", "y"))
    registry = ModelRegistry([fake_model(engine, assisted=True)])
    request = parse(chat_pb2.CreateChatCompletionRequest, chat_body(n=2, seed=7, temperature=1.0))
    reply = asyncio.run(chat.create_chat_completion(registry, request))
    assert [(choice.index, choice.message.content) for choice in reply.choices] == [(0, "ABC"), (1, "xy")]
    assert [generation.params.seed for generation in engine.generations] == [7, 8]
    assert reply.usage.completion_tokens == 5
    assert reply.usage.prompt_tokens == len(engine.generations[0].prompt_ids)


def test_unary_usage_and_finish_reason_length() -> None:
    engine = FakeEngine()
    engine.script(text("Once", " upon", finish=FinishReason.LENGTH))
    registry = ModelRegistry([fake_model(engine)])
    request = parse(chat_pb2.CreateChatCompletionRequest, chat_body(max_tokens=9, logprobs=True))
    reply = asyncio.run(chat.create_chat_completion(registry, request))
    (choice,) = reply.choices
    assert choice.message.content == "Once upon"
    assert choice.finish_reason == common_pb2.FINISH_REASON_LENGTH
    assert [entry.token for entry in choice.logprobs.content] == list("Once upon")
    assert reply.usage.completion_tokens == 9
    assert reply.usage.prompt_tokens == len(engine.generations[0].prompt_ids)
    assert engine.generations[0].params.max_new_tokens == 9


@pytest.mark.parametrize("rpc", ["chat", "completion"])
def test_a_stream_the_client_leaves_cancels_its_engine_request(rpc: str) -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", "lo", finish=None), HOLD])

    async def body(channel: grpc.aio.Channel) -> None:
        if rpc == "chat":
            request = parse(chat_pb2.StreamChatCompletionRequest, chat_body())
            call = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(request)
            wanted = 3  # the role chunk, "Hel", "lo"
        else:
            request = completion_pb2.StreamCompletionRequest(model="fake", prompt="Once")
            call = completion_pb2_grpc.CompletionServiceStub(channel).StreamCompletion(request)
            wanted = 2
        for _ in range(wanted):
            await call.read()
        assert engine.in_flight == 1  # the engine is still at it
        call.cancel()
        await asyncio.wait_for(engine.generations[0].closed.wait(), timeout=30)

    served(engine, body)
    assert engine.generations[0].cancelled
    assert engine.in_flight == 0


def test_a_prompt_the_tokenizer_drops_whole_is_refused_naming_it() -> None:
    """A text that tokenizes to nothing would fail in the engine ("Prompt length cannot be 0"): a 400 naming it."""
    engine = FakeEngine()
    engine.encode = lambda text, *, add_special_tokens=True: [] if text == "\u200b" else list(map(ord, text))  # type: ignore[method-assign]

    async def body(channel: grpc.aio.Channel) -> None:
        stub = completion_pb2_grpc.CompletionServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.CreateCompletion(completion_pb2.CreateCompletionRequest(model="fake", prompt="\u200b"))
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "prompt: the text tokenizes to no tokens" in (refused.value.details() or "")
        engine.script(text("ok"))
        await stub.CreateCompletion(completion_pb2.CreateCompletionRequest(model="fake", prompt="fine"))

    served(engine, body)
    assert len(engine.generations) == 1  # only the second request reached the engine
