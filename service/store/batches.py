"""Batches (the Batch API) and their request lines, in the response store's SQLite file.

The tables are declared with the others in service/store/responses.py; this module reads and writes them on the
response store's thread. A batch's lines are copied from its input file when it is created (deleting the file
later changes nothing), and each line's result is written once, with the batch's counts, in one transaction: a
line with a result is never run again, and a line without one is run after a restart.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from clients.v1 import batch_pb2
from service.store.responses import ResponseStore, transaction

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

    async def record(self, batch_id: str, result: Result, count: Callable[[Batch, Result], None]) -> bool:
        """Store a line's result and ``count`` it into the batch, in one transaction; False (nothing written) if
        the line had a result already."""
        return await self.record_many(batch_id, [result], count) == 1

    async def record_many(
        self, batch_id: str, results: Sequence[Result], count: Callable[[Batch, Result], None]
    ) -> int:
        """``record`` for several lines in one transaction (a cancelled batch's 50,000 unrun lines took a minute
        one transaction each); the number written (a line with a result already is left as it is)."""
        outputs = [(result, json.dumps(result.output, ensure_ascii=False)) for result in results]

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                batch = Batch.FromString(
                    conn.execute("SELECT batch FROM batches WHERE id = ?", (batch_id,)).fetchone()[0]
                )
                written = 0
                for result, output in outputs:
                    if conn.execute(
                        "UPDATE batch_lines SET status = ?, output = ? "
                        "WHERE batch_id = ? AND line = ? AND status IS NULL",
                        (result.status, output, batch_id, result.number),
                    ).rowcount:
                        count(batch, result)
                        written += 1
                if written:
                    conn.execute("UPDATE batches SET batch = ? WHERE id = ?", (batch.SerializeToString(), batch_id))
                return written

        return await self._store.run(work)

    async def outputs(self, batch_id: str, *, after: int, limit: int) -> list[Result]:
        """Up to ``limit`` lines with a result, numbered above ``after``, in input order."""

        def work(conn: sqlite3.Connection) -> list[Result]:
            rows = conn.execute(
                "SELECT line, status, output FROM batch_lines WHERE batch_id = ? AND status IS NOT NULL AND line > ?"
                " ORDER BY line LIMIT ?",
                (batch_id, after, limit),
            ).fetchall()
            return [Result(number, status, json.loads(output)) for number, status, output in rows]

        return await self._store.run(work)
