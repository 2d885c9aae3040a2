"""Megabyte bodies over HTTP are refused at once and stall nobody: the bridge's face of test_big_prompts.py.

The bridge parses and translates a body over 64 KiB in a worker thread, and sets
long strings on the message itself instead of through json_format (whose
surrogate regex holds the GIL: ~135 ms per 5 MB string, during which the event
loop stood still). Health checks meanwhile are compared with an idle baseline
measured in the same test.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import json_format

from ovserve.clients.v1 import chat_pb2, completion_pb2, embedding_pb2, response_pb2, tokenizer_pb2
from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.routes.embeddings import embedding_request
from ovserve.rest_bridge.routes.tokenize import detokenize_request
from ovserve.rest_bridge.translate import responses as responses_requests
from ovserve.rest_bridge.translate.body import parse_json_body
from ovserve.rest_bridge.translate.completions import chat_request, completion_request
from ovserve.rest_bridge.translate.message import LONG_LIST, LONG_STRING, lift_long_values
from tests.rest_bridge.conftest import RunningBridge

MIB = 1024 * 1024


# The sender and the health checker each run in a process of their own, so this process's GIL (it hosts
# the server and the bridge) measures the server, not the clients. The checker starts the sender.
SENDER = """
import http.client, json, sys, threading
port = int(sys.argv[1])
MIB = 1024 * 1024
chat = {"model": "tiny-chat", "messages": [{"role": "user", "content": "word " * MIB}]}
bodies = [("/v3/chat/completions", chat)] * 4
bodies += [("/v3/completions", {"model": "tiny-chat", "prompt": ["x" * (256 * 1024)] * 32})] * 2
bodies += [("/v3/responses", {"model": "tiny-chat", "input": "word " * MIB})] * 2
outcomes = []
def send(path, body):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    outcomes.append({"status": response.status, **json.loads(response.read())})
threads = [threading.Thread(target=send, args=pair) for pair in bodies]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(json.dumps(outcomes))
"""
CHECKER = """
import http.client, json, subprocess, sys, time
port = sys.argv[1]
connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
def check():
    started = time.perf_counter()
    connection.request("GET", "/health")
    response = connection.getresponse()
    response.read()
    assert response.status == 200
    return time.perf_counter() - started
idle = [check() for _ in range(50)]
started = time.monotonic()
sender = subprocess.Popen([sys.executable, "-c", sys.argv[2], port], stdout=subprocess.PIPE)
during = []
while sender.poll() is None or len(during) < 20:
    during.append(check())
took = time.monotonic() - started
outcomes = json.loads(sender.communicate(timeout=120)[0])
print(json.dumps({"idle": idle, "during": during, "took": took, "outcomes": outcomes}))
"""


@pytest.mark.alone
def test_megabyte_bodies_are_refused_at_once_and_health_keeps_answering(bridge: RunningBridge) -> None:
    root = str(Path(__file__).resolve().parents[2])
    checker = subprocess.run(
        [sys.executable, "-c", CHECKER, str(bridge.port), SENDER], cwd=root, capture_output=True, timeout=180
    )
    assert checker.returncode == 0, checker.stderr
    found = json.loads(checker.stdout)
    outcomes, during, took = found["outcomes"], found["during"], found["took"]
    idle = statistics.median(found["idle"])
    assert len(outcomes) == 8
    for outcome in outcomes:
        assert outcome["status"] == 400 and "at least" in outcome["error"]["message"], outcome
    assert {outcome["error"]["param"] for outcome in outcomes} == {"messages", "prompt", "input"}
    worst = max(during)
    print(
        f"\n4 x 5 MiB chats + 2 x 8 MiB completions + 2 x 5 MiB responses over HTTP refused in {took * 1000:.0f} ms; "
        f"/health idle {idle * 1000:.2f} ms, meanwhile: median {statistics.median(during) * 1000:.2f} ms, "
        f"max {worst * 1000:.1f} ms ({len(during)} checks)"
    )
    # Receiving, parsing and translating megabytes takes the bridge and the server milliseconds per request;
    # nothing waits for the requests themselves (before: 150 ms of event loop per 5 MB body, 0.8 s for four).
    assert statistics.median(during) <= 5 * idle
    assert worst <= max(50 * idle, took / 3)  # one scheduling hiccup on a shared machine, not a serial block


LONG = "é" * (LONG_STRING + 1)


def test_long_strings_set_directly_give_the_message_json_format_gives() -> None:
    cases = [
        (chat_request, {"model": "m", "messages": [{"role": "user", "content": LONG}, {"role": "user",
         "content": [{"type": "text", "text": LONG}]}], "user": LONG}, chat_pb2.CreateChatCompletionRequest),
        (completion_request, {"model": "m", "prompt": ["short", LONG]},
         completion_pb2.CreateCompletionRequest),
        (completion_request, {"model": "m", "prompt": LONG, "stream": True},
         completion_pb2.StreamCompletionRequest),
        (responses_requests.create_request, {"model": "m", "input": [{"role": "user", "content": LONG}]},
         response_pb2.CreateResponseRequest),
    ]  # fmt: skip
    for translate, body, message_class in cases:
        message, _ = translate(json.loads(json.dumps(body)))
        proto_json = json.loads(json.dumps(body))
        assert LONG in str(json_format.MessageToDict(message))
        lifted = lift_long_values(proto_json, message_class.DESCRIPTOR)
        assert not lifted or all(text == LONG for _, text in lifted)
        assert message.ByteSize() > LONG_STRING


def test_a_long_string_is_still_checked_for_surrogates() -> None:
    raw = b'{"model": "m", "prompt": "' + b"a" * (LONG_STRING + 10) + b'\\ud800"}'
    try:
        completion_request(parse_json_body(raw, "application/json", 32))
    except BridgeError as error:
        assert error.status_code == 400 and error.param == "prompt"
    else:
        raise AssertionError("a lone surrogate in a long string passed")


IDS = list(range(LONG_LIST + 5))


def test_long_integer_lists_set_directly_give_the_message_json_format_gives() -> None:
    """Token-id lists past LONG_LIST are set in one C call: the same message as item by item."""
    cases = [
        (embedding_request, {"model": "m", "input": [IDS, IDS[:3], [7] * 1000]}, embedding_pb2.CreateEmbeddingRequest),
        (lambda body: completion_request(body)[0], {"model": "m", "prompt": [IDS, [1, 2]]},
         completion_pb2.CreateCompletionRequest),
        (detokenize_request, {"model": "m", "tokens": [2**31 - 1, *IDS, 0]}, tokenizer_pb2.DetokenizeRequest),
    ]  # fmt: skip
    for translate, body, message_class in cases:
        message = translate(json.loads(json.dumps(body)))
        assert isinstance(message, message_class)
        proto_json = json.loads(json.dumps(json_format.MessageToDict(message, preserving_proto_field_name=True)))
        assert message == json_format.ParseDict(proto_json, message_class())  # the item-by-item reading
        assert lift_long_values(proto_json, message_class.DESCRIPTOR)  # and it was a long list


@pytest.mark.parametrize("bad", [True, 1.5, 2**31, -(2**31) - 1, "7"])
def test_a_long_integer_list_with_a_bad_item_is_refused_as_before(bad: object) -> None:
    """A long list that is not all integers in range is read item by item, and refused with the same 400, the
    item named."""
    with pytest.raises(BridgeError) as long:
        detokenize_request({"model": "m", "tokens": [*IDS, bad]})
    with pytest.raises(BridgeError) as short:
        detokenize_request({"model": "m", "tokens": [1, bad]})
    assert (long.value.status_code, long.value.param) == (400, f"tokens[{len(IDS)}]")
    assert (short.value.status_code, short.value.param) == (400, "tokens[1]")
    assert str(long.value).replace(f"[{len(IDS)}]", "[1]") == str(short.value)
