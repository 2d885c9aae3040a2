"""``ovserve serve`` runs gRPC and REST together; ``ovserve bridge`` runs the bridge alone."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import ServerThread
from tests.rest_bridge.conftest import http_request

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def ovserve(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``python -m service.cli ARGS`` with stderr piped; killed if the test did not stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", *args],
        cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def read_until(process: subprocess.Popen[str], pattern: str, lines: list[str]) -> re.Match[str]:
    """Read stderr lines until one matches ``pattern``."""
    assert process.stderr is not None
    for line in process.stderr:
        lines.append(line)
        if match := re.search(pattern, line):
            return match
    raise AssertionError("".join(lines))


def test_serve_runs_grpc_and_rest_and_stops_on_sigterm() -> None:
    with ovserve("serve", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1") as process:
        lines: list[str] = []
        grpc_port = int(read_until(process, r"gRPC listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        rest_port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        assert grpc_port != rest_port
        assert http_request(rest_port, "GET", "/health").status == 200
        reply = http_request(rest_port, "POST", "/v3/chat/completions", {
            "model": "tiny-chat", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})  # fmt: skip
        assert reply.status == 200 and reply.json()["choices"][0]["message"]["role"] == "assistant"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_bridge_alone_in_front_of_a_remote_service(server: ServerThread) -> None:
    with ovserve("bridge", "--target", server.target, "--port", "0") as process:
        lines: list[str] = []
        port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        assert http_request(port, "GET", "/health").status == 200
        assert http_request(port, "GET", "/v1/models").json()["data"][0]["id"] == "tiny-chat"
        reply = http_request(port, "POST", "/v3/completions",
                             {"model": "tiny-chat", "prompt": "Once", "max_tokens": 3, "stream": True})  # fmt: skip
        assert reply.status == 200 and reply.body.endswith(b"data: [DONE]\n\n")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
