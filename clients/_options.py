"""Channel options and call metadata shared by the sync and asyncio clients."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from clients.defaults import MESSAGE_SIZE_OPTIONS

# gRPC caps a retry policy's maxAttempts at 5 (larger values are treated as 5).
MAX_ATTEMPTS = 5

ChannelOptions = Sequence[tuple[str, Any]]


def retry_service_config(retries: int, initial_backoff: float = 0.1, max_backoff: float = 2.0) -> str:
    """A grpc.service_config retrying every method up to ``retries`` times on UNAVAILABLE.

    gRPC itself retries, with exponential backoff and jitter; a streaming call
    is retried only until the server sends its first message, so a stream is
    never replayed halfway.
    """
    policy = {
        "maxAttempts": min(retries + 1, MAX_ATTEMPTS),
        "initialBackoff": f"{initial_backoff}s",
        "maxBackoff": f"{max_backoff}s",
        "backoffMultiplier": 2,
        "retryableStatusCodes": ["UNAVAILABLE"],
    }
    return json.dumps({"methodConfig": [{"name": [{}], "retryPolicy": policy}]})  # name [{}]: every method


def channel_options(retries: int, extra: ChannelOptions = ()) -> list[tuple[str, Any]]:
    """Channel options: the server's message size limit, the retry policy (when ``retries`` > 0) and the
    caller's own, which replace ours."""
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    # The server's message limit, both ways: gRPC's default 4 MiB would refuse a large batch reply.
    options: list[tuple[str, Any]] = [*MESSAGE_SIZE_OPTIONS, ("grpc.enable_retries", int(retries > 0))]
    if retries:
        options.append(("grpc.service_config", retry_service_config(retries)))
    overridden = {name for name, _ in extra}
    return [option for option in options if option[0] not in overridden] + list(extra)


def call_metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    """Metadata sent with every call: ``authorization: Bearer <api_key>`` when a key is given."""
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()
