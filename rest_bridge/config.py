"""Bridge settings: where it listens, what it accepts, how long a gRPC call may take."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from clients.defaults import DEFAULT_HOST, DEFAULT_REST_PORT, DEFAULT_TARGET, MIB

__all__ = ["DEFAULT_HOST", "DEFAULT_REST_PORT", "DEFAULT_TARGET", "BridgeSettings", "add_arguments", "from_arguments"]


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge treats requests."""

    max_body_bytes: int = 10 * MIB  # larger bodies get 413
    max_json_depth: int = 64  # deeper nesting gets 400 (a JSON bomb costs recursion, not just bytes)
    deadline_seconds: float = 600.0  # every gRPC call's deadline
    health_timeout_seconds: float = 5.0  # GET /health's gRPC health check


def add_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup, prefix: str = "") -> None:
    """The bridge's request flags (on a parser or an argument group), named ``--{prefix}max-body-bytes`` etc."""
    defaults = BridgeSettings()
    parser.add_argument(
        f"--{prefix}max-body-bytes",
        type=int,
        default=defaults.max_body_bytes,
        help=f"largest accepted request body (default {defaults.max_body_bytes}); larger gets 413",
    )
    parser.add_argument(
        f"--{prefix}deadline-seconds",
        type=float,
        default=defaults.deadline_seconds,
        help=f"deadline of every gRPC call (default {defaults.deadline_seconds:g})",
    )


def from_arguments(args: argparse.Namespace, prefix: str = "") -> BridgeSettings:
    """BridgeSettings from the flags of ``add_arguments``."""
    attribute = prefix.replace("-", "_")
    return BridgeSettings(
        max_body_bytes=getattr(args, f"{attribute}max_body_bytes"),
        deadline_seconds=getattr(args, f"{attribute}deadline_seconds"),
    )
