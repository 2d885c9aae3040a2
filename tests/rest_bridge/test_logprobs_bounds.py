"""Logprobs bounded per request (ovserve.service.api.logprobs.MAX_REQUEST_SCORES), end to end on tiny-chat.

Issue 43: the bound was per prompt, so 16 prompts of ~1,000 tokens with n 16, prompt_logprobs 20 and logprobs 5
ran 23.5 s before a 429 (the reply past gRPC's message limit), stalling /health and a running stream ~10 s and
leaving the engine process 1.3 GB larger; 64 prompts of 1,000 tokens with prompt_logprobs 20 answered a 91 MB
body. Now a request's scores over all its prompts and choices are counted before any work (the engine never sees
a refused request), and the largest request allowed stalls neither /health nor a running stream past the ratio
the other heavy routes are held to (tests/rest_bridge/test_heavy_requests.py), the engine's memory coming back.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, completion_pb2, completion_pb2_grpc
from ovserve.service.api import logprobs
from ovserve.service.api.logprobs import MAX_REQUEST_SCORES
from ovserve.service.observability.metrics import PROMPT_TOKENS
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rest_bridge.test_disconnect import wait_idle
from tests.rpc import failure, parse

MODEL = "tiny-chat"
TOKENS = 1_000  # tokens per prompt, as in the issue
ASK = [{"role": "user", "content": "Tell me a story."}]


def prompts(count: int) -> list[list[int]]:
    """``count`` distinct token-id prompts of TOKENS tokens each."""
    return [[100 + (i * 7 + j) % 900 for j in range(TOKENS)] for i in range(count)]


FIRST = {"model": MODEL, "prompt": prompts(16), "n": 16, "prompt_logprobs": 20, "logprobs": 5, "max_tokens": 16,
         "temperature": 1.0}  # fmt: skip
SECOND = {"model": MODEL, "prompt": prompts(64), "prompt_logprobs": 20, "max_tokens": 1}


def submitted_tokens() -> float:
    """Prompt tokens the server has submitted to tiny-chat's engine so far."""
    return PROMPT_TOKENS.labels(model=MODEL)._value.get()


def refusal(bridge: RunningBridge, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """The 400 error ``body`` gets, checked to have cost the engine nothing."""
    before = submitted_tokens()
    reply = http_request(bridge.port, "POST", path, body)
    assert reply.status == 400, reply.body
    assert submitted_tokens() == before  # refused before any engine work
    return dict(json.loads(reply.body)["error"])


def test_the_issues_first_request_is_refused_at_once_naming_prompt_logprobs(bridge: RunningBridge) -> None:
    error = refusal(bridge, "/v3/completions", FIRST)
    assert error["param"] == "prompt_logprobs"
    # 16 prompts x 16 choices x 1,000 tokens x 21, and 256 choices x 16 tokens x 6
    assert "5,400,576 logprobs" in error["message"] and f"{MAX_REQUEST_SCORES:,}" in error["message"], error


def test_the_issues_second_request_is_refused_naming_prompt_logprobs(bridge: RunningBridge) -> None:
    error = refusal(bridge, "/v3/completions", SECOND)
    assert error["param"] == "prompt_logprobs" and "1,344,000 logprobs" in error["message"], error


REFUSED: dict[str, tuple[str, dict[str, Any], str]] = {
    # one choice per prompt would fit: n takes it over
    "completions-n": ("/v3/completions", {"prompt": prompts(1), "n": 16, "prompt_logprobs": 20, "max_tokens": 1,
                                          "temperature": 1.0}, "n"),
    # 64 x 1,000 output tokens x 6
    "completions-logprobs": ("/v3/completions", {"prompt": [p[:10] for p in prompts(64)], "logprobs": 5,
                                                 "max_tokens": 1000}, "logprobs"),
    # 64 x 1,000 echoed prompt tokens x 6
    "completions-echo": ("/v3/completions", {"prompt": prompts(64), "echo": True, "logprobs": 5, "max_tokens": 1},
                         "echo"),
    "chat-n": ("/v3/chat/completions", {"messages": ASK, "n": 16, "logprobs": True, "top_logprobs": 20,
                                        "max_tokens": 1000, "temperature": 1.0}, "n"),
}  # fmt: skip


@pytest.mark.parametrize("case", REFUSED)
def test_each_api_refuses_too_many_scores_naming_the_field(bridge: RunningBridge, case: str) -> None:
    path, body, field = REFUSED[case]
    error = refusal(bridge, path, {"model": MODEL, **body})
    assert error["param"] == field and f"at most {MAX_REQUEST_SCORES:,}" in error["message"], error


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"top_logprobs": 20, "max_output_tokens": 100}, "top_logprobs"),  # 100 x 21
        ({"include": ["message.output_text.logprobs"], "max_output_tokens": 1500}, "max_output_tokens"),
    ],
    ids=["alternatives", "chosen"],
)
def test_responses_bound_top_logprobs_per_request(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch, body: dict[str, Any], field: str
) -> None:
    """One choice of at most 2,048 tokens stays under the bound on tiny-chat: lowered here to 1,000."""
    monkeypatch.setattr(logprobs, "MAX_REQUEST_SCORES", 1_000)
    error = refusal(bridge, "/v3/responses", {"model": MODEL, "input": "Tell me a story.", "store": False, **body})
    assert error["param"] == field and "at most 1,000" in error["message"], error
    allowed = {"model": MODEL, "input": "Tell me a story.", "store": False, **body, "max_output_tokens": 40}
    assert http_request(bridge.port, "POST", "/v3/responses", allowed).status == 200


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_a_request_setting_no_length_is_cut_at_the_bound_not_refused(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """Without max_tokens an output's length is the room its prompt leaves (2,048 tokens on tiny-chat, 21 scores a
    token with top_logprobs 20, n 16: 688,128 scores), so a bound counted on it refused a request that asked for no
    length at all; its outputs end where the bound is reached instead (finish_reason length)."""
    monkeypatch.setattr(logprobs, "MAX_REQUEST_SCORES", 240)
    body = {"model": MODEL, "messages": ASK, "n": 2, "logprobs": True, "top_logprobs": 3, "ignore_eos": True,
            "temperature": 1.0, "seed": 7, "stream": stream}  # fmt: skip
    reply = http_request(bridge.port, "POST", "/v3/chat/completions", body)
    assert reply.status == 200, reply.body
    cap = 240 // (2 * 4)  # choices x (top_logprobs + 1)
    if stream:
        chunks = [json.loads(line[6:]) for line in reply.body.decode().splitlines() if line.startswith("data: {")]
        choices = [choice for chunk in chunks for choice in chunk["choices"]]
        for index in (0, 1):
            mine = [choice for choice in choices if choice["index"] == index]
            assert sum(len((c.get("logprobs") or {}).get("content") or []) for c in mine) == cap
            assert [c["finish_reason"] for c in mine if c.get("finish_reason")] == ["length"]
    else:
        answer = json.loads(reply.body)
        assert [choice["finish_reason"] for choice in answer["choices"]] == ["length", "length"]
        assert [len(choice["logprobs"]["content"]) for choice in answer["choices"]] == [cap, cap]
        assert answer["usage"]["completion_tokens"] == 2 * cap
    # the same length asked for outright, one token more, is refused naming the field
    refused = refusal(bridge, "/v3/chat/completions", {**body, "stream": False, "n": 1, "max_tokens": 2 * cap + 1})
    assert refused["param"] == "top_logprobs", refused


def test_grpc_refuses_with_a_bad_request_naming_the_field(channel: grpc.Channel) -> None:
    completions = completion_pb2_grpc.CompletionServiceStub(channel)
    fields = {name: value for name, value in FIRST.items() if name != "prompt"}
    prompts_ = [{"token_ids": {"ids": ids}} for ids in FIRST["prompt"]]
    request = parse(completion_pb2.CreateCompletionRequest, {**fields, "prompts": prompts_})
    with pytest.raises(grpc.RpcError) as caught:
        completions.CreateCompletion(request, timeout=60)
    refused = failure(caught.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["prompt_logprobs"], refused
    assert "5,400,576 logprobs" in refused.message
    chat = chat_pb2_grpc.ChatServiceStub(channel)
    asked = {"model": MODEL, "messages": ASK, "n": 16, "logprobs": True, "top_logprobs": 20, "max_tokens": 1000,
             "temperature": 1.0}  # fmt: skip
    with pytest.raises(grpc.RpcError) as caught:
        chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, asked), timeout=60)
    refused = failure(caught.value)
    assert refused.code == grpc.StatusCode.INVALID_ARGUMENT and refused.fields == ["n"], refused


WATCHER = """
import http.client, json, subprocess, sys, threading, time
port, stream_body = int(sys.argv[1]), sys.argv[3]
health = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
def check():
    started = time.perf_counter()
    health.request("GET", "/health")
    response = health.getresponse()
    response.read()
    assert response.status == 200
    return time.perf_counter() - started
events = []  # arrival time of each event of the running stream
stream = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
stream.request("POST", "/v3/chat/completions", stream_body, {"Content-Type": "application/json"})
reply = stream.getresponse()
assert reply.status == 200
def read():
    for line in reply:
        if line.startswith(b"data: "):
            events.append(time.monotonic())
threading.Thread(target=read, daemon=True).start()
while len(events) < 5:
    time.sleep(0.01)
idle_from = time.monotonic()
idle = [check() for _ in range(50)]
idle_to = started = time.monotonic()
sender = subprocess.Popen([sys.executable, "-c", sys.argv[2], str(port)], stdout=subprocess.PIPE)
during = []
while sender.poll() is None or len(during) < 20:
    during.append(check())
ended = time.monotonic()
outcomes = json.loads(sender.communicate(timeout=120)[0])
def gaps(start, end):
    times = [t for t in events if start <= t <= end]
    return [b - a for a, b in zip(times, times[1:])]
print(json.dumps({"idle": idle, "during": during, "took": ended - started, "outcomes": outcomes,
                  "idle_gaps": gaps(idle_from, idle_to), "during_gaps": gaps(started, ended)}))
"""
SENDER = """
import http.client, json, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=300)
connection.request("POST", "/v3/completions", BODY, {"Content-Type": "application/json"})
response = connection.getresponse()
print(json.dumps([{"status": response.status, "size": len(response.read())}]))
"""
# The engine process's growth left by the largest request: 184 -> 215-235 MiB measured here, the same after 4 in a
# row (the first use of 12 scored sequences at once; before the heap was trimmed, 80 MiB; the issue's 5,400,576
# scores left 1.3 GB)
MARGIN_MIB = 64
STREAM = {"model": MODEL, "messages": ASK, "max_tokens": 1500, "ignore_eos": True, "temperature": 0, "stream": True}


def resident_mib(pid: int) -> float:
    """VmRSS of process ``pid``, in MiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")) / 1024


def largest_allowed() -> dict[str, Any]:
    """Prompts of TOKENS tokens with prompt_logprobs 20, as many as the bound allows (12: 252,000 scores)."""
    count = MAX_REQUEST_SCORES // (TOKENS * 21)
    return {"model": MODEL, "prompt": prompts(count), "prompt_logprobs": 20, "max_tokens": 1}


@pytest.mark.alone
def test_the_largest_allowed_request_stalls_nobody_and_gives_its_memory_back(bridge: RunningBridge) -> None:
    engine = next(iter(bridge.server.server.registry)).engine
    assert engine.pid is not None
    warm = {"model": MODEL, "prompt": prompts(1), "prompt_logprobs": 20, "max_tokens": 1}
    for _ in range(2):  # the scoring copy compiled, and its buffers at their working size
        assert http_request(bridge.port, "POST", "/v3/completions", warm).status == 200
    kv_before = wait_idle(bridge).kv_cache_bytes
    before = resident_mib(engine.pid)
    sender = SENDER.replace("BODY", repr(json.dumps(largest_allowed())))
    root = str(Path(__file__).resolve().parents[2])
    watcher = subprocess.run(
        [sys.executable, "-c", WATCHER, str(bridge.port), sender, json.dumps(STREAM)],
        cwd=root, capture_output=True, timeout=600,
    )  # fmt: skip
    assert watcher.returncode == 0, watcher.stderr
    found = json.loads(watcher.stdout)
    stats = wait_idle(bridge)
    after = resident_mib(engine.pid)
    [outcome] = found["outcomes"]
    idle, during = statistics.median(found["idle"]), found["during"]
    idle_gap, during_gaps = statistics.median(found["idle_gaps"]), found["during_gaps"]
    print(
        f"\n{outcome['size'] / 1e6:.1f} MB answered {outcome['status']} in {found['took']:.1f} s; /health idle "
        f"{idle * 1000:.2f} ms, meanwhile median {statistics.median(during) * 1000:.2f} ms, max "
        f"{max(during) * 1000:.1f} ms; stream gap idle {idle_gap * 1000:.1f} ms, meanwhile median "
        f"{statistics.median(during_gaps) * 1000:.1f} ms, max {max(during_gaps) * 1000:.1f} ms; engine "
        f"{before:.0f} -> {after:.0f} MiB; kv {kv_before / 2**20:.0f} -> {stats.kv_cache_bytes / 2**20:.0f} MiB"
    )
    assert outcome["status"] == 200 and stats.idle
    # As the other heavy routes (tests/rest_bridge/test_heavy_requests.py)
    assert statistics.median(during) <= 20 * idle
    assert max(during) <= max(200 * idle, found["took"] / 10)
    assert max(during_gaps) <= max(200 * idle_gap, found["took"] / 10)
    assert after <= before + MARGIN_MIB


BUILT_OFF_THE_LOOP = {
    "completions": ("/v3/completions", {"prompt": "Once upon a time", "prompt_logprobs": 3, "logprobs": 2,
                                        "echo": True, "max_tokens": 4}),
    "completions-stream": ("/v3/completions", {"prompt": "Once upon a time", "prompt_logprobs": 3, "max_tokens": 4,
                                               "stream": True}),
    "chat": ("/v3/chat/completions", {"messages": ASK, "prompt_logprobs": 3, "logprobs": True, "top_logprobs": 2,
                                      "max_tokens": 4}),
    "chat-stream": ("/v3/chat/completions", {"messages": ASK, "prompt_logprobs": 3, "max_tokens": 4,
                                             "stream": True}),
}  # fmt: skip


@pytest.mark.parametrize("case", BUILT_OFF_THE_LOOP)
def test_scores_are_built_into_the_answer_off_the_event_loop(
    bridge: RunningBridge, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """An answer's scores (up to MAX_REQUEST_SCORES: ~1 s of building) never hold the server's event loop: before,
    the largest allowed request held /health 2.1-2.7 s while its entries were built on it."""
    on_the_loop: list[str] = []

    def watched(name: str, build: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                asyncio.get_running_loop()
                on_the_loop.append(name)
            except RuntimeError:  # a worker thread: no loop runs here
                pass
            return build(*args, **kwargs)

        return call

    builders = ["prompt_entries"] if case.endswith("stream") else ["prompt_entries", "token_logprobs",
                                                                    "completion_logprobs"]  # fmt: skip
    calls = {name: getattr(logprobs, name) for name in builders}
    for name, build in calls.items():
        monkeypatch.setattr(logprobs, name, watched(name, build))
    path, body = BUILT_OFF_THE_LOOP[case]
    reply = http_request(bridge.port, "POST", path, {"model": MODEL, "temperature": 0, **body})
    assert reply.status == 200 and b"prompt_logprobs" in reply.body, reply.body
    assert on_the_loop == []
