"""The typed clients' file methods against the real session server: an upload of several chunks, read back."""

from __future__ import annotations

import asyncio
import os

import grpc
import pytest

from clients import AsyncOvserveClient, OvserveClient, OvserveError
from clients.defaults import FILE_CHUNK_BYTES
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
