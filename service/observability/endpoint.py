"""``--metrics-port``: /metrics on a port of its own, for a server run without the REST bridge.

A small tornado server on the server's event loop: the scrape asks the engines for their figures (which
needs the loop), as the bridge's /metrics does beside ``ovserve serve``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import tornado.httpserver
import tornado.netutil
import tornado.web

log = logging.getLogger(__name__)
Source = Callable[[], Awaitable[tuple[bytes, str]]]  # the exposition and its content type


class _Metrics(tornado.web.RequestHandler):
    def initialize(self, source: Source) -> None:  # type: ignore[override]
        self._source = source

    async def get(self) -> None:
        body, content_type = await self._source()
        self.set_header("Content-Type", content_type)
        self.finish(body)


class MetricsEndpoint:
    """GET /metrics on host:port (anything else 404)."""

    def __init__(self, host: str, port: int, source: Source) -> None:
        self.host, self.port = host, port
        self._app = tornado.web.Application([("/metrics", _Metrics, {"source": source})])
        self._http: tornado.httpserver.HTTPServer | None = None

    def start(self) -> int:
        """Listen (OSError if the port is taken); return the port."""
        sockets = tornado.netutil.bind_sockets(self.port, self.host)
        self.port = sockets[0].getsockname()[1]
        self._http = tornado.httpserver.HTTPServer(self._app)
        self._http.add_sockets(sockets)
        log.info("metrics on %s:%d/metrics", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        if self._http is not None:
            self._http.stop()
            await self._http.close_all_connections()
