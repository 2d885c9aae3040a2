"""The Conversations API through the official openai client, on the real tiny-chat pipeline.

Every HTTP body the client receives is validated against OpenAI's OpenAPI schema for its route (an httpx
response hook), errors included. The session bridge (in-memory store) for the API and for responses in a
conversation; servers of their own for two API keys and for a restart with a store file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import ModelSpec
from tests.conformance import SpecCheck
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge, spec_client

KEYS = ("key-of-alice", "key-of-bob")
TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
GREEDY: dict[str, Any] = {"model": "tiny-chat", "temperature": 0, "max_output_tokens": 12}
SYSTEM = {"type": "message", "role": "system", "content": "Be brief."}

# OpenAI's schema of each route's 200 body, by method and path (after /v3).
SCHEMAS = [
    ("POST", r"/conversations", "ConversationResource"),
    ("GET", r"/conversations/[^/]+", "ConversationResource"),
    ("POST", r"/conversations/[^/]+", "ConversationResource"),
    ("DELETE", r"/conversations/[^/]+", "DeletedConversationResource"),
    ("GET", r"/conversations/[^/]+/items", "ConversationItemList"),
    ("POST", r"/conversations/[^/]+/items", "ConversationItemList"),
    ("GET", r"/conversations/[^/]+/items/[^/]+", "ConversationItem"),
    ("DELETE", r"/conversations/[^/]+/items/[^/]+", "ConversationResource"),
    ("POST", r"/responses", "Response"),
]


@pytest.fixture
def client(spec_checked_client: openai.OpenAI) -> openai.OpenAI:
    return spec_checked_client


def texts(items: Any) -> list[tuple[str, str, str]]:
    """(type, role, text) of each message item."""
    return [(i.type, i.role, "".join(getattr(c, "text", "") for c in i.content)) for i in items]


def test_crud_and_items(client: openai.OpenAI) -> None:
    created = client.conversations.create(items=[SYSTEM], metadata={"topic": "demo"})
    assert created.id.startswith("conv_") and created.object == "conversation" and created.metadata == {"topic": "demo"}
    got = client.conversations.retrieve(created.id)
    assert (got.id, got.created_at, got.metadata) == (created.id, created.created_at, {"topic": "demo"})
    updated = client.conversations.update(created.id, metadata={"topic": "other"})
    assert updated.metadata == {"topic": "other"} and client.conversations.retrieve(created.id).metadata == {
        "topic": "other"
    }

    added = client.conversations.items.create(
        created.id,
        items=[
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What time is it?"}]},
            {"type": "function_call", "call_id": "call_1", "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "noon"},
            {"role": "assistant", "content": "It is noon."},
        ],
    )
    assert [i.type for i in added.data] == ["message", "function_call", "function_call_output", "message"]
    assert added.first_id == added.data[0].id and added.last_id == added.data[-1].id and not added.has_more

    listed = client.conversations.items.list(created.id, order="asc")
    assert [i.id for i in listed.data] == [listed.data[0].id, *(i.id for i in added.data)]
    assert texts([listed.data[0]]) == [("message", "system", "Be brief.")]
    newest = client.conversations.items.list(created.id, limit=2)
    assert [i.id for i in newest.data] == [added.data[3].id, added.data[2].id] and newest.has_more
    older = client.conversations.items.list(created.id, limit=2, after=newest.data[-1].id)
    assert [i.id for i in older.data] == [added.data[1].id, added.data[0].id] and older.has_more

    call = client.conversations.items.retrieve(added.data[1].id, conversation_id=created.id)
    assert (call.type, call.name, call.call_id) == ("function_call", "get_time", "call_1")  # type: ignore[union-attr]
    left = client.conversations.items.delete(added.data[1].id, conversation_id=created.id)
    assert left.id == created.id and left.object == "conversation"
    assert added.data[1].id not in [i.id for i in client.conversations.items.list(created.id).data]
    with pytest.raises(openai.NotFoundError) as missing:
        client.conversations.items.retrieve(added.data[1].id, conversation_id=created.id)
    assert missing.value.body["param"] == "item_id"  # type: ignore[index]

    deleted = client.conversations.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "conversation.deleted", True)
    for attempt in (
        lambda: client.conversations.retrieve(created.id),
        lambda: client.conversations.delete(created.id),
        lambda: client.conversations.update(created.id, metadata={}),
        lambda: client.conversations.items.list(created.id),
        lambda: client.conversations.items.create(created.id, items=[SYSTEM]),  # type: ignore[list-item]
    ):
        with pytest.raises(openai.NotFoundError) as missing:
            attempt()
        assert missing.value.body["param"] == "conversation_id"  # type: ignore[index]


def test_three_turns_build_the_context_in_order(client: openai.OpenAI) -> None:
    conversation = client.conversations.create(items=[SYSTEM])
    first = client.responses.create(conversation=conversation.id, input="Tell me a story.", **GREEDY)
    assert first.conversation is not None and first.conversation.id == conversation.id
    second = client.responses.create(conversation={"id": conversation.id}, input="And then?", **GREEDY)
    assert second.conversation is not None and second.conversation.id == conversation.id
    assert first.usage is not None and second.usage is not None
    # The second prompt holds the first turn: at least its input and its output.
    assert second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens

    items = client.conversations.items.list(conversation.id, order="asc").data
    assert texts(items) == [
        ("message", "system", "Be brief."),
        ("message", "user", "Tell me a story."),
        ("message", "assistant", first.output_text),
        ("message", "user", "And then?"),
        ("message", "assistant", second.output_text),
    ]
    assert [items[2].id, items[4].id] == [first.output[0].id, second.output[0].id]

    # Exactly that context: the same items sent as input give the same prompt, token for token.
    replay = [
        SYSTEM,
        {"role": "user", "content": "Tell me a story."},
        {"role": "assistant", "content": first.output_text},
        {"role": "user", "content": "And then?"},
    ]
    explicit = client.responses.create(input=replay, **GREEDY)  # type: ignore[arg-type]
    assert explicit.usage is not None and explicit.usage.input_tokens == second.usage.input_tokens
    assert explicit.output_text == second.output_text and explicit.conversation is None

    streamed = client.responses.create(conversation=conversation.id, input="The end?", stream=True, **GREEDY)
    final = [event for event in streamed][-1]
    assert final.type in ("response.completed", "response.incomplete")
    assert final.response.conversation.id == conversation.id  # type: ignore[union-attr]
    assert len(client.conversations.items.list(conversation.id).data) == 7


def test_bad_requests_name_the_field(client: openai.OpenAI, bridge: RunningBridge) -> None:
    conversation = client.conversations.create()
    earlier = client.responses.create(input="Hi!", **GREEDY)
    cases: list[tuple[Any, type[openai.APIStatusError], str]] = [
        (lambda: client.conversations.create(items=[{"role": "robot", "content": "x"}]), openai.BadRequestError,
         "items[0].role"),
        (lambda: client.conversations.create(items=[{"type": "web_search_call"}]), openai.BadRequestError,
         "items[0].type"),
        (lambda: client.conversations.create(items=[SYSTEM] * 21), openai.BadRequestError, "items"),
        (lambda: client.conversations.create(metadata={"k": "v" * 513}), openai.BadRequestError, "metadata.k"),
        (lambda: client.conversations.create(extra_body={"name": "x"}), openai.BadRequestError, "name"),
        (lambda: client.conversations.items.create(conversation.id, items=[{"type": "function_call", "name": "f"}]),
         openai.BadRequestError, "items[0].call_id"),
        (lambda: client.conversations.items.create(conversation.id, items=[]), openai.BadRequestError, "items"),
        (lambda: client.conversations.items.list(conversation.id, limit=101), openai.BadRequestError, "limit"),
        (lambda: client.conversations.items.list(conversation.id, after="msg_nope"), openai.BadRequestError,
         "after"),
        (lambda: client.conversations.update(conversation.id, metadata={"k": "v"}, extra_body={"items": []}),
         openai.BadRequestError, "items"),
        (lambda: client.conversations.retrieve("conv_nope"), openai.NotFoundError, "conversation_id"),
        (lambda: client.responses.create(conversation="conv_nope", input="x", **GREEDY), openai.NotFoundError,
         "conversation"),
        (lambda: client.responses.create(conversation=conversation.id, previous_response_id=earlier.id, input="x",
                                         **GREEDY), openai.BadRequestError, "conversation"),
    ]  # fmt: skip
    for attempt, error, param in cases:
        with pytest.raises(error) as raised:
            attempt()
        assert raised.value.body["param"] == param, raised.value.body  # type: ignore[index]
    assert client.conversations.items.list(conversation.id).data == []  # refused turns added nothing
    # An update without metadata, with the raw HTTP the client would not send.
    reply = http_request(bridge.port, "POST", f"/v3/conversations/{conversation.id}", {})
    assert reply.status == 400 and reply.json()["error"]["param"] == "metadata"


@pytest.fixture(scope="module")
def keyed_bridge() -> Iterator[RunningBridge]:
    with served_with_bridge(TINY, api_keys=KEYS) as running:  # no store file: the in-memory store
        yield running


def test_another_keys_conversation_is_not_found(keyed_bridge: RunningBridge, spec: SpecCheck) -> None:
    with spec_client(keyed_bridge, spec, KEYS[0]) as alice, spec_client(keyed_bridge, spec, KEYS[1]) as bob:
        conversation = alice.conversations.create(items=[SYSTEM])
        item = alice.conversations.items.list(conversation.id).data[0]
        for attempt in (
            lambda: bob.conversations.retrieve(conversation.id),
            lambda: bob.conversations.update(conversation.id, metadata={"a": "b"}),
            lambda: bob.conversations.items.list(conversation.id),
            lambda: bob.conversations.items.retrieve(item.id, conversation_id=conversation.id),
            lambda: bob.conversations.items.delete(item.id, conversation_id=conversation.id),
            lambda: bob.responses.create(conversation=conversation.id, input="hi", **GREEDY),
            lambda: bob.conversations.delete(conversation.id),
        ):
            with pytest.raises(openai.NotFoundError):
                attempt()
        assert alice.conversations.items.list(conversation.id).data[0].id == item.id
        assert alice.conversations.delete(conversation.id).deleted
    assert spec.checked and not spec.problems, spec.problems


def serve(store: str) -> tuple[ServerThread, Bridge]:
    server = start_server(TINY, response_store=store)
    bridge = Bridge(server.target, "127.0.0.1", 0)
    server.run(bridge.start())
    return server, bridge


def test_a_conversation_survives_a_restart(tmp_path: Path, spec: SpecCheck) -> None:
    store = str(tmp_path / "store.sqlite")
    server, bridge = serve(store)
    try:
        with spec_client(RunningBridge(bridge, server), spec) as client:
            conversation = client.conversations.create(items=[SYSTEM], metadata={"kept": "yes"})
            first = client.responses.create(conversation=conversation.id, input="Tell me a story.", **GREEDY)
            before = client.conversations.items.list(conversation.id, order="asc").data
        server.run(bridge.stop())
    finally:
        server.stop()
    server, bridge = serve(store)
    try:
        with spec_client(RunningBridge(bridge, server), spec) as client:
            assert client.conversations.retrieve(conversation.id).metadata == {"kept": "yes"}
            after = client.conversations.items.list(conversation.id, order="asc").data
            assert [i.id for i in after] == [i.id for i in before] and len(after) == 3
            assert texts(after)[2] == ("message", "assistant", first.output_text)
            second = client.responses.create(conversation=conversation.id, input="And then?", **GREEDY)
            assert first.usage is not None and second.usage is not None
            assert second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens
            assert len(client.conversations.items.list(conversation.id).data) == 5
        server.run(bridge.stop())
    finally:
        server.stop()
    assert spec.checked and not spec.problems, spec.problems
