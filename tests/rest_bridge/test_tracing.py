"""OpenTelemetry tracing: a client's traceparent flows from the HTTP request through the gRPC call to the
generation, each a span of the same trace with the engine's milestones as events (in-memory exporter)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from tests.rest_bridge.conftest import RunningBridge, http_request
from tests.rpc import parse

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT = "b7ad6b7169203331"
CHAT = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "temperature": 0}


@pytest.fixture(scope="module")
def spans() -> Iterator[InMemorySpanExporter]:
    """This process's tracer provider, recording into memory (OpenTelemetry allows setting it once)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        pytest.fail("another tracer provider was set first in this process")
    yield exporter
    provider.shutdown()  # later tests record nothing


def finished(spans: InMemorySpanExporter, *names: str) -> tuple[ReadableSpan, ...]:
    """The finished spans once all of ``names`` are among them: the server ends its call's span just after
    the client has read the last message, so the test may look before then."""
    deadline = time.monotonic() + 10
    while True:
        found = spans.get_finished_spans()
        if {span.name for span in found} >= set(names) or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def by_name(found: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    [span] = [span for span in found if span.name == name]
    return span


def test_one_trace_from_the_http_request_to_the_generation(bridge: RunningBridge, spans: InMemorySpanExporter) -> None:
    spans.clear()
    reply = http_request(bridge.port, "POST", "/v3/chat/completions", {**CHAT, "stream": True},
                         headers={"traceparent": f"00-{TRACE_ID}-{PARENT}-01"})  # fmt: skip
    assert reply.status == 200
    found = finished(spans, "POST /v3/chat/completions", "ovserve.v1.ChatService/StreamChatCompletion", "generate")
    http = by_name(found, "POST /v3/chat/completions")
    rpc = by_name(found, "ovserve.v1.ChatService/StreamChatCompletion")
    generate = by_name(found, "generate")
    assert {format(span.context.trace_id, "032x") for span in (http, rpc, generate)} == {TRACE_ID}
    assert format(http.parent.span_id, "016x") == PARENT  # type: ignore[union-attr]
    assert rpc.parent.span_id == http.context.span_id  # type: ignore[union-attr]
    assert generate.parent.span_id == rpc.context.span_id  # type: ignore[union-attr]
    assert [event.name for event in generate.events] == ["submitted", "first_token", "finished"]
    assert generate.attributes["gen_ai.request.model"] == "tiny-chat"  # type: ignore[index]
    assert 0 < generate.attributes["gen_ai.usage.output_tokens"] <= 6  # type: ignore[index, operator]
    assert rpc.attributes["rpc.grpc.status_code"] == "OK" and http.attributes["http.response.status_code"] == 200  # type: ignore[index]


def test_a_grpc_callers_traceparent_and_a_refusal(bridge: RunningBridge, spans: InMemorySpanExporter) -> None:
    spans.clear()
    with grpc.insecure_channel(bridge.bridge.target) as channel:
        stub = chat_pb2_grpc.ChatServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, {**CHAT, "top_p": 7}),
                                      metadata=(("traceparent", f"00-{TRACE_ID}-{PARENT}-01"),))  # fmt: skip
    rpc = by_name(
        finished(spans, "ovserve.v1.ChatService/CreateChatCompletion"), "ovserve.v1.ChatService/CreateChatCompletion"
    )
    assert format(rpc.context.trace_id, "032x") == TRACE_ID and format(rpc.parent.span_id, "016x") == PARENT  # type: ignore[union-attr]
    assert rpc.attributes["rpc.grpc.status_code"] == "INVALID_ARGUMENT"  # type: ignore[index]
    assert rpc.status.status_code == trace.StatusCode.ERROR
    assert not [span for span in spans.get_finished_spans() if span.name == "generate"]  # refused before


def test_the_standard_variables_turn_it_on(tmp_path: object) -> None:
    """OTEL_TRACES_EXPORTER=console through the real CLI: the spans of one request are printed at exit."""
    import os
    import re
    import signal
    import subprocess
    import sys

    from tests.rest_bridge.test_cli import ROOT

    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "ovs-t"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ovserve.service.cli", "serve", "--port", "0", "--rest-port", "0",
         "--cache-size-gb", "1"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        port = None
        for line in process.stderr:
            if match := re.search(r"REST listening on 127\.0\.0\.1:(\d+)", line):
                port = int(match.group(1))
            if "serving tiny-chat" in line:
                break
        assert port is not None
        assert http_request(port, "POST", "/v3/chat/completions", CHAT).status == 200
        process.send_signal(signal.SIGTERM)
        printed, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    for name in ('"name": "generate"', '"name": "ovserve.v1.ChatService/CreateChatCompletion"',
                 '"name": "POST /v3/chat/completions"', '"service.name": "ovs-t"'):  # fmt: skip
        assert name in printed, name
