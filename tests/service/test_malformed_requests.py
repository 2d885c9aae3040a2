"""Bytes that are not a request message: INVALID_ARGUMENT on every RPC, and only after the API-key check.

Raw bytes go through a generic channel (no stubs, no serializer), as a broken
or hostile client would send them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import grpc
import pytest

from ovserve.service.models import ModelSpec
from ovserve.service.server.grpc_server import SERVED
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server

KEY = "sk-malformed"


def _methods() -> list[tuple[str, bool]]:
    """Every RPC of the served services: its path, and whether it streams."""
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.Default()
    return [
        (f"/{name}/{method.name}", method.server_streaming)
        for name in SERVED
        for method in pool.FindServiceByName(name).methods
    ]


# Corrupt messages: a truncated varint, a wrong wire type, a length past the end, a bad UTF-8 string.
CORRUPT = [b"\x08", b"\x0a\xff\xff\xff\xff\x0f", b"\x0a\x05ab", b"\x0a\x02\xc3\x28", b"\xff" * 16]


@pytest.fixture(scope="module")
def running() -> Iterator[ServerThread]:
    server = start_server([ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)], api_keys=(KEY,))
    yield server
    server.stop()


def call(channel: grpc.Channel, path: str, streams: bool, data: bytes, key: str | None) -> grpc.StatusCode:
    metadata = [("authorization", f"Bearer {key}")] if key else []
    identity = {"request_serializer": None, "response_deserializer": None}
    try:
        if streams:
            for _ in channel.unary_stream(path, **identity)(data, metadata=metadata, timeout=30):
                pass
        else:
            channel.unary_unary(path, **identity)(data, metadata=metadata, timeout=30)
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def test_corrupt_bytes_are_invalid_argument_on_every_rpc(running: ServerThread) -> None:
    methods = _methods()
    assert len(methods) >= 13
    rng = random.Random(7)
    tries = [(path, streams, data) for path, streams in methods for data in CORRUPT]
    tries += [(path, streams, rng.randbytes(rng.randint(1, 64))) for path, streams in methods for _ in range(8)]
    codes: dict[grpc.StatusCode, int] = {}
    with grpc.insecure_channel(running.target) as channel:
        for path, streams, data in tries:
            code = call(channel, path, streams, data, KEY)
            codes[code] = codes.get(code, 0) + 1
            # Random bytes may happen to decode: then the request's own checks answer (never a crash).
            assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (path, data)
        print(f"\n{len(tries)} malformed calls: {dict((code.name, n) for code, n in codes.items())}")
        assert codes.get(grpc.StatusCode.INVALID_ARGUMENT, 0) >= len(methods) * len(CORRUPT) // 2


def test_without_a_key_malformed_bytes_are_unauthenticated(running: ServerThread) -> None:
    with grpc.insecure_channel(running.target) as channel:
        for path, streams in _methods():
            assert call(channel, path, streams, CORRUPT[0], None) == grpc.StatusCode.UNAUTHENTICATED, path
