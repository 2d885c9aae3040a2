"""Uploaded files (the Files API): their records and bytes, in the response store's SQLite file.

The tables are declared with the others in service/store/database.py (one schema version for the file); this
module only reads and writes them, on the response store's thread. Every read and write is scoped to an owner
(service/store/tenancy.py): another tenant's file does not exist here.

An upload streams in: its record is written first, marked incomplete, each chunk is its own short transaction
(a long upload never holds the write lock), and the record is completed when the last chunk is in. Only complete
files are found, listed or counted as served; an upload that fails is deleted, and one abandoned by a crash is
deleted once it has not grown for ``STALE_UPLOAD_SECONDS`` (another process sharing the file may still be
writing a younger one).

Every byte a tenant stores here counts against its bound (``--max-tenant-upload-bytes``), a batch's output and
error files included: their records exist, incomplete, while the batch runs, and each line's result adds its
size to its file's ``bytes`` in the transaction that records it (``count_bytes``), before the file's bytes are
written (``fill``) when the batch ends. So the bound is checked when a result comes, and an upload meanwhile sees
the room the batch already took.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from ovserve.clients.defaults import MIB
from ovserve.clients.v1 import file_pb2
from ovserve.service.store.database import transaction
from ovserve.service.store.responses import ResponseStore

File = file_pb2.File

#: An incomplete upload that has not grown for this long was abandoned (its server stopped mid-upload).
STALE_UPLOAD_SECONDS = 3600


@dataclass(frozen=True)
class FileLimits:
    """How much the Files API stores: per file and per tenant (with API keys, each key is a tenant)."""

    max_upload_bytes: int = field(
        default=200 * MIB,
        metadata={
            "help": "largest file an upload (POST /v3/files, FileService) may store; beyond, 400 (OpenAI's batch "
            "input bound)",
            "metavar": "BYTES",
            "default_text": "200 MiB",
        },
    )
    max_tenant_upload_bytes: int = field(
        default=1024 * MIB,
        metadata={
            "help": "bytes of files one tenant (API key) may hold, its batches' output files included; beyond, 429 "
            "until it deletes some (a batch: failed)",
            "metavar": "BYTES",
            "default_text": "1 GiB",
        },
    )
    max_tenant_uploads: int = field(
        default=1000, metadata={"help": "uploaded files one tenant may hold", "metavar": "FILES"}
    )

    def problems(self) -> list[str]:
        """What is wrong with these limits (empty when they can be served)."""
        return [
            f"--{name.replace('_', '-')} must be more than 0; got {getattr(self, name)}"
            for name in ("max_upload_bytes", "max_tenant_upload_bytes", "max_tenant_uploads")
            if not getattr(self, name) > 0
        ]


class UploadedFiles(Protocol):
    """Where a request's ``file_id`` is read from: the Files API (service/api/files.py), for the caller's tenant."""

    async def content(self, file_id: str, field_path: str, *, limit: int) -> tuple[Any, bytes]:
        """The file's record (its ``filename``) and bytes; INVALID_ARGUMENT naming ``field_path`` if unknown."""
        ...


class StorageFull(Exception):
    """The owner's files would exceed a bound; nothing more was stored."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what

    @classmethod
    def of_bytes(cls, bound: int) -> StorageFull:
        """The owner's files would take more than ``bound`` bytes."""
        return cls(f"your files would take more than {bound} bytes ({BYTES_FLAG}): delete some first")


#: The flag that sets the bound on a tenant's stored bytes (what a refusal names).
BYTES_FLAG = "--max-tenant-upload-bytes"


def count_bytes(conn: sqlite3.Connection, file_id: str, size: int, *, max_owner_bytes: int) -> None:
    """Count ``size`` more bytes to the file (inside the caller's transaction); StorageFull, with nothing
    counted, if the owner's files (uploads under way and running batches' outputs included) would pass
    ``max_owner_bytes``."""
    owner = conn.execute("SELECT owner FROM files WHERE id = ?", (file_id,)).fetchone()[0]
    total = conn.execute("SELECT SUM(bytes) FROM files WHERE owner = ?", (owner,)).fetchone()[0]
    if total + size > max_owner_bytes:
        raise StorageFull.of_bytes(max_owner_bytes)
    conn.execute("UPDATE files SET bytes = bytes + ?, touched = ? WHERE id = ?", (size, time.time(), file_id))


@dataclass(frozen=True)
class Usage:
    """What one owner's files take: how many (uploads under way included) and their bytes."""

    files: int
    bytes: int


@dataclass(frozen=True)
class FilePage:
    """One page of an owner's files and whether more follow."""

    files: list[File]
    has_more: bool


class FileStore:
    """Uploaded files, sharing ``store``'s file and thread."""

    def __init__(self, store: ResponseStore) -> None:
        self._store = store

    async def begin(self, file: File, owner: str, *, max_files: int) -> None:
        """Record an upload under way (its bytes to follow); StorageFull if the owner holds ``max_files``."""
        row = (file.id, owner, file.created_at, _expiry(file), file.purpose, time.time(), file.SerializeToString())

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                held = conn.execute("SELECT COUNT(*) FROM files WHERE owner = ?", (owner,)).fetchone()[0]
                if held >= max_files:
                    raise StorageFull(f"you hold {held} files, at most {max_files}: delete some first")
                conn.execute(
                    "INSERT INTO files (id, owner, created_at, expires_at, purpose, bytes, complete, touched, file)"
                    " VALUES (?, ?, ?, ?, ?, 0, 0, ?, ?)",
                    row,
                )

        await self._store.run(work)

    async def append(self, file_id: str, data: bytes, *, max_owner_bytes: int) -> int:
        """Add the next bytes of an upload; returns its size so far. StorageFull if the owner's files (this one
        included) would pass ``max_owner_bytes``."""

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                count_bytes(conn, file_id, len(data), max_owner_bytes=max_owner_bytes)
                _add_chunk(conn, file_id, data)
                return int(conn.execute("SELECT bytes FROM files WHERE id = ?", (file_id,)).fetchone()[0])

        return await self._store.run(work)

    async def reserve(self, file: File, owner: str, size: int) -> None:
        """Record a batch's output file (incomplete, ``size`` bytes counted: its lines recorded so far) unless it
        is recorded already (then it keeps its count). Its bytes follow with ``fill``."""
        row = (file.id, owner, file.created_at, file.purpose, size, time.time(), file.SerializeToString())

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "INSERT OR IGNORE INTO files (id, owner, created_at, expires_at, purpose, bytes, complete, touched,"
                    " file) VALUES (?, ?, ?, NULL, ?, ?, 0, ?, ?)",
                    row,
                )

        await self._store.run(work)

    async def clear(self, file_id: str) -> None:
        """Drop the bytes written to a reserved file (a finalisation interrupted by a restart writes them again);
        what it counts stays."""

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("DELETE FROM file_chunks WHERE file_id = ?", (file_id,))

        await self._store.run(work)

    async def fill(self, file_id: str, data: bytes) -> None:
        """Write the next bytes of a reserved file: they were counted already (``count_bytes``), and never more
        than that count is written (ValueError)."""

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                counted, written = conn.execute(
                    "SELECT bytes, (SELECT COALESCE(SUM(LENGTH(data)), 0) FROM file_chunks WHERE file_id = files.id)"
                    " FROM files WHERE id = ?",
                    (file_id,),
                ).fetchone()
                if written + len(data) > counted:
                    raise ValueError(f"{file_id}: {written} + {len(data)} bytes written, {counted} counted")
                _add_chunk(conn, file_id, data)

        await self._store.run(work)

    async def complete(self, file_id: str, *, expires_after: int | None = None) -> File:
        """Mark an upload complete (found, listed and served from now on); returns its record with its size.

        ``expires_after``: seconds; the file is created now (a batch's output file, reserved when the batch began)
        and expires that long after, when the expiry sweep (``expire``) deletes it."""

        def work(conn: sqlite3.Connection) -> bytes:
            with transaction(conn):
                size, blob = conn.execute("SELECT bytes, file FROM files WHERE id = ?", (file_id,)).fetchone()
                file = File.FromString(blob)
                file.bytes = size
                if expires_after is not None:
                    file.created_at = int(time.time())
                    file.expires_at = file.created_at + expires_after
                blob = file.SerializeToString()
                conn.execute(
                    "UPDATE files SET complete = 1, file = ?, created_at = ?, expires_at = ? WHERE id = ?",
                    (blob, file.created_at, _expiry(file), file_id),
                )
                return bytes(blob)

        return File.FromString(await self._store.run(work))

    async def get(self, file_id: str, owner: str) -> File | None:
        """A complete file's record, or None (unknown, still uploading, expired, or another owner's)."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            row = conn.execute(
                f"SELECT file FROM files WHERE id = ? AND owner = ? AND {_SERVED}", (file_id, owner, time.time())
            ).fetchone()
            return None if row is None else bytes(row[0])

        blob = await self._store.run(work)
        return None if blob is None else File.FromString(blob)

    async def page(self, owner: str, *, after: str | None, limit: int, order: str, purpose: str | None) -> FilePage:
        """A page of the owner's complete files, oldest first with ``order`` "asc", else newest first.

        ``after`` names the last file of the previous page; one that is not the owner's raises KeyError.
        """
        compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
        sql = (
            f"SELECT file FROM files WHERE owner = ? AND {_SERVED} AND (? IS NULL OR purpose = ?)"
            f" AND rowid {compare} ? ORDER BY rowid {direction} LIMIT ?"
        )

        def work(conn: sqlite3.Connection) -> list[bytes]:
            with transaction(conn, write=False):
                if after is None:
                    start = -1 if order == "asc" else 2**62
                else:
                    found = conn.execute(
                        "SELECT rowid FROM files WHERE id = ? AND owner = ?", (after, owner)
                    ).fetchone()
                    if found is None:
                        raise KeyError(after)
                    start = found[0]
                rows = conn.execute(sql, (owner, time.time(), purpose, purpose, start, limit + 1)).fetchall()
            return [bytes(blob) for (blob,) in rows]

        blobs = await self._store.run(work)
        return FilePage([File.FromString(blob) for blob in blobs[:limit]], len(blobs) > limit)

    async def delete(self, file_id: str, owner: str | None) -> bool:
        """Delete a file and its bytes; False if there was none. With an ``owner``, only that owner's complete
        files (what a client deletes: an upload under way or a running batch's output is not its to delete);
        with None, any (cleaning up)."""

        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                gone = conn.execute(
                    "DELETE FROM files WHERE id = ? AND (? IS NULL OR owner = ? AND complete = 1)",
                    (file_id, owner, owner),
                ).rowcount
                if gone:  # (another owner's file keeps its bytes)
                    conn.execute("DELETE FROM file_chunks WHERE file_id = ?", (file_id,))
                return gone > 0

        return await self._store.run(work)

    async def chunks(self, file_id: str) -> AsyncIterator[bytes]:
        """The file's bytes as stored, chunk by chunk (one read each: a large file is never held whole)."""
        seq = 0
        while True:

            def work(conn: sqlite3.Connection, seq: int = seq) -> bytes | None:
                row = conn.execute(
                    "SELECT data FROM file_chunks WHERE file_id = ? AND seq = ?", (file_id, seq)
                ).fetchone()
                return None if row is None else bytes(row[0])

            data = await self._store.run(work)
            if data is None:
                return
            yield data
            seq += 1

    async def usage(self, owner: str) -> Usage:
        """How many files the owner holds (uploads under way included), and their bytes."""

        def work(conn: sqlite3.Connection) -> tuple[int, int]:
            count, size = conn.execute("SELECT COUNT(*), SUM(bytes) FROM files WHERE owner = ?", (owner,)).fetchone()
            return int(count), int(size or 0)

        return Usage(*await self._store.run(work))

    async def expire(self) -> int:
        """Delete the files past their expiry and the uploads abandoned for STALE_UPLOAD_SECONDS; how many (a
        running batch's output files are incomplete for as long as it runs, and end with it)."""
        now = time.time()

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                ids = [
                    file_id
                    for (file_id,) in conn.execute(
                        "SELECT id FROM files WHERE (expires_at IS NOT NULL AND expires_at <= ?)"
                        " OR (complete = 0 AND touched < ? AND purpose != 'batch_output')",
                        (now, now - STALE_UPLOAD_SECONDS),
                    )
                ]
                for file_id in ids:
                    conn.execute("DELETE FROM files WHERE id = ?", (file_id,))
                    conn.execute("DELETE FROM file_chunks WHERE file_id = ?", (file_id,))
                return len(ids)

        return await self._store.run(work)


# A file is served once complete and until it expires (the one bound parameter: now).
_SERVED = "complete = 1 AND (expires_at IS NULL OR expires_at > ?)"


def _add_chunk(conn: sqlite3.Connection, file_id: str, data: bytes) -> None:
    """The file's next chunk (its bytes counted by the caller)."""
    conn.execute(
        "INSERT INTO file_chunks (file_id, seq, data)"
        " VALUES (?, (SELECT COUNT(*) FROM file_chunks WHERE file_id = ?), ?)",
        (file_id, file_id, data),
    )


def _expiry(file: File) -> int | None:
    return file.expires_at if file.HasField("expires_at") else None
