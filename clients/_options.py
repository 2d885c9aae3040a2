"""Channel options and call metadata shared by the sync and asyncio clients."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Sequence
from typing import Any

from ovserve.clients.defaults import MESSAGE_SIZE_OPTIONS

# gRPC caps a retry policy's maxAttempts at 5 (larger values are treated as 5).
MAX_ATTEMPTS = 5

ChannelOptions = Sequence[tuple[str, Any]]


def service_config(
    retries: int, *, balanced: bool = False, initial_backoff: float = 0.1, max_backoff: float = 2.0
) -> str:
    """A grpc.service_config retrying every method up to ``retries`` times on UNAVAILABLE, and with
    ``balanced`` spreading calls over every address of the target (round_robin) that reports SERVING to
    gRPC health checks, so a replica that drains or loads gets no calls and a retry goes to another one.

    gRPC itself retries, with exponential backoff and jitter; a streaming call
    is retried only until the server sends its first message, so a stream is
    never replayed halfway.
    """
    config: dict[str, Any] = {}
    if retries:
        policy = {
            "maxAttempts": min(retries + 1, MAX_ATTEMPTS),
            "initialBackoff": f"{initial_backoff}s",
            "maxBackoff": f"{max_backoff}s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        }
        config["methodConfig"] = [{"name": [{}], "retryPolicy": policy}]  # name [{}]: every method
    if balanced:
        config["loadBalancingConfig"] = [{"round_robin": {}}]
        config["healthCheckConfig"] = {"serviceName": ""}
    return json.dumps(config)


def channel_target(target: str | Sequence[str]) -> tuple[str, bool]:
    """gRPC's target for one ``host:port``, a ``dns:///name:port`` or several ``ip:port`` replicas, and
    whether calls are balanced over several addresses (a list, or a DNS name that may resolve to several)."""
    if isinstance(target, str):
        return target, target.startswith("dns:")
    addresses = list(target)
    if not addresses:
        raise ValueError("no target given")
    if len(addresses) == 1:
        return addresses[0], False
    hosts = [address.rpartition(":")[0].strip("[]") for address in addresses]
    try:
        versions = {ipaddress.ip_address(host).version for host in hosts}
    except ValueError:
        raise ValueError(
            "several targets must be IP addresses (ip:port); for names use one dns:///name:port target"
        ) from None
    if len(versions) > 1:
        raise ValueError("several targets must all be IPv4 or all IPv6")
    return f"ipv{versions.pop()}:{','.join(addresses)}", True


def channel_options(retries: int, extra: ChannelOptions = (), *, balanced: bool = False) -> list[tuple[str, Any]]:
    """Channel options: the server's message size limit, the retry policy (when ``retries`` > 0), balancing
    over the target's addresses (``balanced``) and the caller's own, which replace ours."""
    if retries < 0:
        raise ValueError(f"retries must be >= 0, got {retries}")
    # The server's message limit, both ways: gRPC's default 4 MiB would refuse a large batch reply.
    options: list[tuple[str, Any]] = [*MESSAGE_SIZE_OPTIONS, ("grpc.enable_retries", int(retries > 0))]
    if retries or balanced:
        options.append(("grpc.service_config", service_config(retries, balanced=balanced)))
    overridden = {name for name, _ in extra}
    return [option for option in options if option[0] not in overridden] + list(extra)


def call_metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    """Metadata sent with every call: ``authorization: Bearer <api_key>`` when a key is given."""
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()
