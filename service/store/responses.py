"""The response store: stored Responses, their input items, conversations and stream events, in SQLite.

One ``ResponseStore`` owns one SQLite connection and one worker thread. Every statement runs on that thread
(``loop.run_in_executor``), so the event loop never waits on the disk and the connection is never used by two
threads at once. Each method is one short transaction, so several server processes (or a server and a CLI)
can share a file: WAL lets readers run beside a writer, ``BEGIN IMMEDIATE`` takes the write lock up front and the
busy timeout makes a second writer wait for it instead of failing with "database is locked".

Proto messages are kept as serialized bytes and the conversation as JSON text; the few columns that are
queried (id, created_at, status, item ids, sequence numbers) are copied out of the messages next to them.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ovserve.clients.v1 import response_events_pb2, response_object_pb2, response_pb2
from ovserve.service.store import database
from ovserve.service.store.database import transaction
from ovserve.service.store.items import output_items

# Response.status values that mean "work still running"; must match the partial index above.
_UNFINISHED = (response_object_pb2.RESPONSE_STATUS_QUEUED, response_object_pb2.RESPONSE_STATUS_IN_PROGRESS)

_T = TypeVar("_T")


@dataclass
class StoredResponse:
    """Everything kept for one response."""

    #: The Response object as last returned (status, output, usage...).
    response: response_object_pb2.Response
    #: The request as received (a StreamResponseRequest is field-identical: callers convert).
    request: response_pb2.CreateResponseRequest
    #: This turn's input items, each with its id ("msg_...", "fc_...", ...).
    input_items: list[response_object_pb2.InputItem]
    #: The resolved chat history including this response's output, as JSON-serialisable chat-template dicts,
    #: so a follow-up with previous_response_id rebuilds the history in one read.
    conversation: list[dict[str, Any]]
    #: The tenant that created it (service/store/tenancy.py): only it finds the response again.
    owner: str = ""


class ResponseStore:
    """Stored responses in an SQLite file, or in memory when no path is given."""

    def __init__(self, path: str | Path | None = None, *, max_age_seconds: float | None = None) -> None:
        """Open (creating if needed) the store; raises StoreSchemaError if the file has a newer schema.

        Call this at startup: it opens the file and checks the schema on the calling thread's behalf.
        """
        self.path = None if path is None else Path(path)
        self.max_age_seconds = max_age_seconds
        # One thread per store: statements run in order, and only this thread touches the connection.
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ovserve-store")
        try:
            self._conn = self._executor.submit(self._open).result()
        except BaseException:
            self._executor.shutdown(wait=True)
            raise
        self._closed = False

    def _open(self) -> sqlite3.Connection:
        return database.connect(self.path)

    async def run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work(connection)`` on the store's thread. Work once asked for is done: a caller cancelled meanwhile
        neither cuts a transaction short nor drops one still waiting its turn.

        Public for the other stores that share this file (service/store/chat_completions.py)."""
        if self._closed:
            raise RuntimeError("response store is closed")
        # Shielded: cancelling the await of run_in_executor's future cancels the pool's work item if it has not
        # started, and a clean-up asked for as a call is cancelled (a cut upload's delete) would never run.
        return await asyncio.shield(asyncio.get_running_loop().run_in_executor(self._executor, work, self._conn))

    async def put(self, stored: StoredResponse) -> None:
        """Insert a response, or replace every part of the one with the same id (its events are kept)."""
        response_id = stored.response.id
        if not response_id:
            raise ValueError("StoredResponse.response.id is empty")
        row = (
            response_id,
            stored.response.created_at,
            stored.response.status,
            stored.response.SerializeToString(),
            stored.request.SerializeToString(),
            json.dumps(stored.conversation, ensure_ascii=False),
            stored.owner,
        )
        items = [(response_id, i, item.id, item.SerializeToString()) for i, item in enumerate(stored.input_items)]
        outputs = _outputs(stored.response)

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                # An upsert, not INSERT OR REPLACE: the row is updated in place, nothing else is touched.
                conn.execute(
                    "INSERT INTO responses (id, created_at, status, response, request, conversation, owner)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET created_at = excluded.created_at,"
                    " status = excluded.status, response = excluded.response, request = excluded.request,"
                    " conversation = excluded.conversation, owner = excluded.owner",
                    row,
                )
                conn.execute("DELETE FROM input_items WHERE response_id = ?", (response_id,))
                conn.executemany("INSERT INTO input_items VALUES (?, ?, ?, ?)", items)
                _put_outputs(conn, response_id, outputs)

        await self.run(work)

    async def update_response(self, response: response_object_pb2.Response) -> None:
        """Replace only the Response of a stored response (a background run's progress); no-op if unknown."""
        row = (response.created_at, response.status, response.SerializeToString(), response.id)
        outputs = _outputs(response)

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                if conn.execute(
                    "UPDATE responses SET created_at = ?, status = ?, response = ? WHERE id = ?", row
                ).rowcount:
                    _put_outputs(conn, response.id, outputs)

        await self.run(work)

    async def get(self, response_id: str, owner: str | None = None) -> StoredResponse | None:
        """The stored response, or None if there is none with this id (of this ``owner``, unless None)."""

        def work(conn: sqlite3.Connection) -> StoredResponse | None:
            with transaction(conn, write=False):  # one snapshot for both reads
                found = conn.execute(
                    "SELECT response, request, conversation, owner FROM responses WHERE id = ?"
                    " AND (? IS NULL OR owner = ?)",
                    (response_id, owner, owner),
                ).fetchone()
                if found is None:
                    return None
                items = conn.execute(
                    "SELECT item FROM input_items WHERE response_id = ? ORDER BY position", (response_id,)
                ).fetchall()
            return StoredResponse(
                response=response_object_pb2.Response.FromString(found[0]),
                request=response_pb2.CreateResponseRequest.FromString(found[1]),
                input_items=[response_object_pb2.InputItem.FromString(blob) for (blob,) in items],
                conversation=json.loads(found[2]),
                owner=found[3],
            )

        return await self.run(work)

    async def delete(self, response_id: str, owner: str | None = None) -> bool:
        """Delete a response with its input items and events; False if there was none (of this ``owner``)."""

        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                if not _owned(conn, response_id, owner):
                    return False
                conn.execute("DELETE FROM events WHERE response_id = ?", (response_id,))
                conn.execute("DELETE FROM input_items WHERE response_id = ?", (response_id,))
                conn.execute("DELETE FROM output_items WHERE response_id = ?", (response_id,))
                return conn.execute("DELETE FROM responses WHERE id = ?", (response_id,)).rowcount > 0

        return await self.run(work)

    async def input_items(
        self,
        response_id: str,
        *,
        after: str | None = None,
        limit: int = 20,
        order: str = "desc",
        owner: str | None = None,
    ) -> tuple[list[response_object_pb2.InputItem], bool] | None:
        """One page of a response's input items and whether more follow; None if the response is unknown.

        With ``owner``, a response of another tenant is unknown too.

        ``order`` is "asc" (input order) or "desc" (newest first); ``after`` is the id of the last item of the
        previous page (exclusive). An ``after`` that names no item of this response raises KeyError.
        """
        if order not in ("asc", "desc"):
            raise ValueError(f'order must be "asc" or "desc", not {order!r}')
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        # Fixed SQL per order (no user text in the statement); fetch one extra row to learn has_more.
        compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
        page_sql = (
            f"SELECT item FROM input_items WHERE response_id = ? AND position {compare} ?"
            f" ORDER BY position {direction} LIMIT ?"
        )

        def work(conn: sqlite3.Connection) -> tuple[list[response_object_pb2.InputItem], bool] | None:
            with transaction(conn, write=False):
                if not _owned(conn, response_id, owner):
                    return None
                if after is None:
                    start = -1 if order == "asc" else 2**62
                else:
                    found = conn.execute(
                        "SELECT MIN(position) FROM input_items WHERE response_id = ? AND item_id = ?",
                        (response_id, after),
                    ).fetchone()
                    if found[0] is None:
                        raise KeyError(after)
                    start = found[0]
                rows = conn.execute(page_sql, (response_id, start, limit + 1)).fetchall()
            items = [response_object_pb2.InputItem.FromString(blob) for (blob,) in rows[:limit]]
            return items, len(rows) > limit

        return await self.run(work)

    async def append_events(self, response_id: str, events: Sequence[response_events_pb2.ResponseStreamEvent]) -> None:
        """Store stream events of a response; an event with an already-stored sequence number replaces it."""
        rows = [(response_id, event.sequence_number, event.SerializeToString()) for event in events]
        if not rows:
            return

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.executemany("INSERT OR REPLACE INTO events VALUES (?, ?, ?)", rows)

        await self.run(work)

    async def events_after(
        self, response_id: str, sequence_number: int
    ) -> list[response_events_pb2.ResponseStreamEvent]:
        """Stored events of a response with a sequence number above the given one, in order (resuming a stream)."""

        def work(conn: sqlite3.Connection) -> list[bytes]:
            rows = conn.execute(
                "SELECT event FROM events WHERE response_id = ? AND sequence_number > ? ORDER BY sequence_number",
                (response_id, sequence_number),
            ).fetchall()
            return [blob for (blob,) in rows]

        return [response_events_pb2.ResponseStreamEvent.FromString(blob) for blob in await self.run(work)]

    async def expire(self, now: float | None = None) -> int:
        """Delete responses created more than max_age_seconds before ``now`` (default: the clock), with their
        items and events, and stored chat completions as old with their messages; returns how many responses.
        Does nothing when the store has no max age."""
        if self.max_age_seconds is None:
            return 0
        cutoff = (time.time() if now is None else now) - self.max_age_seconds

        def work(conn: sqlite3.Connection) -> int:
            with transaction(conn):
                old = "SELECT id FROM responses WHERE created_at < :cutoff"
                conn.execute(f"DELETE FROM events WHERE response_id IN ({old})", {"cutoff": cutoff})
                conn.execute(f"DELETE FROM input_items WHERE response_id IN ({old})", {"cutoff": cutoff})
                conn.execute(f"DELETE FROM output_items WHERE response_id IN ({old})", {"cutoff": cutoff})
                old_chats = "SELECT id FROM chat_completions WHERE created_at < :cutoff"
                conn.execute(
                    f"DELETE FROM chat_completion_messages WHERE completion_id IN ({old_chats})", {"cutoff": cutoff}
                )
                conn.execute("DELETE FROM chat_completions WHERE created_at < ?", (cutoff,))
                return conn.execute("DELETE FROM responses WHERE created_at < ?", (cutoff,)).rowcount

        return await self.run(work)

    async def find_item(self, item_id: str, owner: str | None = None) -> response_object_pb2.InputItem | None:
        """The item with this id (an input or output item of a stored response, or a conversation's item) of
        ``owner`` (unless None), in input-item form; the newest when several share the id; None if none."""
        query = (
            "SELECT item, r.created_at FROM input_items i JOIN responses r ON r.id = i.response_id"
            " WHERE i.item_id = :id AND (:owner IS NULL OR r.owner = :owner)"
            " UNION ALL SELECT item, r.created_at FROM output_items o JOIN responses r ON r.id = o.response_id"
            " WHERE o.item_id = :id AND (:owner IS NULL OR r.owner = :owner)"
            " UNION ALL SELECT item, c.created_at FROM conversation_items ci JOIN conversations c"
            " ON c.id = ci.conversation_id WHERE ci.item_id = :id AND (:owner IS NULL OR c.owner = :owner)"
            " ORDER BY 2 DESC LIMIT 1"
        )

        def work(conn: sqlite3.Connection) -> response_object_pb2.InputItem | None:
            found = conn.execute(query, {"id": item_id, "owner": owner}).fetchone()
            return None if found is None else response_object_pb2.InputItem.FromString(found[0])

        return await self.run(work)

    async def count(self) -> int:
        """How many responses the store holds (for the metrics)."""

        def work(conn: sqlite3.Connection) -> int:
            return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

        return await self.run(work)

    async def unfinished(self) -> list[str]:
        """Ids of responses still queued or in progress: after a restart nothing runs them any more."""

        def work(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT id FROM responses WHERE status IN (?, ?) ORDER BY id", _UNFINISHED)
            return [response_id for (response_id,) in rows.fetchall()]

        return await self.run(work)

    def close(self) -> None:
        """Wait for pending statements, then close the connection. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._executor.submit(self._conn.close).result()
        self._executor.shutdown(wait=True)


def _outputs(response: response_object_pb2.Response) -> list[tuple[int, str, bytes]]:
    """A response's output items as rows of output_items (position, id, the item as a later turn replays it)."""
    return [(i, item.id, item.SerializeToString()) for i, item in enumerate(output_items(response))]


def _put_outputs(conn: sqlite3.Connection, response_id: str, outputs: list[tuple[int, str, bytes]]) -> None:
    conn.execute("DELETE FROM output_items WHERE response_id = ?", (response_id,))
    conn.executemany("INSERT INTO output_items VALUES (?, ?, ?, ?)", [(response_id, *row) for row in outputs])


def _owned(conn: sqlite3.Connection, response_id: str, owner: str | None) -> bool:
    """Whether the response exists (and belongs to ``owner``, unless None)."""
    found = conn.execute(
        "SELECT 1 FROM responses WHERE id = ? AND (? IS NULL OR owner = ?)", (response_id, owner, owner)
    ).fetchone()
    return found is not None
