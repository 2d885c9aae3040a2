"""The Responses API over a scripted engine: failures end in ``response.failed``, split tool calls, usage, cancel.

Through ovserve's own gRPC server (tests/fakes.py) or ``ResponsesApi`` itself,
with a FakeEngine in place of the OpenVINO pipeline; test_responses_grpc.py
runs the same API end to end on the real one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.clients.v1 import response_pb2, response_pb2_grpc
from ovserve.service.engine import EngineError, EngineOverloaded, EngineUnavailable
from ovserve.service.models import ModelRegistry
from ovserve.service.responses import running
from ovserve.service.responses.api import ResponsesApi
from ovserve.service.responses.events import Event
from ovserve.service.store.responses import ResponseStore
from tests.fakes import HOLD, FakeEngine, Script, fake_model, scripted_server, splits, text
from tests.rpc import parse

TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


def served(engine: FakeEngine, body: Callable[[response_pb2_grpc.ResponseServiceStub], Awaitable[None]]) -> None:
    """Run ``body`` with a ResponseService stub of a scripted server over ``engine``."""

    async def main() -> None:
        async with scripted_server(fake_model(engine)) as channel:
            await body(response_pb2_grpc.ResponseServiceStub(channel))

    asyncio.run(main())


def stream_request(**fields: Any) -> response_pb2.StreamResponseRequest:
    """A streamed Responses request to the fake model."""
    return parse(response_pb2.StreamResponseRequest, {"model": "fake", "input": "Hi", **fields})


def kinds(events: list[Event]) -> list[str]:
    """Each event's type, as the oneof names it (``output_text_delta``, ...)."""
    return [str(event.WhichOneof("event")) for event in events]


def assert_numbered(events: list[Event]) -> None:
    """Sequence numbers count 0, 1, 2, ... in the order the events came."""
    assert [event.sequence_number for event in events] == list(range(len(events)))


@pytest.mark.parametrize("error", [EngineError("the pipeline failed"), EngineOverloaded("no room")])
def test_a_stream_that_fails_midway_ends_with_response_failed(error: EngineError) -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", "lo", finish=None), error])
    events: list[Event] = []

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        async for message in responses.StreamResponse(stream_request()):  # ends with status OK
            events.append(message.event)
        stored = await responses.GetResponse(response_pb2.GetResponseRequest(response_id=events[0].created.response.id))
        assert stored.response.status == objects_pb2.RESPONSE_STATUS_FAILED

    served(engine, body)
    assert kinds(events) == ["created", "in_progress", "output_item_added", "content_part_added",
                             "output_text_delta", "output_text_delta", "failed"]  # fmt: skip
    assert_numbered(events)
    assert [event.output_text_delta.delta for event in events[4:6]] == ["Hel", "lo"]
    failed = events[-1].failed.response
    assert failed.status == objects_pb2.RESPONSE_STATUS_FAILED
    assert (failed.error.code, failed.error.message) == ("server_error", str(error))
    assert failed.output[0].message.status == objects_pb2.ITEM_STATUS_INCOMPLETE
    assert failed.output[0].message.content[0].output_text.text == "Hello"
    assert engine.in_flight == 0


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (EngineOverloaded("no room"), grpc.StatusCode.RESOURCE_EXHAUSTED),
        (EngineUnavailable("stopped"), grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_an_engine_that_refuses_a_retriable_request_gets_a_retriable_status(
    error: EngineError, code: grpc.StatusCode
) -> None:
    """Nothing ran and nothing went out: the caller is told to retry (429 / 503), no failed response is stored."""
    engine = FakeEngine()
    engine.script(Script(refuse=error), Script(refuse=error))
    events: list[Event] = []
    codes: list[grpc.StatusCode] = []

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        try:
            async for message in responses.StreamResponse(stream_request()):
                events.append(message.event)
        except grpc.aio.AioRpcError as refused:
            codes.append(refused.code())
        try:
            await responses.CreateResponse(response_pb2.CreateResponseRequest(model="fake", input="Hi"))
        except grpc.aio.AioRpcError as refused:
            codes.append(refused.code())

    served(engine, body)
    assert codes == [code, code]
    assert events == []
    assert not engine.generations


async def _stream(engine: FakeEngine, **fields: Any) -> list[Event]:
    api = ResponsesApi(ModelRegistry([fake_model(engine)]), ResponseStore())
    try:
        return [event async for event in api.stream(stream_request(**fields))]
    finally:
        await api.close()


def test_a_tool_call_streams_the_same_however_the_engine_splits_its_text() -> None:
    for pieces in splits(CALL, seed=5):
        engine = FakeEngine()
        engine.script(text(*pieces))
        events = asyncio.run(_stream(engine, tools=[TOOL]))
        assert kinds(events)[:3] == ["created", "in_progress", "output_item_added"], pieces
        assert set(kinds(events)[3:-3]) == {"function_call_arguments_delta"}, pieces
        assert kinds(events)[-3:] == ["function_call_arguments_done", "output_item_done", "completed"], pieces
        assert_numbered(events)
        added = events[2].output_item_added.item.function_call
        assert added.name == "get_weather" and added.call_id, pieces
        streamed = "".join(event.function_call_arguments_delta.delta for event in events[3:-3])
        assert json.loads(streamed) == {"city": "Paris"}, pieces
        assert events[-3].function_call_arguments_done.arguments == streamed, pieces
        (item,) = events[-1].completed.response.output
        assert item.function_call.arguments == streamed and item.function_call.call_id == added.call_id, pieces


def test_usage_counts_the_prompt_sent_and_the_tokens_generated() -> None:
    engine = FakeEngine()
    engine.script(text("Hello", " there"))
    events = asyncio.run(_stream(engine, instructions="Be brief."))
    usage = events[-1].completed.response.usage
    (generation,) = engine.generations
    assert usage.input_tokens == len(generation.prompt_ids) > 0
    assert "Be brief." in engine.decode(generation.prompt_ids)
    assert usage.output_tokens == len("Hello there")
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens


def test_a_stream_the_client_leaves_cancels_its_engine_request() -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", finish=None), HOLD])

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        call = responses.StreamResponse(stream_request())
        for _ in range(5):  # created, in_progress, output_item.added, content_part.added, the delta
            await call.read()
        call.cancel()
        await asyncio.wait_for(engine.generations[0].closed.wait(), timeout=30)

    served(engine, body)
    assert engine.generations[0].cancelled and engine.in_flight == 0


def test_cancelling_a_background_response_stops_its_engine_request_and_its_events() -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", finish=None), HOLD])
    resumed: list[Event] = []

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        request = response_pb2.CreateResponseRequest(model="fake", input="Hi", background=True)
        queued = (await responses.CreateResponse(request)).response
        assert queued.status == objects_pb2.RESPONSE_STATUS_QUEUED
        follow = responses.ResumeResponseStream(response_pb2.ResumeResponseStreamRequest(response_id=queued.id))
        for _ in range(5):  # created, queued, in_progress, output_item.added, content_part.added
            resumed.append((await follow.read()).event)
        resumed.append((await follow.read()).event)  # the "Hel" delta: the engine is now holding
        cancelled = await responses.CancelResponse(response_pb2.CancelResponseRequest(response_id=queued.id))
        assert cancelled.response.status == objects_pb2.RESPONSE_STATUS_CANCELLED
        assert await follow.read() == grpc.aio.EOF  # the run's log ends with it
        stored = await responses.GetResponse(response_pb2.GetResponseRequest(response_id=queued.id))
        assert stored.response.status == objects_pb2.RESPONSE_STATUS_CANCELLED
        assert stored.response.output[0].message.content[0].output_text.text == "Hel"

    served(engine, body)
    assert kinds(resumed) == ["created", "queued", "in_progress", "output_item_added", "content_part_added",
                              "output_text_delta"]  # fmt: skip
    assert_numbered(resumed)
    assert engine.generations[0].cancelled and engine.in_flight == 0


def test_a_background_response_that_fails_resumes_to_response_failed() -> None:
    engine = FakeEngine()
    engine.script([*text("Hel", finish=None), EngineError("the pipeline failed")])
    events: list[Event] = []

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        request = response_pb2.CreateResponseRequest(model="fake", input="Hi", background=True)
        queued = (await responses.CreateResponse(request)).response
        resume = response_pb2.ResumeResponseStreamRequest(response_id=queued.id, starting_after=1)
        async for message in responses.ResumeResponseStream(resume):
            events.append(message.event)

    served(engine, body)
    assert kinds(events) == ["in_progress", "output_item_added", "content_part_added", "output_text_delta", "failed"]
    assert [event.sequence_number for event in events] == list(range(2, 2 + len(events)))
    assert events[-1].failed.response.error.message == "the pipeline failed"


def test_a_bug_in_the_server_ends_the_stream_with_a_generic_failure(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Not an engine failure: the caller gets response.failed without our internals, the log gets the traceback."""

    class BrokenParser:
        def feed(self, text: str) -> list[Any]:
            raise ValueError("a bug: internal detail")

        def finish(self) -> list[Any]:
            return []

    monkeypatch.setattr(running, "output_parser", lambda *args, **kwargs: BrokenParser())
    engine = FakeEngine()
    engine.script(text("Hel", "lo"))
    events: list[Event] = []

    async def body(responses: response_pb2_grpc.ResponseServiceStub) -> None:
        async for message in responses.StreamResponse(stream_request()):
            events.append(message.event)

    served(engine, body)
    failed = events[-1].failed.response
    assert (failed.error.code, failed.error.message) == ("server_error", "internal error")
    assert any(record.exc_info and "internal detail" in str(record.exc_info[1]) for record in caplog.records)
    assert engine.in_flight == 0
