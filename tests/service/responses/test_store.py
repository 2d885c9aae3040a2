"""The response store: round trips, pagination, events, expiry, restart, and many writers on one file."""

from __future__ import annotations

import asyncio
import multiprocessing
import sqlite3
import threading
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ovserve.clients.v1 import common_pb2, response_events_pb2, response_object_pb2, response_pb2
from ovserve.service.store.database import SCHEMA_VERSION, StoreSchemaError
from ovserve.service.store.responses import ResponseStore, StoredResponse

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """pytest-asyncio is not installed: each test drives its coroutines itself."""
    return asyncio.run(coro)


def make_stored(
    response_id: str,
    *,
    created_at: int = 1_700_000_000,
    status: response_object_pb2.ResponseStatus = response_object_pb2.RESPONSE_STATUS_COMPLETED,
    n_items: int = 2,
    text: str = "Grüße, 世界 🌍",
) -> StoredResponse:
    """A response with every kind of part filled in: output items, usage, request with items, conversation."""
    items = [
        response_object_pb2.InputItem(type="message", id=f"msg_{response_id}_{i}", role="user", content=f"q{i} ✓")
        for i in range(n_items)
    ]
    output = [
        response_object_pb2.OutputItem(
            message=response_object_pb2.OutputMessage(
                id=f"msg_out_{response_id}",
                role=common_pb2.ROLE_ASSISTANT,
                status=response_object_pb2.ITEM_STATUS_COMPLETED,
                content=[response_object_pb2.OutputContentPart(output_text=response_object_pb2.OutputText(text=text))],
            )
        ),
        response_object_pb2.OutputItem(
            function_call=response_object_pb2.OutputFunctionCall(
                id=f"fc_{response_id}", call_id="call_1", name="weather", arguments='{"city": "Zürich"}'
            )
        ),
    ]
    response = response_object_pb2.Response(
        id=response_id,
        object="response",
        created_at=created_at,
        status=status,
        model="tiny",
        output=output,
        usage=response_object_pb2.ResponseUsage(input_tokens=5, output_tokens=7, total_tokens=12),
        temperature=0.0,
        metadata={"k": "v"},
    )
    request = response_pb2.CreateResponseRequest(
        model="tiny", input_items=items, instructions="Be brief.", store=True, max_output_tokens=64
    )
    conversation: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        *({"role": "user", "content": item.content} for item in items),
        {"role": "assistant", "content": text, "tool_calls": [{"id": "call_1", "function": {"name": "weather"}}]},
    ]
    return StoredResponse(response=response, request=request, input_items=items, conversation=conversation)


def make_events(start: int, stop: int, item_id: str = "msg_x") -> list[response_events_pb2.ResponseStreamEvent]:
    return [
        response_events_pb2.ResponseStreamEvent(
            sequence_number=n,
            output_text_delta=response_events_pb2.ResponseOutputTextDeltaEvent(item_id=item_id, delta=f"d{n}"),
        )
        for n in range(start, stop)
    ]


@pytest.fixture(params=["memory", "file"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResponseStore]:
    """Every behaviour is checked both in memory and on a file."""
    opened = ResponseStore(None if request.param == "memory" else tmp_path / "store.db", max_age_seconds=3600)
    yield opened
    opened.close()


def test_round_trip_keeps_every_field(store: ResponseStore) -> None:
    stored = make_stored("resp_1")
    run(store.put(stored))
    got = run(store.get("resp_1"))
    assert got == stored  # dataclass equality compares every proto message and the conversation
    assert got is not None
    assert got.conversation[-1]["content"] == "Grüße, 世界 🌍"
    assert got.response.output[1].function_call.arguments == '{"city": "Zürich"}'
    assert got.request.input_items[1].id == "msg_resp_1_1"
    assert [item.id for item in got.input_items] == ["msg_resp_1_0", "msg_resp_1_1"]


def test_unknown_ids(store: ResponseStore) -> None:
    assert run(store.get("resp_missing")) is None
    assert run(store.delete("resp_missing")) is False
    assert run(store.input_items("resp_missing")) is None
    assert run(store.events_after("resp_missing", -1)) == []
    run(
        store.update_response(
            response_object_pb2.Response(id="resp_missing", status=response_object_pb2.RESPONSE_STATUS_IN_PROGRESS)
        )
    )
    assert run(store.get("resp_missing")) is None  # update_response does not create


def test_put_replaces_the_same_id_and_keeps_events(store: ResponseStore) -> None:
    run(store.put(make_stored("resp_1", status=response_object_pb2.RESPONSE_STATUS_IN_PROGRESS, n_items=3)))
    run(store.append_events("resp_1", make_events(0, 3)))
    replacement = make_stored("resp_1", text="final", n_items=1)
    run(store.put(replacement))
    assert run(store.get("resp_1")) == replacement
    assert run(store.input_items("resp_1")) == (replacement.input_items, False)  # old three items are gone
    assert len(run(store.events_after("resp_1", -1))) == 3


def test_update_response_replaces_only_the_response(store: ResponseStore) -> None:
    stored = make_stored("resp_1", status=response_object_pb2.RESPONSE_STATUS_QUEUED)
    run(store.put(stored))
    progressed = response_object_pb2.Response()
    progressed.CopyFrom(stored.response)
    progressed.status = response_object_pb2.RESPONSE_STATUS_COMPLETED
    progressed.completed_at = 1_700_000_005
    run(store.update_response(progressed))
    got = run(store.get("resp_1"))
    assert got is not None
    assert got.response == progressed
    assert (got.request, got.input_items, got.conversation) == (stored.request, stored.input_items, stored.conversation)
    assert run(store.unfinished()) == []  # the status column follows the update


def test_delete_removes_response_items_and_events(store: ResponseStore) -> None:
    run(store.put(make_stored("resp_1")))
    run(store.put(make_stored("resp_2")))
    run(store.append_events("resp_1", make_events(0, 4)))
    run(store.append_events("resp_2", make_events(0, 2)))
    assert run(store.delete("resp_1")) is True
    assert run(store.get("resp_1")) is None
    assert run(store.events_after("resp_1", -1)) == []
    assert run(store.delete("resp_1")) is False
    assert run(store.get("resp_2")) is not None
    assert len(run(store.events_after("resp_2", -1))) == 2


def test_input_items_pagination(store: ResponseStore) -> None:
    run(store.put(make_stored("resp_1", n_items=5)))
    ids = [f"msg_resp_1_{i}" for i in range(5)]

    async def page(**kwargs: Any) -> tuple[list[str], bool]:
        result = await store.input_items("resp_1", **kwargs)
        assert result is not None
        return [item.id for item in result[0]], result[1]

    assert run(page()) == (ids[::-1], False)  # default: newest first, limit 20
    assert run(page(order="asc")) == (ids, False)
    assert run(page(order="asc", limit=2)) == (ids[:2], True)
    assert run(page(order="asc", limit=2, after=ids[1])) == (ids[2:4], True)
    assert run(page(order="asc", limit=2, after=ids[3])) == (ids[4:], False)
    assert run(page(order="asc", after=ids[4])) == ([], False)
    assert run(page(order="desc", limit=2)) == ([ids[4], ids[3]], True)
    assert run(page(order="desc", limit=3, after=ids[3])) == ([ids[2], ids[1], ids[0]], False)
    assert run(page(order="desc", limit=5)) == (ids[::-1], False)  # exactly `limit` left: no more
    with pytest.raises(KeyError):
        run(store.input_items("resp_1", after="msg_nope"))
    with pytest.raises(ValueError, match="order"):
        run(store.input_items("resp_1", order="sideways"))


def test_events_after_orders_and_filters(store: ResponseStore) -> None:
    # Appended out of order and in two batches; another response's events must not leak in.
    run(store.append_events("resp_1", make_events(5, 8)))
    run(store.append_events("resp_1", make_events(0, 5)))
    run(store.append_events("resp_2", make_events(0, 10, item_id="other")))
    assert [e.sequence_number for e in run(store.events_after("resp_1", -1))] == list(range(8))
    after = run(store.events_after("resp_1", 4))
    assert [e.sequence_number for e in after] == [5, 6, 7]
    assert after[0] == make_events(5, 6)[0]  # the event itself round-trips
    assert run(store.events_after("resp_1", 7)) == []
    run(store.append_events("resp_1", []))  # nothing to do, no error


def test_expire_by_age(store: ResponseStore) -> None:
    now = 1_800_000_000.0
    run(store.put(make_stored("resp_old", created_at=int(now) - 7200)))
    run(store.put(make_stored("resp_new", created_at=int(now) - 60)))
    run(store.append_events("resp_old", make_events(0, 3)))
    run(store.append_events("resp_new", make_events(0, 3)))
    assert run(store.expire(now)) == 1
    assert run(store.get("resp_old")) is None
    assert run(store.events_after("resp_old", -1)) == []
    assert run(store.get("resp_new")) is not None
    assert len(run(store.events_after("resp_new", -1))) == 3
    assert run(store.expire(now)) == 0


def test_expire_without_max_age_keeps_everything() -> None:
    store = ResponseStore()
    try:
        run(store.put(make_stored("resp_1", created_at=1)))
        assert run(store.expire(1e12)) == 0
        assert run(store.get("resp_1")) is not None
    finally:
        store.close()


def test_unfinished(store: ResponseStore) -> None:
    statuses = {
        "resp_q": response_object_pb2.RESPONSE_STATUS_QUEUED,
        "resp_p": response_object_pb2.RESPONSE_STATUS_IN_PROGRESS,
        "resp_c": response_object_pb2.RESPONSE_STATUS_COMPLETED,
        "resp_f": response_object_pb2.RESPONSE_STATUS_FAILED,
        "resp_x": response_object_pb2.RESPONSE_STATUS_CANCELLED,
        "resp_i": response_object_pb2.RESPONSE_STATUS_INCOMPLETE,
    }
    for response_id, status in statuses.items():
        run(store.put(make_stored(response_id, status=status)))
    assert sorted(run(store.unfinished())) == ["resp_p", "resp_q"]


def test_memory_store_is_shared_across_calls_and_loops() -> None:
    store = ResponseStore()
    try:
        run(store.put(make_stored("resp_1")))
        assert run(store.get("resp_1")) is not None  # a second asyncio.run, a new loop: same database
    finally:
        store.close()
    with pytest.raises(RuntimeError, match="closed"):
        run(store.get("resp_1"))
    store.close()  # twice is fine


def test_survives_restart(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "store.db"
    path.parent.mkdir()
    first = ResponseStore(path)
    stored = make_stored("resp_1", status=response_object_pb2.RESPONSE_STATUS_IN_PROGRESS, n_items=3)
    run(first.put(stored))
    run(first.append_events("resp_1", make_events(0, 6)))
    first.close()

    second = ResponseStore(path)
    try:
        assert run(second.get("resp_1")) == stored
        assert run(second.events_after("resp_1", 2)) == make_events(3, 6)
        assert run(second.input_items("resp_1", order="asc", limit=2)) == (stored.input_items[:2], True)
        assert run(second.unfinished()) == ["resp_1"]
    finally:
        second.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    ResponseStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreSchemaError, match=rf"schema version {SCHEMA_VERSION + 1}.*upgrade ovserve"):
        ResponseStore(path)


# --- many writers on one file --------------------------------------------------------------------------------

WRITES_PER_WORKER = 50


def write_many(path: str, prefix: str, start: Any) -> None:
    """Runs in a separate process: puts, status updates, events and deletes under its own prefix.

    Every fifth response is deleted again, so the survivors are known in advance. ``start`` is a barrier, so
    that all writers open the file and write at the same time rather than one after another.
    """

    async def main() -> None:
        start.wait()
        store = ResponseStore(path)
        try:
            for i in range(WRITES_PER_WORKER):
                response_id = f"{prefix}_{i}"
                await store.put(make_stored(response_id, status=response_object_pb2.RESPONSE_STATUS_IN_PROGRESS))
                await store.append_events(response_id, make_events(0, 3, item_id=response_id))
                done = make_stored(response_id).response
                await store.update_response(done)
                if i % 5 == 0:
                    assert await store.delete(response_id)
        finally:
            store.close()

    asyncio.run(main())


def survivors(prefix: str) -> set[str]:
    return {f"{prefix}_{i}" for i in range(WRITES_PER_WORKER) if i % 5 != 0}


def test_concurrent_writers_processes_and_tasks(tmp_path: Path) -> None:
    # Each process opens the (not yet existing) file itself: creating the schema races too.
    path = str(tmp_path / "shared.db")
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(5)
    workers = [context.Process(target=write_many, args=(path, f"proc{n}", start)) for n in range(4)]
    for worker in workers:
        worker.start()

    async def in_process_tasks() -> None:
        await asyncio.to_thread(start.wait, 120)
        store = ResponseStore(path)
        try:

            async def task(prefix: str) -> None:
                for i in range(WRITES_PER_WORKER):
                    response_id = f"{prefix}_{i}"
                    await store.put(make_stored(response_id))
                    await store.append_events(response_id, make_events(0, 3, item_id=response_id))
                    if i % 5 == 0:
                        assert await store.delete(response_id)

            await asyncio.gather(*(task(f"task{n}") for n in range(4)))
        finally:
            store.close()

    run(in_process_tasks())
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0, f"writer process {worker.name} failed with exit code {worker.exitcode}"

    prefixes = [f"proc{n}" for n in range(4)] + [f"task{n}" for n in range(4)]
    expected = set().union(*(survivors(prefix) for prefix in prefixes))
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert {row[0] for row in conn.execute("SELECT id FROM responses")} == expected
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3 * len(expected)
        assert conn.execute("SELECT COUNT(*) FROM input_items").fetchone()[0] == 2 * len(expected)

    store = ResponseStore(path)
    try:
        assert run(store.unfinished()) == []  # every process moved its responses to completed
        some = sorted(expected)[0]
        got = run(store.get(some))
        assert got is not None
        assert got.response.status == response_object_pb2.RESPONSE_STATUS_COMPLETED
        assert [e.output_text_delta.item_id for e in run(store.events_after(some, -1))] == [some] * 3
    finally:
        store.close()


def test_find_item_finds_inputs_and_outputs_of_the_owner_only(store: ResponseStore) -> None:
    mine = make_stored("resp_a")
    mine.owner = "alice"
    run(store.put(mine))
    found = run(store.find_item("msg_resp_a_1", owner="alice"))
    assert found is not None and found.content == "q1 ✓"
    call = run(store.find_item("fc_resp_a", owner="alice"))
    assert call is not None and (call.type, call.call_id, call.name) == ("function_call", "call_1", "weather")
    message = run(store.find_item("msg_out_resp_a", owner="alice"))
    assert message is not None and message.role == "assistant" and message.content_parts[0].text == "Grüße, 世界 🌍"
    assert run(store.find_item("msg_out_resp_a", owner="bob")) is None
    # A background run's progress (update_response) keeps the output items current; delete removes them.
    progressed = make_stored("resp_a", text="later")
    run(store.update_response(progressed.response))
    later = run(store.find_item("msg_out_resp_a"))
    assert later is not None and later.content_parts[0].text == "later"
    run(store.delete("resp_a"))
    assert run(store.find_item("msg_out_resp_a")) is None and run(store.find_item("msg_resp_a_1")) is None


def test_work_asked_for_is_done_though_its_caller_is_cancelled_while_it_waits(store: ResponseStore) -> None:
    """A cancelled upload's clean-up is asked for as gRPC cancels the call: the delete must run though its caller
    is cancelled while it waits behind other work (asyncio would cancel the pool's queued work item)."""
    release, done = threading.Event(), []

    async def scenario() -> None:
        blocker = asyncio.ensure_future(store.run(lambda conn: release.wait(60)))  # holds the store's one thread
        waiting = asyncio.ensure_future(store.run(lambda conn: done.append("ran")))
        await asyncio.sleep(0)  # both submitted
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        release.set()
        await blocker
        await store.run(lambda conn: None)  # the thread runs in order: the cancelled caller's work came before

    run(scenario())
    assert done == ["ran"]
