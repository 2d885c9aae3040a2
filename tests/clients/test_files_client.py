"""The typed clients' file and batch methods against the real session server: an upload of several chunks, read
back; a batch of two chat requests run from an uploaded file."""

from __future__ import annotations

import asyncio
import json
import os
import time

import grpc
import pytest

from ovserve.clients import AsyncOvserveClient, OvserveClient, OvserveError
from ovserve.clients.defaults import FILE_CHUNK_BYTES
from tests.conftest import ServerThread


def test_file_methods(server: ServerThread) -> None:
    data = os.urandom(FILE_CHUNK_BYTES + 1000)  # two messages up
    with OvserveClient(server.target) as client:
        uploaded = client.upload_file(data, "data.bin", "user_data", expires_after_seconds=3600)
        assert uploaded.bytes == len(data) and uploaded.expires_at == uploaded.created_at + 3600
        assert client.get_file(uploaded.id) == uploaded
        assert b"".join(message.chunk for message in client.download_file(uploaded.id)) == data
        assert uploaded.id in [file.id for file in client.list_files(purpose="user_data").data]
        assert client.delete_file(uploaded.id).deleted
        with pytest.raises(grpc.RpcError) as missing:
            client.get_file(uploaded.id)
        error = OvserveError.from_rpc_error(missing.value)
        assert (error.code, error.param) == (grpc.StatusCode.NOT_FOUND, "file_id")
        with pytest.raises(grpc.RpcError) as refused:
            client.upload_file(b"x", "data.bin", "fine-tune")
        assert OvserveError.from_rpc_error(refused.value).param == "purpose"


def test_async_file_methods(server: ServerThread) -> None:
    async def main() -> None:
        async with AsyncOvserveClient(server.target) as client:
            uploaded = await client.upload_file(b"line\n" * 10, "lines.jsonl", "batch")
            assert (await client.get_file(uploaded.id)).filename == "lines.jsonl"
            pieces = [message.chunk async for message in client.download_file(uploaded.id)]
            assert b"".join(pieces) == b"line\n" * 10
            page = await client.list_files(purpose="batch", order="asc")
            assert uploaded.id in [file.id for file in page.data]
            assert (await client.delete_file(uploaded.id)).deleted

    asyncio.run(main())


def test_batch_methods(server: ServerThread) -> None:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3}
    lines = [{"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions", "body": body} for i in range(2)]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    with OvserveClient(server.target) as client:
        uploaded = client.upload_file(data, "batch.jsonl", "batch")
        batch = client.create_batch(uploaded.id, "/v1/chat/completions", metadata={"job": "demo"})
        assert (
            batch.status == "in_progress"
            and batch.request_counts.total == 2
            and dict(batch.metadata) == {"job": "demo"}
        )
        deadline = time.monotonic() + 120
        while (batch := client.get_batch(batch.id)).status != "completed":
            assert time.monotonic() < deadline, batch
            time.sleep(0.1)
        output = b"".join(message.chunk for message in client.download_file(batch.output_file_id))
        assert [json.loads(line)["custom_id"] for line in output.splitlines()] == ["c0", "c1"]
        assert batch.id in [b.id for b in client.list_batches(limit=100).data]
        assert client.cancel_batch(batch.id).status == "completed"
