"""Prometheus metrics: a known load (N requests, M of them cancelled, some refused) and every figure it must move.

The session server shares this process's registry with every other test, so each figure is checked as the
difference between a scrape before and one after the load; the gauges must be back at zero once it is idle.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc
from ovserve.service.models import ModelSpec
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

MODEL = "tiny-chat"
STREAM = "ChatService/StreamChatCompletion"
UNARY = "ChatService/CreateChatCompletion"
FINISHED, CANCELLED, REFUSED = 6, 4, 2
MAX_TOKENS = 24

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def samples(text: str) -> Samples:
    """Every sample of an exposition, by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def scrape(server: ServerThread) -> Samples:
    body, content_type = server.run(server.server.metrics_exposition())
    assert content_type.startswith("text/plain")
    return samples(body.decode())


def value(found: Samples, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def request(**fields: Any) -> Any:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": MAX_TOKENS,
            "temperature": 0, **fields}  # fmt: skip
    return parse(chat_pb2.StreamChatCompletionRequest, body)


def wait_idle(server: ServerThread) -> Samples:
    """Scrape until the engine has let go of everything (it learns of cancels at its next step)."""
    deadline = time.monotonic() + 10
    while True:
        found = scrape(server)
        idle = all(value(found, name, model=MODEL) == 0 for name in GAUGES)
        if idle or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


GAUGES = ("ovserve_generations_running", "ovserve_engine_requests_running", "ovserve_engine_requests_waiting",
          "ovserve_kv_cache_usage_ratio")  # fmt: skip


def test_a_known_load_moves_every_figure_by_what_it_was(
    server: ServerThread, chat: chat_pb2_grpc.ChatServiceStub
) -> None:
    before = wait_idle(server)
    completion_tokens = prompt_tokens = 0
    for _ in range(FINISHED):
        chunks = list(chat.StreamChatCompletion(request(stream_options={"include_usage": True})))
        usage = chunks[-1].usage
        completion_tokens += usage.completion_tokens
        prompt_tokens += usage.prompt_tokens
    for _ in range(CANCELLED):
        call = chat.StreamChatCompletion(request())
        next(call)  # the role chunk (sent before any token)
        next(call)  # the first text: the generation has made a token
        call.cancel()
        prompt_tokens += usage.prompt_tokens  # the same prompt
    for _ in range(REFUSED):
        with pytest.raises(grpc.RpcError):
            list(chat.StreamChatCompletion(request(top_p=7)))
    after = wait_idle(server)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    counts = {code: delta("ovserve_requests_total", rpc=STREAM, model=MODEL, code=code)
              for code in ("ok", "cancelled", "invalid_argument")}  # fmt: skip
    assert counts == {"ok": FINISHED, "cancelled": CANCELLED, "invalid_argument": REFUSED}
    assert delta("ovserve_request_duration_seconds_count", rpc=STREAM, model=MODEL) == FINISHED + CANCELLED + REFUSED
    ended = {o: delta("ovserve_generations_total", model=MODEL, outcome=o) for o in ("finished", "cancelled", "failed")}
    assert ended == {"finished": FINISHED, "cancelled": CANCELLED, "failed": 0}
    started = FINISHED + CANCELLED
    assert delta("ovserve_time_to_first_token_seconds_count", model=MODEL) == started
    assert delta("ovserve_generation_duration_seconds_count", model=MODEL) == started
    assert delta("ovserve_prompt_tokens_total", model=MODEL) == prompt_tokens
    generated = delta("ovserve_generation_tokens_total", model=MODEL)
    # Cancelled generations made at least their first token and at most max_tokens each.
    assert completion_tokens + CANCELLED <= generated <= completion_tokens + CANCELLED * MAX_TOKENS
    assert delta("ovserve_inter_token_latency_seconds_count", model=MODEL) == generated - started
    for name in GAUGES:
        assert value(after, name, model=MODEL) == 0, name
    assert value(after, "ovserve_engine_up", model=MODEL) == 1


def test_a_made_up_model_name_does_not_become_a_label(
    server: ServerThread, chat: chat_pb2_grpc.ChatServiceStub
) -> None:
    made_up = {"model": "made-up-9f2c", "messages": [{"role": "user", "content": "x"}]}
    with pytest.raises(grpc.RpcError):
        chat.CreateChatCompletion(parse(chat_pb2.CreateChatCompletionRequest, made_up))
    found = scrape(server)
    assert not any(dict(labels).get("model") == "made-up-9f2c" for _, labels in found)
    assert value(found, "ovserve_requests_total", rpc=UNARY, model="other", code="not_found") >= 1


@pytest.fixture
def metrics_server() -> Iterator[ServerThread]:
    running = start_server([ModelSpec(MODEL, TINY_CHAT, settings=TEST_SETTINGS)], metrics_port=0)
    yield running
    running.stop()


def test_the_metrics_port_serves_them_over_http(metrics_server: ServerThread) -> None:
    endpoint = metrics_server.server.metrics_endpoint
    assert endpoint is not None
    with urllib.request.urlopen(f"http://127.0.0.1:{endpoint.port}/metrics", timeout=30) as reply:
        assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/plain")
        found = samples(reply.read().decode())
    assert value(found, "ovserve_engine_up", model=MODEL) == 1
    assert ("ovserve_stored_responses", ()) in found


def test_loads_say_what_runs_and_go_back_to_nothing(server: ServerThread, chat: chat_pb2_grpc.ChatServiceStub) -> None:
    idle = server.run(server.server.loads())
    assert idle["dp_rank_count"] == 1 and [m["model"] for m in idle["models"]][:1] == [MODEL]
    streams = [chat.StreamChatCompletion(request(max_tokens=200, ignore_eos=True)) for _ in range(3)]
    for stream in streams:
        next(stream)
        next(stream)  # each has made a token: the engine holds it
    busy = server.run(server.server.loads())
    rank = busy["loads"][0]
    assert rank["num_total_reqs"] == rank["num_running_reqs"] + rank["num_waiting_reqs"] >= 3
    assert 0 < rank["token_usage"] <= 1 and 0 < rank["num_used_tokens"] <= rank["max_total_num_tokens"]
    assert rank["max_running_requests"] == server.server.limit.limit and rank["utilization"] > 0
    for stream in streams:
        stream.cancel()
    wait_idle(server)
    after = server.run(server.server.loads())["loads"][0]
    assert (after["num_total_reqs"], after["num_used_tokens"], after["token_usage"]) == (0, 0, 0.0)


def test_the_grafana_dashboard_reads_only_metrics_that_exist(
    server: ServerThread, chat: chat_pb2_grpc.ChatServiceStub
) -> None:
    list(chat.StreamChatCompletion(request()))  # labelled series exist once something was measured
    import json
    import re
    from pathlib import Path

    dashboard = json.loads((Path(__file__).resolve().parents[2] / "docs" / "grafana-dashboard.json").read_text())
    expressions = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in expressions for name in re.findall(r"\bovserve_[a-z_]+", expr)}
    exposed = {name for name, _ in scrape(server)}
    assert used and used <= exposed, used - exposed


def test_cpu_seconds_of_the_server_and_each_engine_grow_with_work(
    server: ServerThread, chat: chat_pb2_grpc.ChatServiceStub
) -> None:
    """ovserve_process_cpu_seconds: the server's process and each engine's, from /proc; generating moves both."""
    before = scrape(server)
    engine_before = value(before, "ovserve_process_cpu_seconds", process="engine", model=MODEL)
    server_before = value(before, "ovserve_process_cpu_seconds", process="server", model="")
    assert engine_before > 0 and server_before > 0
    for _ in range(4):
        list(chat.StreamChatCompletion(request(max_tokens=200, ignore_eos=True)))
    after = scrape(server)
    assert value(after, "ovserve_process_cpu_seconds", process="engine", model=MODEL) > engine_before
    assert value(after, "ovserve_process_cpu_seconds", process="server", model="") > server_before
    other = value(after, "ovserve_process_cpu_seconds", process="engine", model="tiny-vision")
    assert other > 0  # every served model's engine has its own figure


@pytest.mark.parametrize("value", [0.0, 0.0005, 0.003, 0.02, 0.5, 99.0])
def test_observing_a_value_many_times_at_once_equals_observing_it_one_by_one(value: float) -> None:
    from prometheus_client import CollectorRegistry, Histogram

    from ovserve.service.observability.metrics import observe_times

    registry = CollectorRegistry()
    one_by_one = Histogram("one", "x", buckets=(0.0005, 0.001, 0.01, 1.0), registry=registry)
    at_once = Histogram("many", "x", buckets=(0.0005, 0.001, 0.01, 1.0), registry=registry)
    for _ in range(7):
        one_by_one.observe(value)
    observe_times(at_once, value, 7)
    found = samples(generate_latest(registry).decode())
    for (name, labels), count in found.items():
        if name.startswith("one_") and not name.endswith("_created"):
            assert found[(name.replace("one_", "many_", 1), labels)] == pytest.approx(count), (name, labels)
