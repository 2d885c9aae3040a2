"""Who a call acts for: with API keys configured, each key is a tenant, and what it stores is its own.

The interceptor sets ``tenant`` once the key is checked; stored objects keep the
tenant's fingerprint (never the key), and another key finds nothing there
(NOT_FOUND, as for an id that does not exist). With no keys configured every
caller is the same tenant, "".
"""

from __future__ import annotations

import contextvars
import hashlib

tenant: contextvars.ContextVar[str] = contextvars.ContextVar("tenant", default="")


def fingerprint(api_key: str) -> str:
    """A stable, one-way name for an API key (what the store keeps)."""
    return hashlib.sha256(b"ovserve tenant\0" + api_key.encode()).hexdigest()[:32]
