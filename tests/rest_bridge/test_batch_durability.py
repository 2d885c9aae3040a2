"""A 1,000-line batch through the openai client against ``ovserve serve`` in its own process: interactive
requests beside it keep their first-token latency (measured against the same requests alone, in the same run),
and after kill -9 in the middle and a restart on the same store file the batch completes with every line's
output exactly once.

Each interactive request comes after a pause longer than the runner's hold, so it finds the batch at full
concurrency (lines in their prompts and decodes), as a client sending now and then does: requests sent back to
back would find the runner already holding back and measure little.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path

import openai
import pytest

from ovserve.service.batches.runner import INTERACTIVE_HOLD_SECONDS
from tests.conftest import TINY_CHAT
from tests.rest_bridge.test_cli import ovserve, read_until

LINES = 1000
INTERACTIVE = 12  # streamed requests timed alone, then beside the batch
# What the batch may cost an interactive request's first token (docs/api/files-batches.md, "Behind interactive
# calls"): the lines
# under way give way when it begins and none starts while it arrives, but their step in the engine and their
# cancelling still share 2 busy cores with it.
MAX_FIRST_TOKEN_RATIO = 2.0
#: A batch line: a prompt of PHRASES x "the sea number N" (~250 tokens) and up to LINE_TOKENS out.
PHRASES, LINE_TOKENS = 50, 32


def serve(store: Path) -> tuple[object, int]:
    """``ovserve serve`` of tiny-chat on free ports with ``store``; its process and REST port, once serving."""
    context = ovserve(
        "serve", "--model", f"tiny-chat={TINY_CHAT}", "--port", "0", "--rest-port", "0", "--cache-size-gb", "1",
        "--response-store", str(store),
    )  # fmt: skip
    process = context.__enter__()
    lines: list[str] = []
    port = int(read_until(process, r"REST listening on 127\.0\.0\.1:(\d+)", lines).group(1))
    read_until(process, r"serving tiny-chat", lines)
    assert process.stderr is not None
    stderr = process.stderr
    threading.Thread(target=lambda: [None for _ in stderr], daemon=True).start()  # its log never fills the pipe
    return context, port


def first_token_seconds(client: openai.OpenAI) -> list[float]:
    """Time to the first content chunk of INTERACTIVE streamed requests, each after a pause past the runner's hold."""
    times = []
    for i in range(INTERACTIVE):
        time.sleep(INTERACTIVE_HOLD_SECONDS + 0.25)
        started = time.perf_counter()
        stream = client.chat.completions.create(
            model="tiny-chat", messages=[{"role": "user", "content": f"Question {i}: what is the sea?"}],
            max_tokens=8, temperature=0, stream=True,
        )  # fmt: skip
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                times.append(time.perf_counter() - started)
                break
        stream.close()
    return times


@pytest.mark.alone
def test_a_thousand_line_batch_beside_interactive_requests_survives_kill_9(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite"
    prompt = " ".join(f"the sea number {j}" for j in range(PHRASES))
    requests = [
        {"custom_id": f"line-{i}", "method": "POST", "url": "/v1/chat/completions",
         "body": {"model": "tiny-chat", "messages": [{"role": "user", "content": f"Tell me about {i}: {prompt}"}],
                  "max_tokens": LINE_TOKENS, "temperature": 0}}
        for i in range(LINES)
    ]  # fmt: skip
    context, port = serve(store)
    try:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v3", api_key="k", max_retries=0, timeout=120) as client:
            first_token_seconds(client)  # warm-up
            alone = first_token_seconds(client)
            data = "".join(json.dumps(line) + "\n" for line in requests).encode()
            uploaded = client.files.create(file=("thousand.jsonl", data), purpose="batch")
            batch = client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            assert batch.status == "in_progress" and batch.request_counts is not None
            assert batch.request_counts.total == LINES
            beside = first_token_seconds(client)
            ratio = statistics.median(beside) / statistics.median(alone)
            print(f"first token beside the batch / alone: {ratio:.2f} (medians of {INTERACTIVE})")
            assert ratio <= MAX_FIRST_TOKEN_RATIO, (alone, beside)
            while (counts := client.batches.retrieve(batch.id).request_counts) is not None and counts.completed < 300:
                time.sleep(0.1)
            assert client.batches.retrieve(batch.id).status == "in_progress"  # killed in the middle
    finally:
        context.__exit__(None, None, None)  # kill -9 (SIGKILL) of a server still running
    context, port = serve(store)
    try:
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v3", api_key="k", max_retries=0, timeout=120) as client:
            deadline = time.monotonic() + 600
            while (done := client.batches.retrieve(batch.id)).status != "completed":
                assert done.status in ("in_progress", "finalizing") and time.monotonic() < deadline, done
                time.sleep(0.5)
            assert done.request_counts is not None and done.error_file_id is None
            assert (done.request_counts.completed, done.request_counts.failed) == (LINES, 0)
            assert done.output_file_id is not None
            outputs = [json.loads(line) for line in client.files.content(done.output_file_id).content.splitlines()]
            assert [o["custom_id"] for o in outputs] == [r["custom_id"] for r in requests]  # each once, in order
            assert all(o["response"]["status_code"] == 200 for o in outputs)
            assert len({o["id"] for o in outputs}) == LINES
    finally:
        context.__exit__(None, None, None)
