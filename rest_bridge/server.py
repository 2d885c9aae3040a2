"""Running the bridge: an HTTP server for the app and its grpc.aio channel, on the current event loop."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket

import grpc
import tornado.netutil

from ovserve.clients.defaults import DEFAULT_HOST, DEFAULT_REST_PORT, MESSAGE_SIZE_OPTIONS, MIB
from ovserve.clients.gil import share_the_gil_sooner
from ovserve.clients.heap import freeze_startup_heap
from ovserve.rest_bridge.app import make_app
from ovserve.rest_bridge.config import BridgeSettings, https_context
from ovserve.rest_bridge.http_guard import GuardedHTTPServer
from ovserve.rest_bridge.routes.health import ServerFigures

log = logging.getLogger(__name__)

# Bodies between max_body_bytes and this are read and dropped so the client gets its 413;
# beyond it tornado cuts the connection.
DISCARD_MARGIN = 64 * MIB


class Bridge:
    """The REST bridge listening on host:port and calling the gRPC service at ``target``."""

    def __init__(
        self,
        target: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_REST_PORT,
        settings: BridgeSettings | None = None,
        figures: ServerFigures | None = None,
        target_credentials: grpc.ChannelCredentials | None = None,
    ) -> None:
        """``figures``: the server's metrics and load (``ovserve serve`` passes its server);
        ``target_credentials``: TLS to the gRPC service (None: plaintext). HTTPS comes from ``settings``; its
        files are read now (OSError or ValueError if they cannot be used)."""
        self.target = target
        self.figures = figures
        self.target_credentials = target_credentials
        self.host = host
        self.port = port
        self.settings = settings or BridgeSettings()
        self._https = https_context(self.settings)
        self._channel: grpc.aio.Channel | None = None
        self._http: GuardedHTTPServer | None = None
        self._sockets: list[socket.socket] = []

    def bind(self) -> int:
        """Take the port now (before anything slower starts); return it. OSError if it is taken."""
        if not self._sockets:
            self._sockets = tornado.netutil.bind_sockets(self.port, self.host)
            self.port = self._sockets[0].getsockname()[1]
        return self.port

    async def start(self) -> int:
        """Open the channel, bind (unless bound) and start answering; return the port (useful with port 0)."""
        options = list(MESSAGE_SIZE_OPTIONS)
        if self.target_credentials is None:
            self._channel = grpc.aio.insecure_channel(self.target, options=options)
        else:
            self._channel = grpc.aio.secure_channel(self.target, self.target_credentials, options=options)
        app = make_app(self._channel, self.settings, self.figures)
        self._http = GuardedHTTPServer(
            app,
            max_body_size=self.settings.max_body_bytes + DISCARD_MARGIN,
            idle_connection_timeout=300,
            ssl_options=self._https,
        )
        self.bind()
        self._http.add_sockets(self._sockets)
        https = "HTTPS, " if self._https is not None else ""
        log.info("REST listening on %s:%d (%sgRPC target %s)", self.host, self.port, https, self.target)
        return self.port

    async def stop_listening(self) -> None:
        """Accept no new connections; requests in flight go on."""
        if self._http is not None:
            self._http.stop()

    async def stop(self) -> None:
        """Stop listening, close open connections and the channel (cancelling calls still running)."""
        await self.stop_listening()
        if self._http is not None:
            await self._http.close_all_connections()
        if self._channel is not None:
            await self._channel.close()


async def serve_bridge(bridge: Bridge) -> None:
    """Run ``bridge`` alone (``ovserve bridge``) until SIGINT or SIGTERM."""
    await bridge.start()
    freeze_startup_heap()
    share_the_gil_sooner()  # the event loop waits less for the GIL (clients/gil.py)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        log.info("shutting down")
        await bridge.stop()
