"""A worker's pipe carries large arrays out of band, written by a sender thread, in order (service/workers/process.py).

Before, a chat with 8 images of 4096 x 4096 pixels had its 400 MB of pixels pickled and written to the engine
process on the event loop: /health waited 2 s. Now the arrays are not copied into the pickle, and a message with
more than LARGE_MESSAGE_BYTES of them is written from the writer's own thread, every later message behind it.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
import pytest

from ovserve.service.workers.child import ChildConnection
from ovserve.service.workers.process import LARGE_MESSAGE_BYTES, MessageWriter


def test_a_large_message_leaves_the_caller_at_once_and_arrives_in_order() -> None:
    ours, theirs = multiprocessing.Pipe()
    writer, child = MessageWriter(ours, "test"), ChildConnection(theirs)
    big = np.arange(8 * LARGE_MESSAGE_BYTES, dtype=np.uint8).reshape(-1, 1024)  # far more than a pipe holds
    small = np.arange(12, dtype=np.float32).reshape(3, 4)
    sender = threading.Thread(
        target=lambda: [writer.send(message) for message in (("first", small), ("big", big), ("after", 2))]
    )
    sender.start()
    sender.join(timeout=30)
    assert not sender.is_alive()  # nothing has read the pipe yet: a direct write of 8 MiB would still wait
    first, large, after = child.recv(), child.recv(), child.recv()
    assert first[0] == "first" and np.array_equal(first[1], small) and first[1].dtype == np.float32
    assert large[0] == "big" and np.array_equal(large[1], big) and large[1].flags.writeable
    assert after == ("after", 2)
    deadline = time.monotonic() + 30
    while writer._queued and time.monotonic() < deadline:
        time.sleep(0.01)
    writer.send(("direct", None))  # the outbox is empty: written by the caller again
    assert child.recv() == ("direct", None)


def test_a_broken_pipe_drops_queued_messages_and_fails_the_next_direct_write() -> None:
    ours, theirs = multiprocessing.Pipe()
    writer = MessageWriter(ours, "test")
    theirs.close()
    writer.send(("big", np.zeros(2 * LARGE_MESSAGE_BYTES, dtype=np.uint8)))  # the sender thread meets the break
    deadline = time.monotonic() + 30
    while writer._queued and time.monotonic() < deadline:
        time.sleep(0.01)
    assert writer._queued == 0
    with pytest.raises(OSError):
        writer.send(("small", 1))


def _leaves_at_once(writer: MessageWriter, messages: list[object]) -> None:
    sender = threading.Thread(target=lambda: [writer.send(message) for message in messages])
    sender.start()
    sender.join(timeout=30)
    assert not sender.is_alive()  # nothing has read the pipe yet: a direct write would still wait


def test_a_large_pickle_without_arrays_leaves_the_caller_at_once() -> None:
    """A message's pickle counts too: an embeddings job of 2,048 token-id lists is plain lists, no arrays."""
    ours, theirs = multiprocessing.Pipe()
    writer, child = MessageWriter(ours, "test"), ChildConnection(theirs)
    rows = [list(range(index, index + 1000)) for index in range(2048)]  # ~4 MB pickled: distinct lists
    _leaves_at_once(writer, [("rows", rows)])
    assert child.recv() == ("rows", rows)


def test_a_queued_writer_never_writes_on_the_caller() -> None:
    """A pipeline's process reads between calls lasting seconds: many small messages fill its pipe as surely as
    one large one (32 embeddings requests of 2,048 inputs held the event loop 5-12 s)."""
    ours, theirs = multiprocessing.Pipe()
    writer, child = MessageWriter(ours, "test", queued=True), ChildConnection(theirs)
    messages: list[object] = [("job", index, list(range(100))) for index in range(2000)]  # ~0.5 MB in all
    _leaves_at_once(writer, messages)
    assert [child.recv() for _ in messages] == messages
