"""FileService semantics: the Files API over the file store, bounded per file and per tenant.

``FilesApi`` is the facade the servicer calls (an upload arrives as a stream of CreateFileRequest messages: a
header, then chunks) and what other APIs resolve a ``file_id`` through (``content``): a chat ``file`` part, a
Responses ``input_file``, a batch's input file. Every call acts for the caller's tenant
(service/store/tenancy.py): another tenant's file is NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable
from typing import TypeVar

from ovserve.clients.defaults import FILE_CHUNK_BYTES, MIB
from ovserve.clients.v1 import file_pb2 as pb
from ovserve.service.api.stored_chat import page_bounds, page_reply
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound, ResourceExhausted, quote
from ovserve.service.ids import new_id, now
from ovserve.service.store.files import FileLimits, FileStore, StorageFull
from ovserve.service.store.tenancy import tenant

#: What a file may be for (OpenAI's purposes that mean something here): inputs of chat and Responses calls
#: (user_data, assistants, vision) and batch input files (batch). fine-tune and evals have no job here.
PURPOSES = ("assistants", "batch", "user_data", "vision")
#: OpenAI's bounds on a file's expiry, seconds after its creation: one hour to 30 days.
MIN_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS = 3600, 2_592_000
#: OpenAI's default expiry of a purpose "batch" upload (its FileExpirationAfter: 30 days); other purposes are kept.
DEFAULT_EXPIRY_SECONDS = {"batch": MAX_EXPIRY_SECONDS}
MAX_FILENAME_CHARS = 255
#: OpenAI's page bound of GET /files (and its default).
MAX_FILE_PAGE = 10_000
#: The bytes of one download message; an upload's chunks may be up to UPLOAD_CHUNK_BYTES.
DOWNLOAD_CHUNK_BYTES = MIB
UPLOAD_CHUNK_BYTES = FILE_CHUNK_BYTES
#: A refused upload is read on (and dropped) up to the size it declared, at most this many times the file bound.
DRAIN_FACTOR = 4
_T = TypeVar("_T")


class FilesApi:
    """The Files API over a file store."""

    def __init__(self, store: FileStore, limits: FileLimits | None = None) -> None:
        self._store = store
        self.limits = limits or FileLimits()

    async def create(self, messages: AsyncIterable[pb.CreateFileRequest]) -> pb.File:
        """CreateFile: the header, then the bytes; the file is stored once the stream ends, not before.

        A stream that fails, is cancelled or passes a bound leaves nothing behind. A refused upload is read to
        its end (within a bound) before the refusal is sent: grpc.aio's client loses the server's status to a
        write still in flight when the call ends (https://github.com/grpc/grpc/issues/36066), and the REST
        bridge streams uploads that way.
        """
        stream = aiter(messages)
        first = await anext(stream, None)
        if first is None or first.WhichOneof("part") != "header":
            raise InvalidArgument.of("header", "the first message of the stream must carry the file's header")
        declared = first.header.bytes if first.header.HasField("bytes") else None
        try:
            return await self._stored(first.header, stream)
        except (InvalidArgument, ResourceExhausted):
            # What an honest client still sends: the size it declared, else at most the largest file stored.
            budget = min(declared or self.limits.max_upload_bytes, DRAIN_FACTOR * self.limits.max_upload_bytes)
            async for message in stream:
                budget -= len(message.chunk)
                if budget < 0:
                    break
            raise

    async def _stored(self, header: pb.FileHeader, stream: AsyncIterator[pb.CreateFileRequest]) -> pb.File:
        file = _new_file(header, self.limits)
        owner = tenant.get()
        declared = header.bytes
        usage = await self._store.usage(owner)
        if usage.bytes + declared > self.limits.max_tenant_upload_bytes:
            raise ResourceExhausted(StorageFull.of_bytes(self.limits.max_tenant_upload_bytes).what, retry_after=None)
        try:
            # Inside the try: a call cancelled while the record is written still deletes it (the store's one
            # thread runs the delete after the insert).
            await self._bounded(self._store.begin(file, owner, max_files=self.limits.max_tenant_uploads))
            size = 0
            async for message in stream:
                if message.WhichOneof("part") != "chunk":
                    raise InvalidArgument.of("header", "only the first message of the stream carries the header")
                if len(message.chunk) > UPLOAD_CHUNK_BYTES:
                    raise InvalidArgument.of("chunk", f"a message carries at most {UPLOAD_CHUNK_BYTES} bytes")
                if size + len(message.chunk) > declared:
                    raise InvalidArgument.of("bytes", f"the stream carries more than the {declared} the header said")
                if message.chunk:
                    size = await self._bounded(
                        self._store.append(file.id, message.chunk, max_owner_bytes=self.limits.max_tenant_upload_bytes)
                    )
            # A stream that ended short was cut (a cancelled call's stream ends as a finished one does): not stored.
            if size != declared:
                raise InvalidArgument.of("bytes", f"the stream carried {size} bytes; the header said {declared}")
            return await self._store.complete(file.id)
        except BaseException:
            await self._store.delete(file.id, None)
            raise

    async def get(self, file_id: str) -> pb.File:
        """GetFile."""
        found = await self._store.get(file_id, tenant.get()) if file_id else None
        if found is None:
            raise _not_found(file_id)
        return found

    async def list(self, request: pb.ListFilesRequest) -> pb.ListFilesResponse:
        """ListFiles: one page, newest first unless ``order`` is "asc"."""
        limit, order = page_bounds(request, default_order="desc", default_size=MAX_FILE_PAGE, max_size=MAX_FILE_PAGE)
        if request.HasField("purpose") and request.purpose not in PURPOSES:
            raise InvalidArgument.of("purpose", f"must be one of {', '.join(PURPOSES)}; got {quote(request.purpose)}")
        after = request.after if request.HasField("after") else None
        try:
            page = await self._store.page(
                tenant.get(),
                after=after,
                limit=limit,
                order=order,
                purpose=request.purpose if request.HasField("purpose") else None,
            )
        except KeyError:
            raise InvalidArgument.of("after", f"no file {quote(after)}") from None
        return page_reply(pb.ListFilesResponse, page.files, page.has_more)

    async def delete(self, file_id: str) -> pb.DeleteFileResponse:
        """DeleteFile: the record and its bytes."""
        if not file_id or not await self._store.delete(file_id, tenant.get()):
            raise _not_found(file_id)
        return pb.DeleteFileResponse(id=file_id, object="file", deleted=True)

    async def download(self, file_id: str) -> AsyncIterator[pb.GetFileContentResponse]:
        """GetFileContent: the bytes in order, at most DOWNLOAD_CHUNK_BYTES a message."""
        await self.get(file_id)
        async for data in self._store.chunks(file_id):
            view = memoryview(data)
            for start in range(0, len(view), DOWNLOAD_CHUNK_BYTES):
                yield pb.GetFileContentResponse(chunk=bytes(view[start : start + DOWNLOAD_CHUNK_BYTES]))

    async def content(self, file_id: str, field_path: str, *, limit: int) -> tuple[pb.File, bytes]:
        """A file's record and whole bytes, for an input naming it by ``file_id``: INVALID_ARGUMENT naming
        ``field_path`` if the caller has no such file or it is larger than ``limit`` bytes."""
        found = await self._store.get(file_id, tenant.get()) if file_id else None
        if found is None:
            raise InvalidArgument.of(field_path, f"no file {quote(file_id)} (upload it with POST /v3/files first)")
        if found.bytes > limit:
            raise InvalidArgument.of(field_path, f"the file has {found.bytes} bytes; at most {limit} are read here")
        return found, b"".join([data async for data in self._store.chunks(file_id)])

    async def expire(self) -> int:
        """Delete expired files and abandoned uploads; how many."""
        return await self._store.expire()

    @staticmethod
    async def _bounded(work: Awaitable[_T]) -> _T:
        """``work``'s result; a bound it hit is RESOURCE_EXHAUSTED (not retriable: the tenant must delete files)."""
        try:
            return await work
        except StorageFull as full:
            raise ResourceExhausted(full.what, retry_after=None) from None


def _new_file(header: pb.FileHeader, limits: FileLimits) -> pb.File:
    """The record of a new upload, from its header (INVALID_ARGUMENT naming each bad field)."""
    violations = []
    if not header.HasField("bytes"):  # required: how a cut stream is told from a whole one (see _stored)
        violations.append(FieldViolation("bytes", "required: the file's size, which its chunks must add up to"))
    elif not 0 < header.bytes <= limits.max_upload_bytes:
        problem = "the file is empty" if header.bytes <= 0 else _too_large(limits.max_upload_bytes)
        violations.append(FieldViolation("file", problem))
    name = header.filename
    if not name or len(name) > MAX_FILENAME_CHARS or not name.isprintable():
        violations.append(
            FieldViolation("filename", f"required: 1 to {MAX_FILENAME_CHARS} printable characters; got {quote(name)}")
        )
    if header.purpose not in PURPOSES:
        violations.append(
            FieldViolation("purpose", f"must be one of {', '.join(PURPOSES)}; got {quote(header.purpose)}")
        )
    created = now()
    file = pb.File(
        id=new_id("file-"), object="file", created_at=created, filename=name, purpose=header.purpose, status="processed"
    )
    if header.HasField("expires_after"):
        problems = expiry_violations(header.expires_after, "expires_after")
        violations += problems
        if not problems:  # (an out-of-range one would overflow the int64 field: INTERNAL where a 400 is due)
            file.expires_at = created + header.expires_after.seconds
    elif header.purpose in DEFAULT_EXPIRY_SECONDS:
        file.expires_at = created + DEFAULT_EXPIRY_SECONDS[header.purpose]
    InvalidArgument.check(violations)
    return file


def expiry_violations(after: pb.FileExpiration, field: str) -> list[FieldViolation]:
    """What is wrong with an expiry (OpenAI's FileExpirationAfter: anchor created_at, one hour to 30 days), named
    under ``field`` (a file's expires_after, a batch's output_expires_after)."""
    violations = []
    if after.anchor != "created_at":
        violations.append(FieldViolation(f"{field}.anchor", f"must be 'created_at'; got {quote(after.anchor)}"))
    if not MIN_EXPIRY_SECONDS <= after.seconds <= MAX_EXPIRY_SECONDS:
        violations.append(
            FieldViolation(
                f"{field}.seconds", f"must be {MIN_EXPIRY_SECONDS} to {MAX_EXPIRY_SECONDS}; got {after.seconds}"
            )
        )
    return violations


def _too_large(bound: int) -> str:
    return f"the file is larger than this server's bound of {bound} bytes"


def _not_found(file_id: str) -> NotFound:
    return NotFound(f"no file {quote(file_id)}", param="file_id")
