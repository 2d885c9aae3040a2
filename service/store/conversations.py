"""Stored conversations and their items, in the response store's SQLite file.

The tables are declared with the others in service/store/database.py (one schema version for the file);
this module only reads and writes them, on the response store's thread. Every read and write is scoped to an
owner (service/store/tenancy.py): another tenant's conversation does not exist here.

Items keep the order they were added in (``position`` grows, never reused) and an id unique within their
conversation: an item added with an id the conversation already holds gets a fresh one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass

from ovserve.clients.defaults import MAX_MESSAGE_BYTES
from ovserve.clients.v1 import conversation_pb2
from ovserve.clients.v1 import response_object_pb2 as objects_pb2
from ovserve.service.ids import new_id
from ovserve.service.store.database import transaction
from ovserve.service.store.responses import ResponseStore

# A page holds at most this many bytes of items (beyond ``limit``'s count): 30 items of 4 MB made a page the gRPC
# message limit refused, and the bridge turns a page into JSON of about twice its size. One item always fits.
MAX_PAGE_BYTES = MAX_MESSAGE_BYTES // 4

Conversation = conversation_pb2.Conversation
Item = objects_pb2.InputItem


class ConversationFull(Exception):
    """Adding the items would grow the conversation past its bound; nothing was added."""

    def __init__(self, held: int, bound: int) -> None:
        super().__init__(f"the conversation holds {held} items, at most {bound}")
        self.held = held
        self.bound = bound


@dataclass(frozen=True)
class ItemPage:
    """One page of a conversation's items and whether more follow."""

    items: list[Item]
    has_more: bool


class ConversationStore:
    """Conversations and their items, sharing ``store``'s file and thread."""

    def __init__(self, store: ResponseStore, *, max_items: int) -> None:
        """``max_items``: the most items one conversation may hold."""
        self._store = store
        self.max_items = max_items

    async def create(self, conversation: Conversation, items: Sequence[Item], owner: str) -> list[Item]:
        """Store a new conversation with its first items; returns the items as stored (ids made unique)."""
        row = (conversation.id, conversation.created_at, owner, conversation.SerializeToString())

        def work(conn: sqlite3.Connection) -> list[Item]:
            with transaction(conn):
                conn.execute("INSERT INTO conversations (id, created_at, owner, conversation) VALUES (?, ?, ?, ?)", row)
                return _append(conn, conversation.id, items, self.max_items)

        return await self._store.run(work)

    async def get(self, conversation_id: str, owner: str) -> Conversation | None:
        """The conversation, or None (unknown, or another owner's)."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            return _blob(conn, conversation_id, owner)

        blob = await self._store.run(work)
        return None if blob is None else Conversation.FromString(blob)

    async def set_metadata(self, conversation_id: str, metadata: dict[str, str], owner: str) -> Conversation | None:
        """Replace the conversation's metadata; the updated conversation, or None if there is none of this owner."""

        def work(conn: sqlite3.Connection) -> bytes | None:
            with transaction(conn):
                blob = _blob(conn, conversation_id, owner)
                if blob is None:
                    return None
                conversation = Conversation.FromString(blob)
                conversation.metadata.clear()
                conversation.metadata.update(metadata)
                updated = conversation.SerializeToString()
                conn.execute("UPDATE conversations SET conversation = ? WHERE id = ?", (updated, conversation_id))
                return updated

        blob = await self._store.run(work)
        return None if blob is None else Conversation.FromString(blob)

    async def delete(self, conversation_id: str, owner: str) -> bool:
        """Delete a conversation and its items; False if there was none of this owner."""

        def work(conn: sqlite3.Connection) -> bool:
            with transaction(conn):
                if _blob(conn, conversation_id, owner) is None:
                    return False
                conn.execute("DELETE FROM conversation_items WHERE conversation_id = ?", (conversation_id,))
                conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,))
                return True

        return await self._store.run(work)

    async def append(
        self, conversation_id: str, items: Sequence[Item], owner: str, *, bounded: bool = True
    ) -> list[Item] | None:
        """Append items; the items as stored, or None if unknown. Past the bound raises ConversationFull, unless
        not ``bounded`` (a finished response's turn, which must not be lost)."""
        bound = self.max_items if bounded else 2**62

        def work(conn: sqlite3.Connection) -> list[Item] | None:
            with transaction(conn):
                if _blob(conn, conversation_id, owner) is None:
                    return None
                return _append(conn, conversation_id, items, bound)

        return await self._store.run(work)

    async def items(self, conversation_id: str, owner: str) -> list[Item] | None:
        """Every item of the conversation, oldest first; None if unknown."""

        def work(conn: sqlite3.Connection) -> list[bytes] | None:
            with transaction(conn, write=False):
                if _blob(conn, conversation_id, owner) is None:
                    return None
                rows = conn.execute(
                    "SELECT item FROM conversation_items WHERE conversation_id = ? ORDER BY position",
                    (conversation_id,),
                ).fetchall()
            return [blob for (blob,) in rows]

        blobs = await self._store.run(work)
        return None if blobs is None else [Item.FromString(blob) for blob in blobs]

    async def page(
        self, conversation_id: str, owner: str, *, after: str | None, limit: int, order: str
    ) -> ItemPage | None:
        """One page of items (``order`` "asc" or "desc", after the item ``after`` names); None if unknown.

        At most ``limit`` items and MAX_PAGE_BYTES of them (never less than one item): a page cut short by size
        says ``has_more`` like one cut by count. An ``after`` that names no item of this conversation raises
        KeyError."""
        if order not in ("asc", "desc"):
            raise ValueError(f'order must be "asc" or "desc", not {order!r}')
        # Fixed SQL per order (no user text in the statement); fetch one extra row to learn has_more.
        compare, direction = (">", "ASC") if order == "asc" else ("<", "DESC")
        page_sql = (
            f"SELECT item FROM conversation_items WHERE conversation_id = ? AND position {compare} ?"
            f" ORDER BY position {direction} LIMIT ?"
        )

        def work(conn: sqlite3.Connection) -> tuple[list[bytes], bool] | None:
            with transaction(conn, write=False):
                if _blob(conn, conversation_id, owner) is None:
                    return None
                if after is None:
                    start = -1 if order == "asc" else 2**62
                else:
                    found = _position(conn, conversation_id, after)
                    if found is None:
                        raise KeyError(after)
                    start = found
                blobs: list[bytes] = []
                size = 0
                for (blob,) in conn.execute(page_sql, (conversation_id, start, limit + 1)):  # row by row
                    size += len(blob)
                    if len(blobs) == limit or (blobs and size > MAX_PAGE_BYTES):
                        return blobs, True
                    blobs.append(blob)
            return blobs, False

        found = await self._store.run(work)
        if found is None:
            return None
        blobs, has_more = found
        return ItemPage([Item.FromString(blob) for blob in blobs], has_more)

    async def item(self, conversation_id: str, item_id: str, owner: str) -> Item | KeyError | None:
        """The item; None if the conversation is unknown, KeyError (returned) if the item is."""

        def work(conn: sqlite3.Connection) -> bytes | KeyError | None:
            with transaction(conn, write=False):
                if _blob(conn, conversation_id, owner) is None:
                    return None
                found = conn.execute(
                    "SELECT item FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
                    (conversation_id, item_id),
                ).fetchone()
            return KeyError(item_id) if found is None else found[0]

        blob = await self._store.run(work)
        return blob if not isinstance(blob, bytes) else Item.FromString(blob)

    async def delete_item(self, conversation_id: str, item_id: str, owner: str) -> Conversation | KeyError | None:
        """Delete one item; the conversation, None if it is unknown, KeyError (returned) if the item is."""

        def work(conn: sqlite3.Connection) -> bytes | KeyError | None:
            with transaction(conn):
                blob = _blob(conn, conversation_id, owner)
                if blob is None:
                    return None
                deleted = conn.execute(
                    "DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
                    (conversation_id, item_id),
                ).rowcount
                return blob if deleted else KeyError(item_id)

        blob = await self._store.run(work)
        return blob if not isinstance(blob, bytes) else Conversation.FromString(blob)


def _blob(conn: sqlite3.Connection, conversation_id: str, owner: str) -> bytes | None:
    found = conn.execute(
        "SELECT conversation FROM conversations WHERE id = ? AND owner = ?", (conversation_id, owner)
    ).fetchone()
    return None if found is None else found[0]


def _position(conn: sqlite3.Connection, conversation_id: str, item_id: str) -> int | None:
    found = conn.execute(
        "SELECT position FROM conversation_items WHERE conversation_id = ? AND item_id = ?", (conversation_id, item_id)
    ).fetchone()
    return None if found is None else int(found[0])


def _append(conn: sqlite3.Connection, conversation_id: str, items: Sequence[Item], bound: int) -> list[Item]:
    """Insert items after the last one (in the caller's transaction); a taken id gets a fresh one."""
    count, last = conn.execute(
        "SELECT COUNT(*), MAX(position) FROM conversation_items WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    if count + len(items) > bound:
        raise ConversationFull(count, bound)
    position = -1 if last is None else int(last)
    stored = []
    for source in items:
        item = Item()
        item.CopyFrom(source)
        while _position(conn, conversation_id, item.id) is not None:
            item.id = fresh_id(item.id)
        position += 1
        conn.execute(
            "INSERT INTO conversation_items VALUES (?, ?, ?, ?)",
            (conversation_id, position, item.id, item.SerializeToString()),
        )
        stored.append(item)
    return stored


def fresh_id(taken: str) -> str:
    """A new id with the same prefix as ``taken`` ("msg_...")."""
    prefix = taken.split("_", 1)[0] + "_" if "_" in taken else "item_"
    return new_id(prefix)
