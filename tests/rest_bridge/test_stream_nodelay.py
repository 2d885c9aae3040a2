"""A streamed reply's events leave as they are flushed, also on a kept-alive connection: the socket is in no-delay
mode while the stream runs. tornado turns Nagle's algorithm back on when a response finishes, so the second stream
of a connection had its small events held for the client's delayed ACK (~40 ms each, helper B measured it in the
bench's warm REST figures)."""

from __future__ import annotations

import http.client
import json
import socket

from tests.rest_bridge.conftest import RunningBridge


def server_side_nodelay(bridge: RunningBridge, client: socket.socket) -> int:
    """TCP_NODELAY of the bridge's end of the client's connection (read on the bridge's event loop)."""

    async def read() -> int:
        for connection in bridge.bridge._http._connections:  # type: ignore[union-attr]
            peer = connection.stream.socket
            if peer is not None and peer.getpeername() == client.getsockname():
                return int(peer.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        raise AssertionError("the bridge holds no connection from this client")

    return int(bridge.server.run(read()))


def test_the_second_stream_of_a_kept_alive_connection_is_not_held_by_nagle(bridge: RunningBridge) -> None:
    body = json.dumps({"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1900,
                       "ignore_eos": True, "stream": True})  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", bridge.port, timeout=60)
    try:
        for _ in range(2):  # the same connection twice: the first response's end resets the socket
            connection.request("POST", "/v3/chat/completions", body, {"Content-Type": "application/json"})
            reply = connection.getresponse()
            assert reply.status == 200
            # The stream runs (1,900 tokens: seconds on tiny-chat, while the check takes a millisecond; tornado
            # turns no-delay off again once a response ends, so the check must come while it runs).
            assert reply.readline().startswith(b"data: ")
            assert connection.sock is not None
            assert server_side_nodelay(bridge, connection.sock) == 1
            reply.read()  # to its end; the connection is kept alive for the next
    finally:
        connection.close()
