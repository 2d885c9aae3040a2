"""The store's SQLite file: its tables (one schema version for the whole file), how it is opened, and transactions.

Every store of service/store reads and writes its own tables of this one file (responses.py, chat_completions.py,
conversations.py, files.py, batches.py) on the one connection and thread that ResponseStore owns. Opening it
switches the file to WAL (readers beside a writer, several processes on one file), creates what is missing and
upgrades older files in place; a file written by a newer ovserve is refused rather than misread.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: Bumped whenever the tables change; a file written by a newer ovserve is refused rather than misread.
# 2: responses.owner; 3: stored chat completions (chat_completions.py); 4: conversations (conversations.py);
# 5: output items (what item_reference finds) and item-id indexes; 6: uploaded files (files.py) and batches
# (batches.py). Each step only adds tables, so older files are upgraded in place.
SCHEMA_VERSION = 6

#: How long a statement waits for another process's write lock before giving up.
BUSY_TIMEOUT_SECONDS = 5.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,   -- Response.created_at, unix seconds: what expiry compares
    status INTEGER NOT NULL,       -- Response.status, for unfinished() after a restart
    response BLOB NOT NULL,        -- response_object_pb2.Response
    request BLOB NOT NULL,         -- response_pb2.CreateResponseRequest
    conversation TEXT NOT NULL,    -- JSON list of chat-template messages, this response's output included
    owner TEXT NOT NULL DEFAULT '' -- the tenant that created it (service/store/tenancy.py), '' without API keys
);
CREATE INDEX IF NOT EXISTS responses_by_created_at ON responses (created_at);
CREATE INDEX IF NOT EXISTS responses_unfinished ON responses (status) WHERE status IN (1, 2);

CREATE TABLE IF NOT EXISTS input_items (
    response_id TEXT NOT NULL,
    position INTEGER NOT NULL,     -- order of the item in the turn's input, what pagination walks
    item_id TEXT NOT NULL,         -- what `after` names
    item BLOB NOT NULL,            -- response_object_pb2.InputItem
    PRIMARY KEY (response_id, position)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS input_items_by_id ON input_items (response_id, item_id);
CREATE INDEX IF NOT EXISTS input_items_by_item ON input_items (item_id);

CREATE TABLE IF NOT EXISTS output_items (
    response_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    item_id TEXT NOT NULL,
    item BLOB NOT NULL,            -- response_object_pb2.InputItem: the output item as a later turn replays it
    PRIMARY KEY (response_id, position)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS output_items_by_item ON output_items (item_id);

CREATE TABLE IF NOT EXISTS events (
    response_id TEXT NOT NULL,
    sequence_number INTEGER NOT NULL,
    event BLOB NOT NULL,           -- response_events_pb2.ResponseStreamEvent
    PRIMARY KEY (response_id, sequence_number)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS chat_completions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order, what pagination walks
    id TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    model TEXT NOT NULL,
    owner TEXT NOT NULL,           -- the tenant that created it (service/store/tenancy.py)
    metadata TEXT NOT NULL,        -- JSON object of strings, what the metadata filter reads
    completion BLOB NOT NULL       -- chat_pb2.CreateChatCompletionResponse
);
CREATE INDEX IF NOT EXISTS chat_completions_by_owner ON chat_completions (owner, seq);

CREATE TABLE IF NOT EXISTS chat_completion_messages (
    completion_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    message BLOB NOT NULL,         -- chat_pb2.ChatMessage as sent
    PRIMARY KEY (completion_id, position)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    created_at INTEGER NOT NULL,
    owner TEXT NOT NULL,           -- the tenant that created it (service/store/tenancy.py)
    conversation BLOB NOT NULL     -- conversation_pb2.Conversation (its metadata included)
);

CREATE TABLE IF NOT EXISTS conversation_items (
    conversation_id TEXT NOT NULL,
    position INTEGER NOT NULL,     -- grows with each item added, never reused: what order and pagination walk
    item_id TEXT NOT NULL,         -- what `after` and the item routes name, unique within a conversation
    item BLOB NOT NULL,            -- response_object_pb2.InputItem
    PRIMARY KEY (conversation_id, position)
) WITHOUT ROWID;
CREATE UNIQUE INDEX IF NOT EXISTS conversation_items_by_id ON conversation_items (conversation_id, item_id);
CREATE INDEX IF NOT EXISTS conversation_items_by_item ON conversation_items (item_id);

CREATE TABLE IF NOT EXISTS files (   -- rowid: upload order, what pagination walks
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,            -- NULL: never
    purpose TEXT NOT NULL,
    bytes INTEGER NOT NULL,        -- stored so far
    complete INTEGER NOT NULL,     -- 0 while the upload streams in
    touched REAL NOT NULL,         -- when it last grew (an upload abandoned by a crash is old)
    file BLOB NOT NULL             -- file_pb2.File
);
CREATE INDEX IF NOT EXISTS files_by_owner ON files (owner, complete);

CREATE TABLE IF NOT EXISTS file_chunks (
    file_id TEXT NOT NULL,
    seq INTEGER NOT NULL,          -- 0, 1, 2...: the order the bytes came in
    data BLOB NOT NULL,
    PRIMARY KEY (file_id, seq)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS batches (   -- rowid: creation order, what pagination walks
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    status TEXT NOT NULL,          -- copied from the batch: what a restart resumes
    batch BLOB NOT NULL            -- batch_pb2.Batch as last written
);
CREATE INDEX IF NOT EXISTS batches_by_owner ON batches (owner);
CREATE INDEX IF NOT EXISTS batches_by_status ON batches (status);

CREATE TABLE IF NOT EXISTS batch_lines (
    batch_id TEXT NOT NULL,
    line INTEGER NOT NULL,         -- 1-based, the input file's order
    custom_id TEXT NOT NULL,
    body TEXT NOT NULL,            -- the request's body, JSON
    status INTEGER,                -- NULL until it ran: the HTTP status of its result
    output TEXT,                   -- its output line, JSON
    PRIMARY KEY (batch_id, line)
) WITHOUT ROWID;
"""


class StoreSchemaError(RuntimeError):
    """The store file was written with a schema this ovserve does not know."""


def connect(path: Path | None) -> sqlite3.Connection:
    """Open the store file at ``path`` (in memory when None) with every table of this schema version.

    Raises StoreSchemaError if the file has a newer schema."""
    # isolation_level=None: no implicit transactions; every write below says BEGIN IMMEDIATE itself.
    target = ":memory:" if path is None else str(path)
    conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    try:
        if path is not None:
            _enable_wal(conn)
            # NORMAL sync is safe under WAL (a crash may lose the last commit, never corrupt the file).
            conn.execute("PRAGMA synchronous=NORMAL")
        with transaction(conn):
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreSchemaError(
                    f"response store {target} has schema version {version}, but this ovserve knows only "
                    f"up to {SCHEMA_VERSION}: upgrade ovserve or point it at another store file"
                )
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            if version == 1:  # written before responses had owners: they belong to the keyless tenant
                conn.execute("ALTER TABLE responses ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        conn.close()
        raise
    return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Put the file in WAL mode: readers do not block the writer, and many processes can share the file.

    The mode is kept in the file, so only its first opener switches it. Switching needs the file to itself and
    SQLite reports "locked" at once instead of calling the busy handler, so when several processes create the
    same file together, retry until the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
            continue
        if mode.lower() != "wal":  # e.g. a file system without shared memory
            raise sqlite3.OperationalError(f"cannot put the response store in WAL mode (it stays {mode!r})")
        return


@contextmanager
def transaction(conn: sqlite3.Connection, *, write: bool = True) -> Iterator[None]:
    """One short transaction. Writes take the write lock at BEGIN: a deferred transaction that later needs it
    can fail with "database is locked" at once, whereas BEGIN IMMEDIATE waits out the busy timeout."""
    conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
