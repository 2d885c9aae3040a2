"""Stored chat completions (chat ``store: true``), in the response store's SQLite file.

The tables are declared with the others in service/store/database.py (one schema version for the file);
this module only reads and writes them, on the response store's thread. Every read and write is scoped to an
owner (service/store/tenancy.py): another tenant's completion does not exist here.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from ovserve.clients.v1 import chat_pb2
from ovserve.service.store.database import transaction
from ovserve.service.store.responses import ResponseStore

Completion = chat_pb2.CreateChatCompletionResponse


@dataclass(frozen=True)
class Page:
    """One page of a listing and whether more follow."""

    completions: list[Completion]
    has_more: bool


class ChatCompletionStore:
    """Stored chat completions and their request messages, sharing ``store``'s file and thread."""

    def __init__(self, store: ResponseStore) -> None:
        self._store = store

    async def put(self, completion: Completion, messages: list[chat_pb2.ChatMessage], owner: str) -> None:
        """Store a completion (its ``metadata`` included) with the request messages it answered."""
        row = (
            completion.id,
            completion.created,
            completion.model,
            owner,
            json.dumps(dict(completion.metadata), ensure_ascii=False),
            completion.SerializeToString(),
        )
        rows = [(completion.id, i, message.SerializeToString()) for i, message in enumerate(messages)]

        def work(conn: sqlite3.Connection) -> None:
            with transaction(conn):
                conn.execute(
                    "INSERT INTO chat_completions (id, created_at, model, owner, metadata, completion)"
                    " VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )
                conn.executemany("INSERT INTO chat_completion_messages VALUES (?, ?, ?)", rows)

        await self._store.run(work)

    async def get(self, completion_id: str, owner: str) -> Completion | None:
        """The stored completion, or None (unknown, or another owner's)."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            found = conn.execute(
                "SELECT completion FROM chat_completions WHERE id = ? AND owner = ?", (completion_id, owner)
            ).fetchone()
            return None if found is None else found[0]

        blob = await self._store.run(work)
        return None if blob is None else Completion.FromString(blob)

    async def set_metadata(self, completion_id: str, metadata: dict[str, str], owner: str) -> Completion | None:
        """Replace a completion's metadata; the updated completion, or None if there is none of this owner."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            with transaction(conn):
                found = conn.execute(
                    "SELECT completion FROM chat_completions WHERE id = ? AND owner = ?", (completion_id, owner)
                ).fetchone()
                if found is None:
                    return None
                completion = Completion.FromString(found[0])
                completion.metadata.clear()
                completion.metadata.update(metadata)
                blob = completion.SerializeToString()
                conn.execute(
                    "UPDATE chat_completions SET metadata = ?, completion = ? WHERE id = ?",
                    (json.dumps(metadata, ensure_ascii=False), blob, completion_id),
                )
                return blob

        blob = await self._store.run(work)
        return None if blob is None else Completion.FromString(blob)

    async def delete(self, completion_id: str, owner: str) -> bool:
        """Delete a completion and its messages; False if there was none of this owner."""

        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                gone = conn.execute(
                    "DELETE FROM chat_completions WHERE id = ? AND owner = ?", (completion_id, owner)
                ).rowcount
                if gone:
                    conn.execute("DELETE FROM chat_completion_messages WHERE completion_id = ?", (completion_id,))
                return gone > 0

        return await self._store.run(work)

    async def page(
        self,
        owner: str,
        *,
        model: str | None,
        metadata: dict[str, str],
        after: str | None,
        limit: int,
        order: str,
    ) -> Page:
        """A page of the owner's completions, filtered by model and metadata pairs, in ``order`` ("asc"/"desc").

        ``after`` names the last completion of the previous page; one that is not the owner's raises KeyError.
        """
        compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
        # Fixed SQL text; the metadata filter binds each key and value (json_each compares keys exactly,
        # whatever characters they hold, where a JSON path would need quoting).
        filters = "".join(
            " AND EXISTS (SELECT 1 FROM json_each(metadata) WHERE key = ? AND value = ?)" for _ in metadata
        )
        sql = (
            "SELECT completion FROM chat_completions WHERE owner = ? AND (? IS NULL OR model = ?)"
            f" AND seq {compare} ?{filters} ORDER BY seq {direction} LIMIT ?"
        )
        pairs = [value for pair in metadata.items() for value in pair]

        def work(conn: sqlite3.Connection) -> list[bytes]:
            with transaction(conn, write=False):
                if after is None:
                    start = -1 if order == "asc" else 2**62
                else:
                    found = conn.execute(
                        "SELECT seq FROM chat_completions WHERE id = ? AND owner = ?", (after, owner)
                    ).fetchone()
                    if found is None:
                        raise KeyError(after)
                    start = found[0]
                rows = conn.execute(sql, (owner, model, model, start, *pairs, limit + 1)).fetchall()
            return [blob for (blob,) in rows]

        blobs = await self._store.run(work)
        return Page([Completion.FromString(blob) for blob in blobs[:limit]], len(blobs) > limit)

    async def messages(
        self, completion_id: str, owner: str, *, after: int | None, limit: int, order: str
    ) -> tuple[list[tuple[int, chat_pb2.ChatMessage]], bool] | None:
        """A page of a completion's request messages as (position, message), and whether more follow.

        None if the completion is unknown (or another owner's). ``after`` is a position (exclusive).
        """
        compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
        sql = (
            "SELECT position, message FROM chat_completion_messages WHERE completion_id = ?"
            f" AND position {compare} ? ORDER BY position {direction} LIMIT ?"
        )
        start = after if after is not None else (-1 if order == "asc" else 2**62)

        def work(conn: sqlite3.Connection) -> list[tuple[int, bytes]] | None:
            with transaction(conn, write=False):
                if (
                    conn.execute(
                        "SELECT 1 FROM chat_completions WHERE id = ? AND owner = ?", (completion_id, owner)
                    ).fetchone()
                    is None
                ):
                    return None
                return conn.execute(sql, (completion_id, start, limit + 1)).fetchall()

        rows = await self._store.run(work)
        if rows is None:
            return None
        page = [(position, chat_pb2.ChatMessage.FromString(blob)) for position, blob in rows[:limit]]
        return page, len(rows) > limit
