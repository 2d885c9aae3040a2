"""OpenTelemetry tracing: a span per RPC (its parent from the caller's ``traceparent``) and per generation.

Off by default: with no tracer provider configured, OpenTelemetry's API hands out non-recording spans and
costs next to nothing. ``configure()`` (``ovserve serve`` calls it) sets one up when the standard variable
``OTEL_TRACES_EXPORTER`` names an exporter: ``console``, or ``otlp`` (with ``opentelemetry-exporter-otlp``
installed; ``OTEL_EXPORTER_OTLP_ENDPOINT`` and the other standard variables apply), under
``OTEL_SERVICE_NAME`` (default ``ovserve``). A generation's span carries the engine's milestones as events:
``submitted``, ``first_token`` (the prompt has been processed), then ``finished``, ``cancelled`` or
``failed``.
"""

from __future__ import annotations

import logging
import os

from opentelemetry import trace

log = logging.getLogger(__name__)
tracer = trace.get_tracer("ovserve")


def configure() -> None:
    """Install a tracer provider and exporter as the OTEL_* environment variables say (nothing by default)."""
    chosen = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if chosen in ("", "none"):
        return
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

    exporter: SpanExporter
    if chosen == "console":
        exporter = ConsoleSpanExporter()
    elif chosen == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.error("OTEL_TRACES_EXPORTER=otlp needs opentelemetry-exporter-otlp installed; tracing stays off")
            return
        exporter = OTLPSpanExporter()
    else:
        log.error("OTEL_TRACES_EXPORTER=%s is not one of console, otlp, none; tracing stays off", chosen)
        return
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "ovserve")})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    log.info("tracing on: %s exporter", chosen)
