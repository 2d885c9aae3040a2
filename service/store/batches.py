"""Batches (the Batch API) and their request lines, in the response store's SQLite file.

The tables are declared with the others in service/store/database.py; this module reads and writes them on the
response store's thread. A batch's lines are copied from its input file when it is created (deleting the file
later changes nothing), and each line's result is written once, with the batch's counts, in one transaction: a
line with a result is never run again, and a line without one is run after a restart. That transaction also
counts the result's bytes to the batch's output or error file (service/store/files.py): a result that would
take the owner past its bound on stored bytes is not recorded.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ovserve.clients.v1 import batch_pb2
from ovserve.service.store.database import transaction
from ovserve.service.store.files import StorageFull, count_bytes
from ovserve.service.store.responses import ResponseStore

Batch = batch_pb2.Batch

#: Batch statuses with work left: what a restarted server resumes.
UNFINISHED = ("validating", "in_progress", "finalizing", "cancelling")


@dataclass(frozen=True)
class BatchSettings:
    """How batches run."""

    batch_concurrency: int = field(
        default=4,
        metadata={
            "help": "batch requests run at once over all batches while no interactive call generates (one while "
            "some do, so interactive requests keep their latency)",
            "metavar": "REQUESTS",
        },
    )

    def problems(self) -> list[str]:
        """What is wrong with these settings."""
        return (
            []
            if self.batch_concurrency > 0
            else [f"--batch-concurrency must be more than 0; got {self.batch_concurrency}"]
        )


@dataclass(frozen=True)
class Line:
    """One request line of a batch: its number (1-based, input order), custom_id and body (JSON text)."""

    number: int
    custom_id: str
    body: str


@dataclass(frozen=True)
class Result:
    """One line's outcome: its HTTP status (200: the output file; else the error file) and its output line."""

    number: int
    status: int
    output: dict[str, Any]


@dataclass(frozen=True)
class Output:
    """One recorded line as its file holds it: number, HTTP status, and its output line (JSON text)."""

    number: int
    status: int
    text: str


@dataclass(frozen=True)
class OutputFiles:
    """A batch's output file (the lines answered 200) and error file (the others), and the owner's bound on
    stored bytes that their lines count against. Their ids are the batch's own, so a finalisation interrupted
    by a restart writes them again in place."""

    output: str
    error: str
    max_owner_bytes: int

    @classmethod
    def of_batch(cls, batch_id: str, max_owner_bytes: int) -> OutputFiles:
        """The files of ``batch_id``."""
        suffix = batch_id.removeprefix("batch_")
        return cls(f"file-out-{suffix}", f"file-err-{suffix}", max_owner_bytes)

    def holding(self, status: int) -> str:
        """The file that holds a line of ``status``."""
        return self.output if status == 200 else self.error


def line_bytes(text: str) -> int:
    """What an output line takes in its file: its UTF-8 bytes and a newline (``staged`` sums the same in SQL)."""
    return len(text.encode()) + 1


@dataclass(frozen=True)
class BatchPage:
    """One page of an owner's batches and whether more follow."""

    batches: list[Batch]
    has_more: bool


class BatchStore:
    """Batches and their lines, sharing ``store``'s file and thread."""

    def __init__(self, store: ResponseStore) -> None:
        self._store = store

    async def create(self, batch: Batch, owner: str, lines: Sequence[tuple[str, str]]) -> None:
        """Store a new batch with its lines ((custom_id, body JSON) in input order)."""
        row = (batch.id, owner, batch.created_at, batch.status, batch.SerializeToString())
        rows = [(batch.id, number, custom_id, body) for number, (custom_id, body) in enumerate(lines, 1)]

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute("INSERT INTO batches (id, owner, created_at, status, batch) VALUES (?, ?, ?, ?, ?)", row)
                conn.executemany("INSERT INTO batch_lines (batch_id, line, custom_id, body) VALUES (?, ?, ?, ?)", rows)

        await self._store.run(work)

    async def get(self, batch_id: str, owner: str | None) -> Batch | None:
        """The batch as last written, or None (unknown, or another owner's; ``owner`` None: anyone's)."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            found = conn.execute(
                "SELECT batch FROM batches WHERE id = ? AND (? IS NULL OR owner = ?)", (batch_id, owner, owner)
            ).fetchone()
            return None if found is None else bytes(found[0])

        blob = await self._store.run(work)
        return None if blob is None else Batch.FromString(blob)

    async def change(self, batch_id: str, edit: Callable[[Batch], None]) -> Batch:
        """Apply ``edit`` to the stored batch, in one transaction (the runner and a cancel may both write)."""

        def work(conn: sqlite3.Connection) -> bytes:
            with transaction(conn):
                batch = Batch.FromString(
                    conn.execute("SELECT batch FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]
                )
                edit(batch)
                blob = batch.SerializeToString()
                conn.execute("UPDATE batches SET status = ?, batch = ? WHERE id = ?", (batch.status, blob, batch_id))
                return blob

        return Batch.FromString(await self._store.run(work))

    async def page(self, owner: str, *, after: str | None, limit: int) -> BatchPage:
        """A page of the owner's batches, newest first; ``after`` not the owner's raises KeyError."""

        def work(conn: sqlite3.Connection) -> list[bytes]:
            with transaction(conn, write=False):
                start = 2**62
                if after is not None:
                    found = conn.execute(
                        "SELECT rowid FROM batches WHERE id = ? AND owner = ?", (after, owner)
                    ).fetchone()
                    if found is None:
                        raise KeyError(after)
                    start = found[0]
                rows = conn.execute(
                    "SELECT batch FROM batches WHERE owner = ? AND rowid < ? ORDER BY rowid DESC LIMIT ?",
                    (owner, start, limit + 1),
                ).fetchall()
            return [bytes(blob) for (blob,) in rows]

        blobs = await self._store.run(work)
        return BatchPage([Batch.FromString(blob) for blob in blobs[:limit]], len(blobs) > limit)

    async def unfinished(self) -> list[tuple[str, str]]:
        """(id, owner) of every batch with work left, oldest first."""

        def work(conn: sqlite3.Connection) -> list[tuple[str, str]]:
            marks = ", ".join("?" * len(UNFINISHED))
            rows = conn.execute(
                f"SELECT id, owner FROM batches WHERE status IN ({marks}) ORDER BY rowid", UNFINISHED
            ).fetchall()
            return [(str(batch_id), str(owner)) for batch_id, owner in rows]

        return await self._store.run(work)

    async def pending(self, batch_id: str, *, after: int, limit: int) -> list[Line]:
        """Up to ``limit`` lines without a result, numbered above ``after``, in input order."""

        def work(conn: sqlite3.Connection) -> list[Line]:
            rows = conn.execute(
                "SELECT line, custom_id, body FROM batch_lines WHERE batch_id = ? AND status IS NULL AND line > ?"
                " ORDER BY line LIMIT ?",
                (batch_id, after, limit),
            ).fetchall()
            return [Line(number, custom_id, body) for number, custom_id, body in rows]

        return await self._store.run(work)

    async def record(
        self,
        batch_id: str,
        result: Result,
        count: Callable[[Batch, Result], None],
        files: OutputFiles | None = None,
    ) -> bool:
        """Store a line's result and ``count`` it into the batch, in one transaction; False (nothing written) if
        the line had a result already. With ``files``, its bytes are counted to the file holding it, and a
        result that does not fit raises StorageFull (nothing written)."""
        return await self.record_many(batch_id, [result], count, files) == 1

    async def record_many(
        self,
        batch_id: str,
        results: Sequence[Result],
        count: Callable[[Batch, Result], None],
        files: OutputFiles | None = None,
    ) -> int:
        """``record`` for several lines in one transaction (a cancelled batch's 50,000 unrun lines took a minute
        one transaction each); the number written (a line with a result already is left as it is). With
        ``files``, the results that fit are written in order up to the first that does not, then StorageFull."""

        def work(conn: sqlite3.Connection) -> tuple[int, StorageFull | None]:
            with transaction(conn):
                batch = Batch.FromString(
                    conn.execute("SELECT batch FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]
                )
                written, full = 0, None
                for result in results:
                    # (serialised here, on the store's thread: a line's output can be megabytes of embeddings)
                    output = json.dumps(result.output, ensure_ascii=False)
                    if (
                        conn.execute(
                            "SELECT 1 FROM batch_lines WHERE batch_id = ? AND line = ? AND status IS NULL",
                            (batch_id, result.number),
                        ).fetchone()
                        is None
                    ):
                        continue
                    if files is not None:
                        try:
                            count_bytes(
                                conn, files.holding(result.status), line_bytes(output),
                                max_owner_bytes=files.max_owner_bytes,
                            )  # fmt: skip
                        except StorageFull as refused:
                            full = refused
                            break
                    conn.execute(
                        "UPDATE batch_lines SET status = ?, output = ? WHERE batch_id = ? AND line = ?",
                        (result.status, output, batch_id, result.number),
                    )
                    count(batch, result)
                    written += 1
                if written:
                    conn.execute("UPDATE batches SET batch = ? WHERE id = ?", (batch.SerializeToString(), batch_id))
                return written, full

        written, full = await self._store.run(work)
        if full is not None:  # raised once what fitted is committed
            raise full
        return written

    async def staged(self, batch_id: str) -> dict[bool, int]:
        """The file bytes of the lines recorded so far: of the output file (True) and the error file (False)."""

        def work(conn: sqlite3.Connection) -> dict[bool, int]:
            rows = conn.execute(
                "SELECT status = 200, SUM(LENGTH(CAST(output AS BLOB)) + 1) FROM batch_lines"
                " WHERE batch_id = ? AND status IS NOT NULL GROUP BY status = 200",
                (batch_id,),
            ).fetchall()
            return {True: 0, False: 0} | {bool(ok): int(size) for ok, size in rows}

        return await self._store.run(work)

    async def outputs(self, batch_id: str, *, after: int, limit: int) -> list[Output]:
        """Up to ``limit`` lines with a result, numbered above ``after``, in input order."""

        def work(conn: sqlite3.Connection) -> list[Output]:
            rows = conn.execute(
                "SELECT line, status, output FROM batch_lines WHERE batch_id = ? AND status IS NOT NULL AND line > ?"
                " ORDER BY line LIMIT ?",
                (batch_id, after, limit),
            ).fetchall()
            return [Output(number, status, text) for number, status, text in rows]

        return await self._store.run(work)
