"""``ovserve serve`` with TLS on both faces (HTTPS, gRPC with client certificates), API keys reloaded on SIGHUP,
and ``ovserve bridge`` dialling a TLS gRPC service: through the real CLI, with certificates made in the test."""

from __future__ import annotations

import http.client
import json
import signal
import ssl
from pathlib import Path
from typing import Any

import grpc
import pytest

from ovserve.clients.tls import channel_credentials
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from tests.certificates import authority
from tests.rest_bridge.test_cli import ovserve, read_until
from tests.rpc import parse

CHAT = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0}


def https(port: int, ca: Path, body: dict[str, Any], key: str | None = None) -> tuple[int, bytes]:
    """POST /v3/chat/completions over HTTPS, trusting ``ca``."""
    context = ssl.create_default_context(cafile=str(ca))
    connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=60)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    try:
        connection.request("POST", "/v3/chat/completions", json.dumps(body), headers)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def grpc_stream(port: int, credentials: grpc.ChannelCredentials, key: str) -> str:
    with grpc.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
        chunks = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
            parse(chat_pb2.StreamChatCompletionRequest, CHAT), metadata=(("authorization", f"Bearer {key}"),),
            timeout=60,
        )  # fmt: skip
        return "".join(choice.delta.content for chunk in chunks for choice in chunk.choices)


def test_tls_on_both_faces_and_keys_reloaded_on_sighup(tmp_path: Path) -> None:
    ca = authority(tmp_path / "pki")
    server, client = ca.issue("server", server=True), ca.issue("client", server=False)
    keys = tmp_path / "keys.txt"
    keys.write_text("sk-first\n")
    with ovserve(
        "serve", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1", "--api-key-file", str(keys),
        "--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.pem),
        "--rest-tls-cert", str(server.cert), "--rest-tls-key", str(server.key),
    ) as process:  # fmt: skip
        lines: list[str] = []
        grpc_port = int(read_until(process, r"gRPC listening on 127\.0\.0\.1:(\d+) \(TLS\)", lines).group(1))
        rest_port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+) \(HTTPS", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        # HTTPS, streamed, through the bridge (which reaches the mTLS gRPC port by its private socket)
        status, body = https(rest_port, ca.pem, {**CHAT, "stream": True}, key="sk-first")
        assert status == 200 and body.rstrip().endswith(b"data: [DONE]"), body
        with pytest.raises((ssl.SSLError, ConnectionError, http.client.HTTPException)):
            plain = http.client.HTTPConnection("127.0.0.1", rest_port, timeout=10)
            plain.request("GET", "/health")
            plain.getresponse().read()
        # gRPC needs a client certificate of the CA
        mutual = channel_credentials(ca.pem, client.cert, client.key)
        assert grpc_stream(grpc_port, mutual, "sk-first")
        with pytest.raises(grpc.RpcError) as refused:
            grpc_stream(grpc_port, channel_credentials(ca=ca.pem), "sk-first")
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        # SIGHUP: the key file's keys replace the old ones, on both faces
        keys.write_text("sk-second\n")
        process.send_signal(signal.SIGHUP)
        read_until(process, r"API keys reloaded", lines)
        assert https(rest_port, ca.pem, CHAT, key="sk-first")[0] == 401
        assert https(rest_port, ca.pem, CHAT, key="sk-second")[0] == 200
        keys.write_text("\n")  # an emptied file does not open the server
        process.send_signal(signal.SIGHUP)
        read_until(process, r"API keys not reloaded", lines)
        assert https(rest_port, ca.pem, CHAT)[0] == 401
        # a bridge alone, dialling the mTLS gRPC port
        with ovserve(
            "bridge", "--target", f"localhost:{grpc_port}", "--port", "0", "--target-ca", str(ca.pem),
            "--target-cert", str(client.cert), "--target-key", str(client.key),
        ) as bridge:  # fmt: skip
            bridge_lines: list[str] = []
            port = int(read_until(bridge, r"REST listening on 127\.0\.0\.1:(\d+)", bridge_lines).group(1))
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            connection.request("POST", "/v3/chat/completions", json.dumps(CHAT),
                               {"Content-Type": "application/json", "Authorization": "Bearer sk-second"})  # fmt: skip
            reply = connection.getresponse()
            assert reply.status == 200 and json.loads(reply.read())["choices"][0]["message"]["role"] == "assistant"
            connection.close()
            bridge.send_signal(signal.SIGTERM)
            assert bridge.wait(timeout=30) == 0
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_unusable_https_files_are_one_line_and_exit_1(tmp_path: Path) -> None:
    ca = authority(tmp_path / "pki")
    one, other = ca.issue("one", server=True), ca.issue("other", server=True)
    with ovserve("serve", "--port", "0", "--rest-port", "0", "--rest-tls-cert", str(one.cert),
                 "--rest-tls-key", str(other.key)) as process:  # fmt: skip
        assert process.wait(timeout=60) == 1
        assert process.stderr is not None
        assert "cannot serve HTTPS" in process.stderr.read()
