"""A request's prefix-cache salt (vLLM's ``cache_salt``): requests reuse each other's cached prompt blocks only
when they share it (and, with API keys, their key). The namespace it picks is made in the engine (salting.py)."""

from __future__ import annotations

from typing import Any

from ovserve.service.errors import FieldViolation, InvalidArgument

FIELD = "cache_salt"
MAX_CHARS = 256  # vLLM sets no bound; a salt is an identifier, not content


def cache_salt(request: Any) -> str:
    """The request's salt ("" when it sends none); INVALID_ARGUMENT naming the field when it is empty or too long."""
    if not request.HasField(FIELD):
        return ""
    salt = str(request.cache_salt)
    if not 1 <= len(salt) <= MAX_CHARS:
        problem = f"must be 1 to {MAX_CHARS} characters; got {len(salt)}"
        InvalidArgument.check([FieldViolation(FIELD, problem)])
    return salt
