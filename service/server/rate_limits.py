"""Per-key rate limits: requests and tokens per minute, and calls at once, as the key file sets them.

Each limit per minute is a bucket that holds at most a minute's allowance and refills continuously (OpenAI's
limits behave so: ``x-ratelimit-reset-*`` is the time until the bucket is full again). A request takes 1 from
the requests bucket and, for tokens, a reservation: its prompt estimated from its size (about
BYTES_PER_TOKEN bytes a token) plus its output limit (``max_tokens``, ``max_completion_tokens`` or
``max_output_tokens``, times ``n``; DEFAULT_OUTPUT_ESTIMATE when it sets none). At its end the reservation is
settled: the tokens it really used (prompt and output, as its usage reports them) replace it, so the bucket
may go below zero after a request that used more than reserved, and later requests wait for it. A request
whose reservation exceeds a whole minute's allowance is let in when the bucket is full.

The state is this process's alone: replicas behind a router each count their own (docs/operations/security.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ovserve.service.errors import QuotaExceeded
from ovserve.service.store.key_file import KeyPolicy

BYTES_PER_TOKEN = 4  # the prompt estimate at admission (OpenAI's rule of thumb for English text)
DEFAULT_OUTPUT_ESTIMATE = 256  # output tokens reserved for a request that sets no output limit
CONCURRENT_RETRY_SECONDS = 1.0  # Retry-After of a key at its limit of calls at once
# The output-limit fields, in the order they are read (the first one set counts).
_OUTPUT_LIMITS = ("max_completion_tokens", "max_tokens", "max_output_tokens")


def runs_a_model(request: Any) -> bool:
    """Whether a request is one the limits count: a message with a ``model`` field (chat, completions, Responses,
    embeddings, rerank, transcriptions), not an upload's stream or a batch, file or conversation call."""
    descriptor = getattr(request, "DESCRIPTOR", None)
    return descriptor is not None and "model" in descriptor.fields_by_name


def token_estimate(request: Any) -> int:
    """What a request reserves of its key's tokens per minute at admission: its prompt from its size, and its
    output limit if it generates (DEFAULT_OUTPUT_ESTIMATE if it sets none)."""
    prompt = math.ceil(request.ByteSize() / BYTES_PER_TOKEN)
    fields = request.DESCRIPTOR.fields_by_name
    if not any(name in fields for name in _OUTPUT_LIMITS):
        return prompt  # embeddings, rerank...: no output tokens
    output = DEFAULT_OUTPUT_ESTIMATE
    for name in _OUTPUT_LIMITS:
        if _is_set(request, name):
            output = getattr(request, name)
            break
    choices = request.n if _is_set(request, "n") and request.n > 1 else 1
    return prompt + output * choices


def _is_set(request: Any, name: str) -> bool:
    try:
        return bool(request.HasField(name))
    except ValueError:  # no such field, or one without presence
        return False


@dataclass
class Bucket:
    """A limit per minute: at most ``per_minute`` held, refilled at ``per_minute`` a minute."""

    per_minute: int
    level: float
    at: float

    def refill(self, now: float) -> None:
        """Add what the time since the last refill brought."""
        self.level = min(self.per_minute, self.level + (now - self.at) * self.per_minute / 60)
        self.at = now

    def seconds_until(self, amount: float) -> float:
        """How long until the bucket holds ``amount`` (0: it does)."""
        return max(0.0, (amount - self.level) * 60 / self.per_minute)

    def headers(self, kind: str) -> list[tuple[str, str]]:
        """OpenAI's x-ratelimit-* headers of this bucket (``kind``: requests or tokens)."""
        return [
            (f"x-ratelimit-limit-{kind}", str(self.per_minute)),
            (f"x-ratelimit-remaining-{kind}", str(max(0, math.floor(self.level)))),
            (f"x-ratelimit-reset-{kind}", duration(self.seconds_until(self.per_minute))),
        ]


def duration(seconds: float) -> str:
    """A duration as OpenAI writes it in x-ratelimit-reset-*: ``20ms``, ``1.5s``, ``6m0s``."""
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:.3f}".rstrip("0").rstrip(".") + "s"
    return f"{int(minutes)}m{text}" if minutes else text


@dataclass
class _KeyState:
    """One key's buckets and calls under way."""

    policy: KeyPolicy
    requests: Bucket | None
    tokens: Bucket | None
    running: int = 0

    def headers(self) -> list[tuple[str, str]]:
        return [
            *(self.requests.headers("requests") if self.requests else ()),
            *(self.tokens.headers("tokens") if self.tokens else ()),
        ]


@dataclass
class Ticket:
    """An admitted request's hold on its key's limits, settled once at its end."""

    _state: _KeyState
    reserved: int
    _settled: bool = field(default=False)

    def settle(self, used: int | None) -> None:
        """The request ended having used ``used`` tokens (None: unknown, the reservation stands)."""
        if self._settled:
            return
        self._settled = True
        self._state.running -= 1
        bucket = self._state.tokens
        if bucket is not None and used is not None:
            bucket.level = min(bucket.per_minute, bucket.level + self.reserved - used)


@dataclass(frozen=True)
class Admission:
    """What the limiter said: a ticket (None: the key has no limits), or the refusal; the headers either way."""

    ticket: Ticket | None
    refusal: QuotaExceeded | None
    headers: list[tuple[str, str]]


class KeyLimiter:
    """Every limited key's state, by the key's fingerprint (the tenant)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._states: dict[str, _KeyState] = {}

    def set_policies(self, policies: Mapping[str, KeyPolicy]) -> None:
        """The policies from now on (by fingerprint). A key that keeps a limit keeps what it used of it in the
        last minute (a reload is no reset); a new limit starts full; a key gone is forgotten."""
        now = self._clock()
        states = {}
        for tenant, policy in policies.items():
            old = self._states.get(tenant)
            if old is None:
                states[tenant] = _KeyState(policy, _bucket(policy.rpm, None, now), _bucket(policy.tpm, None, now))
                continue
            old.requests = _bucket(policy.rpm, old.requests, now)
            old.tokens = _bucket(policy.tpm, old.tokens, now)
            old.policy = policy
            states[tenant] = old
        self._states = states

    def policy(self, tenant: str) -> KeyPolicy | None:
        """The policy of a key (None: none set)."""
        state = self._states.get(tenant)
        return None if state is None else state.policy

    def admit(self, tenant: str, estimate: int) -> Admission:
        """Take a request of ``estimate`` tokens into the key's limits, or say why not and when to retry."""
        state = self._states.get(tenant)
        if state is None or not state.policy.limited:
            return Admission(None, None, [])
        now = self._clock()
        for bucket in (state.requests, state.tokens):
            if bucket is not None:
                bucket.refill(now)
        refusal = self._refusal(state, estimate)
        if refusal is not None:
            return Admission(None, refusal, state.headers())
        state.running += 1
        if state.requests is not None:
            state.requests.level -= 1
        if state.tokens is not None:
            state.tokens.level -= estimate
        return Admission(Ticket(state, estimate), None, state.headers())

    def _refusal(self, state: _KeyState, estimate: int) -> QuotaExceeded | None:
        """Why the key cannot take the request now (None: it can), with when to retry."""
        policy = state.policy
        if policy.concurrent is not None and state.running >= policy.concurrent:
            return _exhausted("concurrent", policy.concurrent, "calls at once", CONCURRENT_RETRY_SECONDS)
        if state.requests is not None and state.requests.level < 1:
            return _exhausted("rpm", state.requests.per_minute, "requests per minute", state.requests.seconds_until(1))
        tokens = state.tokens
        if tokens is not None and tokens.level < min(estimate, tokens.per_minute):
            wait = tokens.seconds_until(min(estimate, tokens.per_minute))
            return _exhausted("tpm", tokens.per_minute, f"tokens per minute (this request reserves {estimate})", wait)
        return None


def _bucket(per_minute: int | None, old: Bucket | None, now: float) -> Bucket | None:
    """A bucket of the new limit: full if new, else holding what the old one lacked of its limit less."""
    if per_minute is None:
        return None
    if old is None:
        return Bucket(per_minute, per_minute, now)
    old.refill(now)
    return Bucket(per_minute, min(per_minute, per_minute - (old.per_minute - old.level)), now)


def _exhausted(limit: str, value: int, what: str, retry_after: float) -> QuotaExceeded:
    """The refusal of a key at its ``limit`` (the key file's setting), with when to retry."""
    return QuotaExceeded(
        f"Rate limit reached for this API key: {value} {what}; retry in {retry_after:.2f}s",
        reason="RATE_LIMIT_EXCEEDED",
        retry_after=retry_after,
        subject=f"api_key:{limit}",
        description=f"the key's limit of {value} {what}",
    )
