"""smg (the Shepherd Model Gateway, from PyPI) in front of two ``ovserve serve`` replicas, one SIGKILLed under load.

Both replicas get traffic (round_robin); chat streams and the Responses API pass through; after the kill every
request started once smg has had its health-check interval to notice succeeds, and the requests that were in
flight on the killed replica end (with an answer or an error), none hangs. The counts are printed in pytest's
summary.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.conftest import FUZZ_REPORT
from tests.rest_bridge.replicas import free_port, replica, served_chats, stop
from tests.rest_bridge.test_cli import ROOT

SMG = Path(sys.executable).parent / "smg"
CHAT = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0}
CHECK_INTERVAL_S = 1


def post(port: int, path: str, body: dict[str, object], timeout: float = 30) -> tuple[int, bytes]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return reply.status, reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


@contextmanager
def gateway(workers: list[int]) -> Iterator[int]:
    port = free_port()
    urls = [f"http://127.0.0.1:{worker}" for worker in workers]
    process = subprocess.Popen(
        [str(SMG), "launch", "--host", "127.0.0.1", "--port", str(port), "--worker-urls", *urls,
         "--policy", "round_robin", "--disable-tokenizer-autoload", "--log-level", "warn",
         "--health-check-interval-secs", str(CHECK_INTERVAL_S), "--health-failure-threshold", "1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not (_listening(port) and post(port, "/v1/chat/completions", CHAT, timeout=10)[0] == 200):
            assert time.monotonic() < deadline and process.poll() is None, "smg did not come up"
            time.sleep(0.2)
        yield port
    finally:
        stop(process)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_smg_spreads_over_two_replicas_and_survives_one_killed_under_load() -> None:
    with ExitStack() as stack:
        (first, _, first_port), (_, _, second_port) = (stack.enter_context(replica()) for _ in range(2))
        port = stack.enter_context(gateway([first_port, second_port]))
        before = [served_chats(first_port), served_chats(second_port)]
        statuses = [post(port, "/v1/chat/completions", CHAT)[0] for _ in range(20)]
        assert statuses == [200] * 20
        shares = [served_chats(first_port) - before[0], served_chats(second_port) - before[1]]
        assert min(shares) >= 5, shares  # both replicas took traffic
        status, streamed = post(port, "/v1/chat/completions", {**CHAT, "stream": True})
        assert status == 200 and streamed.rstrip().endswith(b"data: [DONE]")
        status, response = post(port, "/v1/responses", {"model": "tiny-chat", "input": "Hi", "max_output_tokens": 8})
        assert status == 200 and json.loads(response)["status"] in ("completed", "incomplete")

        # Under load (4 clients), SIGKILL the first replica.
        results: list[tuple[float, float, int]] = []  # (started, ended, status; 0 = no answer)
        stop_at = [float("inf")]

        def client() -> None:
            while time.monotonic() < stop_at[0]:
                started = time.monotonic()
                try:
                    status = post(port, "/v1/chat/completions", CHAT, timeout=30)[0]
                except OSError:
                    status = 0
                results.append((started, time.monotonic(), status))

        with ThreadPoolExecutor(4) as pool:
            for _ in range(4):
                pool.submit(client)
            time.sleep(2)
            killed_at = time.monotonic()
            first.kill()
            time.sleep(8)
            stop_at[0] = time.monotonic()
        settled = killed_at + 2 * CHECK_INTERVAL_S + 1  # smg's health check has seen it by then
        before_kill = [r for r in results if r[0] < killed_at]
        around = [r for r in results if killed_at <= r[0] < settled]
        after = [r for r in results if r[0] >= settled]
        line = (
            f"smg over 2 replicas: 20/20 round-robin ({shares[0]:.0f}/{shares[1]:.0f}); under load, one SIGKILLed: "
            f"before {len(before_kill)} sent / {sum(r[2] == 200 for r in before_kill)} ok, "
            f"while smg noticed {len(around)} / {sum(r[2] == 200 for r in around)} ok, "
            f"after {len(after)} / {sum(r[2] == 200 for r in after)} ok; "
            f"slowest answer {max(r[1] - r[0] for r in results):.2f} s"
        )
        FUZZ_REPORT.append(line)
        print("\n" + line)
        assert after and all(r[2] == 200 for r in after), after
        assert all(r[1] - r[0] < 30 for r in results)  # nothing hung
