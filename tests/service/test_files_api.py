"""FileService over gRPC: a client-streamed upload, a server-streamed download, and what a stream may not do.

The header must come first and only once, each chunk is bounded, bytes protobuf cannot decode end the call with
INVALID_ARGUMENT, and an upload that fails or is cancelled leaves nothing behind (not even its place in the
tenant's count). The store's expiry deletes expired files and abandoned uploads, and only those.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
import time
from collections.abc import Iterator

import grpc
import pytest

from ovserve.clients.v1 import file_pb2 as pb
from ovserve.clients.v1 import file_pb2_grpc
from ovserve.service.api.files import DOWNLOAD_CHUNK_BYTES, UPLOAD_CHUNK_BYTES
from ovserve.service.store.files import STALE_UPLOAD_SECONDS, FileLimits, FileStore
from ovserve.service.store.responses import ResponseStore
from tests.conftest import channel_to
from tests.rpc import failure


def header(size: int | None) -> pb.CreateFileRequest:
    """The stream's first message, declaring ``size`` bytes (None: no size)."""
    return pb.CreateFileRequest(header=pb.FileHeader(filename="data.bin", purpose="user_data", bytes=size))


@pytest.fixture(scope="module")
def stub() -> Iterator[file_pb2_grpc.FileServiceStub]:
    with channel_to([], files=FileLimits(max_tenant_uploads=2)) as channel:
        yield file_pb2_grpc.FileServiceStub(channel)


def _upload(stub: file_pb2_grpc.FileServiceStub, data: bytes, chunk: int = UPLOAD_CHUNK_BYTES) -> pb.File:
    chunks = [pb.CreateFileRequest(chunk=data[i : i + chunk]) for i in range(0, len(data), chunk)]
    return stub.CreateFile(iter([header(len(data)), *chunks]), timeout=60).file


def _ids(stub: file_pb2_grpc.FileServiceStub) -> list[str]:
    return [file.id for file in stub.ListFiles(pb.ListFilesRequest()).data]


def test_upload_in_chunks_and_download_in_pieces(stub: file_pb2_grpc.FileServiceStub) -> None:
    data = os.urandom(2 * DOWNLOAD_CHUNK_BYTES + 77)
    small = _upload(stub, data[:1000], chunk=300)  # many messages
    assert stub.DeleteFile(pb.DeleteFileRequest(file_id=small.id)).deleted and small.bytes == 1000
    file = _upload(stub, data)  # one message: split for the download
    pieces = [message.chunk for message in stub.GetFileContent(pb.GetFileContentRequest(file_id=file.id))]
    assert b"".join(pieces) == data and max(map(len, pieces)) == DOWNLOAD_CHUNK_BYTES
    assert stub.GetFile(pb.GetFileRequest(file_id=file.id)).file == file and file.bytes == len(data)
    assert stub.DeleteFile(pb.DeleteFileRequest(file_id=file.id)).deleted
    with pytest.raises(grpc.RpcError) as gone:
        list(stub.GetFileContent(pb.GetFileContentRequest(file_id=file.id)))
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND


@pytest.mark.parametrize(
    ("messages", "field"),
    [
        ([pb.CreateFileRequest(chunk=b"x")], "header"),
        ([header(2), pb.CreateFileRequest(chunk=b"x"), header(2)], "header"),
        ([], "header"),
        ([header(None), pb.CreateFileRequest(chunk=b"x")], "bytes"),  # no size: a stream cut short would pass
        ([header(0)], "file"),
        ([header(1)], "bytes"),
        ([header(10), pb.CreateFileRequest(chunk=b"xyz")], "bytes"),  # ended short (as a cancelled call's does)
        ([header(2), pb.CreateFileRequest(chunk=b"xyz")], "bytes"),  # more than it said
        ([header(2 * UPLOAD_CHUNK_BYTES), pb.CreateFileRequest(chunk=b"x" * (UPLOAD_CHUNK_BYTES + 1))], "chunk"),
        ([pb.CreateFileRequest(header=pb.FileHeader(filename="", purpose="fine-tune", bytes=1))], "filename"),
    ],
)
def test_a_bad_stream_is_refused_naming_the_field(
    stub: file_pb2_grpc.FileServiceStub, messages: list[pb.CreateFileRequest], field: str
) -> None:
    before = _ids(stub)
    with pytest.raises(grpc.RpcError) as refused:
        stub.CreateFile(iter(messages), timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert failure(refused.value).fields[0] == field
    assert _ids(stub) == before


def test_undecodable_bytes_in_the_stream_are_invalid_argument(stub: file_pb2_grpc.FileServiceStub) -> None:
    with channel_to([]) as channel:
        upload = channel.stream_unary(
            "/ovserve.v1.FileService/CreateFile",
            request_serializer=bytes,
            response_deserializer=pb.CreateFileResponse.FromString,
        )
        with pytest.raises(grpc.RpcError) as refused:
            upload(iter([header(1).SerializeToString(), b"\x12\xff\xff\xff"]), timeout=60)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid CreateFileRequest" in (refused.value.details() or "")


def test_a_cancelled_upload_leaves_nothing(stub: file_pb2_grpc.FileServiceStub) -> None:
    # grpc.aio ends a cancelled call's request stream as it ends a finished one now and then (seen in 3 of 300
    # calls): whatever the server saw, the upload's declared size keeps the cut stream from being stored. Rounds
    # give that race its chances.
    for _round in range(20):
        sent, done = threading.Event(), threading.Event()

        def slow(sent: threading.Event = sent, done: threading.Event = done) -> Iterator[pb.CreateFileRequest]:
            yield header(2000)
            yield pb.CreateFileRequest(chunk=b"x" * 1000)
            sent.set()
            done.wait(60)  # sends nothing more: the call is cancelled meanwhile

        call = stub.CreateFile.future(slow(), timeout=60)
        assert sent.wait(30)
        call.cancel()
        # The upload is gone once the server noticed; meanwhile it is not listed anyway. Two files fill the count:
        # if the cancelled upload still held its place (or were stored), the second would be refused.
        kept = [_upload(stub, b"y"), _upload_once_there_is_room(stub, b"z")]
        done.set()
        assert sorted(file.bytes for file in kept) == [1, 1] and len(_ids(stub)) == 2
        for file in kept:
            stub.DeleteFile(pb.DeleteFileRequest(file_id=file.id))


def _upload_once_there_is_room(stub: file_pb2_grpc.FileServiceStub, data: bytes, seconds: float = 60) -> pb.File:
    """Upload ``data``, retrying while the tenant's count is full (a cancelled upload not yet let go of)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return _upload(stub, data)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED and time.monotonic() < deadline
            time.sleep(0.02)


def test_expiry_deletes_expired_files_and_abandoned_uploads(tmp_path: object) -> None:
    async def scenario() -> list[str]:
        store = ResponseStore()
        files = FileStore(store)
        for name in ("kept", "expired", "abandoned", "uploading"):
            record = pb.File(id=name, object="file", created_at=0, filename=name, purpose="batch", status="processed")
            if name == "expired":
                record.expires_at = int(time.time()) - 1
            await files.begin(record, "", max_files=10)
            await files.append(name, b"data", max_owner_bytes=100)
            if name in ("kept", "expired"):
                await files.complete(name)

        def age(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE files SET touched = ? WHERE id = 'abandoned'", (time.time() - STALE_UPLOAD_SECONDS - 1,)
            )

        await store.run(age)
        assert await files.expire() == 2
        left = await store.run(lambda conn: [row[0] for row in conn.execute("SELECT id FROM files ORDER BY id")])
        chunks = await store.run(lambda conn: {row[0] for row in conn.execute("SELECT file_id FROM file_chunks")})
        store.close()
        assert chunks == set(left)
        return list(left)

    assert asyncio.run(scenario()) == ["kept", "uploading"]


def test_a_batch_output_file_expires_from_its_completion_and_the_sweep_deletes_it() -> None:
    async def scenario() -> tuple[pb.File, list[str]]:
        store = ResponseStore()
        files = FileStore(store)
        for name in ("output", "later", "kept"):
            record = pb.File(id=name, object="file", created_at=0, filename=name, purpose="batch_output")
            await files.reserve(record, "", 4)
            await files.fill(name, b"line")
        done = await files.complete("output", expires_after=0)  # expires at once: the sweep takes it
        later = await files.complete("later", expires_after=3600)
        await files.complete("kept")
        assert await files.expire() == 1
        left = await store.run(lambda conn: [row[0] for row in conn.execute("SELECT id FROM files ORDER BY id")])
        store.close()
        assert done.created_at >= time.time() - 60  # created when written, not when reserved (0 here)
        return later, left

    later, left = asyncio.run(scenario())
    assert later.expires_at == later.created_at + 3600 and left == ["kept", "later"]
