"""TLS and mTLS on the gRPC port, with certificates made in the test: who gets in, and streams over it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from ovserve.clients.tls import channel_credentials
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.config import ServeConfig
from ovserve.service.models import ModelSpec
from ovserve.service.server.grpc_server import Server
from ovserve.service.server.tls import TlsError
from tests.certificates import Authority, authority
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]
ASK = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0}


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return authority(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def mtls_server(ca: Authority) -> Iterator[ServerThread]:
    pair = ca.issue("server", server=True)
    running = start_server(TINY, tls_cert=pair.cert, tls_key=pair.key, tls_client_ca=ca.pem)
    yield running
    running.stop()


def streamed_text(channel: grpc.Channel) -> str:
    chunks = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
        parse(chat_pb2.StreamChatCompletionRequest, ASK), timeout=30
    )
    return "".join(choice.delta.content for chunk in chunks for choice in chunk.choices)


def test_tls_without_client_certificates(ca: Authority) -> None:
    pair = ca.issue("server-plain", server=True)
    running = start_server(TINY, tls_cert=pair.cert, tls_key=pair.key)
    try:
        target = f"127.0.0.1:{running.server.port}"
        with grpc.secure_channel(target, channel_credentials(ca=ca.pem)) as channel:
            assert streamed_text(channel)
        with grpc.insecure_channel(target) as plain, pytest.raises(grpc.RpcError) as refused:
            streamed_text(plain)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop()


def test_mtls_lets_in_only_clients_with_a_certificate_of_its_ca(
    ca: Authority, mtls_server: ServerThread, tmp_path: Path
) -> None:
    target = f"127.0.0.1:{mtls_server.server.port}"
    client = ca.issue("client", server=False)
    with grpc.secure_channel(target, channel_credentials(ca.pem, client.cert, client.key)) as channel:
        assert streamed_text(channel)
    stranger = authority(tmp_path / "other", "other-ca").issue("intruder", server=False)
    for credentials in (channel_credentials(ca=ca.pem), channel_credentials(ca.pem, stranger.cert, stranger.key)):
        with grpc.secure_channel(target, credentials) as channel, pytest.raises(grpc.RpcError) as refused:
            streamed_text(channel)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE


def test_unusable_tls_files_are_one_clear_error(ca: Authority, tmp_path: Path) -> None:
    one, other = ca.issue("one", server=True), ca.issue("other", server=True)
    cases = [
        ({"tls_cert": one.cert, "tls_key": other.key}, "cannot use the TLS certificate"),
        ({"tls_cert": one.cert}, "both --tls-cert and --tls-key"),
        ({"tls_client_ca": ca.pem}, "needs --tls-cert"),
        ({"tls_cert": one.cert, "tls_key": one.key, "tls_client_ca": tmp_path / "missing.pem"}, "--tls-client-ca"),
    ]
    for fields, words in cases:
        with pytest.raises(TlsError, match=words):
            Server(ServeConfig(host="127.0.0.1", port=0, models=TINY, **fields))
