"""ResponseService end to end over gRPC on the real tiny-chat: semantics, events, state."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, response_pb2, response_pb2_grpc
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, start_server
from tests.rpc import failure, parse

TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
GREEDY = {"model": "tiny-chat", "temperature": 0}
STATUS = objects_pb2.ResponseStatus


@pytest.fixture
def responses(channel: grpc.Channel) -> response_pb2_grpc.ResponseServiceStub:
    """ResponseService stub on the session server."""
    return response_pb2_grpc.ResponseServiceStub(channel)


def create(stub: response_pb2_grpc.ResponseServiceStub, **body: object) -> objects_pb2.Response:
    return stub.CreateResponse(parse(response_pb2.CreateResponseRequest, {**GREEDY, **body})).response


def stream(stub: response_pb2_grpc.ResponseServiceStub, **body: object) -> list:
    return [m.event for m in stub.StreamResponse(parse(response_pb2.StreamResponseRequest, {**GREEDY, **body}))]


def text_of(response: objects_pb2.Response) -> str:
    return "".join(p.output_text.text for item in response.output for p in item.message.content)


def chat_reply(
    chat: chat_pb2_grpc.ChatServiceStub, messages: list[dict], **body: object
) -> chat_pb2.CreateChatCompletionResponse:
    return chat.CreateChatCompletion(
        parse(chat_pb2.CreateChatCompletionRequest, {**GREEDY, "messages": messages, **body})
    )


def check_event_stack(events: list) -> objects_pb2.Response:
    """Check OpenAI's order (created, in_progress, each added has its done, terminal last); return the result."""
    kinds = [e.WhichOneof("event") for e in events]
    assert kinds[:2] == ["created", "in_progress"]
    assert kinds[-1] in ("completed", "incomplete", "failed")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    open_items, open_parts = [], []
    for event, kind in zip(events, kinds, strict=True):
        body = getattr(event, kind)
        if kind == "output_item_added":
            open_items.append(body.item.message.id)
        elif kind == "output_item_done":
            assert open_items.pop() == body.item.message.id
        elif kind == "content_part_added":
            open_parts.append((body.item_id, body.content_index))
        elif kind == "content_part_done":
            assert open_parts.pop() == (body.item_id, body.content_index)
        elif kind in ("output_text_delta", "output_text_done"):
            assert open_items and body.item_id == open_items[-1]
    assert not open_items and not open_parts
    final = getattr(events[-1], kinds[-1]).response
    deltas = "".join(e.output_text_delta.delta for e, k in zip(events, kinds, strict=True) if k == "output_text_delta")
    assert deltas == text_of(final)
    (done,) = [e.output_text_done.text for e, k in zip(events, kinds, strict=True) if k == "output_text_done"]
    assert done == deltas
    return final


def test_response_equals_chat_for_the_same_conversation(responses, chat) -> None:
    response = create(
        responses, input="Who are you?", instructions="You are a helpful assistant.", max_output_tokens=60
    )
    reply = chat_reply(chat, [{"role": "system", "content": "You are a helpful assistant."},
                              {"role": "user", "content": "Who are you?"}], max_tokens=60)  # fmt: skip
    assert text_of(response) == reply.choices[0].message.content
    assert response.usage.input_tokens == reply.usage.prompt_tokens
    assert response.usage.output_tokens == reply.usage.completion_tokens
    assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == STATUS.RESPONSE_STATUS_COMPLETED and response.completed_at >= response.created_at
    assert response.instructions == "You are a helpful assistant." and response.store


def test_streamed_events_in_order_and_joined_text_equals_unary(responses) -> None:
    events = stream(responses, input="Tell me a short story.", max_output_tokens=80)
    final = check_event_stack(events)
    assert text_of(final) == text_of(create(responses, input="Tell me a short story.", max_output_tokens=80))


def test_three_turns_chained_by_previous_response_id(responses, chat) -> None:
    first = create(responses, input="Hello!", instructions="Be brief.")
    second = create(responses, input="Who are you?", previous_response_id=first.id)
    third = create(responses, input="Tell me a short story.", previous_response_id=second.id, max_output_tokens=40)
    history = [
        {"role": "user", "content": "Hello!"}, {"role": "assistant", "content": text_of(first)},
        {"role": "user", "content": "Who are you?"}, {"role": "assistant", "content": text_of(second)},
        {"role": "user", "content": "Tell me a short story."},
    ]  # fmt: skip
    # Instructions are not carried over by previous_response_id (as in OpenAI).
    reply = chat_reply(chat, history, max_tokens=40)
    assert third.usage.input_tokens == reply.usage.prompt_tokens
    assert text_of(third) == reply.choices[0].message.content
    assert third.previous_response_id == second.id


def test_function_call_items_replay_like_chat_tool_calls(responses, chat) -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    items = [
        {"type": "message", "role": "user", "content": "What's the weather like in Paris?"},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": '{"temperature": 18}'},
    ]
    response = create(responses, input_items=items, tools=[tool], max_output_tokens=30)
    reply = chat_reply(chat, [
        {"role": "user", "content": "What's the weather like in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temperature": 18}'},
    ], tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}],
        max_tokens=30)  # fmt: skip
    assert response.usage.input_tokens == reply.usage.prompt_tokens
    assert text_of(response) == reply.choices[0].message.content


def test_max_output_tokens_makes_it_incomplete(responses) -> None:
    events = stream(responses, input="Tell me a short story.", max_output_tokens=3)
    final = check_event_stack(events)
    assert events[-1].WhichOneof("event") == "incomplete"
    assert final.status == STATUS.RESPONSE_STATUS_INCOMPLETE
    assert final.incomplete_details.reason == objects_pb2.INCOMPLETE_REASON_MAX_OUTPUT_TOKENS
    assert final.usage.output_tokens == 3 and final.output[0].message.status == objects_pb2.ITEM_STATUS_INCOMPLETE


def test_echoed_fields_and_metadata(responses) -> None:
    response = create(responses, input="Hi!", metadata={"team": "search"}, top_p=0.5, user="u-1", truncation="auto",
                      parallel_tool_calls=False, reasoning={"effort": "low"})  # fmt: skip
    assert dict(response.metadata) == {"team": "search"}
    assert (response.top_p, response.user, response.truncation) == (0.5, "u-1", "auto")
    defaults = create(responses, input="Hi!", max_output_tokens=2)  # the values in force are echoed
    assert (defaults.temperature, defaults.top_p, defaults.truncation) == (0, 1.0, "disabled")
    assert not defaults.HasField("completed_at")  # incomplete: only completed responses have completed_at
    assert response.parallel_tool_calls is False and response.reasoning.effort == "low"
    assert response.background is False and response.temperature == 0


def test_get_delete_and_input_items(responses) -> None:
    items = [{"type": "message", "role": "user", "content": f"Repeat: word{i}"} for i in range(5)]
    response = create(responses, input_items=items, max_output_tokens=4)
    got = responses.GetResponse(response_pb2.GetResponseRequest(response_id=response.id)).response
    assert got == response
    page = responses.ListResponseInputItems(
        response_pb2.ListResponseInputItemsRequest(response_id=response.id, limit=2, order="asc")
    )
    assert [i.content for i in page.data] == ["Repeat: word0", "Repeat: word1"] and page.has_more
    rest = responses.ListResponseInputItems(response_pb2.ListResponseInputItemsRequest(
        response_id=response.id, after=page.last_id, order="asc", limit=10))  # fmt: skip
    assert [i.content for i in rest.data] == [f"Repeat: word{i}" for i in (2, 3, 4)] and not rest.has_more
    newest = responses.ListResponseInputItems(
        response_pb2.ListResponseInputItemsRequest(response_id=response.id, limit=1)
    )
    assert newest.data[0].content == "Repeat: word4" and all(i.id.startswith("msg_") for i in page.data)
    deleted = responses.DeleteResponse(response_pb2.DeleteResponseRequest(response_id=response.id))
    assert (deleted.id, deleted.object, deleted.deleted) == (response.id, "response.deleted", True)
    gone = response_pb2.GetResponseRequest(response_id=response.id)
    calls = [
        lambda: responses.GetResponse(gone),
        lambda: responses.DeleteResponse(response_pb2.DeleteResponseRequest(response_id=response.id)),
    ]
    for call in calls:
        with pytest.raises(grpc.RpcError) as raised:
            call()
        assert failure(raised.value).code == grpc.StatusCode.NOT_FOUND


def test_unstored_responses_are_not_kept(responses) -> None:
    response = create(responses, input="Hi!", store=False)
    assert response.store is False and text_of(response)
    with pytest.raises(grpc.RpcError) as raised:
        create(responses, input="Again", previous_response_id=response.id)
    assert (failure(raised.value).code, failure(raised.value).param) == (
        grpc.StatusCode.NOT_FOUND,
        "previous_response_id",
    )


def _wait_until_done(stub, response_id: str, timeout: float = 30) -> objects_pb2.Response:
    deadline = time.monotonic() + timeout
    while True:
        response = stub.GetResponse(response_pb2.GetResponseRequest(response_id=response_id)).response
        if response.status not in (STATUS.RESPONSE_STATUS_QUEUED, STATUS.RESPONSE_STATUS_IN_PROGRESS):
            return response
        assert time.monotonic() < deadline, response
        time.sleep(0.02)


def test_background_response_runs_on_and_can_be_resumed(responses) -> None:
    queued = create(responses, input="Tell me a short story.", background=True, max_output_tokens=300)
    assert queued.status == STATUS.RESPONSE_STATUS_QUEUED and queued.background
    done = _wait_until_done(responses, queued.id)
    assert done.status == STATUS.RESPONSE_STATUS_COMPLETED
    assert text_of(done) == text_of(create(responses, input="Tell me a short story.", max_output_tokens=300))
    replay = [
        m.event for m in responses.ResumeResponseStream(response_pb2.ResumeResponseStreamRequest(response_id=queued.id))
    ]
    kinds = [e.WhichOneof("event") for e in replay]
    assert kinds[:3] == ["created", "queued", "in_progress"] and kinds[-1] == "completed"
    assert replay[0].created.response.status == STATUS.RESPONSE_STATUS_QUEUED
    assert [e.sequence_number for e in replay] == list(range(len(replay)))
    later = [m.event for m in responses.ResumeResponseStream(
        response_pb2.ResumeResponseStreamRequest(response_id=queued.id, starting_after=4))]  # fmt: skip
    assert later == replay[5:]


def test_background_response_is_cancelled(responses) -> None:
    queued = create(responses, input="Tell me a story.", background=True, max_output_tokens=1800, ignore_eos=True)
    cancelled = responses.CancelResponse(response_pb2.CancelResponseRequest(response_id=queued.id)).response
    assert cancelled.status == STATUS.RESPONSE_STATUS_CANCELLED
    assert _wait_until_done(responses, queued.id).status == STATUS.RESPONSE_STATUS_CANCELLED
    with pytest.raises(grpc.RpcError) as raised:  # only background responses can be cancelled
        responses.CancelResponse(response_pb2.CancelResponseRequest(response_id=create(responses, input="Hi").id))
    assert failure(raised.value).code == grpc.StatusCode.INVALID_ARGUMENT


def test_truncation_auto_drops_old_turns_and_disabled_refuses(responses) -> None:
    long_turn = "Repeat: " + " ".join(["Paris Rome London"] * 120)
    turn = [
        {"type": "message", "role": "user", "content": long_turn},
        {"type": "message", "role": "assistant", "content": "Paris Rome London"},
    ]
    items = turn * 4 + [{"type": "message", "role": "user", "content": "Hello!"}]
    with pytest.raises(grpc.RpcError) as raised:
        create(responses, input_items=items, max_output_tokens=16)
    assert failure(raised.value).code == grpc.StatusCode.INVALID_ARGUMENT
    assert failure(raised.value).param in ("input", "max_output_tokens")
    fitted = create(responses, input_items=items, max_output_tokens=16, truncation="auto")
    assert fitted.usage.input_tokens + 16 <= 2048 and fitted.status == STATUS.RESPONSE_STATUS_COMPLETED


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"input": ""}, "input"),
        ({"input_items": [{"type": "bogus"}]}, "input_items[0].type"),
        ({"input_items": [{"type": "message", "role": "robot", "content": "x"}]}, "input_items[0].role"),
        ({"input_items": [{"type": "message", "role": "user", "content_parts": [
            {"type": "input_image", "image_url": "data:image/png;base64,AA"}]}]},
         "input_items[0].content_parts[0].image_url"),
        ({"input_items": [{"type": "function_call_output", "output": "x"}]}, "input_items[0].call_id"),
        ({"input_items": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}]},
         "input_items[0].arguments"),
        ({"input": "hi", "reasoning": {"effort": "extreme"}}, "reasoning.effort"),
        ({"input": "hi", "truncation": "sometimes"}, "truncation"),
        ({"input": "hi", "text": {"format": {"type": "yaml"}}}, "text.format.type"),
        ({"input": "hi", "include": ["everything"]}, "include[0]"),
        ({"input": "hi", "n": 2}, "n"),
        ({"input": "hi", "background": True, "store": False}, "background"),
        ({"input": "hi", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "hi", "temperature": 5}, "temperature"),
        ({"input": "hi", "stream": True}, "stream"),
        ({"input": "hi", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "hi", "previous_response_id": "resp_missing"}, "previous_response_id"),
        ({"input": "hi", "model": "gpt-9"}, "model"),
    ],
)  # fmt: skip
def test_bad_requests_name_the_field(responses, body, field) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        create(responses, **body)
    result = failure(raised.value)
    assert result.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)
    assert field in (result.fields or [result.param]), result


def test_restart_keeps_stored_responses_and_chains_them(tmp_path: Path) -> None:
    store = tmp_path / "responses.sqlite"
    first_server = start_server(TINY, response_store=store)
    try:
        with grpc.insecure_channel(first_server.target) as channel:
            first = create(response_pb2_grpc.ResponseServiceStub(channel), input="Hello!")
    finally:
        first_server.stop()
    second_server = start_server(TINY, response_store=store)
    try:
        with grpc.insecure_channel(second_server.target) as channel:
            stub = response_pb2_grpc.ResponseServiceStub(channel)
            again = stub.GetResponse(response_pb2.GetResponseRequest(response_id=first.id)).response
            assert again == first
            chained = create(stub, input="Who are you?", previous_response_id=first.id)
            assert chained.usage.input_tokens > first.usage.input_tokens + first.usage.output_tokens
    finally:
        second_server.stop()


def test_engine_failure_mid_stream_ends_with_response_failed() -> None:
    running = start_server(TINY)
    try:
        engine = running.server.registry.get("tiny-chat").engine
        with grpc.insecure_channel(running.target) as channel:
            stub = response_pb2_grpc.ResponseServiceStub(channel)
            events = stub.StreamResponse(parse(response_pb2.StreamResponseRequest, {
                **GREEDY, "input": "Tell me a story.", "max_output_tokens": 1900, "ignore_eos": True}))  # fmt: skip
            first = [next(events).event for _ in range(4)]
            assert engine.pid is not None
            os.kill(engine.pid, signal.SIGKILL)  # the engine dies mid-generation
            rest = [m.event for m in events]
            # A response asked for after the engine died: while it is being replaced the request
            # cannot even be submitted, and the caller is told to retry (UNAVAILABLE, nothing stored).
            after: list = []
            try:
                after = [m.event for m in stub.StreamResponse(parse(response_pb2.StreamResponseRequest, {
                    **GREEDY, "input": "Hello again."}))]  # fmt: skip
            except grpc.RpcError as refused:
                assert refused.code() == grpc.StatusCode.UNAVAILABLE
                assert "restarting" in (refused.details() or "")
        kinds = [e.WhichOneof("event") for e in first + rest]
        assert kinds[-1] == "failed" and kinds.count("failed") == 1
        failed = rest[-1].failed.response
        assert failed.status == STATUS.RESPONSE_STATUS_FAILED and failed.error.code == "server_error"
        # (A request that lands after the engine is back runs normally.)
        assert not after or after[-1].WhichOneof("event") == "completed"
    finally:
        running.stop()


def test_the_sampling_in_force_is_echoed_when_not_sent(responses) -> None:
    """tiny-chat's generation_config.json decodes greedily: a response that sends no temperature says 0, not 1."""
    body = {"model": "tiny-chat", "input": "Hi!", "max_output_tokens": 2}
    greedy = responses.CreateResponse(parse(response_pb2.CreateResponseRequest, body)).response
    assert (greedy.temperature, greedy.top_p) == (0.0, 1.0)
    sampled_body = {**body, "top_k": 5, "seed": 1, "temperature": 0.7}
    sampled = responses.CreateResponse(parse(response_pb2.CreateResponseRequest, sampled_body)).response
    assert sampled.temperature == pytest.approx(0.7) and sampled.top_p == 1.0


def test_count_input_tokens_and_compact_over_grpc(responses: response_pb2_grpc.ResponseServiceStub) -> None:
    body = {"model": "tiny-chat", "input": "Hello!", "instructions": "Be brief."}
    counted = responses.CountResponseInputTokens(
        response_pb2.CountResponseInputTokensRequest(request=parse(response_pb2.CreateResponseRequest, body))
    )
    assert counted.object == "response.input_tokens"
    assert counted.input_tokens == create(responses, **body, max_output_tokens=2, store=False).usage.input_tokens
    compacted = responses.CompactResponse(
        parse(response_pb2.CompactResponseRequest, {"model": "tiny-chat", "input": "We launch on Tuesday."})
    )
    assert compacted.object == "response.compaction" and compacted.usage.output_tokens > 0
    assert [(item.type, item.content) for item in compacted.output][:1] == [("message", "We launch on Tuesday.")]
    assert compacted.output[-1].type == "compaction" and compacted.output[-1].id.startswith("cmp_")
    with pytest.raises(grpc.RpcError) as raised:
        responses.CompactResponse(response_pb2.CompactResponseRequest(model="tiny-chat"))
    missing = failure(raised.value)
    assert missing.code == grpc.StatusCode.INVALID_ARGUMENT and missing.fields == ["input"]
