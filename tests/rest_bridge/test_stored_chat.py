"""Stored chat completions through the official openai client: store, retrieve, list, messages, update, delete.

A server of its own (a store file, two API keys) with a bridge in front, on the real tiny-chat pipeline.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge

KEYS = ("key-of-alice", "key-of-bob")
TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Tell me a story."},
]


@pytest.fixture(scope="module")
def stored_bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBridge]:
    store = Path(tmp_path_factory.mktemp("store")) / "store.sqlite"
    with served_with_bridge(TINY, api_keys=KEYS, response_store=str(store)) as running:
        yield running


def _client(bridge: RunningBridge, key: str = KEYS[0]) -> openai.OpenAI:
    return openai.OpenAI(base_url=bridge.url, api_key=key, max_retries=0, timeout=120)


def _create(client: openai.OpenAI, **fields: object) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(
        model="tiny-chat",
        messages=MESSAGES,
        max_tokens=8,
        temperature=0,
        **fields,  # type: ignore[arg-type]
    )


def test_a_stored_completion_is_retrieved_listed_updated_and_deleted(stored_bridge: RunningBridge) -> None:
    with _client(stored_bridge) as client:
        created = _create(client, store=True, metadata={"topic": "story", "run": "crud"})
        got = client.chat.completions.retrieve(created.id)
        assert got.id == created.id and got.choices[0].message.content == created.choices[0].message.content
        assert got.usage == created.usage and got.model == "tiny-chat"
        assert got.metadata == {"topic": "story", "run": "crud"}

        messages = client.chat.completions.messages.list(created.id)
        assert [(m.role, m.content) for m in messages.data] == [(m["role"], m["content"]) for m in MESSAGES]
        assert messages.data[0].id == f"{created.id}-0"
        first = client.chat.completions.messages.list(created.id, limit=1, order="desc")
        assert [m.content for m in first.data] == ["Tell me a story."] and first.has_more
        rest = client.chat.completions.messages.list(created.id, limit=1, order="desc", after=first.data[0].id)
        assert [m.content for m in rest.data] == ["Be brief."] and not rest.has_more

        updated = client.chat.completions.update(created.id, metadata={"topic": "poem"})
        assert updated.metadata == {"topic": "poem"}
        assert client.chat.completions.retrieve(created.id).metadata == {"topic": "poem"}

        deleted = client.chat.completions.delete(created.id)
        assert (deleted.id, deleted.deleted, deleted.object) == (created.id, True, "chat.completion.deleted")
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.delete(created.id)


def test_list_filters_by_metadata_and_model_and_pages(stored_bridge: RunningBridge) -> None:
    with _client(stored_bridge) as client:
        ids = [_create(client, store=True, metadata={"batch": "paging", "i": str(i)}).id for i in range(3)]
        _create(client, store=False, metadata={"batch": "paging"})  # not stored
        listed = client.chat.completions.list(metadata={"batch": "paging"}, limit=100)
        assert [c.id for c in listed.data] == ids  # oldest first, OpenAI's default order
        one = client.chat.completions.list(metadata={"batch": "paging", "i": "1"})
        assert [c.id for c in one.data] == [ids[1]]
        assert client.chat.completions.list(metadata={"batch": "paging"}, model="other").data == []
        page = client.chat.completions.list(metadata={"batch": "paging"}, limit=2, order="desc")
        assert [c.id for c in page.data] == ids[:0:-1] and page.has_more
        walked = [c.id for c in client.chat.completions.list(metadata={"batch": "paging"}, limit=1)]  # auto-paging
        assert walked == ids


def test_a_streamed_completion_is_stored_when_it_ends(stored_bridge: RunningBridge) -> None:
    with _client(stored_bridge) as client:
        stream = _create(client, store=True, stream=True, metadata={"batch": "stream"})
        chunks = list(stream)
        assert all(chunk.usage is None for chunk in chunks)  # the client did not ask for usage
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        got = client.chat.completions.retrieve(chunks[0].id)
        assert got.choices[0].message.content == text
        assert got.choices[0].finish_reason == chunks[-1].choices[0].finish_reason
        assert got.usage is not None and got.usage.completion_tokens > 0
        unary = _create(client)
        assert got.choices[0].message.content == unary.choices[0].message.content  # greedy: same text


def test_another_api_key_finds_nothing(stored_bridge: RunningBridge) -> None:
    with _client(stored_bridge) as alice, _client(stored_bridge, KEYS[1]) as bob:
        created = _create(alice, store=True, metadata={"batch": "tenancy"})
        with pytest.raises(openai.NotFoundError):
            bob.chat.completions.retrieve(created.id)
        with pytest.raises(openai.NotFoundError):
            bob.chat.completions.messages.list(created.id)
        with pytest.raises(openai.NotFoundError):
            bob.chat.completions.update(created.id, metadata={})
        with pytest.raises(openai.NotFoundError):
            bob.chat.completions.delete(created.id)
        assert bob.chat.completions.list(metadata={"batch": "tenancy"}).data == []
        assert alice.chat.completions.retrieve(created.id).id == created.id


@pytest.mark.parametrize(
    ("metadata", "param"),
    [
        ({f"k{i}": "v" for i in range(17)}, "metadata"),
        ({"k" * 65: "v"}, "metadata." + "k" * 64),
        ({"k": "v" * 513}, "metadata.k"),
    ],
)
def test_metadata_over_openai_bounds_is_refused(stored_bridge: RunningBridge, metadata, param) -> None:
    with _client(stored_bridge) as client:
        with pytest.raises(openai.BadRequestError) as raised:
            _create(client, store=True, metadata=metadata)
        assert raised.value.body["param"] == param  # type: ignore[index]
        created = _create(client, store=True)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.update(created.id, metadata=metadata)


@pytest.mark.parametrize(
    ("query", "param"),
    [("limit=0", "limit"), ("limit=101", "limit"), ("limit=x", "limit"), ("order=up", "order"),
     ("after=chatcmpl-none", "after"), ("colour=red", "colour")],
)  # fmt: skip
def test_bad_list_queries_are_400_naming_the_parameter(stored_bridge: RunningBridge, query: str, param: str) -> None:
    headers = {"Authorization": f"Bearer {KEYS[0]}"}
    reply = http_request(stored_bridge.port, "GET", f"/v3/chat/completions?{query}", headers=headers)
    assert reply.status == 400 and reply.json()["error"]["param"] == param


def test_list_and_messages_shapes_are_openai_exact(stored_bridge: RunningBridge) -> None:
    headers = {"Authorization": f"Bearer {KEYS[0]}"}
    with _client(stored_bridge) as client:
        created = _create(client, store=True, metadata={"batch": "shape"})
    listed = http_request(stored_bridge.port, "GET", "/v3/chat/completions?metadata[batch]=shape", headers=headers)
    body = listed.json()
    assert set(body) == {"object", "data", "first_id", "last_id", "has_more"} and body["object"] == "list"
    assert body["first_id"] == body["last_id"] == created.id and body["data"][0]["object"] == "chat.completion"
    path = f"/v3/chat/completions/{created.id}/messages"
    messages = http_request(stored_bridge.port, "GET", path, headers=headers).json()
    assert set(messages["data"][0]) >= {"id", "role", "content", "content_parts", "refusal"}
    deleted = http_request(stored_bridge.port, "DELETE", f"/v3/chat/completions/{created.id}", headers=headers)
    assert deleted.json() == {"object": "chat.completion.deleted", "id": created.id, "deleted": True}


def test_stored_completions_survive_a_restart(tmp_path: Path) -> None:
    store = str(tmp_path / "store.sqlite")
    server = start_server(TINY, response_store=store)
    try:
        bridge = Bridge(server.target, "127.0.0.1", 0)
        server.run(bridge.start())
        with _client(RunningBridge(bridge, server)) as client:
            created = _create(client, store=True, metadata={"kept": "yes"})
        server.run(bridge.stop())
    finally:
        server.stop()
    again: ServerThread = start_server(TINY, response_store=store)
    try:
        bridge = Bridge(again.target, "127.0.0.1", 0)
        again.run(bridge.start())
        with _client(RunningBridge(bridge, again)) as client:
            got = client.chat.completions.retrieve(created.id)
            assert got.choices[0].message.content == created.choices[0].message.content
            assert got.metadata == {"kept": "yes"}
            assert [m.content for m in client.chat.completions.messages.list(created.id)] == [
                m["content"] for m in MESSAGES
            ]
        again.run(bridge.stop())
    finally:
        again.stop()
