"""Refusals that happen before a request reaches a handler, answered in OpenAI's envelope.

Tornado refuses some requests itself: a bad ``Content-Length``, one sent
together with ``Transfer-Encoding``, an unknown transfer coding (a bare
``400 Bad Request`` with no body), and headers past its read limit (the
connection is closed with no answer at all). And a header the bridge forwards
as gRPC metadata (``Authorization``) can be longer than gRPC accepts, which the
service would answer with RESOURCE_EXHAUSTED: a misleading 429.

``GuardedHTTPServer`` looks at each request's headers first, through tornado's
public delegate interface, and answers those cases itself with OpenAI's
envelope and ``Connection: close`` (the body, if any, is never read, so the
connection cannot be reused). Tornado's own header limit is raised above the
bridge's, so oversized headers get their 431 instead of a silent close; only
headers past that larger limit, or a request line tornado cannot parse at all,
still get tornado's bare answer.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Awaitable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import tornado.httpserver
import tornado.ioloop
from tornado import httputil
from tornado.http1connection import HTTP1Connection
from tornado.iostream import IOStream, StreamClosedError

from ovserve.clients.defaults import MIB

# What tornado itself reads before giving up: far above the bridge's own limit, so the bridge answers.
TORNADO_HEADER_LIMIT = 1 * MIB
DRAIN_BYTES, DRAIN_SECONDS = 1 * MIB, 2.0  # what a refused request's body may still cost before the close


@dataclass(frozen=True)
class HeaderLimits:
    """How large a request's headers may be."""

    total_bytes: int = 32 * 1024  # all header lines together (nginx's default large buffers hold 32 KiB)
    # Forwarded to the service as gRPC metadata, whose whole budget is 8 KiB by default.
    forwarded: tuple[tuple[str, int], ...] = (("Authorization", 4096),)


def header_problem(headers: httputil.HTTPHeaders, limits: HeaderLimits) -> tuple[int, str] | None:
    """(status, message) if the request cannot be served as its headers stand, else None."""
    for name, limit in limits.forwarded:
        value = headers.get(name, "")
        if len(value) > limit:
            return 431, f"the {name} header is {len(value)} bytes, more than the {limit} accepted"
    size = sum(len(name) + len(value) + 4 for name, value in headers.get_all())
    if size > limits.total_bytes:
        return 431, f"the request headers are {size} bytes, more than the {limits.total_bytes} accepted"
    lengths = {value.strip() for value in headers.get_list("Content-Length") for value in value.split(",")}
    if len(lengths) > 1 or any(not length.isdigit() for length in lengths):
        return 400, f"invalid Content-Length header: {headers.get('Content-Length')!r}"
    coding = headers.get("Transfer-Encoding")
    if coding is not None:
        if lengths:
            return 400, "a request may not carry both Content-Length and Transfer-Encoding"
        if coding.strip().lower() != "chunked":
            return 400, f"unsupported Transfer-Encoding {coding!r} (only chunked is)"
    return None


def error_response(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 response carrying OpenAI's error envelope, closing the connection."""
    error_type = "invalid_request_error"
    body = json.dumps({"error": {"message": message, "type": error_type, "param": None, "code": None}}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + body


async def answer_and_close(stream: IOStream, status: int, message: str) -> None:
    """Write the error response, then close gracefully (``close_gracefully``)."""
    await close_gracefully(stream, error_response(status, message))


async def close_gracefully(stream: IOStream, last: bytes = b"") -> None:
    """Write ``last`` (b"": wait for what is already queued), then close gracefully: stop sending, and read (and
    drop) what the client still sends for a bounded while, so an unread body does not turn the close into a
    reset that could destroy the response before the client reads it."""
    try:
        await stream.write(last)
        stream.socket.shutdown(socket.SHUT_WR)
        deadline = time.monotonic() + DRAIN_SECONDS
        drained = 0
        while drained < DRAIN_BYTES and time.monotonic() < deadline:
            chunk = await asyncio.wait_for(stream.read_bytes(64 * 1024, partial=True), deadline - time.monotonic())
            drained += len(chunk)
    except (StreamClosedError, OSError, TimeoutError):
        pass  # the client closed first, or kept sending past the bound
    finally:
        stream.close()


class _GuardedRequest(httputil.HTTPMessageDelegate):
    """Passes a request on to the application unless its headers are refused; then answers it here."""

    def __init__(self, inner: httputil.HTTPMessageDelegate, connection: HTTP1Connection, limits: HeaderLimits):
        self._inner = inner
        self._connection = connection
        self._limits = limits

    def headers_received(
        self, start_line: httputil.RequestStartLine | httputil.ResponseStartLine, headers: httputil.HTTPHeaders
    ) -> Awaitable[None] | None:
        problem = header_problem(headers, self._limits)
        if problem is None:
            return self._inner.headers_received(start_line, headers)
        # Detached, tornado leaves the connection alone (and never reads the body it would refuse).
        tornado.ioloop.IOLoop.current().spawn_callback(answer_and_close, self._connection.detach(), *problem)
        return None

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return self._inner.data_received(chunk)

    def finish(self) -> None:
        self._inner.finish()

    def on_connection_close(self) -> None:
        self._inner.on_connection_close()


class GuardedHTTPServer(tornado.httpserver.HTTPServer):
    """tornado's HTTPServer with the header checks of ``header_problem`` in front of the application."""

    def initialize(self, *args: Any, header_limits: HeaderLimits | None = None, **kwargs: Any) -> None:  # type: ignore[override]
        self.header_limits = header_limits or HeaderLimits()
        kwargs.setdefault("max_header_size", TORNADO_HEADER_LIMIT)
        super().initialize(*args, **kwargs)

    def start_request(self, server_conn: object, request_conn: httputil.HTTPConnection) -> httputil.HTTPMessageDelegate:
        inner = super().start_request(server_conn, request_conn)
        assert isinstance(request_conn, HTTP1Connection)  # what HTTPServer serves
        return _GuardedRequest(inner, request_conn, self.header_limits)
