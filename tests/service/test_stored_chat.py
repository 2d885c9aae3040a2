"""Stored chat completions: the SQL store (owners, filters, expiry, a schema-2 file upgraded) and ChatService's RPCs."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.store.chat_completions import ChatCompletionStore
from ovserve.service.store.database import SCHEMA_VERSION
from ovserve.service.store.responses import ResponseStore
from tests.conftest import ServerThread
from tests.rpc import failure, parse


def run(coroutine):
    return asyncio.run(coroutine)


def completion(completion_id: str, created: int = 100, **metadata: str) -> chat_pb2.CreateChatCompletionResponse:
    made = chat_pb2.CreateChatCompletionResponse(id=completion_id, object="chat.completion", created=created,
                                                 model="tiny-chat", metadata=metadata)  # fmt: skip
    made.choices.add(index=0).message.content = f"reply of {completion_id}"
    return made


def messages(*texts: str) -> list[chat_pb2.ChatMessage]:
    return [chat_pb2.ChatMessage(role="user", content=text) for text in texts]


def page(chats: ChatCompletionStore, owner: str = "", **options) -> list[str]:
    arguments = {"model": None, "metadata": {}, "after": None, "limit": 20, "order": "asc", **options}
    return [c.id for c in run(chats.page(owner, **arguments)).completions]


def test_owners_filters_and_odd_metadata_keys(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "s.db")
    chats = ChatCompletionStore(store)
    try:
        odd = {'a.b[0]"$': "x"}  # JSON-path characters in a key are plain characters
        run(chats.put(completion("c1", **odd), messages("hi"), "alice"))
        run(chats.put(completion("c2", team="red"), messages("a", "b"), "alice"))
        run(chats.put(completion("c3", team="red"), messages("x"), "bob"))
        assert page(chats, "alice") == ["c1", "c2"] and page(chats, "bob") == ["c3"]
        assert page(chats, "alice", metadata=odd) == ["c1"]
        assert page(chats, "alice", metadata={"team": "red"}) == ["c2"]
        assert page(chats, "alice", metadata={"a": "x"}) == []
        assert page(chats, "alice", order="desc", after="c2") == ["c1"]
        with pytest.raises(KeyError):
            page(chats, "alice", after="c3")  # bob's: not a place in alice's list
        assert run(chats.get("c3", "alice")) is None and run(chats.messages("c3", "alice", after=None, limit=5,
                                                                               order="asc")) is None  # fmt: skip
        assert not run(chats.delete("c3", "alice")) and run(chats.get("c3", "bob")) is not None
        assert run(chats.set_metadata("c2", {"team": "blue"}, "alice")).metadata == {"team": "blue"}
        assert page(chats, "alice", metadata={"team": "red"}) == []
    finally:
        store.close()


def test_expiry_takes_old_chat_completions_too(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "s.db", max_age_seconds=50)
    chats = ChatCompletionStore(store)
    try:
        run(chats.put(completion("old", created=100), messages("hi"), ""))
        run(chats.put(completion("new", created=190), messages("hi"), ""))
        run(store.expire(now=200))
        assert page(chats) == ["new"]
        with sqlite3.connect(tmp_path / "s.db") as conn:
            assert conn.execute("SELECT DISTINCT completion_id FROM chat_completion_messages").fetchall() == [("new",)]
    finally:
        store.close()


def test_a_schema_2_file_gets_the_chat_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    ResponseStore(path).close()
    with sqlite3.connect(path) as conn:  # as ovserve before stored chat completions wrote it
        conn.execute("DROP TABLE chat_completions")
        conn.execute("DROP TABLE chat_completion_messages")
        conn.execute("PRAGMA user_version = 2")
    store = ResponseStore(path)
    try:
        run(ChatCompletionStore(store).put(completion("c1"), messages("hi"), ""))
        assert page(ChatCompletionStore(store)) == ["c1"]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6


def test_grpc_store_get_list_update_delete(server: ServerThread) -> None:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4,
            "temperature": 0, "store": True, "metadata": {"via": "grpc"}}  # fmt: skip
    with grpc.insecure_channel(server.target) as channel:
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        created = chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, body))
        chunks = list(chat.StreamChatCompletion(parse(chat_pb2.StreamChatCompletionRequest, {**body, "stream": True})))
        assert not any(c.HasField("usage") for c in chunks)  # not asked for: kept from the client
        streamed = chat.GetChatCompletion(chat_pb2.GetChatCompletionRequest(completion_id=chunks[0].id)).completion
        assert streamed.choices[0].message.content == created.choices[0].message.content  # greedy: same reply
        assert streamed.usage.prompt_tokens == created.usage.prompt_tokens and streamed.metadata == {"via": "grpc"}
        listed = chat.ListChatCompletions(chat_pb2.ListChatCompletionsRequest(metadata={"via": "grpc"}))
        assert [c.id for c in listed.data] == [created.id, streamed.id] and listed.first_id == created.id
        request = chat_pb2.ListChatCompletionMessagesRequest(completion_id=created.id)
        assert [m.message.content for m in chat.ListChatCompletionMessages(request).data] == ["hi"]
        update = chat_pb2.UpdateChatCompletionRequest(completion_id=created.id, metadata={"k" * 65: "v"})
        with pytest.raises(grpc.RpcError) as raised:
            chat.UpdateChatCompletion(update)
        assert failure(raised.value).code == grpc.StatusCode.INVALID_ARGUMENT
        for completion_id in (created.id, streamed.id):
            chat.DeleteChatCompletion(chat_pb2.DeleteChatCompletionRequest(completion_id=completion_id))
        with pytest.raises(grpc.RpcError) as raised:
            chat.GetChatCompletion(chat_pb2.GetChatCompletionRequest(completion_id=created.id))
        assert failure(raised.value).code == grpc.StatusCode.NOT_FOUND
