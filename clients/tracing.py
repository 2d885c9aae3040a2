"""Trace context across hops: read a caller's ``traceparent`` and pass the current one on (W3C Trace Context).

Shared by the server (gRPC metadata in), the REST bridge (HTTP headers in, gRPC metadata out) and anyone
calling ovserve who traces. Without a tracer provider these carry nothing and cost next to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import propagate
from opentelemetry.context import Context


def extracted(metadata: Mapping[str, Any]) -> Context:
    """The trace context a caller sent in its metadata or headers (``traceparent``), if any."""
    return propagate.extract({key.lower(): str(value) for key, value in metadata.items()})


def injected(metadata: tuple[tuple[str, str], ...], context: Context | None = None) -> tuple[tuple[str, str], ...]:
    """``metadata`` plus the trace context of ``context`` (default: the current one), for the next hop."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    return (*metadata, *carrier.items())
