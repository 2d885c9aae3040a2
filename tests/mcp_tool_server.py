"""A tiny MCP tool server (the official ``mcp`` SDK's streamable HTTP server) on a loopback port, for tests.

Its tools: ``add`` (a + b), ``secret_word`` (always "pineapple"), ``big`` (``size`` characters of "x"),
``fail`` (a tool error), ``wait`` (answers only once the test releases it) and ``look`` (read-only, annotated so).
``requests`` counts the HTTP requests it got; ``headers`` keeps the last request's headers.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

SECRET = "pineapple"


class ToolServer:
    """The running server: its URL, the requests and headers it saw, and the release of ``wait``."""

    def __init__(self) -> None:
        self.url = ""
        self.requests = 0
        self.headers: dict[str, str] = {}
        self.released = threading.Event()

    def app(self) -> Any:
        """The ASGI app: the MCP endpoint at /mcp, counting requests and keeping their headers."""
        tools = MCPServer("ovserve-test-tools")

        @tools.tool()
        def add(a: int, b: int) -> str:
            """Add two integers."""
            return str(a + b)

        @tools.tool()
        def secret_word() -> str:
            """The secret word."""
            return SECRET

        @tools.tool()
        def big(size: int = 5000) -> str:
            """A long text."""
            return "x" * size

        @tools.tool()
        def fail() -> str:
            """Always fails."""
            raise ValueError("the tool broke")

        @tools.tool()
        async def wait() -> str:
            """Answers once the test lets it."""
            while not self.released.is_set():
                await asyncio.sleep(0.05)
            return "released"

        @tools.tool(annotations=ToolAnnotations(read_only_hint=True))
        def look() -> str:
            """Reads something."""
            return "seen"

        inner = tools.streamable_http_app()

        async def counted(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.requests += 1
                self.headers = {key.decode(): value.decode() for key, value in scope["headers"]}
            await inner(scope, receive, send)

        return counted


@contextmanager
def tool_server() -> Iterator[ToolServer]:
    """A ToolServer listening on 127.0.0.1 (a free port) until the block ends."""
    served = ToolServer()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    served.url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    server = uvicorn.Server(uvicorn.Config(served.app(), log_level="warning", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the MCP tool server did not start")
        time.sleep(0.02)
    try:
        yield served
    finally:
        served.released.set()
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


@contextmanager
def silent_listener() -> Iterator[tuple[str, socket.socket]]:
    """A loopback port that listens and never accepts: a connection to it waits in its backlog, where
    ``connections`` finds it."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listener.setblocking(False)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/mcp", listener
    finally:
        listener.close()


def connections(listener: socket.socket) -> int:
    """The connections made to ``listener`` so far (accepted and closed here)."""
    count = 0
    while True:
        try:
            accepted, _ = listener.accept()
        except BlockingIOError:
            return count
        accepted.close()
        count += 1
