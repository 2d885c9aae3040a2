"""``ovserve serve`` runs gRPC and REST together; ``ovserve bridge`` runs the bridge alone."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import ServerThread
from tests.rest_bridge.conftest import Reply, http_request

ROOT = Path(__file__).resolve().parents[2]


@contextmanager
def ovserve(*args: str, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[str]]:
    """``python -m ovserve.service.cli ARGS`` with stderr piped (``env`` over this process's); killed if the test did
    not
    stop it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "ovserve.service.cli", *args],
        cwd=ROOT, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
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
        metrics = http_request(rest_port, "GET", "/metrics")  # the serving process's, on the REST port
        assert metrics.status == 200 and metrics.headers["Content-Type"].startswith("text/plain")
        assert b'ovserve_requests_total{code="ok",model="tiny-chat",rpc="ChatService/CreateChatCompletion"} 1.0' in (
            metrics.body
        )
        assert b'ovserve_engine_up{model="tiny-chat"} 1.0' in metrics.body
        loads = http_request(rest_port, "GET", "/v1/loads?include=core,disagg,queues,memory")  # as smg asks
        assert loads.status == 200 and loads.json()["dp_rank_count"] == 1
        assert loads.json()["loads"][0]["max_total_num_tokens"] > 0
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
        assert http_request(port, "GET", "/metrics").status == 404  # the metrics live with the models
        assert http_request(port, "GET", "/v1/loads").status == 404
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


@contextmanager
def taken_port() -> Iterator[int]:
    """A port some other program listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def failed_start(*args: str) -> str:
    """Run ``ovserve ARGS`` expecting it to refuse to start: exit code 1; return its stderr."""
    with ovserve(*args) as process:
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 1, stderr
    return stderr


def assert_one_line(stderr: str, *words: str) -> None:
    """One line naming the cause, no traceback, and nothing started before it."""
    assert "Traceback" not in stderr and "listening" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert all(word in lines[0] for word in words), stderr


def test_serve_with_the_rest_port_taken_is_one_line_and_exit_1() -> None:
    with taken_port() as port:
        stderr = failed_start("serve", "--port", "0", "--rest-port", str(port))
    assert_one_line(stderr, "ovserve serve:", f"127.0.0.1:{port}", "REST", "in use")


def test_serve_with_the_grpc_port_taken_is_one_line_and_exit_1() -> None:
    with taken_port() as port:
        stderr = failed_start("serve", "--port", str(port), "--rest-port", "0")
    assert_one_line(stderr, "ovserve serve:", f"127.0.0.1:{port}", "gRPC", "in use")


def test_bridge_with_its_port_taken_is_one_line_and_exit_1(server: ServerThread) -> None:
    with taken_port() as port:
        stderr = failed_start("bridge", "--target", server.target, "--port", str(port))
    assert_one_line(stderr, "ovserve bridge:", f"127.0.0.1:{port}", "REST", "in use")


def test_a_store_that_cannot_be_used_is_one_line_and_exit_1(tmp_path: Path) -> None:
    not_a_database = tmp_path / "notes.txt"
    not_a_database.write_text("these are my notes, not a database\n" * 100)
    for store in (not_a_database, tmp_path, tmp_path / "missing" / "store.db"):
        stderr = failed_start("serve", "--port", "0", "--rest-port", "0", "--response-store", str(store))
        assert_one_line(stderr, "ovserve serve:", "response store", str(store))


SHUTDOWN_MESSAGE = "the server is shutting down; retry shortly"
LONG_REQUESTS = {  # each runs far longer than the grace period
    "chat": ("/v3/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1900}),
    "completions": ("/v3/completions", {"prompt": "Once", "max_tokens": 1900}),
    "responses": ("/v3/responses", {"input": "hi", "max_output_tokens": 1900}),
}


def stream_reply(port: int, path: str, body: dict[str, Any], started: threading.Event) -> Reply:
    """A streamed POST, read line by line; ``started`` is set at its first event."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        data = b""
        while line := response.readline():
            data += line
            started.set()
        return Reply(response.status, response.headers, data)
    finally:
        connection.close()


def test_requests_past_the_grace_period_end_with_an_error_that_says_why() -> None:
    """SIGTERM with streams and unary calls running longer than --grace-seconds: each gets an answer."""
    with ovserve("serve", "--port", "0", "--rest-port", "0", "--grace-seconds", "0.2") as process:
        lines: list[str] = []
        port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
        read_until(process, r"serving tiny-chat", lines)
        replies: dict[str, Reply] = {}
        started = {name: threading.Event() for name in LONG_REQUESTS}

        def call(name: str, stream: bool) -> None:
            path, body = LONG_REQUESTS[name]
            body = {"model": "tiny-chat", "ignore_eos": True, "stream": stream, **body}
            if stream:
                replies[f"{name}-stream"] = stream_reply(port, path, body, started[name])
            else:
                replies[f"{name}-unary"] = http_request(port, "POST", path, body)

        threads = [
            threading.Thread(target=call, args=(name, stream)) for name in LONG_REQUESTS for stream in (True, False)
        ]
        for thread in threads:
            thread.start()
        for event in started.values():  # every stream runs (each takes seconds; the grace is 0.2 s)
            assert event.wait(timeout=60)
        process.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=60)
        assert process.wait(timeout=60) == 0
    for name in ("chat-stream", "completions-stream"):
        reply = replies[name]
        assert reply.status == 200
        *_, last_event, done = reply.events()
        assert done == "[DONE]", name
        assert json.loads(last_event)["error"]["message"] == SHUTDOWN_MESSAGE, name
    events = replies["responses-stream"].body.decode().split("\n\n")
    failed = [json.loads(e.split("data: ", 1)[1]) for e in events if e.startswith("event: response.failed")]
    assert failed and failed[0]["response"]["error"]["message"] == SHUTDOWN_MESSAGE
    for name in ("chat-unary", "completions-unary"):
        reply = replies[name]
        assert reply.status == 503 and reply.headers["Retry-After"] == "1", name
        assert reply.json()["error"]["message"] == SHUTDOWN_MESSAGE
    responses_unary = replies["responses-unary"]
    if responses_unary.status == 200:  # a foreground response that began: stored as failed
        assert responses_unary.json()["status"] == "failed"
        assert responses_unary.json()["error"]["message"] == SHUTDOWN_MESSAGE
    else:  # it had not begun: retriable, as the others
        assert responses_unary.status == 503 and responses_unary.json()["error"]["message"] == SHUTDOWN_MESSAGE
