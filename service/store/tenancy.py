"""Who a call acts for: with API keys configured, each key is a tenant, and what it stores is its own.

The interceptor sets ``tenant`` once the key is checked; stored objects keep the
tenant's fingerprint (never the key), and another key finds nothing there
(NOT_FOUND, as for an id that does not exist). With no keys configured every
caller is the same tenant, "".
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
from collections.abc import Callable

tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="")


def fingerprint(api_key: str) -> str:
    """A stable, one-way name for an API key (what the store keeps)."""
    return hashlib.sha256(b"ovserve tenant\0" + api_key.encode()).hexdigest()[:32]


@dataclasses.dataclass
class TokenTally:
    """The tokens a call's generations read and wrote (prompt and output, as usage counts them), and how the
    call's key's limits are settled with them."""

    count: int = 0
    settle: Callable[[int | None], None] | None = None  # the key's ticket (None: settled, or no limits)
    # A background response took it over: its run settles it when it ends, not the call that started it.
    kept: bool = False

    def end(self, *, by_run: bool = False) -> None:
        """Settle the key's limits with the tokens counted (none counted: the reservation stands); once. The
        call's end does nothing once a background run has ``kept`` it; the run's end (``by_run``) settles."""
        if (self.kept and not by_run) or self.settle is None:
            return
        settle, self.settle = self.settle, None
        settle(self.count or None)


#: The call's tally (set by the interceptor for a key with limits); each generation adds to it.
tokens_used: contextvars.ContextVar[TokenTally | None] = contextvars.ContextVar("tokens_used", default=None)

#: The models the call's key may name and see (None: every model); set by the interceptor.
models_allowed: contextvars.ContextVar[frozenset[str] | None] = contextvars.ContextVar("models_allowed", default=None)
