"""Helpers of the scale-out tests: ``ovserve serve`` replicas as subprocesses, free ports, per-replica counts."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from tests.rest_bridge.test_cli import ovserve, read_until


def free_port() -> int:
    """A port nothing listens on now (for a router that must be told its port)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def served_chats(rest_port: int) -> float:
    """Chat completions a replica answered, from its own /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{rest_port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    pattern = r'ovserve_requests_total\{code="ok",model="tiny-chat",rpc="ChatService/CreateChatCompletion"\} (\S+)'
    found = re.search(pattern, text)
    return float(found.group(1)) if found else 0.0


@contextmanager
def replica(*extra: str) -> Iterator[tuple[subprocess.Popen[str], int, int]]:
    """A serving ``ovserve serve`` (process, gRPC port, REST port); its log drained so it never stalls."""
    with ovserve("serve", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1", *extra) as process:
        lines: list[str] = []
        grpc_port = int(read_until(process, r"gRPC listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        rest_port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        threading.Thread(target=lambda: process.stderr and process.stderr.read(), daemon=True).start()
        yield process, grpc_port, rest_port


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it has not ended within 15 s."""
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
