"""Cross-origin resource sharing: which web pages may call the bridge from a browser.

Off by default. With ``--cors-origin`` (repeatable; ``*`` for any origin) a request from an allowed origin
gets ``Access-Control-Allow-Origin`` on every response, event streams included, and a browser's preflight
``OPTIONS`` gets 204 with the allowed methods and headers. The requested headers are echoed rather than
listed, because OpenAI's SDKs send a changing set of their own (``x-stainless-*``) beside Authorization and
Content-Type. A request from any other origin gets no CORS headers at all, so the browser refuses it.
"""

from __future__ import annotations

import re

import tornado.web

#: What a preflight may ask for; the bridge's routes use no other methods.
ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
#: Sent when a preflight names no headers of its own.
DEFAULT_HEADERS = "Authorization, Content-Type, x-request-id"
#: Response headers a page may read (the request id for support, Retry-After and the x-ratelimit-* figures for
#: backing off).
EXPOSED_HEADERS = (
    "x-request-id, Retry-After, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, "
    "x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens"
)
#: How long a browser may cache a preflight answer, seconds.
MAX_AGE_SECONDS = 600
# A header-name list as a preflight sends it: tokens and commas only, so echoing it cannot inject anything.
_HEADER_LIST = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*")
_MAX_HEADER_LIST = 2048


def allowed_origin(origins: tuple[str, ...], origin: str | None) -> str | None:
    """The Access-Control-Allow-Origin value for a request from ``origin``, or None (no CORS headers)."""
    if not origins or not origin:
        return None
    if "*" in origins:
        return "*"
    return origin if origin in origins else None


def add_headers(handler: tornado.web.RequestHandler, origins: tuple[str, ...]) -> None:
    """The CORS headers of an ordinary response (set again when an error clears the headers)."""
    allowed = allowed_origin(origins, handler.request.headers.get("Origin"))
    if allowed is None:
        return
    handler.set_header("Access-Control-Allow-Origin", allowed)
    handler.set_header("Access-Control-Expose-Headers", EXPOSED_HEADERS)
    if allowed != "*":  # the answer depends on the request's Origin: caches must keep one per origin
        handler.set_header("Vary", "Origin")


def answer_preflight(handler: tornado.web.RequestHandler, origins: tuple[str, ...]) -> None:
    """Answer an OPTIONS request: 204, with the preflight headers if the origin is allowed (405 with CORS off)."""
    if not origins:
        raise tornado.web.HTTPError(405)
    if allowed_origin(origins, handler.request.headers.get("Origin")) is not None:
        requested = handler.request.headers.get("Access-Control-Request-Headers", "").strip()
        usable = len(requested) <= _MAX_HEADER_LIST and _HEADER_LIST.fullmatch(requested)
        handler.set_header("Access-Control-Allow-Methods", ALLOWED_METHODS)
        handler.set_header("Access-Control-Allow-Headers", requested if usable else DEFAULT_HEADERS)
        handler.set_header("Access-Control-Max-Age", str(MAX_AGE_SECONDS))
    handler.set_status(204)
    handler.finish()
