"""Stored responses belong to the API key that created them: another key finds nothing there (NOT_FOUND).

A real server with two keys; every Responses RPC that names a stored response
is tried with the other key. The store keeps a fingerprint of the key, never
the key itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ovserve.clients.v1 import response_pb2, response_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.store.responses import ResponseStore
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

ALICE, BOB = "key-of-alice", "key-of-bob"


def as_key(key: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {key}"),)


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    store = tmp_path_factory.mktemp("tenants") / "responses.db"
    server = start_server(
        [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], api_keys=(ALICE, BOB), response_store=store
    )
    yield server
    server.stop()


def test_another_key_cannot_read_chain_list_cancel_resume_or_delete(running: ServerThread) -> None:
    with grpc.insecure_channel(running.target) as channel:
        stub = response_pb2_grpc.ResponseServiceStub(channel)
        body = {"model": "tiny-chat", "input": "Hello!", "max_output_tokens": 8, "temperature": 0}
        created = stub.CreateResponse(parse(response_pb2.CreateResponseRequest, body), metadata=as_key(ALICE))
        response_id = created.response.id
        job = stub.CreateResponse(
            parse(response_pb2.CreateResponseRequest, {**body, "background": True, "max_output_tokens": 400}),
            metadata=as_key(ALICE),
        ).response.id

        attempts = {
            "get": lambda key: stub.GetResponse(response_pb2.GetResponseRequest(response_id=response_id), metadata=key),
            "input_items": lambda key: stub.ListResponseInputItems(
                response_pb2.ListResponseInputItemsRequest(response_id=response_id), metadata=key
            ),
            "chain": lambda key: stub.CreateResponse(
                parse(response_pb2.CreateResponseRequest, {**body, "previous_response_id": response_id}), metadata=key
            ),
            "resume": lambda key: list(
                stub.ResumeResponseStream(response_pb2.ResumeResponseStreamRequest(response_id=job), metadata=key)
            ),
            "cancel": lambda key: stub.CancelResponse(
                response_pb2.CancelResponseRequest(response_id=job), metadata=key
            ),
            "delete": lambda key: stub.DeleteResponse(
                response_pb2.DeleteResponseRequest(response_id=response_id), metadata=key
            ),
        }
        for name, attempt in attempts.items():
            with pytest.raises(grpc.RpcError) as refused:
                attempt(as_key(BOB))
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND, name
        # Everything is still there for its owner, in the same order (delete last).
        for attempt in attempts.values():
            attempt(as_key(ALICE))

    with sqlite3.connect(running.server.config.response_store) as db:
        owners = {owner for (owner,) in db.execute("SELECT owner FROM responses")}
    assert len(owners) == 1 and ALICE not in next(iter(owners)) and len(next(iter(owners))) == 32  # a fingerprint


def test_a_store_written_before_owners_keeps_its_responses_for_the_keyless(tmp_path: Path) -> None:
    """A version-1 file gains the owner column; its responses belong to the keyless tenant ''."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE responses (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, status INTEGER NOT NULL,"
            " response BLOB NOT NULL, request BLOB NOT NULL, conversation TEXT NOT NULL);"
            "INSERT INTO responses VALUES ('resp_old', 1, 3, x'', x'', '[]');"
            "PRAGMA user_version = 1;"
        )
    store = ResponseStore(path)
    try:
        import asyncio

        assert asyncio.run(store.get("resp_old", owner="")) is not None
        assert asyncio.run(store.get("resp_old", owner="someone")) is None
    finally:
        store.close()


def test_background_responses_count_against_the_concurrency_limit() -> None:
    """With a limit of 2, background responses wait their turn (queued) instead of all running at once."""
    import time

    from ovserve.service.limits import MAX_QUEUED_PER_PLACE

    limit = 2
    server = start_server([ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], max_concurrent_requests=limit)
    try:
        with grpc.insecure_channel(server.target) as channel:
            stub = response_pb2_grpc.ResponseServiceStub(channel)
            body = {"model": "tiny-chat", "input": "Tell me a story.", "max_output_tokens": 300,
                    "ignore_eos": True, "temperature": 0, "background": True}  # fmt: skip
            accepted, refused = [], []
            for _ in range(limit + limit * MAX_QUEUED_PER_PLACE + 3):
                try:
                    accepted.append(stub.CreateResponse(parse(response_pb2.CreateResponseRequest, body)).response.id)
                except grpc.RpcError as error:
                    refused.append(error.code())
            # At most `limit` run at once; the rest wait, up to the queue's bound; beyond it: try later.
            most_running, saw_waiting = 0, False
            while True:
                statuses = [stub.GetResponse(response_pb2.GetResponseRequest(response_id=i)).response.status
                            for i in accepted]  # fmt: skip
                # One GetResponse after another is no snapshot (one may end and the next start between
                # two calls): what runs at once is read from the server itself.
                running = server.server.registry.get("tiny-chat").engine.in_flight
                most_running = max(most_running, running)
                saw_waiting = saw_waiting or server.server.limit.waiting > 0
                assert server.server.limit.in_use <= limit
                if not {1, 2} & set(statuses):  # none queued or in progress: all ended
                    assert set(statuses) == {4}  # incomplete: max_output_tokens, as asked
                    break
                time.sleep(0.02)
        assert most_running <= limit and saw_waiting
        assert len(accepted) >= limit + limit * MAX_QUEUED_PER_PLACE - 1
        assert refused and set(refused) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
    finally:
        server.stop()
