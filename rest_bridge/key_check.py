"""The caller's key checked from the headers, before a large request body is read.

The keys are known only to the service, so checking one costs an RPC. ``KeysSeen`` remembers, for a short
while, the Authorization values the service accepted (by their SHA-256, at most MAX_KEYS of them), so a
client sending many large bodies with the same key pays that RPC once per KEY_MEMORY_SECONDS, and a server
without API keys (which accepts any value) pays it about as rarely. Only acceptances are remembered: a refusal
must never outlive a key added to the server, while a remembered acceptance outliving a removed key costs
only the read of one body (the service still checks the key of the call itself).
"""

from __future__ import annotations

import hashlib
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable

import tornado.httputil

from ovserve.rest_bridge.off_loop import INLINE_BODY_BYTES

KEY_MEMORY_SECONDS = 60.0
MAX_KEYS = 1024


def body_may_be_large(headers: tornado.httputil.HTTPHeaders) -> bool:
    """Whether the request declares a body larger than INLINE_BODY_BYTES, or one of unknown length (chunked):
    the bodies whose reading is worth a key check first. (http_guard has refused malformed lengths already.)"""
    if "Transfer-Encoding" in headers:
        return True
    length = headers.get("Content-Length", "0").strip()
    return not length.isdigit() or int(length) > INLINE_BODY_BYTES


class KeysSeen:
    """Authorization values the service accepted lately, by hash, in the order they were last used."""

    def __init__(
        self, seconds: float = KEY_MEMORY_SECONDS, count: int = MAX_KEYS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seconds, self._count, self._clock = seconds, count, clock
        self._until: OrderedDict[bytes, float] = OrderedDict()  # digest -> when the acceptance is forgotten

    async def check(self, authorization: str, ask_service: Callable[[], Awaitable[bool]]) -> None:
        """Return at once if ``authorization`` was accepted lately; else ``ask_service()`` (which raises the 401,
        and returns whether the service answered at all), remembering an acceptance."""
        digest = hashlib.sha256(authorization.encode("utf-8", "surrogateescape")).digest()
        now = self._clock()
        until = self._until.get(digest)
        if until is not None and until > now:
            self._until.move_to_end(digest)
            return
        if not await ask_service():
            return  # the service did not answer (unavailable, say): nothing learned, the request goes on
        self._until[digest] = self._clock() + self._seconds
        self._until.move_to_end(digest)
        while len(self._until) > self._count:
            self._until.popitem(last=False)


_SEEN: weakref.WeakKeyDictionary[object, KeysSeen] = weakref.WeakKeyDictionary()


def keys_seen(service: object) -> KeysSeen:
    """The KeysSeen of one service (a bridge's stub): what one service accepted says nothing about another's keys."""
    seen = _SEEN.get(service)
    if seen is None:
        seen = _SEEN[service] = KeysSeen()
    return seen
