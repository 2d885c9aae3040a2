"""Uploaded files (the Files API): their records and bytes, in the response store's SQLite file.

The tables are declared with the others in service/store/responses.py (one schema version for the file); this
module only reads and writes them, on the response store's thread. Every read and write is scoped to an owner
(service/store/tenancy.py): another tenant's file does not exist here.

An upload streams in: its record is written first, marked incomplete, each chunk is its own short transaction
(a long upload never holds the write lock), and the record is completed when the last chunk is in. Only complete
files are found, listed or counted as served; an upload that fails is deleted, and one abandoned by a crash is
deleted once it has not grown for ``STALE_UPLOAD_SECONDS`` (another process sharing the file may still be
writing a younger one).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from clients.defaults import MIB
from clients.v1 import file_pb2
from service.store.responses import ResponseStore, transaction

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
            "help": "bytes of uploaded files one tenant (API key) may hold; beyond, 429 until it deletes some",
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
        return cls(f"your files would take more than {bound} bytes: delete some first")


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
                owner, size, chunks = conn.execute(
                    "SELECT owner, bytes, (SELECT COUNT(*) FROM file_chunks WHERE file_id = files.id)"
                    " FROM files WHERE id = ?",
                    (file_id,),
                ).fetchone()
                total = conn.execute("SELECT SUM(bytes) FROM files WHERE owner = ?", (owner,)).fetchone()[0]
                if total + len(data) > max_owner_bytes:
                    raise StorageFull.of_bytes(max_owner_bytes)
                conn.execute("INSERT INTO file_chunks (file_id, seq, data) VALUES (?, ?, ?)", (file_id, chunks, data))
                conn.execute(
                    "UPDATE files SET bytes = bytes + ?, touched = ? WHERE id = ?", (len(data), time.time(), file_id)
                )
                return int(size) + len(data)

        return await self._store.run(work)

    async def complete(self, file_id: str) -> File:
        """Mark an upload complete (found, listed and served from now on); returns its record with its size."""

        def work(conn: sqlite3.Connection) -> bytes:
            with transaction(conn):
                size, blob = conn.execute("SELECT bytes, file FROM files WHERE id = ?", (file_id,)).fetchone()
                file = File.FromString(blob)
                file.bytes = size
                blob = file.SerializeToString()
                conn.execute("UPDATE files SET complete = 1, file = ? WHERE id = ?", (blob, file_id))
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
        """Delete a file (complete or not) and its bytes; False if there was none of this owner (None: any)."""

        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                gone = conn.execute(
                    "DELETE FROM files WHERE id = ? AND (? IS NULL OR owner = ?)", (file_id, owner, owner)
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
        """Delete the files past their expiry and the uploads abandoned for STALE_UPLOAD_SECONDS; how many."""
        now = time.time()

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                ids = [
                    file_id
                    for (file_id,) in conn.execute(
                        "SELECT id FROM files WHERE (expires_at IS NOT NULL AND expires_at <= ?)"
                        " OR (complete = 0 AND touched < ?)",
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


def _expiry(file: File) -> int | None:
    return file.expires_at if file.HasField("expires_at") else None
