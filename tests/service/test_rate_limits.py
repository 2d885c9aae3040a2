"""Per-key limits' maths (buckets, reservations settled, reloads), the key file's settings, and the priority queue
of the concurrency bound; no server (the end-to-end tests are tests/rest_bridge/test_key_limits.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ovserve.clients.v1 import chat_pb2, embedding_pb2
from ovserve.service.errors import QuotaExceeded
from ovserve.service.limits import PRIORITY_LEVELS, ConcurrencyLimit
from ovserve.service.server.rate_limits import (
    BYTES_PER_TOKEN,
    DEFAULT_OUTPUT_ESTIMATE,
    KeyLimiter,
    duration,
    token_estimate,
)
from ovserve.service.store.key_file import ADMIN, KeyFileError, KeyPolicy, parse_line, read_key_file


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def limiter(**policy: object) -> tuple[KeyLimiter, Clock]:
    clock = Clock()
    limits = KeyLimiter(clock)
    limits.set_policies({"key": KeyPolicy(**policy)})  # type: ignore[arg-type]
    return limits, clock


def headers(admission: object) -> dict[str, str]:
    return dict(admission.headers)  # type: ignore[attr-defined]


# ---- the key file ----


def test_a_line_with_the_key_alone_is_what_the_file_always_held(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text("sk-a\n\n  sk-b  \n# a comment\nsk-c rpm=60 tpm=1000 concurrent=2 models=m1,m2 scope=admin\n")
    policies = read_key_file(keys)
    assert list(policies) == ["sk-a", "sk-b", "sk-c"]
    assert policies["sk-a"] == KeyPolicy() and not policies["sk-a"].limited
    assert policies["sk-c"] == KeyPolicy(60, 1000, 2, frozenset({"m1", "m2"}), ADMIN)


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("sk rpm=0", "rpm='0'"),
        ("sk rpm=many", "rpm='many'"),
        ("sk tpm=-5", "tpm='-5'"),
        ("sk scope=root", "scope='root'"),
        ("sk models=,", "models=','"),
        ("sk speed=3", "'speed=3' is not a setting"),
        ("sk extra", "'extra' is not a setting"),
    ],
)
def test_a_setting_not_understood_is_an_error_naming_the_line_and_setting(line: str, named: str) -> None:
    with pytest.raises(KeyFileError) as error:
        parse_line(line, "keys:3")
    assert str(error.value).startswith("keys:3: ") and named in str(error.value)


# ---- requests per minute ----


def test_requests_per_minute_refuse_the_next_request_until_the_bucket_refills_one() -> None:
    limits, clock = limiter(rpm=3)
    first = limits.admit("key", 1)
    assert headers(first)["x-ratelimit-remaining-requests"] == "2"
    assert headers(first)["x-ratelimit-limit-requests"] == "3"
    assert headers(first)["x-ratelimit-reset-requests"] == "20s"  # one of three a minute: 20 s to refill
    for _ in range(2):
        assert limits.admit("key", 1).refusal is None
    refused = limits.admit("key", 1)
    assert isinstance(refused.refusal, QuotaExceeded) and refused.ticket is None
    assert refused.refusal.retry_after == pytest.approx(20.0)
    assert refused.refusal.subject == "api_key:rpm"
    assert headers(refused)["x-ratelimit-remaining-requests"] == "0"
    assert headers(refused)["x-ratelimit-reset-requests"] == "1m0s"
    clock.now += 19.0
    assert limits.admit("key", 1).refusal is not None
    clock.now += 1.0
    assert limits.admit("key", 1).refusal is None  # one request refilled after 20 s


def test_a_key_without_a_policy_or_limits_is_not_counted() -> None:
    limits, _ = limiter(models=frozenset({"m"}))
    admission = limits.admit("key", 10**9)
    assert admission.ticket is None and admission.refusal is None and admission.headers == []
    assert limits.admit("another", 1).headers == []


# ---- tokens per minute: reserve, then settle ----


def test_a_reservation_is_settled_with_the_tokens_used() -> None:
    limits, _ = limiter(tpm=1000)
    ticket = limits.admit("key", 600).ticket
    assert ticket is not None
    assert headers(limits.admit("key", 100))["x-ratelimit-remaining-tokens"] == "300"
    # 400 left less the second request's 100: a request of 350 must wait
    assert limits.admit("key", 350).refusal is not None
    ticket.settle(150)  # used 150 of its 600: 450 go back
    ticket.settle(0)  # settled once only
    assert headers(limits.admit("key", 350))["x-ratelimit-remaining-tokens"] == "400"


def test_a_request_that_used_more_than_it_reserved_leaves_the_bucket_below_zero() -> None:
    limits, clock = limiter(tpm=600)  # 10 tokens a second
    ticket = limits.admit("key", 100).ticket
    assert ticket is not None
    ticket.settle(900)  # 800 more than reserved: the bucket at -300
    refused = limits.admit("key", 50).refusal
    assert refused is not None and refused.retry_after == pytest.approx(35.0)  # (50 + 300) / 10
    assert refused.subject == "api_key:tpm"
    clock.now += 35.0
    assert limits.admit("key", 50).refusal is None


def test_an_unknown_use_keeps_the_reservation() -> None:
    limits, _ = limiter(tpm=1000)
    ticket = limits.admit("key", 700).ticket
    assert ticket is not None
    ticket.settle(None)
    assert headers(limits.admit("key", 300))["x-ratelimit-remaining-tokens"] == "0"


def test_a_reservation_larger_than_a_minute_waits_for_a_full_bucket() -> None:
    limits, clock = limiter(tpm=100)
    ticket = limits.admit("key", 500).ticket  # a full bucket lets it in
    assert ticket is not None
    ticket.settle(500)
    refused = limits.admit("key", 500).refusal
    assert refused is not None and refused.retry_after == pytest.approx(5 * 60)  # from -400 to 100 at 100/min
    clock.now += 5 * 60
    assert limits.admit("key", 500).refusal is None


# ---- calls at once ----


def test_concurrent_calls_beyond_the_limit_are_refused_until_one_ends() -> None:
    limits, _ = limiter(concurrent=2)
    first, second = limits.admit("key", 1).ticket, limits.admit("key", 1).ticket
    assert first is not None and second is not None
    refused = limits.admit("key", 1).refusal
    assert refused is not None and refused.subject == "api_key:concurrent"
    first.settle(1)
    assert limits.admit("key", 1).refusal is None


# ---- SIGHUP: the limits read again ----


def test_a_reload_keeps_what_a_key_used_and_follows_its_new_limits() -> None:
    limits, _ = limiter(rpm=10, tpm=1000, concurrent=1)
    ticket = limits.admit("key", 400).ticket
    assert ticket is not None
    for _ in range(3):
        limits.admit("other-key-not-limited", 1)
    limits.set_policies({"key": KeyPolicy(rpm=10, tpm=1000, concurrent=1)})  # unchanged: not reset
    assert limits.admit("key", 1).refusal is not None  # still at its one call at once
    limits.set_policies({"key": KeyPolicy(rpm=20, tpm=500, concurrent=2)})
    admitted = limits.admit("key", 50)
    assert admitted.refusal is None
    # it had used 1 of 10 requests and 400 tokens: now 19 - 1 of 20 and 500 - 400 - 50 of 500
    assert headers(admitted)["x-ratelimit-remaining-requests"] == "18"
    assert headers(admitted)["x-ratelimit-remaining-tokens"] == "50"
    ticket.settle(400)  # the ticket of before the reload still settles
    limits.set_policies({"key": KeyPolicy(models=frozenset({"m"}))})  # limits lifted
    assert limits.admit("key", 10**6).headers == []
    limits.set_policies({})
    assert limits.policy("key") is None


# ---- estimates and headers ----


def test_the_estimate_is_the_prompt_by_size_and_the_output_limit_times_n() -> None:
    chat = chat_pb2.CreateChatCompletionRequest(
        model="m", messages=[chat_pb2.ChatMessage(role="user", content="x" * 400)]
    )
    prompt = -(-chat.ByteSize() // BYTES_PER_TOKEN)
    assert token_estimate(chat) == prompt + DEFAULT_OUTPUT_ESTIMATE
    chat.max_tokens = 10
    chat.n = 3
    assert token_estimate(chat) == -(-chat.ByteSize() // BYTES_PER_TOKEN) + 30
    embedding = embedding_pb2.CreateEmbeddingRequest(model="m", input="y" * 40)
    assert token_estimate(embedding) == -(-embedding.ByteSize() // BYTES_PER_TOKEN)  # no output


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.02, "20ms"), (0.9991, "1000ms"), (1.5, "1.5s"), (20.0, "20s"), (360.0, "6m0s")]
)
def test_durations_are_written_as_openai_writes_them(seconds: float, text: str) -> None:
    assert duration(seconds) == text


# ---- the priority queue of the concurrency bound ----


async def _order_of(limit: ConcurrencyLimit, clock: Clock, arrivals: list[tuple[str, int, float]]) -> list[str]:
    """Names in the order they get the one place, each arriving at its time with its priority."""
    order: list[str] = []

    async def call(name: str, priority: int) -> None:
        await limit.wait_as_call(priority)
        order.append(name)

    tasks = []
    for name, priority, at in arrivals:
        clock.now = at
        tasks.append(asyncio.create_task(call(name, priority)))
        await asyncio.sleep(0)  # queued now
    assert limit.calls_waiting == len(arrivals)
    for _ in arrivals:
        limit.release()
        await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    return order


def test_waiting_calls_get_a_place_lowest_priority_first_with_aging() -> None:
    asyncio.run(_test_waiting_calls_get_a_place_lowest_priority_first_with_aging())


async def _test_waiting_calls_get_a_place_lowest_priority_first_with_aging() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(1, queue=10, clock=clock)
    assert limit.try_take()
    order = await _order_of(
        limit,
        clock,
        [("late-low", 5, 1000.0), ("high", 0, 1001.0), ("same-time", 0, 1001.0), ("aged-out", 0, 1006.0)],
    )
    # late-low (5 at t=1000) ranks as a priority 0 arriving at t=1005: after the two of t=1001, before t=1006
    assert order == ["high", "same-time", "late-low", "aged-out"]


def test_a_priority_counts_only_within_its_levels() -> None:
    asyncio.run(_test_a_priority_counts_only_within_its_levels())


async def _test_a_priority_counts_only_within_its_levels() -> None:
    clock = Clock()
    limit = ConcurrencyLimit(1, queue=10, clock=clock)
    assert limit.try_take()
    far = 1000.0 + 2 * PRIORITY_LEVELS + 1
    order = await _order_of(limit, clock, [("waited", 10**6, 1000.0), ("urgent", -(10**6), far)])
    assert order == ["waited", "urgent"]  # nothing arriving past the starvation bound passes it


def test_a_call_that_gives_up_waiting_leaves_the_queue_and_batch_lines_never_pass() -> None:
    asyncio.run(_test_a_call_that_gives_up_waiting_leaves_the_queue_and_batch_lines_never_pass())


async def _test_a_call_that_gives_up_waiting_leaves_the_queue_and_batch_lines_never_pass() -> None:
    limit = ConcurrencyLimit(1, queue=1)
    assert limit.try_take()
    gone = asyncio.create_task(limit.wait_as_call(0))
    await asyncio.sleep(0)
    assert limit.call_queue_full and not limit.try_take()  # a batch line's try_take: someone waits
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    assert limit.calls_waiting == 0
    waiting = asyncio.create_task(limit.wait_as_call(0))
    await asyncio.sleep(0)
    limit.release()  # skips the cancelled waiter, hands the place to the live one
    assert await waiting == pytest.approx(0.0, abs=5.0)
    assert limit.in_use == 1
    limit.release()
    assert limit.in_use == 0 and limit.try_take()
