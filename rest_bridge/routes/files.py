"""The Files API: OpenAI's /files (multipart upload, list), /files/{id} (read, delete) and /files/{id}/content.

An upload is read as it arrives with python-multipart's streaming parser: its text fields kept (a few, each
short), its one file spooled (in memory up to SPOOL_MEMORY_BYTES, then in a temporary file), so a large upload
never sits in memory. The fields may come before or after the file (OpenAI's Python client sends them first, its
Node client and many curl lines the file first), so the upload is sent to FileService.CreateFile once the form
is whole: its header, then its bytes in SEND_CHUNK_BYTES messages. Downloads stream the file's chunks as they
come from the service.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import grpc
import python_multipart
from python_multipart.multipart import parse_options_header
from tornado.iostream import StreamClosedError

from ovserve.clients.defaults import MIB
from ovserve.clients.v1 import file_pb2 as pb
from ovserve.rest_bridge.errors import BridgeError, from_rpc_error
from ovserve.rest_bridge.handler import BridgeHandler
from ovserve.rest_bridge.translate.body import bad_request
from ovserve.rest_bridge.translate.query import integer, query_strings

if TYPE_CHECKING:  # (declared for type checkers only)
    from python_multipart.multipart import MultipartCallbacks

SPOOL_MEMORY_BYTES = MIB
SEND_CHUNK_BYTES = MIB
# OpenAI's form has 4 parts (file, purpose, expires_after[anchor], expires_after[seconds]); a text field longer
# than 1 KiB is none of them. A part's headers carry its name and filename (255 bytes on most file systems).
MAX_PARTS = 8
MAX_FIELD_BYTES = 1024
MAX_PART_HEADER_BYTES = 4 * 1024
FIELDS = ("purpose", "expires_after[anchor]", "expires_after[seconds]")
MAX_LIST_LIMIT = 10_000


class UploadForm:
    """A multipart/form-data upload, fed as it arrives: its text fields and its one ``file`` part (spooled).

    ``error`` is the first thing found wrong (the rest of the body is then only read and dropped)."""

    def __init__(self, content_type: str) -> None:
        media_type, options = parse_options_header(content_type)
        self.error: BridgeError | None = None
        self.fields: dict[str, bytearray] = {}
        self.filename: str | None = None
        self.file: Any = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES)  # noqa: SIM115 (closed by close())
        self.size = 0
        self.ended = False
        self._parts = 0
        self._header_name, self._header_value = bytearray(), bytearray()
        self._headers: dict[bytes, bytes] = {}
        self._target: bytearray | None = None  # the text field the part's data goes to; None: the file
        if media_type != b"multipart/form-data" or not options.get(b"boundary"):
            self.error = BridgeError(
                415, "Content-Type must be multipart/form-data with a boundary", code="unsupported_media_type"
            )
            return
        callbacks: MultipartCallbacks = {
            "on_part_begin": self._part_begin,
            "on_header_field": self._header_name_data,
            "on_header_value": self._header_value_data,
            "on_header_end": self._header_end,
            "on_headers_finished": self._headers_finished,
            "on_part_data": self._part_data,
            "on_end": self._end,
        }
        try:
            self._parser = python_multipart.MultipartParser(
                options[b"boundary"], callbacks, max_header_size=MAX_PART_HEADER_BYTES
            )
        except python_multipart.exceptions.FormParserError as error:  # a boundary past RFC 2046's (and its) bound
            self.error = bad_request("file", f"file: not a readable multipart/form-data body: {error}")

    def feed(self, chunk: bytes) -> None:
        """Parse the next bytes of the body (nothing more once an error was found)."""
        if self.error is not None:
            return
        try:
            self._parser.write(chunk)
        except BridgeError as error:
            self.error = error
        except python_multipart.exceptions.FormParserError as error:
            self.error = bad_request("file", f"file: not a readable multipart/form-data body: {error}")

    def close(self) -> None:
        """Let go of the spooled file."""
        self.file.close()

    # ---- the parser's callbacks ----

    def _part_begin(self) -> None:
        self._parts += 1
        if self._parts > MAX_PARTS:
            raise bad_request("file", f"file: the form has more than {MAX_PARTS} parts")
        self._headers = {}

    def _header_name_data(self, data: bytes, start: int, end: int) -> None:
        self._header_name.extend(data[start:end])

    def _header_value_data(self, data: bytes, start: int, end: int) -> None:
        self._header_value.extend(data[start:end])

    def _header_end(self) -> None:
        self._headers[bytes(self._header_name).lower()] = bytes(self._header_value)
        self._header_name, self._header_value = bytearray(), bytearray()

    def _headers_finished(self) -> None:
        _, options = parse_options_header(self._headers.get(b"content-disposition", b""))
        name = options.get(b"name", b"").decode("utf-8", "replace")
        if name == "file":
            if self.filename is not None:
                raise bad_request("file", "file: give one file")
            self.filename = options.get(b"filename", b"").decode("utf-8", "replace") or "upload"
            self._target = None
        elif name in FIELDS:
            if name in self.fields:
                raise bad_request(name, f"{name}: give it once")
            self._target = self.fields[name] = bytearray()
        else:
            raise bad_request(
                name or "file", f"Unrecognized request argument supplied: {name or '(a part without a name)'}"
            )

    def _part_data(self, data: bytes, start: int, end: int) -> None:
        if self._target is None:
            self.file.write(data[start:end])
            self.size += end - start
            return
        self._target.extend(data[start:end])
        if len(self._target) > MAX_FIELD_BYTES:
            name = next(name for name, value in self.fields.items() if value is self._target)
            raise bad_request(name, f"{name}: longer than {MAX_FIELD_BYTES} bytes")

    def _end(self) -> None:
        self.ended = True

    # ---- the request ----

    def header(self) -> pb.FileHeader:
        """The upload's header for CreateFile; a 400 names a missing or unreadable field."""
        if not self.ended:
            raise bad_request("file", "file: the body does not end with its boundary (a truncated body?)")
        if self.filename is None:
            raise bad_request("file", "Missing required parameter: 'file'.")
        text = {name: _text(name, value) for name, value in self.fields.items()}
        if "purpose" not in text:
            raise bad_request("purpose", "Missing required parameter: 'purpose'.")
        header = pb.FileHeader(filename=self.filename, purpose=text["purpose"], bytes=self.size)
        if "expires_after[anchor]" in text or "expires_after[seconds]" in text:
            header.expires_after.anchor = text.get("expires_after[anchor]", "")
            seconds = text.get("expires_after[seconds]", "")
            header.expires_after.seconds = integer("expires_after[seconds]", seconds, 0, 2**53) if seconds else 0
        return header


def _text(name: str, value: bytearray) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise bad_request(name, f"{name}: not UTF-8 text") from None


def file_object(file: pb.File) -> dict[str, Any]:
    """OpenAI's OpenAIFile."""
    rendered: dict[str, Any] = {
        "id": file.id,
        "object": file.object or "file",
        "bytes": file.bytes,
        "created_at": file.created_at,
        "filename": file.filename,
        "purpose": file.purpose,
        "status": file.status or "processed",
    }
    if file.HasField("expires_at"):
        rendered["expires_at"] = file.expires_at
    return rendered


def _file_list(reply: pb.ListFilesResponse) -> dict[str, Any]:
    return {
        "object": reply.object or "list",
        "data": [file_object(file) for file in reply.data],
        "first_id": reply.first_id,
        "last_id": reply.last_id,
        "has_more": reply.has_more,
    }


def list_request(query: dict[str, list[bytes]]) -> pb.ListFilesRequest:
    """GET /files' query: ``after``, ``limit`` (1-10,000), ``order``, ``purpose``; checked by the service."""
    values = query_strings(query, {"after", "limit", "order", "purpose"}, ())
    request = pb.ListFilesRequest()
    for name in ("after", "order", "purpose"):
        if name in values:
            setattr(request, name, values[name][0])
    if "limit" in values:
        request.limit = integer("limit", values["limit"][0], 1, MAX_LIST_LIMIT)
    return request


class FilesHandler(BridgeHandler):
    """POST (upload) and GET (list) /v3/files."""

    form: UploadForm | None = None

    def prepare_body(self) -> None:
        if self.request.method != "POST":
            return
        limit = self.settings_.max_upload_body_bytes
        length = self.request.headers.get("Content-Length")
        if length and length.isdigit() and int(length) > limit:
            raise BridgeError(413, f"the upload is larger than {limit} bytes", code="request_too_large")
        self.request.connection.set_max_body_size(limit)  # type: ignore[union-attr]
        self.form = UploadForm(self.request.headers.get("Content-Type", ""))

    def body_received(self, chunk: bytes) -> None:
        if self.form is not None:
            self.form.feed(chunk)

    def release_body(self) -> None:
        if self.form is not None:  # answered, or abandoned mid-upload: the spool file goes now
            self.form.close()
            self.form = None
        super().release_body()

    async def get(self) -> None:
        await self.answer(self.backend.files.ListFiles, list_request(self.request.query_arguments), _file_list)

    async def post(self) -> None:
        assert self.form is not None  # prepare() made it
        form = self.form
        try:
            if form.error is not None:
                raise form.error
            header = form.header()
        except BridgeError:
            await self.check_key()
            raise
        self.call = self.backend.files.CreateFile(**self.grpc_options())
        async with self.call_errors():  # the client leaving mid-way cancels the call: 499, nothing stored
            with contextlib.suppress(grpc.aio.AioRpcError, asyncio.InvalidStateError):
                await self._send(header, form)  # if the service ended the call mid-upload, its status says why
            reply = await self.call
        self.write_json(file_object(reply.file))

    async def _send(self, header: pb.FileHeader, form: UploadForm) -> None:
        """The upload's messages: its header, then its bytes read back from the spool (off the event loop)."""
        await self.call.write(pb.CreateFileRequest(header=header))
        form.file.seek(0)
        loop = asyncio.get_running_loop()
        while chunk := await loop.run_in_executor(None, form.file.read, SEND_CHUNK_BYTES):
            await self.call.write(pb.CreateFileRequest(chunk=chunk))
        await self.call.done_writing()


class FileHandler(BridgeHandler):
    """GET and DELETE /v3/files/{id}."""

    async def get(self, file_id: str) -> None:
        query_strings(self.request.query_arguments, (), ())
        request = pb.GetFileRequest(file_id=file_id)
        await self.answer(self.backend.files.GetFile, request, lambda reply: file_object(reply.file))

    async def delete(self, file_id: str) -> None:
        request = pb.DeleteFileRequest(file_id=file_id)
        await self.answer(
            self.backend.files.DeleteFile,
            request,
            lambda reply: {"id": reply.id, "object": reply.object or "file", "deleted": reply.deleted},
        )


class FileContentHandler(BridgeHandler):
    """GET /v3/files/{id}/content: the file's bytes (as uploaded), streamed."""

    async def get(self, file_id: str) -> None:
        query_strings(self.request.query_arguments, (), ())
        record = await self.unary(self.backend.files.GetFile, pb.GetFileRequest(file_id=file_id))
        self.call = self.backend.files.GetFileContent(pb.GetFileContentRequest(file_id=file_id), **self.grpc_options())
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Length", str(record.file.bytes))
        self.set_header("Content-Disposition", _attachment(record.file.filename))
        started = False
        try:
            async for message in self.call:
                started = True
                self.write(message.chunk)
                await self.flush()
        except grpc.aio.AioRpcError as error:
            if not started:  # e.g. deleted between the two calls: an ordinary error response
                self.clear_header("Content-Length")
                raise from_rpc_error(error) from None
            self.request.connection.close()  # type: ignore[union-attr]  # short of Content-Length: the client sees it
            return
        except StreamClosedError:
            return
        with contextlib.suppress(StreamClosedError):
            await self.finish()


def _attachment(filename: str) -> str:
    """A Content-Disposition naming the file (RFC 6266's filename*, so any name is safe in the header)."""
    return f"attachment; filename*=UTF-8''{quote(filename, safe='')}"


# File ids ("file-...") have no "/".
ROUTES = [
    ("/files", FilesHandler),
    ("/files/([^/]+)", FileHandler),
    ("/files/([^/]+)/content", FileContentHandler),
]
