"""ConversationService end to end over gRPC on the real tiny-chat: items, responses in a conversation, tenants.

The session server (in-memory store) for the API, a server of its own for the tenants (two API keys, a store
file) and for a restart.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import conversation_pb2, conversation_pb2_grpc, response_pb2, response_pb2_grpc
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.models import ModelSpec
from ovserve.service.responses.conversations import MAX_CONVERSATION_ITEMS, MAX_ITEMS_PER_CALL
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import failure, parse

TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
GREEDY = {"model": "tiny-chat", "temperature": 0, "max_output_tokens": 8}
ALICE, BOB = "key-of-alice", "key-of-bob"
USER = {"type": "message", "role": "user", "content": "Hello there."}


@pytest.fixture
def conversations(channel: grpc.Channel) -> conversation_pb2_grpc.ConversationServiceStub:
    return conversation_pb2_grpc.ConversationServiceStub(channel)


@pytest.fixture
def responses(channel: grpc.Channel) -> response_pb2_grpc.ResponseServiceStub:
    return response_pb2_grpc.ResponseServiceStub(channel)


def new_conversation(
    stub: conversation_pb2_grpc.ConversationServiceStub, **body: object
) -> conversation_pb2.Conversation:
    return stub.CreateConversation(parse(conversation_pb2.CreateConversationRequest, body)).conversation


def respond(stub: response_pb2_grpc.ResponseServiceStub, **body: object) -> objects_pb2.Response:
    return stub.CreateResponse(parse(response_pb2.CreateResponseRequest, {**GREEDY, **body})).response


def all_items(stub: conversation_pb2_grpc.ConversationServiceStub, conversation_id: str) -> list[objects_pb2.InputItem]:
    request = conversation_pb2.ListConversationItemsRequest(conversation_id=conversation_id, order="asc", limit=100)
    return list(stub.ListConversationItems(request).data)


def test_create_get_update_delete(conversations) -> None:
    created = new_conversation(conversations, items=[USER], metadata={"topic": "greeting"})
    assert created.id.startswith("conv_") and created.object == "conversation" and created.created_at > 0
    assert dict(created.metadata) == {"topic": "greeting"}
    got = conversations.GetConversation(conversation_pb2.GetConversationRequest(conversation_id=created.id))
    assert got.conversation == created
    updated = conversations.UpdateConversation(
        conversation_pb2.UpdateConversationRequest(conversation_id=created.id, metadata={"topic": "other"})
    ).conversation
    assert dict(updated.metadata) == {"topic": "other"} and updated.id == created.id
    deleted = conversations.DeleteConversation(conversation_pb2.DeleteConversationRequest(conversation_id=created.id))
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "conversation.deleted", True)
    for call, request in [
        (conversations.GetConversation, conversation_pb2.GetConversationRequest(conversation_id=created.id)),
        (conversations.DeleteConversation, conversation_pb2.DeleteConversationRequest(conversation_id=created.id)),
        (
            conversations.ListConversationItems,
            conversation_pb2.ListConversationItemsRequest(conversation_id=created.id),
        ),
    ]:
        with pytest.raises(grpc.RpcError) as raised:
            call(request)
        result = failure(raised.value)
        assert (result.code, result.param) == (grpc.StatusCode.NOT_FOUND, "conversation_id"), result


def test_items_are_added_listed_paged_got_and_deleted(conversations) -> None:
    created = new_conversation(conversations, items=[USER])
    first = all_items(conversations, created.id)
    assert [(i.type, i.role, i.content) for i in first] == [("message", "user", "Hello there.")]
    assert first[0].id.startswith("msg_")
    more = [
        {"type": "function_call", "call_id": "call_1", "name": "get_time", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "noon"},
        {"role": "assistant", "content_parts": [{"type": "output_text", "text": "It is noon."}]},
        {**USER, "id": first[0].id},  # an id the conversation holds: the item gets a new one
    ]
    added = conversations.CreateConversationItems(
        parse(conversation_pb2.CreateConversationItemsRequest, {"conversation_id": created.id, "items": more})
    )
    assert [i.type for i in added.data] == ["function_call", "function_call_output", "message", "message"]
    assert added.data[0].id.startswith("fc_") and added.data[1].id.startswith("fco_")
    assert added.data[3].id != first[0].id and added.data[3].id.startswith("msg_")
    assert (added.first_id, added.last_id, added.has_more) == (added.data[0].id, added.data[-1].id, False)
    ids = [first[0].id, *(i.id for i in added.data)]
    assert [i.id for i in all_items(conversations, created.id)] == ids

    page = conversations.ListConversationItems(
        conversation_pb2.ListConversationItemsRequest(conversation_id=created.id, limit=2)
    )  # newest first by default
    assert [i.id for i in page.data] == ids[::-1][:2] and page.has_more
    rest = conversations.ListConversationItems(
        conversation_pb2.ListConversationItemsRequest(conversation_id=created.id, limit=10, after=page.last_id)
    )
    assert [i.id for i in rest.data] == ids[::-1][2:] and not rest.has_more

    one = conversations.GetConversationItem(
        conversation_pb2.GetConversationItemRequest(conversation_id=created.id, item_id=ids[1])
    ).item
    assert (one.name, one.call_id) == ("get_time", "call_1")
    after_delete = conversations.DeleteConversationItem(
        conversation_pb2.DeleteConversationItemRequest(conversation_id=created.id, item_id=ids[1])
    ).conversation
    assert after_delete.id == created.id
    assert [i.id for i in all_items(conversations, created.id)] == [ids[0], *ids[2:]]
    for call, request in [
        (conversations.GetConversationItem, conversation_pb2.GetConversationItemRequest),
        (conversations.DeleteConversationItem, conversation_pb2.DeleteConversationItemRequest),
    ]:
        with pytest.raises(grpc.RpcError) as raised:
            call(request(conversation_id=created.id, item_id=ids[1]))
        result = failure(raised.value)
        assert (result.code, result.param) == (grpc.StatusCode.NOT_FOUND, "item_id"), result


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"items": [{"type": "message", "role": "robot", "content": "hi"}]}, "items[0].role"),
        ({"items": [USER, {"type": "function_call", "name": "f"}]}, "items[1].call_id"),
        ({"items": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}]}, "items[0].arguments"),
        ({"items": [{"type": "web_search_call"}]}, "items[0].type"),
        ({"items": [{"type": "message", "role": "user"}]}, "items[0].content"),
        ({"items": [USER] * (MAX_ITEMS_PER_CALL + 1)}, "items"),
        ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
        ({"metadata": {"k": "v" * 513}}, "metadata.k"),
    ],
)
def test_bad_creates_name_the_field(conversations, body, field) -> None:
    with pytest.raises(grpc.RpcError) as raised:
        new_conversation(conversations, **body)
    result = failure(raised.value)
    assert result.code == grpc.StatusCode.INVALID_ARGUMENT and field in result.fields, result


def test_bad_adds_and_pages_name_the_field(conversations) -> None:
    created = new_conversation(conversations)
    listing, adding = conversation_pb2.ListConversationItemsRequest, conversation_pb2.CreateConversationItemsRequest
    cases = [
        (conversations.CreateConversationItems, adding(conversation_id=created.id), "items"),
        (conversations.ListConversationItems, listing(conversation_id=created.id, limit=101), "limit"),
        (conversations.ListConversationItems, listing(conversation_id=created.id, order="up"), "order"),
        (conversations.ListConversationItems, listing(conversation_id=created.id, after="msg_x"), "after"),
    ]  # fmt: skip
    for call, request, field in cases:
        with pytest.raises(grpc.RpcError) as raised:
            call(request)
        result = failure(raised.value)
        assert result.code == grpc.StatusCode.INVALID_ARGUMENT and result.param == field, result


def test_a_conversation_is_the_context_and_collects_each_turn(conversations, responses) -> None:
    created = new_conversation(conversations, items=[{"type": "message", "role": "system", "content": "Be brief."}])
    first = respond(responses, conversation=created.id, input="Tell me a story.")
    assert first.conversation.id == created.id and first.output[0].message.content[0].output_text.text
    second = respond(responses, conversation=created.id, input="And then?")
    assert second.conversation.id == created.id
    # The second prompt holds the first turn: its input and output tokens at least.
    assert second.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens
    items = all_items(conversations, created.id)
    assert [(i.type, i.role) for i in items] == [
        ("message", "system"), ("message", "user"), ("message", "assistant"), ("message", "user"),
        ("message", "assistant"),
    ]  # fmt: skip
    assert items[2].id == first.output[0].message.id and items[4].id == second.output[0].message.id
    assert items[2].content_parts[0].text == first.output[0].message.content[0].output_text.text
    assert items[3].content == "And then?"
    # The same prompt without the conversation is shorter by the conversation's items.
    alone = respond(responses, input="And then?")
    assert alone.usage.input_tokens < second.usage.input_tokens and not alone.HasField("conversation")


def test_streamed_and_background_responses_join_the_conversation(conversations, responses) -> None:
    created = new_conversation(conversations)
    request = parse(response_pb2.StreamResponseRequest, {**GREEDY, "conversation": created.id, "input": "Hi!"})
    events = [m.event for m in responses.StreamResponse(request)]
    assert events[-1].WhichOneof("event") in ("completed", "incomplete")
    completed = getattr(events[-1], events[-1].WhichOneof("event")).response
    assert completed.conversation.id == created.id
    queued = respond(responses, conversation=created.id, input="More.", background=True)
    while queued.status in (objects_pb2.RESPONSE_STATUS_QUEUED, objects_pb2.RESPONSE_STATUS_IN_PROGRESS):
        queued = responses.GetResponse(response_pb2.GetResponseRequest(response_id=queued.id)).response
    items = all_items(conversations, created.id)
    assert [i.role for i in items] == ["user", "assistant", "user", "assistant"]
    assert items[1].id == completed.output[0].message.id and items[3].id == queued.output[0].message.id


def test_conversation_errors_on_responses(conversations, responses) -> None:
    created = new_conversation(conversations)
    earlier = respond(responses, input="Hi!")
    cases = [
        ({"conversation": created.id, "previous_response_id": earlier.id, "input": "x"},
         grpc.StatusCode.INVALID_ARGUMENT),
        ({"conversation": "conv_nope", "input": "x"}, grpc.StatusCode.NOT_FOUND),
    ]  # fmt: skip
    for body, code in cases:
        with pytest.raises(grpc.RpcError) as raised:
            respond(responses, **body)
        result = failure(raised.value)
        assert result.code == code and result.param == "conversation", result
    assert all_items(conversations, created.id) == []  # a refused response adds nothing


def test_a_full_conversation_is_refused_with_a_clear_error(server: ServerThread, conversations, responses) -> None:
    created = new_conversation(conversations)
    store = server.server.conversations._store
    filler = [objects_pb2.InputItem(type="message", id=f"msg_{i}", role="user", content="x") for i in range(20)]
    for _ in range(MAX_CONVERSATION_ITEMS // 20):
        server.run(store.append(created.id, filler, ""))
    with pytest.raises(grpc.RpcError) as raised:
        conversations.CreateConversationItems(
            parse(conversation_pb2.CreateConversationItemsRequest, {"conversation_id": created.id, "items": [USER]})
        )
    result = failure(raised.value)
    assert result.code == grpc.StatusCode.INVALID_ARGUMENT and result.param == "items"
    assert f"at most {MAX_CONVERSATION_ITEMS}" in result.message
    with pytest.raises(grpc.RpcError) as raised:
        respond(responses, conversation=created.id, input="x")
    assert failure(raised.value).param == "conversation"


def as_key(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


@pytest.fixture(scope="module")
def tenants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    store = tmp_path_factory.mktemp("conversations") / "store.db"
    server = start_server(TINY, api_keys=(ALICE, BOB), response_store=store)
    yield server
    server.stop()


def test_another_key_finds_no_conversation(tenants: ServerThread) -> None:
    with grpc.insecure_channel(tenants.target) as channel:
        stub = conversation_pb2_grpc.ConversationServiceStub(channel)
        responses = response_pb2_grpc.ResponseServiceStub(channel)
        created = stub.CreateConversation(
            parse(conversation_pb2.CreateConversationRequest, {"items": [USER]}), metadata=as_key(ALICE)
        ).conversation
        item_id = (
            stub.ListConversationItems(
                conversation_pb2.ListConversationItemsRequest(conversation_id=created.id), metadata=as_key(ALICE)
            )
            .data[0]
            .id
        )
        cid = {"conversation_id": created.id}
        attempts = {
            "get": lambda key: stub.GetConversation(conversation_pb2.GetConversationRequest(**cid), metadata=key),
            "update": lambda key: stub.UpdateConversation(
                conversation_pb2.UpdateConversationRequest(**cid, metadata={"a": "b"}), metadata=key
            ),
            "list": lambda key: stub.ListConversationItems(
                conversation_pb2.ListConversationItemsRequest(**cid), metadata=key
            ),
            "add": lambda key: stub.CreateConversationItems(
                parse(conversation_pb2.CreateConversationItemsRequest, {**cid, "items": [USER]}), metadata=key
            ),
            "get_item": lambda key: stub.GetConversationItem(
                conversation_pb2.GetConversationItemRequest(**cid, item_id=item_id), metadata=key
            ),
            "respond": lambda key: responses.CreateResponse(
                parse(response_pb2.CreateResponseRequest, {**GREEDY, "conversation": created.id, "input": "hi"}),
                metadata=key,
            ),
            "delete_item": lambda key: stub.DeleteConversationItem(
                conversation_pb2.DeleteConversationItemRequest(**cid, item_id=item_id), metadata=key
            ),
            "delete": lambda key: stub.DeleteConversation(
                conversation_pb2.DeleteConversationRequest(**cid), metadata=key
            ),
        }
        for name, attempt in attempts.items():
            with pytest.raises(grpc.RpcError) as refused:
                attempt(as_key(BOB))
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND, name
        for attempt in attempts.values():  # all still there for its owner (deletes last)
            attempt(as_key(ALICE))


def test_a_conversation_survives_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    first_server = start_server(TINY, response_store=store)
    try:
        with grpc.insecure_channel(first_server.target) as channel:
            stub = conversation_pb2_grpc.ConversationServiceStub(channel)
            created = new_conversation(stub, metadata={"kept": "yes"})
            first = respond(response_pb2_grpc.ResponseServiceStub(channel), conversation=created.id, input="Hello!")
            before = all_items(stub, created.id)
    finally:
        first_server.stop()
    second_server = start_server(TINY, response_store=store)
    try:
        with grpc.insecure_channel(second_server.target) as channel:
            stub = conversation_pb2_grpc.ConversationServiceStub(channel)
            got = stub.GetConversation(conversation_pb2.GetConversationRequest(conversation_id=created.id))
            assert got.conversation == created
            assert all_items(stub, created.id) == before and len(before) == 2
            again = respond(response_pb2_grpc.ResponseServiceStub(channel), conversation=created.id, input="Hi?")
            assert again.usage.input_tokens >= first.usage.input_tokens + first.usage.output_tokens
            assert len(all_items(stub, created.id)) == 4
    finally:
        second_server.stop()
