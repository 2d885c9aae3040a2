"""Ids and timestamps of the objects the server makes and stores (completions, responses, items)."""

from __future__ import annotations

import time
import uuid


def new_id(prefix: str) -> str:
    """A unique OpenAI-style id: ``cmpl-…``, ``chatcmpl-…``, ``resp_…``."""
    return f"{prefix}{uuid.uuid4().hex}"


def now() -> int:
    """Unix time in seconds, for ``created``."""
    return int(time.time())
