"""Per-key limits, key scopes and priority end to end: the bundled tiny-chat behind the bridge, the openai client.

The key file gives each test a key of its own, so the tests do not share a key's counts. The limiter's maths is
tested without a server in tests/service/test_rate_limits.py.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import openai
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from ovserve.clients.errors import error_details
from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, model_pb2, model_pb2_grpc
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT
from tests.rest_bridge.conftest import RunningBridge, served_with_bridge
from tests.rpc import parse

# Two names for the tiny model, so a key can be scoped to one of them.
MODELS = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS), ModelSpec("other-chat", TINY_CHAT,
                                                                              settings=TEST_SETTINGS)]  # fmt: skip
RETRY_RPM = 30  # the retried key's limit: one request back every 2 s once it is used up
KEY_FILE = f"""# per-key limits (docs/operations/security.md)
sk-open
sk-retry rpm={RETRY_RPM}
sk-throttled rpm=3
sk-scoped models=tiny-chat
sk-reloaded rpm=100
sk-tokens tpm=600
sk-one-at-once concurrent=1
sk-admin scope=admin
"""
HI = [{"role": "user", "content": "Hi"}]
HAMMER_GAP_SECONDS = 0.05  # between the throttled key's calls
STREAM_TOKENS = 500  # each measured stream's


@pytest.fixture(scope="module")
def key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    keys = tmp_path_factory.mktemp("keys") / "keys.txt"
    keys.write_text(KEY_FILE)
    return keys


@pytest.fixture(scope="module")
def limited(key_file: Path) -> Iterator[RunningBridge]:
    """A server of the two model names with the key file above, and a bridge in front."""
    api_keys = tuple(line.split()[0] for line in KEY_FILE.splitlines()[1:])
    with served_with_bridge(MODELS, api_keys=api_keys, api_key_file=key_file) as running:
        yield running


def client_for(bridge: RunningBridge, key: str, retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(base_url=bridge.url, api_key=key, max_retries=retries, timeout=120)


def test_a_key_over_its_rpm_gets_429_with_headers_and_the_clients_retry_gets_through(limited) -> None:
    with client_for(limited, "sk-retry") as client:
        first = client.chat.completions.with_raw_response.create(model="tiny-chat", messages=HI, max_tokens=1)
        assert first.headers["x-ratelimit-limit-requests"] == str(RETRY_RPM)
        assert first.headers["x-ratelimit-remaining-requests"] == str(RETRY_RPM - 1)
        assert re.fullmatch(r"\d+(\.\d+)?(ms|s)", first.headers["x-ratelimit-reset-requests"])
        assert "x-ratelimit-limit-tokens" not in first.headers  # no token limit on this key
        for _ in range(RETRY_RPM - 1):  # the rest of the minute's allowance (the bucket refills meanwhile)
            client.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1)
        refused = None
        for _ in range(RETRY_RPM):  # bounded: it refills one per 2 s, far slower than these calls
            try:
                client.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1)
            except openai.RateLimitError as error:
                refused = error
                break
        assert refused is not None, "the key was never refused"
        assert refused.status_code == 429 and refused.code == "rate_limit_exceeded"
        assert refused.type == "rate_limit_error" and "requests per minute" in refused.message
        assert 1 <= int(refused.response.headers["Retry-After"]) <= 60 / RETRY_RPM + 1
        assert refused.response.headers["x-ratelimit-remaining-requests"] == "0"
        # gRPC: RESOURCE_EXHAUSTED with RetryInfo and QuotaFailure, the same figures as initial metadata
        with grpc.insecure_channel(limited.server.target) as channel:
            request = parse(chat_pb2.CreateChatCompletionRequest, {"model": "tiny-chat", "messages": HI})
            with pytest.raises(grpc.RpcError) as raised:
                chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
                    request, metadata=(("authorization", "Bearer sk-retry"),)
                )
        error = raised.value
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert 0 < (error_details(error).retry_after or 0) <= 60 / RETRY_RPM
        status = rpc_status.from_call(error)
        assert status is not None
        quota = error_details_pb2.QuotaFailure()
        assert any(detail.Unpack(quota) for detail in status.details)
        assert quota.violations[0].subject == "api_key:rpm"
        assert dict(error.initial_metadata())["x-ratelimit-remaining-requests"] == "0"
    # the openai client waits Retry-After and tries again: the retry gets through
    with client_for(limited, "sk-retry", retries=3) as patient:
        raw = patient.chat.completions.with_raw_response.create(model="tiny-chat", messages=HI, max_tokens=1)
        assert raw.retries_taken >= 1 and raw.parse().choices[0].message.role == "assistant"


def test_a_token_reservation_is_settled_with_the_usage_reported(limited) -> None:
    """The first call reserves its estimate; by the second, the first's reservation was replaced by its usage
    (prompt and output tokens, as the reply counts them), the second's estimate taken as the first's was."""
    with client_for(limited, "sk-tokens") as client:
        started = time.monotonic()
        first = client.chat.completions.with_raw_response.create(model="tiny-chat", messages=HI, max_tokens=5)
        remaining = int(first.headers["x-ratelimit-remaining-tokens"])
        assert first.headers["x-ratelimit-limit-tokens"] == "600"
        reserved = 600 - remaining
        usage = first.parse().usage
        assert usage is not None and usage.total_tokens != reserved  # else this test could not tell them apart
        second = client.chat.completions.with_raw_response.create(model="tiny-chat", messages=HI, max_tokens=5)
        refilled = (time.monotonic() - started) * 600 / 60  # at most, since the first's admission
        now = int(second.headers["x-ratelimit-remaining-tokens"])
        settled = remaining - usage.total_tokens  # 600 - used - the second's reservation
        assert settled <= now <= settled + refilled + 1, (now, settled, refilled, reserved, usage.total_tokens)


def test_a_background_response_is_settled_with_its_usage_when_its_run_ends(limited) -> None:
    """A background response's call ends at once; its run settles the key's reservation with the tokens it used
    when it ends (it was charged its estimate for good)."""
    with client_for(limited, "sk-tokens") as client:
        started = time.monotonic()
        ask: dict[str, Any] = dict(model="tiny-chat", input="Hi", max_output_tokens=16, background=True)
        first = client.responses.with_raw_response.create(**ask)
        remaining = int(first.headers["x-ratelimit-remaining-tokens"])
        response = first.parse()
        while response.status in ("queued", "in_progress"):  # awaited: the run ends by its token bound
            time.sleep(0.05)
            response = client.responses.retrieve(response.id)
        assert response.status == "completed" and response.usage is not None
        used = response.usage.total_tokens
        reserved = int(first.headers["x-ratelimit-limit-tokens"]) - remaining
        assert used != reserved  # else this test could not tell them apart
        second = client.responses.with_raw_response.create(**ask)  # reserving what the first reserved
        refilled = (time.monotonic() - started) * 600 / 60
        now = int(second.headers["x-ratelimit-remaining-tokens"])
        settled = remaining - used  # the first's reservation replaced by its usage, the second's reserved
        assert settled <= now <= settled + refilled + 1, (now, settled, refilled, reserved, used)


def test_a_key_at_its_calls_at_once_is_refused_until_its_stream_ends(limited) -> None:
    with client_for(limited, "sk-one-at-once") as client, client_for(limited, "sk-one-at-once", retries=3) as patient:
        stream = client.chat.completions.create(
            model="tiny-chat", messages=HI, max_tokens=2000, stream=True, extra_body={"ignore_eos": True}
        )
        next(iter(stream))  # under way
        with pytest.raises(openai.RateLimitError) as refused:
            client.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1)
        assert "calls at once" in refused.value.message
        assert refused.value.response.headers["Retry-After"] == "1"
        stream.close()  # the bridge cancels it; the client's retry after Retry-After gets through
        assert patient.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1).choices


def test_an_admin_scoped_key_may_reload_and_a_user_key_may_not(limited) -> None:
    """scope=admin in the key file opens the admin calls to the key, as --admin-key-file does."""
    with grpc.insecure_channel(limited.server.target) as channel:
        stub = model_pb2_grpc.ModelServiceStub(channel)
        with pytest.raises(grpc.RpcError) as user:
            stub.ReloadConfig(model_pb2.ReloadConfigRequest(), metadata=(("authorization", "Bearer sk-open"),))
        assert user.value.code() == grpc.StatusCode.PERMISSION_DENIED
        with pytest.raises(grpc.RpcError) as admin:  # let in: refused only because it was started without --config
            stub.ReloadConfig(model_pb2.ReloadConfigRequest(), metadata=(("authorization", "Bearer sk-admin"),))
        assert admin.value.code() == grpc.StatusCode.FAILED_PRECONDITION, admin.value.details()


def _tokens_per_second(client: openai.OpenAI) -> float:
    """One greedy stream of STREAM_TOKENS tokens; its tokens per second from its first token to its end."""
    stream = client.chat.completions.create(
        model="tiny-chat", messages=HI, max_tokens=STREAM_TOKENS, temperature=0, stream=True,
        stream_options={"include_usage": True}, extra_body={"ignore_eos": True},
    )  # fmt: skip
    started = usage = None
    for chunk in stream:
        if started is None:
            started = time.perf_counter()
        if chunk.usage is not None:
            usage = chunk.usage.completion_tokens
    assert started is not None and usage == STREAM_TOKENS
    return usage / (time.perf_counter() - started)


@pytest.mark.alone  # a throughput ratio: the other xdist worker's load would be measured too
def test_another_keys_stream_keeps_its_throughput_while_one_key_is_throttled(limited) -> None:
    """The throttled key's calls are refused before they reach the engine, so the other key's stream runs as
    fast as alone (ratio of two measurements in this run; the best of three each)."""
    with client_for(limited, "sk-open") as other, client_for(limited, "sk-throttled") as throttled:
        for _ in range(3):  # its allowance
            throttled.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1)
        alone = max(_tokens_per_second(other) for _ in range(3))
        stop, outcomes = threading.Event(), {"refused": 0, "served": 0}

        def hammer() -> None:
            # 20 calls a second, 400 times the key's rate (a faster loop would measure this one process's CPU
            # and GIL, which the client, the bridge and the server share here, not the engine).
            for _ in range(2000):  # bounded; ends when the measurement does
                if stop.wait(HAMMER_GAP_SECONDS):
                    return
                try:
                    throttled.chat.completions.create(
                        model="tiny-chat", messages=HI, max_tokens=200, extra_body={"ignore_eos": True}
                    )
                    outcomes["served"] += 1
                except openai.RateLimitError:
                    outcomes["refused"] += 1

        thread = threading.Thread(target=hammer)
        thread.start()
        try:
            during = max(_tokens_per_second(other) for _ in range(3))
        finally:
            stop.set()
            thread.join(timeout=120)
    assert outcomes["refused"] >= 3 and outcomes["served"] <= 1  # at most the one it regained meanwhile
    assert during / alone > 0.6, (during, alone, outcomes)


def test_a_scoped_key_sees_and_uses_only_its_models(limited) -> None:
    with client_for(limited, "sk-scoped") as scoped, client_for(limited, "sk-open") as other:
        assert [model.id for model in scoped.models.list()] == ["tiny-chat"]
        assert {"tiny-chat", "other-chat"} <= {model.id for model in other.models.list()}
        assert scoped.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1).choices
        with pytest.raises(openai.NotFoundError) as refused:
            scoped.chat.completions.create(model="other-chat", messages=HI, max_tokens=1)
        assert refused.value.code == "model_not_found" and refused.value.param == "model"
        assert "does not exist or you do not have access to it" in refused.value.message
        with pytest.raises(openai.NotFoundError):
            scoped.models.retrieve("other-chat")
        assert other.chat.completions.create(model="other-chat", messages=HI, max_tokens=1).choices


def test_sighup_reads_the_limits_again_and_a_key_keeps_what_it_used(limited, key_file: Path) -> None:
    with client_for(limited, "sk-reloaded") as client:
        for _ in range(10):
            raw = client.chat.completions.with_raw_response.create(model="tiny-chat", messages=HI, max_tokens=1)
        assert raw.headers["x-ratelimit-limit-requests"] == "100"
        key_file.write_text(KEY_FILE.replace("sk-reloaded rpm=100", "sk-reloaded rpm=20 models=other-chat"))

        async def hang_up() -> None:
            limited.server.server.reload_api_keys()  # what SIGHUP does first

        limited.server.run(hang_up())
        raw = client.chat.completions.with_raw_response.create(model="other-chat", messages=HI, max_tokens=1)
        assert raw.headers["x-ratelimit-limit-requests"] == "20"
        # 10 used before, less what refilled meanwhile (100 a minute), and this one: not a fresh 19
        assert 9 <= int(raw.headers["x-ratelimit-remaining-requests"]) <= 15
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(model="tiny-chat", messages=HI, max_tokens=1)


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.01)


def _queue_wait_count(bridge: RunningBridge, priority: int) -> float:
    text = bridge.server.run(bridge.server.server.metrics_exposition())[0].decode()  # what /metrics serves
    found = re.search(rf'^ovserve_queue_wait_seconds_count{{priority="{priority}"}} (\S+)$', text, re.M)
    return float(found.group(1)) if found else 0.0


def test_waiting_calls_are_admitted_lowest_priority_first(tmp_path: Path) -> None:
    """With one place, calls queue: one of priority 0 sent after two of 30 runs before them; /metrics shows
    each one's wait by priority."""
    with served_with_bridge(MODELS[:1], max_concurrent_requests=1, max_queued_requests=8) as running:
        limit = running.server.server.limit
        before = _queue_wait_count(running, 30)
        order: list[str] = []
        with client_for(running, "none") as client:
            blocker = client.chat.completions.create(
                model="tiny-chat", messages=HI, max_tokens=2000, stream=True, extra_body={"ignore_eos": True}
            )
            next(iter(blocker))  # it holds the one place now

            def send(name: str, priority: int) -> threading.Thread:
                def call() -> None:
                    client.chat.completions.create(
                        model="tiny-chat", messages=HI, max_tokens=2, extra_body={"priority": priority}
                    )
                    order.append(name)

                thread = threading.Thread(target=call)
                thread.start()
                return thread

            threads = []
            for count, (name, priority) in enumerate([("low-1", 30), ("low-2", 30), ("high", 0)], start=1):
                threads.append(send(name, priority))
                _wait_until(lambda count=count: limit.calls_waiting == count, f"{count} calls waiting")
            blocker.close()  # the bridge cancels its call: the place goes to the first waiter
            for thread in threads:
                thread.join(timeout=120)
        assert order == ["high", "low-1", "low-2"]
        assert _queue_wait_count(running, 30) == before + 2
        assert limit.calls_waiting == 0 and limit.in_use == 0
