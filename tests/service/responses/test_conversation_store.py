"""The conversation tables: a schema-3 file upgraded, owners, unique item ids, the bound, expiry leaves them."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from ovserve.clients.v1 import conversation_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.store.conversations import MAX_PAGE_BYTES, ConversationFull, ConversationStore
from ovserve.service.store.database import SCHEMA_VERSION
from ovserve.service.store.responses import ResponseStore


def run(coroutine):
    return asyncio.run(coroutine)


def item(item_id: str, text: str = "hi") -> objects_pb2.InputItem:
    return objects_pb2.InputItem(type="message", id=item_id, role="user", content=text)


def conversation(conversation_id: str, created: int = 100) -> conversation_pb2.Conversation:
    return conversation_pb2.Conversation(id=conversation_id, object="conversation", created_at=created)


def test_a_schema_3_file_gets_the_conversation_tables(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    ResponseStore(path).close()
    with sqlite3.connect(path) as conn:  # as ovserve before conversations wrote it
        conn.execute("DROP TABLE conversation_items")
        conn.execute("DROP TABLE conversations")
        conn.execute("PRAGMA user_version = 3")
    store = ResponseStore(path)
    try:
        conversations = ConversationStore(store, max_items=10)
        run(conversations.create(conversation("conv_1"), [item("msg_1")], ""))
        assert [i.id for i in run(conversations.items("conv_1", ""))] == ["msg_1"]
    finally:
        store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 6


def test_owners_ids_order_and_bound() -> None:
    store = ResponseStore(max_age_seconds=1)
    try:
        conversations = ConversationStore(store, max_items=4)
        run(conversations.create(conversation("conv_1"), [item("msg_a"), item("msg_b")], "alice"))
        assert run(conversations.get("conv_1", "bob")) is None and run(conversations.items("conv_1", "bob")) is None
        assert run(conversations.append("conv_1", [item("msg_c")], "bob")) is None
        added = run(conversations.append("conv_1", [item("msg_a", "again")], "alice"))
        assert added is not None and added[0].id != "msg_a" and added[0].id.startswith("msg_")
        assert [i.content for i in run(conversations.items("conv_1", "alice"))] == ["hi", "hi", "again"]
        with pytest.raises(ConversationFull):
            run(conversations.append("conv_1", [item("msg_d"), item("msg_e")], "alice"))
        assert len(run(conversations.items("conv_1", "alice"))) == 3  # nothing of the refused call was added
        assert run(conversations.append("conv_1", [item("msg_d"), item("msg_e")], "alice", bounded=False))
        assert isinstance(run(conversations.delete_item("conv_1", "msg_zz", "alice")), KeyError)
        assert run(conversations.delete_item("conv_1", "msg_b", "bob")) is None
        run(conversations.delete_item("conv_1", "msg_b", "alice"))
        page = run(conversations.page("conv_1", "alice", after="msg_a", limit=2, order="asc"))
        assert page is not None and [i.id for i in page.items][1:] == ["msg_d"] and page.has_more
        # Response expiry leaves conversations alone (OpenAI's conversations have no time limit).
        assert run(store.expire(now=10**12)) == 0 and run(conversations.get("conv_1", "alice")) is not None
        assert not run(conversations.delete("conv_1", "bob")) and run(conversations.delete("conv_1", "alice"))
        assert run(conversations.items("conv_1", "alice")) is None
    finally:
        store.close()


def test_a_page_of_big_items_is_cut_by_size_and_the_pages_walk_them_all() -> None:
    """30 items of 4 MB: no page exceeds MAX_PAGE_BYTES (a gRPC message holds it), each says has_more until the
    last, and walking with ``after`` returns every item once, in order."""
    store = ResponseStore()
    try:
        conversations = ConversationStore(store, max_items=100)
        big = [item(f"msg_{i:02}", chr(ord("a") + i % 26) * (4 * 1024 * 1024)) for i in range(30)]
        run(conversations.create(conversation("conv_1"), big[:10], ""))
        for start in (10, 20):
            run(conversations.append("conv_1", big[start : start + 10], ""))
        seen, after, pages = [], None, 0
        while True:
            page = run(conversations.page("conv_1", "", after=after, limit=100, order="asc"))
            assert page is not None and page.items
            assert sum(i.ByteSize() for i in page.items) <= MAX_PAGE_BYTES
            seen += page.items
            pages += 1
            if not page.has_more:
                break
            after = page.items[-1].id
        assert [i.id for i in seen] == [i.id for i in big] and pages > 1
        single = run(conversations.page("conv_1", "", after=None, limit=1, order="desc"))
        assert single is not None and [i.id for i in single.items] == ["msg_29"] and single.has_more
    finally:
        store.close()
