"""The typed clients' conversation methods against the real session server."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from ovserve.clients import AsyncOvserveClient, OvserveClient, OvserveError
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from tests.conftest import ServerThread

ITEMS = [
    {"role": "system", "content": "Be brief."},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi!"}]},
    objects_pb2.InputItem(type="function_call", call_id="call_1", name="get_time", arguments="{}"),
]


def test_conversation_methods(server: ServerThread) -> None:
    with OvserveClient(server.target, timeout=60) as client:
        created = client.create_conversation(ITEMS, metadata={"topic": "demo"})
        assert created.id.startswith("conv_") and dict(created.metadata) == {"topic": "demo"}
        assert client.get_conversation(created.id) == created
        assert dict(client.update_conversation(created.id, {"topic": "x"}).metadata) == {"topic": "x"}
        page = client.list_conversation_items(created.id, order="asc")
        assert [(i.type, i.role) for i in page.data] == [
            ("message", "system"),
            ("message", "user"),
            ("function_call", ""),
        ]
        assert page.data[1].content_parts[0].text == "Hi!"  # OpenAI's list form became content_parts
        added = client.add_conversation_items(created.id, [{"type": "function_call_output", "call_id": "call_1",
                                                            "output": "noon"}])  # fmt: skip
        assert [i.type for i in added] == ["function_call_output"] and added[0].id.startswith("fco_")
        newest = client.list_conversation_items(created.id, limit=1)
        assert [i.id for i in newest.data] == [added[0].id] and newest.has_more
        assert client.get_conversation_item(created.id, added[0].id).output == "noon"
        assert client.delete_conversation_item(created.id, added[0].id).id == created.id
        assert client.delete_conversation(created.id).deleted
        with pytest.raises(grpc.RpcError) as missing:
            client.get_conversation(created.id)
        error = OvserveError.from_rpc_error(missing.value)
        assert (error.code, error.param) == (grpc.StatusCode.NOT_FOUND, "conversation_id")
        with pytest.raises(TypeError):
            client.create_conversation([7])  # type: ignore[list-item]


def test_async_conversation_methods(server: ServerThread) -> None:
    async def main() -> None:
        async with AsyncOvserveClient(server.target) as client:
            created = await client.create_conversation(ITEMS[:1])
            added = await client.add_conversation_items(created.id, ITEMS[1:])
            page = await client.list_conversation_items(created.id, order="asc", limit=10)
            assert [i.id for i in page.data][1:] == [i.id for i in added] and not page.has_more
            assert (await client.get_conversation_item(created.id, added[1].id)).name == "get_time"
            assert (await client.get_conversation(created.id)).id == created.id
            assert dict((await client.update_conversation(created.id, {"a": "b"})).metadata) == {"a": "b"}
            assert (await client.delete_conversation_item(created.id, added[0].id)).id == created.id
            assert (await client.delete_conversation(created.id)).object == "conversation.deleted"

    asyncio.run(main())
