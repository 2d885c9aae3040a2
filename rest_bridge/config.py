"""Bridge settings: where it listens, what it accepts, how long a gRPC call may take.

A field with help metadata is also a command-line flag (``ovserve.clients.flags``):
``ovserve bridge --max-body-bytes``, ``ovserve serve --rest-max-body-bytes``.
"""

from __future__ import annotations

import argparse
import ssl
from dataclasses import dataclass, field
from pathlib import Path

from ovserve.clients.defaults import DEFAULT_HOST, DEFAULT_REST_PORT, DEFAULT_TARGET, MIB
from ovserve.clients.flags import Parser, add_flags, given


@dataclass(frozen=True)
class BridgeAddress:
    """Where the bridge listens, and the gRPC service it calls."""

    target: str = field(default=DEFAULT_TARGET, metadata={"help": "the gRPC service", "metavar": "HOST:PORT"})
    host: str = field(default=DEFAULT_HOST, metadata={"help": "address the REST bridge listens on"})
    port: int = field(default=DEFAULT_REST_PORT, metadata={"help": "REST port; 0 picks a free one and logs it"})
    target_ca: Path | None = field(
        default=None,
        metadata={"help": "dial the gRPC service over TLS, trusting this CA (PEM)", "metavar": "FILE",
                  "default_text": "plaintext"},
    )  # fmt: skip
    target_cert: Path | None = field(
        default=None,
        metadata={"help": "client certificate (PEM) to present to the gRPC service (mTLS; with --target-key)",
                  "metavar": "FILE", "default_text": "none"},
    )  # fmt: skip
    target_key: Path | None = field(
        default=None, metadata={"help": "private key of --target-cert", "metavar": "FILE", "default_text": "none"}
    )


@dataclass(frozen=True)
class BridgeSettings:
    """How the bridge treats requests."""

    max_body_bytes: int = field(
        default=10 * MIB,
        metadata={"help": "largest accepted request body, bytes; larger gets 413", "default_text": "10 MiB"},
    )
    max_upload_body_bytes: int = field(
        default=512 * MIB,
        metadata={
            "help": "largest file upload body (POST /v3/files) the bridge reads, bytes; larger gets 413 (the "
            "server's --max-upload-bytes decides what it stores)",
            "default_text": "512 MiB",
        },
    )
    # A slow body (slowloris) would hold its connection and buffers for as long as it trickles: after the grace
    # period a body must keep up an average rate (Apache mod_reqtimeout's rule), else 408. 4 KiB/s is far below any
    # real uplink and lets a 10 MiB body take 43 minutes.
    body_grace_seconds: float = field(
        default=30.0,
        metadata={"help": "seconds a request body may take before the minimum body rate applies"},
    )
    min_body_rate: int = field(
        default=4096,
        metadata={
            "help": "minimum average rate of a request body once its grace seconds have passed, bytes/s; "
            "slower gets 408 (0: no minimum)",
            "metavar": "BYTES",
        },
    )
    # Deeper nesting gets 400 naming the field. Below what protobuf's 100-level decoder takes: a JSON object
    # inside a google.protobuf.Struct costs 3 message levels, so a body 35 deep can fail to decode in the
    # service (tests/rest_bridge/test_json_values.py checks this bound against the decoder).
    max_json_depth: int = 32
    deadline_seconds: float = field(default=600.0, metadata={"help": "deadline of every gRPC call, seconds"})
    cors_origins: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "let web pages from this origin (scheme://host[:port], or * for any) call the API "
            "(repeatable; CORS is off without it)",
            "flag": "cors-origin",
            "metavar": "ORIGIN",
            "default_text": "none",
        },
    )
    health_timeout_seconds: float = 5.0  # GET /health's gRPC health check
    tls_cert: Path | None = field(
        default=None,
        metadata={"help": "PEM certificate chain: serve HTTPS (with the key)", "metavar": "FILE",
                  "default_text": "HTTP"},
    )  # fmt: skip
    tls_key: Path | None = field(
        default=None, metadata={"help": "PEM private key of the HTTPS certificate", "metavar": "FILE",
                                "default_text": "none"},
    )  # fmt: skip


def add_arguments(parser: Parser, prefix: str = "") -> None:
    """The bridge's request flags (on a parser or an argument group), named ``--{prefix}max-body-bytes`` etc."""
    add_flags(parser, BridgeSettings, prefix=prefix)


def from_arguments(args: argparse.Namespace, prefix: str = "") -> BridgeSettings:
    """BridgeSettings from the flags of ``add_arguments``; a flag not given keeps the default."""
    return BridgeSettings(**given(args, BridgeSettings, prefix=prefix))


def address_from_arguments(args: argparse.Namespace, prefix: str = "") -> BridgeAddress:
    """BridgeAddress from flags added with ``add_flags(parser, BridgeAddress, prefix=prefix)``."""
    return BridgeAddress(**given(args, BridgeAddress, prefix=prefix))


def https_context(settings: BridgeSettings) -> ssl.SSLContext | None:
    """The server-side TLS context of HTTPS, or None for plain HTTP (OSError / ValueError if it cannot be made)."""
    if settings.tls_cert is None and settings.tls_key is None:
        return None
    if settings.tls_cert is None or settings.tls_key is None:
        raise ValueError("HTTPS needs both the certificate and its key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert, settings.tls_key)
    return context
