"""The Files API through the official openai client and raw HTTP, on the real server and its store.

Every body the client receives is checked against OpenAI's OpenAPI schema for its route. Uploads round-trip
byte for byte (one larger than the bridge's in-memory spool and the gRPC chunks), list pages and filters, a
chat ``file`` part and a Responses ``input_file`` read an uploaded file by ``file_id`` exactly as the same text
sent inline, another API key finds nothing, bounds and malformed forms are refused naming the field, and files
survive a restart of a server with a store file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from ovserve.rest_bridge.routes.files import SPOOL_MEMORY_BYTES
from ovserve.service.store.files import FileLimits
from tests.conformance import SpecCheck, violations
from tests.rest_bridge.conftest import RunningBridge, http_request, served_with_bridge, spec_client
from tests.rest_bridge.test_conversations import TINY, serve
from tests.rest_bridge.test_file_inputs import NOTE, chat_prompt_tokens, inline

KEYS = ("key-of-alice", "key-of-bob")
SCHEMAS = [
    ("POST", r"/files", "OpenAIFile"),
    ("GET", r"/files", "ListFilesResponse"),
    ("GET", r"/files/[^/]+", "OpenAIFile"),
    ("DELETE", r"/files/[^/]+", "DeleteFileResponse"),
]


@pytest.fixture
def files_client(spec_checked_client: openai.OpenAI) -> openai.OpenAI:
    return spec_checked_client


def test_upload_read_list_download_delete(files_client: openai.OpenAI) -> None:
    data = os.urandom(3 * SPOOL_MEMORY_BYTES + 12_345)  # spooled to disk; several gRPC chunks each way
    created = files_client.files.create(file=("blob.bin", data), purpose="user_data")
    assert created.id.startswith("file-") and created.bytes == len(data) and created.filename == "blob.bin"
    assert created.purpose == "user_data" and created.status == "processed" and created.expires_at is None
    assert files_client.files.retrieve(created.id) == created
    assert files_client.files.content(created.id).content == data
    batch = files_client.files.create(
        file=("lines.jsonl", b'{"a": 1}\n'), purpose="batch", expires_after={"anchor": "created_at", "seconds": 3600}
    )
    assert batch.expires_at == batch.created_at + 3600
    # a batch file sent with no expiry expires after OpenAI's default of 30 days; other purposes are kept
    default = files_client.files.create(file=("more.jsonl", b'{"a": 2}\n'), purpose="batch")
    assert default.expires_at == default.created_at + 30 * 24 * 3600
    listed = [f.id for f in files_client.files.list()]
    assert listed.index(batch.id) < listed.index(created.id)  # newest first
    assert [f.id for f in files_client.files.list(purpose="batch")] == [
        f.id for f in files_client.files.list() if f.purpose == "batch"
    ]
    first = files_client.files.list(limit=1, order="asc")
    assert len(first.data) == 1 and first.has_more
    everything = [f.id for f in files_client.files.list(limit=1, order="asc")]  # the client pages with after=
    assert everything == listed[::-1]
    for file in (created, batch):
        assert files_client.files.delete(file.id).deleted
        with pytest.raises(openai.NotFoundError):
            files_client.files.retrieve(file.id)
        with pytest.raises(openai.NotFoundError):
            files_client.files.content(file.id)
        with pytest.raises(openai.NotFoundError):
            files_client.files.delete(file.id)


def test_a_file_id_reads_as_the_same_text_inline(files_client: openai.OpenAI) -> None:
    uploaded = files_client.files.create(file=("note.txt", NOTE.encode()), purpose="user_data")
    by_id = chat_prompt_tokens(files_client, [{"type": "file", "file": {"file_id": uploaded.id}}])
    as_text = chat_prompt_tokens(files_client, [{"type": "text", "text": inline("note.txt", NOTE)}])
    assert by_id == as_text
    part = {"type": "input_file", "file_id": uploaded.id}
    reply = files_client.responses.create(
        model="tiny-chat", input=[{"role": "user", "content": [part]}], max_output_tokens=2, temperature=0
    )  # type: ignore[call-overload]
    text = {"type": "input_text", "text": inline("note.txt", NOTE)}
    same = files_client.responses.create(
        model="tiny-chat", input=[{"role": "user", "content": [text]}], max_output_tokens=2, temperature=0
    )  # type: ignore[call-overload]
    assert reply.usage is not None and same.usage is not None
    assert reply.usage.input_tokens == same.usage.input_tokens
    files_client.files.delete(uploaded.id)
    with pytest.raises(openai.BadRequestError) as refused:
        chat_prompt_tokens(files_client, [{"type": "file", "file": {"file_id": uploaded.id}}])
    assert refused.value.body["param"] == "messages[0].content[0].file.file_id"  # type: ignore[index]


def _form(parts: list[tuple[str, str | None, bytes]], boundary: str = "b0undary") -> tuple[bytes, dict[str, str]]:
    """A multipart body of (name, filename, content) parts in the order given."""
    body = b""
    for name, filename, content in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        body += f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode() + content + b"\r\n"
    return body + f"--{boundary}--\r\n".encode(), {"Content-Type": f"multipart/form-data; boundary={boundary}"}


def test_the_file_may_come_before_the_fields(bridge: RunningBridge) -> None:
    body, headers = _form([("file", "first.txt", b"hello"), ("purpose", None, b"assistants")])
    reply = http_request(bridge.port, "POST", "/v3/files", body, headers)
    assert reply.status == 200, reply.body
    created = reply.json()
    assert (created["filename"], created["bytes"], created["purpose"]) == ("first.txt", 5, "assistants")
    content = http_request(bridge.port, "GET", f"/v3/files/{created['id']}/content")
    assert content.status == 200 and content.body == b"hello"
    assert "first.txt" in content.headers["Content-Disposition"]
    assert http_request(bridge.port, "DELETE", f"/v3/files/{created['id']}").status == 200


@pytest.mark.parametrize(
    ("parts", "status", "param"),
    [
        ([("file", "a.txt", b"x")], 400, "purpose"),
        ([("purpose", None, b"batch")], 400, "file"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"fine-tune")], 400, "purpose"),
        ([("file", "a.txt", b""), ("purpose", None, b"batch")], 400, "file"),
        ([("file", "a.txt", b"x"), ("file", "b.txt", b"y"), ("purpose", None, b"batch")], 400, "file"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"batch"), ("model", None, b"m")], 400, "model"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"batch"), ("purpose", None, b"batch")], 400, "purpose"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"batch"), ("expires_after[anchor]", None, b"now")],
         400, "expires_after.anchor"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"batch"), ("expires_after[anchor]", None, b"created_at"),
          ("expires_after[seconds]", None, b"60")], 400, "expires_after.seconds"),
        ([("file", "a.txt", b"x"), ("purpose", None, b"batch"), ("expires_after[seconds]", None, b"soon")],
         400, "expires_after[seconds]"),
        ([("file", "a\x01.txt", b"x"), ("purpose", None, b"batch")], 400, "filename"),
        ([("purpose", None, b"\xff"), ("file", "a.txt", b"x")], 400, "purpose"),
    ],
)  # fmt: skip
def test_bad_forms_are_refused_naming_the_field(
    bridge: RunningBridge, parts: list[tuple[str, str | None, bytes]], status: int, param: str
) -> None:
    body, headers = _form(parts)
    reply = http_request(bridge.port, "POST", "/v3/files", body, headers)
    assert reply.status == status and reply.json()["error"]["param"] == param, reply.body
    assert not violations("ErrorResponse", reply.json())


def test_broken_bodies_are_refused(bridge: RunningBridge) -> None:
    body, headers = _form([("file", "a.txt", b"x"), ("purpose", None, b"batch")])
    truncated = http_request(bridge.port, "POST", "/v3/files", body[:-12], headers)
    assert truncated.status == 400 and "boundary" in truncated.json()["error"]["message"]
    as_json = http_request(bridge.port, "POST", "/v3/files", {"purpose": "batch"})
    assert as_json.status == 415
    long_boundary, headers = _form([("file", "a.txt", b"x"), ("purpose", None, b"batch")], boundary="b" * 5000)
    refused = http_request(bridge.port, "POST", "/v3/files", long_boundary, headers)  # (found by the surface fuzz)
    assert refused.status == 400 and refused.json()["error"]["param"] == "file"
    many, headers = _form([("purpose", None, b"batch")] * 9)
    assert http_request(bridge.port, "POST", "/v3/files", many, headers).status == 400
    assert http_request(bridge.port, "GET", "/v3/files?limit=0").json()["error"]["param"] == "limit"
    assert http_request(bridge.port, "GET", "/v3/files?order=up").json()["error"]["param"] == "order"
    assert http_request(bridge.port, "GET", "/v3/files?after=file-none").json()["error"]["param"] == "after"
    assert http_request(bridge.port, "GET", "/v3/files?color=red").json()["error"]["param"] == "color"


@pytest.fixture(scope="module")
def keyed_bridge() -> Iterator[RunningBridge]:
    limits = FileLimits(max_upload_bytes=1000, max_tenant_upload_bytes=1500, max_tenant_uploads=3)
    with served_with_bridge(TINY, api_keys=KEYS, files=limits) as running:
        yield running


def test_another_keys_file_is_not_found(keyed_bridge: RunningBridge, spec: SpecCheck) -> None:
    with spec_client(keyed_bridge, spec, KEYS[0]) as alice, spec_client(keyed_bridge, spec, KEYS[1]) as bob:
        file = alice.files.create(file=("secret.txt", b"mine"), purpose="user_data")
        for attempt in (
            lambda: bob.files.retrieve(file.id),
            lambda: bob.files.content(file.id),
            lambda: bob.files.delete(file.id),
        ):
            with pytest.raises(openai.NotFoundError):
                attempt()
        assert file.id not in [f.id for f in bob.files.list()]
        with pytest.raises(openai.BadRequestError, match="no file"):
            chat_prompt_tokens(bob, [{"type": "file", "file": {"file_id": file.id}}])
        assert alice.files.content(file.id).content == b"mine"
        assert alice.files.delete(file.id).deleted


def test_bounds_per_file_and_per_key(keyed_bridge: RunningBridge, spec: SpecCheck) -> None:
    with spec_client(keyed_bridge, spec, KEYS[0]) as alice, spec_client(keyed_bridge, spec, KEYS[1]) as bob:
        with pytest.raises(openai.BadRequestError) as too_big:
            alice.files.create(file=("big.bin", b"x" * 1001), purpose="user_data")
        assert too_big.value.body["param"] == "file"  # type: ignore[index]
        held = [alice.files.create(file=(f"{i}.bin", b"x" * 700), purpose="user_data") for i in range(2)]
        with pytest.raises(openai.RateLimitError, match="1500 bytes"):
            alice.files.create(file=("third.bin", b"x" * 200), purpose="user_data")
        held.append(alice.files.create(file=("small.bin", b"x" * 10), purpose="user_data"))
        with pytest.raises(openai.RateLimitError, match="at most 3"):
            alice.files.create(file=("fourth.bin", b"x"), purpose="user_data")
        assert bob.files.create(file=("bobs.bin", b"x" * 700), purpose="user_data").bytes == 700  # his own bound
        assert [f.bytes for f in alice.files.list(order="asc")] == [700, 700, 10]  # refused uploads left nothing
        for file in held:
            alice.files.delete(file.id)
        assert alice.files.create(file=("again.bin", b"x" * 1000), purpose="user_data").bytes == 1000


def test_files_survive_a_restart(tmp_path: Path, spec: SpecCheck) -> None:
    store = str(tmp_path / "store.sqlite")
    data = os.urandom(5000)
    created: Any = None
    for round_ in range(2):
        server, bridge = serve(store)
        try:
            with spec_client(RunningBridge(bridge, server), spec) as client:
                if round_ == 0:
                    created = client.files.create(file=("kept.bin", data), purpose="batch")
                else:
                    assert client.files.retrieve(created.id) == created
                    assert client.files.content(created.id).content == data
            server.run(bridge.stop())
        finally:
            server.stop()
