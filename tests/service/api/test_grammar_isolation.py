"""A schema that takes the grammar compiler long stalls nobody else's stream.

Eight greedy streams run on tiny-chat; once they are under way, a request
with a 1,000-property JSON schema goes to the other bundled model (its own
engine, its own grammar checker). The streams' inter-token gaps are compared,
as ratios, with the same eight streams run alone in the same test, and with
how long the big request took: when the compile check ran on the event loop
(as it once did) every stream stopped for the whole of it.

The big request goes to another model on purpose: openvino-genai compiles a
request's grammar again inside an engine step, so on its own model it stalls
that model's streams for one compile, bounded by --grammar-timeout-s (see
service/engine/engine.py). What is tested here is that the check before it,
and the building of the grammar, take nothing from anyone else.
"""

from __future__ import annotations

import itertools
import json
import statistics
import threading
import time
from typing import Any

import grpc
import jsonschema
import pytest

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2
from tests.rpc import failure, parse

STREAMS = 8
STREAM_TOKENS = 1800  # long, to overlap the big request (tiny-chat's limit is 2,048 in all)
PROPERTIES = 1000
BIG_SCHEMA = {
    "type": "object",
    "properties": {f"field_{i}": {"type": "string", "maxLength": 8} for i in range(PROPERTIES)},
}
STREAM_BODY: dict[str, Any] = {
    "model": "tiny-chat",
    "messages": [{"role": "user", "content": "Tell me a long story."}],
    "max_tokens": STREAM_TOKENS,
    "temperature": 0,
    "ignore_eos": True,
}
BIG_BODY: dict[str, Any] = {
    "model": "tiny-chat-speculative",
    "messages": [{"role": "user", "content": "Describe a person as a JSON object."}],
    "max_tokens": 200,
    "temperature": 0,
    "response_format": {"type": "json_schema", "json_schema": {"name": "person", "schema": BIG_SCHEMA}},
}


def run_streams(chat: chat_pb2_grpc.ChatServiceStub, during: Any = None) -> tuple[list[list[float]], float, float]:
    """Arrival times of each stream's chunks; ``during`` runs once every stream has started.

    Returns the times, and when ``during`` started and ended (0, 0 without it).
    """
    arrivals: list[list[float]] = [[] for _ in range(STREAMS)]
    started = threading.Barrier(STREAMS + 1)

    def stream(index: int) -> None:
        first = True
        for chunk in chat.StreamChatCompletion(parse(chat_pb2.StreamChatCompletionRequest, STREAM_BODY), timeout=120):
            if any(choice.delta.content for choice in chunk.choices):
                arrivals[index].append(time.monotonic())
                if first:
                    first = False
                    started.wait()

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(STREAMS)]
    for thread in threads:
        thread.start()
    started.wait()
    begin = end = 0.0
    if during is not None:
        begin = time.monotonic()
        during()
        end = time.monotonic()
    for thread in threads:
        thread.join()
    return arrivals, begin, end


def gaps(arrivals: list[list[float]], begin: float = 0.0, end: float = float("inf")) -> list[float]:
    """Every stream's gaps between chunks that arrived in [begin, end] (a gap that spans begin counts)."""
    result = []
    for times in arrivals:
        result += [b - a for a, b in itertools.pairwise(times) if b >= begin and a <= end]
    return result


@pytest.mark.alone
def test_a_slow_schema_stalls_no_other_stream(chat: chat_pb2_grpc.ChatServiceStub) -> None:
    baseline, _, _ = run_streams(chat)
    outcome: dict[str, Any] = {}

    def big_request() -> None:
        request = parse(chat_pb2.CreateChatCompletionRequest, BIG_BODY)
        try:
            outcome["reply"] = chat.CreateChatCompletion(request, timeout=120)
        except grpc.RpcError as error:
            outcome["error"] = failure(error)

    loaded, begin, end = run_streams(chat, during=big_request)
    took = end - begin

    # The big request either ran (its output valid against the schema) or was refused naming the schema.
    if "error" in outcome:
        refusal = outcome["error"]
        assert refusal.code == grpc.StatusCode.INVALID_ARGUMENT, refusal.message
        assert any(field.startswith("response_format.json_schema.schema") for field in refusal.fields), refusal
    else:
        choice = outcome["reply"].choices[0]
        if choice.finish_reason == common_pb2.FINISH_REASON_STOP:
            jsonschema.validate(json.loads(choice.message.content), BIG_SCHEMA)
        else:  # cut by max_tokens: a JSON object begun, as the grammar allows
            assert choice.message.content.startswith('{"field_')
    # The gaps below cover the time both ran (the streams may end first on a busy machine).
    overlap_end = min(end, min(times[-1] for times in loaded))
    assert overlap_end > begin

    alone, during = gaps(baseline), gaps(loaded, begin, overlap_end)
    typical = statistics.median(alone)
    worst_alone = max(alone)
    worst_during = max(during)
    print(
        f"\nbig request: {took * 1000:.0f} ms ({'refused' if 'error' in outcome else 'answered'}); "
        f"stream gaps alone: median {typical * 1000:.2f} ms, max {worst_alone * 1000:.1f} ms; "
        f"during it: median {statistics.median(during) * 1000:.2f} ms, max {worst_during * 1000:.1f} ms"
    )
    # Typical gaps stay typical (the compile competes for the two cores, nothing more) ...
    assert statistics.median(during) <= 3 * typical
    # ... and no stream waited for the big request: a stall would make one gap as long as the request.
    assert worst_during <= max(0.1 * took, 4 * worst_alone)
