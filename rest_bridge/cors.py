"""CORS for browser clients (chat UIs calling /v3 from another origin): off unless origins are configured.

With ``--cors-origin`` given (repeatable; ``*`` for any), a response to an
allowed ``Origin`` carries ``Access-Control-Allow-Origin``, and a preflight
``OPTIONS`` is answered 204 with the methods and the headers the browser asked
for (the openai package sends ``Authorization``, ``Content-Type`` and its own
``x-stainless-*`` headers). Other origins get no CORS headers, so the browser
refuses to show them the answer.
"""

from __future__ import annotations

import re

METHODS = "GET, POST, DELETE, OPTIONS"
EXPOSED = "x-request-id, Retry-After"  # response headers a page may read
MAX_AGE_SECONDS = 600  # how long a browser may keep a preflight's answer
_HEADER_LIST = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*")
_MAX_REQUESTED = 2048  # bytes of Access-Control-Request-Headers echoed back


def allowed_origin(origin: str | None, configured: tuple[str, ...]) -> str | None:
    """The Access-Control-Allow-Origin value for a request from ``origin``, or None (no CORS headers)."""
    if not origin or not configured:
        return None
    if "*" in configured:
        return "*"
    return origin if origin in configured else None


def preflight_headers(requested: str | None) -> dict[str, str]:
    """The headers of a preflight's answer, beyond the allowed origin: the asked-for headers are allowed."""
    asked = (requested or "").strip()
    allowed = asked if len(asked) <= _MAX_REQUESTED and _HEADER_LIST.fullmatch(asked) else "Authorization, Content-Type"
    return {
        "Access-Control-Allow-Methods": METHODS,
        "Access-Control-Allow-Headers": allowed,
        "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
    }
