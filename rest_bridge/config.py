"""Bridge settings: where it listens, what it accepts, how long a gRPC call may take.

A field with help metadata is also a command-line flag (``clients.flags``):
``ovserve bridge --max-body-bytes``, ``ovserve serve --rest-max-body-bytes``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from clients.defaults import DEFAULT_HOST, DEFAULT_REST_PORT, DEFAULT_TARGET, MIB
from clients.flags import Parser, add_flags, given


@dataclass(frozen=True)
class BridgeAddress:
    """Where the bridge listens, and the gRPC service it calls."""

    target: str = field(default=DEFAULT_TARGET, metadata={"help": "the gRPC service", "metavar": "HOST:PORT"})
    host: str = field(default=DEFAULT_HOST, metadata={"help": "address the REST bridge listens on"})
    port: int = field(default=DEFAULT_REST_PORT, metadata={"help": "REST port; 0 picks a free one and logs it"})


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge treats requests."""

    max_body_bytes: int = field(
        default=10 * MIB,
        metadata={"help": "largest accepted request body, bytes; larger gets 413", "default_text": "10 MiB"},
    )
    max_json_depth: int = 64  # deeper nesting gets 400 (a JSON bomb costs recursion, not just bytes)
    deadline_seconds: float = field(default=600.0, metadata={"help": "deadline of every gRPC call, seconds"})
    health_timeout_seconds: float = 5.0  # GET /health's gRPC health check
    cors_origins: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "a web origin browsers may call the bridge from (repeatable; * for any); none: CORS off",
            "flag": "cors-origin",
            "metavar": "ORIGIN",
        },
    )


def add_arguments(parser: Parser, prefix: str = "") -> None:
    """The bridge's request flags (on a parser or an argument group), named ``--{prefix}max-body-bytes`` etc."""
    add_flags(parser, BridgeSettings, prefix=prefix)


def from_arguments(args: argparse.Namespace, prefix: str = "") -> BridgeSettings:
    """BridgeSettings from the flags of ``add_arguments``; a flag not given keeps the default."""
    return BridgeSettings(**given(args, BridgeSettings, prefix=prefix))


def address_from_arguments(args: argparse.Namespace, prefix: str = "") -> BridgeAddress:
    """BridgeAddress from flags added with ``add_flags(parser, BridgeAddress, prefix=prefix)``."""
    return BridgeAddress(**given(args, BridgeAddress, prefix=prefix))
