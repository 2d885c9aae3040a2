"""The Batch API through the official openai client, on the real tiny models and the server's store.

A batch's lines run as the same requests sent one by one (greedy chat answers equal), each result lands in the
output file (200) or the error file (anything else), in input order with its custom_id, counts and usage add
up; a bad input file fails the batch with its problems named by line; cancel ends a batch with every line
accounted for once; another key finds nothing; a batch interrupted by a stop resumes after the restart
with no line lost or recorded twice; and a batch whose files would pass the tenant's bound on stored bytes ends
failed, naming it, with nothing stored past it. Every JSON body is checked against OpenAI's OpenAPI schema.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from ovserve.rest_bridge.server import Bridge
from ovserve.service.models import ModelSpec
from ovserve.service.store.batches import BatchSettings
from ovserve.service.store.files import FileLimits
from tests.conformance import SpecCheck
from tests.conftest import TEST_SETTINGS, TINY_CHAT, start_server
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge, spec_client
from tests.rest_bridge.test_conversations import TINY

KEYS = ("key-of-alice", "key-of-bob")
SCHEMAS = [
    ("POST", r"/files", "OpenAIFile"),
    ("POST", r"/batches", "Batch"),
    ("GET", r"/batches", "ListBatchesResponse"),
    ("GET", r"/batches/[^/]+", "Batch"),
    ("POST", r"/batches/[^/]+/cancel", "Batch"),
]
ENDED = ("completed", "failed", "cancelled", "expired")


@pytest.fixture
def client(spec_checked_client: openai.OpenAI) -> openai.OpenAI:
    return spec_checked_client


def chat_line(custom_id: str, text: str, **extra: Any) -> dict[str, Any]:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": text}], "max_tokens": 6, "temperature": 0}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": {**body, **extra}}


def submit(client: openai.OpenAI, lines: list[dict[str, Any]], endpoint: str = "/v1/chat/completions") -> Any:
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    uploaded = client.files.create(file=("requests.jsonl", data), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint=endpoint, completion_window="24h")  # type: ignore[arg-type]


def wait(client: openai.OpenAI, batch_id: str, seconds: float = 240) -> Any:
    deadline = time.monotonic() + seconds
    while (batch := client.batches.retrieve(batch_id)).status not in ENDED:
        assert time.monotonic() < deadline, batch
        time.sleep(0.2)
    return batch


def lines_of(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [json.loads(line) for line in client.files.content(file_id).content.decode().splitlines()]


def test_a_chat_batch_answers_as_the_same_requests_one_by_one(client: openai.OpenAI) -> None:
    texts = ["Tell me a story.", "What is the sea?", "Name a colour.", "Count to three."]
    lines = [chat_line(f"req-{i}", text) for i, text in enumerate(texts)]
    lines.insert(2, chat_line("bad-one", "Hi", temperature=5))  # a 400 of its own: the others go on
    batch = submit(client, lines)
    assert batch.status == "in_progress" and batch.request_counts.total == 5 and batch.model == "tiny-chat"
    done = wait(client, batch.id)
    assert done.status == "completed" and done.completed_at is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (4, 1)
    outputs, errors = lines_of(client, done.output_file_id), lines_of(client, done.error_file_id)
    assert [o["custom_id"] for o in outputs] == [f"req-{i}" for i in range(4)]
    assert [(e["custom_id"], e["response"]["status_code"]) for e in errors] == [("bad-one", 400)]
    assert errors[0]["response"]["body"]["error"]["param"] == "temperature"
    for output, text in zip(outputs, texts, strict=True):
        alone = client.chat.completions.create(**chat_line("x", text)["body"])
        body = output["response"]["body"]
        assert output["response"]["status_code"] == 200 and output["id"].startswith("batch_req_")
        assert body["choices"][0]["message"]["content"] == alone.choices[0].message.content
    assert done.usage.input_tokens == sum(o["response"]["body"]["usage"]["prompt_tokens"] for o in outputs)
    assert done.usage.output_tokens == sum(o["response"]["body"]["usage"]["completion_tokens"] for o in outputs)
    assert client.files.retrieve(done.output_file_id).purpose == "batch_output"
    assert batch.id in [b.id for b in client.batches.list(limit=100)]


@pytest.mark.parametrize(
    ("endpoint", "line", "check"),
    [
        ("/v1/completions", {"model": "tiny-chat", "prompt": "Once upon", "max_tokens": 3},
         lambda body: body["object"] == "text_completion"),
        ("/v1/responses", {"model": "tiny-chat", "input": "Hi", "max_output_tokens": 3},
         lambda body: body["object"] == "response" and body["status"] in ("completed", "incomplete")),
        ("/v1/embeddings", {"model": "tiny-embed", "input": "the sea"},
         lambda body: len(body["data"][0]["embedding"]) > 0),
    ],
)  # fmt: skip
def test_every_endpoint(client: openai.OpenAI, endpoint: str, line: dict[str, Any], check: Any) -> None:
    lines = [{"custom_id": f"c{i}", "method": "POST", "url": endpoint, "body": line} for i in range(3)]
    done = wait(client, submit(client, lines, endpoint).id)
    outputs = lines_of(client, done.output_file_id)
    assert done.status == "completed" and [o["custom_id"] for o in outputs] == ["c0", "c1", "c2"]
    assert all(check(o["response"]["body"]) for o in outputs) and done.error_file_id is None
    assert done.usage.input_tokens > 0


@pytest.mark.parametrize(
    ("lines", "code", "line"),
    [
        ([chat_line("a", "x"), chat_line("a", "y")], "duplicate_custom_id", 2),
        ([chat_line("a", "x"), {**chat_line("b", "y"), "url": "/v1/embeddings"}], "invalid_url", 2),
        ([chat_line("a", "x", stream=True)], "invalid_body", 1),
        ([chat_line("a", "x"), chat_line("b", "y", model="tiny-vision")], "mismatched_model", 2),
        ([{"method": "POST", "url": "/v1/chat/completions", "body": {}}], "missing_custom_id", 1),
        ([{**chat_line("a", "x"), "method": "GET"}], "invalid_method", 1),
    ],
)
def test_a_bad_input_file_fails_the_batch_naming_the_line(
    client: openai.OpenAI, lines: list[dict[str, Any]], code: str, line: int
) -> None:
    batch = submit(client, lines)
    assert batch.status == "failed" and batch.failed_at is not None and batch.errors is not None
    assert [(e.code, e.line) for e in batch.errors.data or []][:1] == [(code, line)]


def test_bad_create_requests_name_the_field(client: openai.OpenAI) -> None:
    user_file = client.files.create(file=("a.txt", b"x"), purpose="user_data")
    for arguments, param in [
        ({"input_file_id": "file-none", "endpoint": "/v1/chat/completions"}, "input_file_id"),
        ({"input_file_id": user_file.id, "endpoint": "/v1/chat/completions"}, "input_file_id"),
        ({"input_file_id": user_file.id, "endpoint": "/v1/moderations"}, "endpoint"),
    ]:
        with pytest.raises(openai.BadRequestError) as refused:
            client.batches.create(completion_window="24h", **arguments)  # type: ignore[arg-type]
        assert refused.value.body["param"] == param  # type: ignore[index]
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_none")
    with pytest.raises(openai.NotFoundError):
        client.batches.cancel("batch_none")


def test_cancel_accounts_for_every_line_once(client: openai.OpenAI) -> None:
    lines = [chat_line(f"r{i}", f"Story number {i}.", max_tokens=24) for i in range(40)]
    batch = submit(client, lines)
    cancelling = client.batches.cancel(batch.id)
    assert cancelling.status in ("cancelling", "cancelled") and cancelling.cancelling_at is not None
    done = wait(client, batch.id)
    assert done.status == "cancelled" and done.cancelled_at is not None
    outputs, errors = lines_of(client, done.output_file_id), lines_of(client, done.error_file_id)
    assert sorted(o["custom_id"] for o in outputs + errors) == sorted(line["custom_id"] for line in lines)
    unrun = [e for e in errors if e["response"] is None]
    assert unrun and all(e["error"]["code"] == "batch_cancelled" for e in unrun)
    assert done.request_counts.completed == len(outputs) < 40
    assert client.batches.cancel(batch.id).status == "cancelled"  # a finished batch stays as it is


@pytest.fixture(scope="module")
def keyed_bridge() -> Iterator[RunningBridge]:
    with served_with_bridge(TINY, api_keys=KEYS) as running:
        yield running


def test_another_keys_batch_is_not_found(keyed_bridge: RunningBridge, spec: SpecCheck) -> None:
    with spec_client(keyed_bridge, spec, KEYS[0]) as alice, spec_client(keyed_bridge, spec, KEYS[1]) as bob:
        batch = submit(alice, [chat_line("a", "Hi")])
        for attempt in (lambda: bob.batches.retrieve(batch.id), lambda: bob.batches.cancel(batch.id)):
            with pytest.raises(openai.NotFoundError):
                attempt()
        assert batch.id not in [b.id for b in bob.batches.list()]
        with pytest.raises(openai.BadRequestError):  # nor its input file
            bob.batches.create(
                input_file_id=batch.input_file_id, endpoint="/v1/chat/completions", completion_window="24h"
            )
        done = wait(alice, batch.id)
        assert done.status == "completed" and lines_of(alice, done.output_file_id)[0]["custom_id"] == "a"
        with pytest.raises(openai.NotFoundError):
            bob.files.content(done.output_file_id)


def test_a_stopped_batch_resumes_after_a_restart(tmp_path: Path, spec: SpecCheck) -> None:
    store = str(tmp_path / "store.sqlite")
    models = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
    lines = [chat_line(f"r{i}", f"Story number {i}.", max_tokens=16) for i in range(30)]
    server = start_server(models, response_store=store, batches=BatchSettings(batch_concurrency=1))
    bridge = Bridge(server.target, "127.0.0.1", 0)
    server.run(bridge.start())
    try:
        with spec_client(RunningBridge(bridge, server), spec) as client:
            batch = submit(client, lines)
            while client.batches.retrieve(batch.id).request_counts.completed < 3:
                time.sleep(0.1)
        server.run(bridge.stop())
    finally:
        server.stop()
    server = start_server(models, response_store=store)
    bridge = Bridge(server.target, "127.0.0.1", 0)
    server.run(bridge.start())
    try:
        with spec_client(RunningBridge(bridge, server), spec) as client:
            done = wait(client, batch.id)
            outputs = lines_of(client, done.output_file_id)
            assert done.status == "completed" and done.request_counts.completed == 30 and done.error_file_id is None
            assert [o["custom_id"] for o in outputs] == [line["custom_id"] for line in lines]
        server.run(bridge.stop())
    finally:
        server.stop()


def test_a_batch_past_its_window_expires_with_its_unrun_lines_in_the_error_file(spec: SpecCheck) -> None:
    models = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
    lines = [chat_line(f"r{i}", f"Story number {i}.", max_tokens=16) for i in range(30)]
    settings = BatchSettings(batch_concurrency=1)
    with served_with_bridge(models, batches=settings) as running, spec_client(running, spec) as client:
        batch = submit(client, lines)
        while client.batches.retrieve(batch.id).request_counts.completed < 2:
            time.sleep(0.05)

        def past(stored: Any) -> None:  # the 24 hours are over (the clock is not the test's to move)
            stored.expires_at = int(time.time()) - 1

        running.server.run(running.server.server.batches._store.change(batch.id, past))
        done = wait(client, batch.id)
        assert done.status == "expired" and done.expired_at is not None
        outputs, errors = lines_of(client, done.output_file_id), lines_of(client, done.error_file_id)
        assert sorted(o["custom_id"] for o in outputs + errors) == sorted(line["custom_id"] for line in lines)
        assert errors and all(e["error"]["code"] == "batch_expired" and e["response"] is None for e in errors)
        assert done.request_counts.failed == len(errors) and done.request_counts.completed == len(outputs)


#: A tenant's bound on stored bytes in the quota tests: its input file and about a dozen output lines.
QUOTA_BYTES = 16_384


@pytest.mark.parametrize("bad", [False, True], ids=["outputs", "errors"])
def test_a_batch_past_the_tenants_storage_bound_fails_naming_it_and_stores_nothing_past_it(
    spec: SpecCheck, bad: bool
) -> None:
    # bad: every line a 400 of its own, so only the error file grows; else every line answers 200 but one.
    lines = [chat_line(f"r{i}", f"Story {i}.", **({"temperature": 5} if bad or i == 1 else {})) for i in range(40)]
    files = FileLimits(max_tenant_upload_bytes=QUOTA_BYTES)
    with served_with_bridge(TINY, files=files) as running, spec_client(running, spec) as client:
        done = wait(client, submit(client, lines).id)
        usage = running.server.run(running.server.server.files._store.usage(""))  # the keyless tenant's
        assert done.status == "failed" and done.failed_at is not None and done.errors is not None
        [error] = done.errors.data or []
        assert error.code == "storage_limit_exceeded"
        assert f"{QUOTA_BYTES} bytes" in (error.message or "") and "--max-tenant-upload-bytes" in (error.message or "")
        stored = client.files.list().data
        assert usage.bytes == sum(file.bytes for file in stored) <= QUOTA_BYTES  # counted as stored, and no more
        outputs, errors = lines_of(client, done.output_file_id), lines_of(client, done.error_file_id)
        assert (done.request_counts.completed, done.request_counts.failed) == (len(outputs), len(errors))
        assert 0 < len(outputs) + len(errors) < len(lines)  # the lines that fitted; none after the bound
        for held in (outputs, errors):  # whole lines, in input order
            assert [o["custom_id"] for o in held] == sorted((o["custom_id"] for o in held), key=lambda c: int(c[1:]))
        assert bool(errors) and bool(outputs) != bad
        for file_id in (done.output_file_id, done.error_file_id):
            assert client.files.retrieve(file_id).bytes == len(client.files.content(file_id).content)
        with pytest.raises(openai.RateLimitError):  # the room the batch took is taken
            client.files.create(file=("more.txt", b"x" * (QUOTA_BYTES - usage.bytes + 1)), purpose="user_data")
        client.files.delete(done.error_file_id)  # a batch's file deleted frees its bytes
        assert running.server.run(running.server.server.files._store.usage("")).bytes < usage.bytes


def test_output_expires_after_sets_the_output_and_error_files_expiry(client: openai.OpenAI) -> None:
    data = "".join(json.dumps(line) + "\n" for line in [chat_line("ok", "Hi"), chat_line("bad", "Hi", top_p=7)])
    uploaded = client.files.create(file=("requests.jsonl", data.encode()), purpose="batch")
    assert uploaded.expires_at == uploaded.created_at + 30 * 24 * 3600  # OpenAI's default for a batch upload
    batch = client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h",
        output_expires_after={"anchor": "created_at", "seconds": 7200},
    )  # fmt: skip
    done = wait(client, batch.id)
    assert done.status == "completed" and done.output_file_id and done.error_file_id
    for file_id in (done.output_file_id, done.error_file_id):
        file = client.files.retrieve(file_id)
        assert file.expires_at == file.created_at + 7200 and file.created_at >= batch.created_at
    plain = wait(client, submit(client, [chat_line("ok", "Hi")]).id)
    assert client.files.retrieve(plain.output_file_id).expires_at is None  # without it: kept until deleted


@pytest.mark.parametrize(
    ("expiry", "param"),
    [({"anchor": "created_at", "seconds": 60}, "output_expires_after.seconds"),
     ({"anchor": "last_active_at", "seconds": 3600}, "output_expires_after.anchor")],
)  # fmt: skip
def test_output_expires_after_out_of_bounds_is_refused(client: openai.OpenAI, expiry: Any, param: str) -> None:
    uploaded = client.files.create(file=("requests.jsonl", json.dumps(chat_line("a", "Hi")).encode()), purpose="batch")
    with pytest.raises(openai.BadRequestError) as raised:
        client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h",
            output_expires_after=expiry,
        )  # fmt: skip
    assert isinstance(raised.value.body, dict) and raised.value.body["param"] == param
