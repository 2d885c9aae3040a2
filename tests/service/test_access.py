"""What every call passes through: API keys, the concurrency bound, request ids, draining on shutdown."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from ovserve.clients.v1 import chat_pb2, chat_pb2_grpc, common_pb2, model_pb2, model_pb2_grpc
from ovserve.service.models import ModelSpec
from ovserve.service.observability.logs import RequestIdFilter
from tests.conftest import TEST_SETTINGS, TINY_CHAT, ServerThread, start_server
from tests.rpc import parse

KEY = "s3cret-key"
TINY = [ModelSpec("tiny-chat", TINY_CHAT, settings=TEST_SETTINGS)]


def chat_request(streaming: bool = False, **fields: object) -> chat_pb2.CreateChatCompletionRequest:
    body = {"model": "tiny-chat", "messages": [{"role": "user", "content": "Tell me a short story."}], **fields}
    return parse(chat_pb2.StreamChatCompletionRequest if streaming else chat_pb2.CreateChatCompletionRequest, body)


@pytest.fixture(scope="module")
def keyed() -> Iterator[ServerThread]:
    """A server that requires an API key."""
    running = start_server(TINY, api_keys=(KEY, "another-key"))
    yield running
    running.stop()


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Basic {KEY}", KEY, "Bearer "])
def test_calls_without_the_key_are_unauthenticated(keyed, authorization) -> None:
    metadata = () if authorization is None else (("authorization", authorization),)
    with grpc.insecure_channel(keyed.target) as channel:
        models = model_pb2_grpc.ModelServiceStub(channel)
        chat = chat_pb2_grpc.ChatServiceStub(channel)
        calls = [
            lambda: models.ListModels(model_pb2.ListModelsRequest(), metadata=metadata),
            lambda: list(chat.StreamChatCompletion(chat_request(True, max_tokens=4), metadata=metadata)),
        ]
        for call in calls:
            with pytest.raises(grpc.RpcError) as raised:
                call()
            assert raised.value.code() == grpc.StatusCode.UNAUTHENTICATED


@pytest.mark.parametrize("key", [KEY, "another-key"])
def test_calls_with_a_key_pass(keyed, key) -> None:
    metadata = (("authorization", f"Bearer {key}"),)
    with grpc.insecure_channel(keyed.target) as channel:
        reply = chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(
            chat_request(max_tokens=4), metadata=metadata
        )
    assert reply.choices[0].message.role == common_pb2.ROLE_ASSISTANT


def test_health_and_reflection_stay_open_without_a_key(keyed) -> None:
    with grpc.insecure_channel(keyed.target) as channel:
        status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest()).status
        assert status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        (reply,) = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        names = {service.name for service in reply.list_services_response.service}
        assert "ovserve.v1.ChatService" in names


def test_beyond_the_concurrency_bound_is_resource_exhausted() -> None:
    running = start_server(TINY, max_concurrent_requests=2)
    try:
        with grpc.insecure_channel(running.target) as channel:
            chat = chat_pb2_grpc.ChatServiceStub(channel)
            long = chat_request(True, max_tokens=2000, ignore_eos=True)
            streams = [chat.StreamChatCompletion(long) for _ in range(2)]
            for stream in streams:
                next(stream)  # both are being served
            with pytest.raises(grpc.RpcError) as raised:
                chat.CreateChatCompletion(chat_request(max_tokens=4))
            assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            for stream in streams:
                stream.cancel()
            # the slots are free again once the cancelled calls have ended
            for _ in range(500):  # at most ~10 s
                if running.server.policy.in_flight == 0:
                    break
                time.sleep(0.02)
            assert chat.CreateChatCompletion(chat_request(max_tokens=4)).choices
    finally:
        running.stop()


def test_shutdown_lets_in_flight_streams_finish_and_refuses_new_calls() -> None:
    running = start_server(TINY, grace_seconds=30.0)
    try:
        with grpc.insecure_channel(running.target) as channel:
            chat = chat_pb2_grpc.ChatServiceStub(channel)
            stream = chat.StreamChatCompletion(
                chat_request(True, max_tokens=800, ignore_eos=True, stream_options={"include_usage": True})
            )
            next(stream)
            stopping = running.loop.call_soon_threadsafe(lambda: running.loop.create_task(running.server.stop()))
            assert stopping is not None
            rest = list(stream)  # the stream runs to its end inside the grace period
            assert rest[-1].usage.completion_tokens == 800
            assert any(c.finish_reason == common_pb2.FINISH_REASON_LENGTH for chunk in rest for c in chunk.choices)
            with pytest.raises(grpc.RpcError) as raised:
                chat.CreateChatCompletion(chat_request(max_tokens=4), timeout=10)
            assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop()


def test_an_open_health_watch_does_not_hold_the_exit() -> None:
    """With no API call running, stopping takes moments even with a long grace and a watcher connected."""
    import threading
    import time

    from grpc_health.v1 import health_pb2, health_pb2_grpc

    running = start_server(TINY, grace_seconds=30.0)
    try:
        with grpc.insecure_channel(running.target) as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(health_pb2.HealthCheckRequest(service=""))
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            seen: list[int] = []
            reader = threading.Thread(target=lambda: seen.extend(m.status for m in _until_error(watch)))
            reader.start()
            started = time.monotonic()
            running.run(running.server.stop())
            took = time.monotonic() - started
            reader.join(timeout=10)
        assert took < running.server.config.grace_seconds / 3, took  # not held for the grace period
        assert seen and seen[0] == health_pb2.HealthCheckResponse.NOT_SERVING  # the watcher was told
        assert not reader.is_alive()  # and its stream ended
    finally:
        running.stop()


def _until_error(stream):  # type: ignore[no-untyped-def]
    try:
        yield from stream
    except grpc.RpcError:
        return


def test_each_call_is_logged_with_its_request_id(chat, caplog) -> None:
    caplog.handler.addFilter(RequestIdFilter())
    with caplog.at_level(logging.INFO, logger="ovserve.access"):
        chat.CreateChatCompletion(chat_request(max_tokens=3), metadata=(("x-request-id", "req-42"),))
        chat.CreateChatCompletion(chat_request(max_tokens=3))
    lines = [r for r in caplog.records if r.name == "ovserve.access" and "CreateChatCompletion" in r.getMessage()]
    assert lines[-2].request_id == "req-42"
    assert "status=OK" in lines[-2].getMessage()
    assert lines[-1].request_id not in ("req-42", "-") and len(lines[-1].request_id) == 32  # generated


def test_sixteen_parallel_streams_get_the_text_they_get_alone(chat) -> None:
    questions = ["Tell me a short story.", "Hello!", "Who are you?", "What is 2 plus 3?"] * 4

    def ask(question: str, streaming: bool) -> str:
        fields = {"messages": [{"role": "user", "content": question}], "temperature": 0, "max_tokens": 60}
        if not streaming:
            return chat.CreateChatCompletion(chat_request(**fields)).choices[0].message.content
        chunks = chat.StreamChatCompletion(chat_request(True, **fields))
        return "".join(c.delta.content for chunk in chunks for c in chunk.choices)

    alone = {q: ask(q, streaming=False) for q in set(questions)}
    with ThreadPoolExecutor(16) as pool:
        together = list(pool.map(lambda q: ask(q, streaming=True), questions))
    assert together == [alone[q] for q in questions]


def test_usage_counts_match_the_tokenizer(chat, tiny_chat_dir) -> None:
    import openvino_genai as ov_genai

    tokenizer = ov_genai.Tokenizer(str(tiny_chat_dir))
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Who are you?"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    expected_prompt = tokenizer.encode(prompt, add_special_tokens=False).input_ids.data.shape[1]
    reply = chat.CreateChatCompletion(chat_request(messages=messages, temperature=0, max_tokens=50, logprobs=True))
    assert reply.usage.prompt_tokens == expected_prompt
    assert reply.usage.completion_tokens == len(reply.choices[0].logprobs.content)
    assert reply.usage.total_tokens == expected_prompt + reply.usage.completion_tokens


def test_request_id_comes_back_in_the_initial_metadata(chat) -> None:
    _, call = chat.CreateChatCompletion.with_call(chat_request(max_tokens=2), metadata=(("x-request-id", "req-7"),))
    assert ("x-request-id", "req-7") in tuple(call.initial_metadata())
    _, call = chat.CreateChatCompletion.with_call(chat_request(max_tokens=2))
    generated = dict(call.initial_metadata())["x-request-id"]
    assert len(generated) == 32 and generated != "req-7"
    stream = chat.StreamChatCompletion(chat_request(True, max_tokens=2), metadata=(("x-request-id", "req-8"),))
    assert ("x-request-id", "req-8") in tuple(stream.initial_metadata())
    list(stream)


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ("overloaded", grpc.StatusCode.RESOURCE_EXHAUSTED),
        ("failed", grpc.StatusCode.INTERNAL),
        ("rejected", grpc.StatusCode.INVALID_ARGUMENT),
        ("unavailable", grpc.StatusCode.UNAVAILABLE),
    ],
)
def test_engine_errors_map_to_their_status(error, code) -> None:
    """A request the engine had no KV cache room for is RESOURCE_EXHAUSTED (retry later), not INTERNAL."""
    import asyncio

    from ovserve.service.api.runs import service_error
    from ovserve.service.engine import EngineError, EngineOverloaded, EngineRejected, EngineUnavailable
    from ovserve.service.server.servicers import _abort

    class Context:
        code = None

        async def abort_with_status(self, status: grpc.Status) -> None:
            self.code = status.code
            raise grpc.aio.AbortError

    context = Context()
    kinds = {"overloaded": EngineOverloaded, "failed": EngineError, "rejected": EngineRejected}
    engine_error = kinds.get(error, EngineUnavailable)("broken")
    with pytest.raises(grpc.aio.AbortError):
        asyncio.run(_abort(context, service_error(engine_error)))  # type: ignore[arg-type]
    assert context.code == code


def test_a_taken_port_is_an_error_not_a_shared_port() -> None:
    """grpc.aio would bind a taken port with SO_REUSEPORT and share its traffic; ovserve refuses to start."""
    import asyncio

    from ovserve.service.config import ServeConfig
    from ovserve.service.server.grpc_server import Server

    running = start_server(TINY)
    try:
        second = Server(ServeConfig(host="127.0.0.1", port=running.server.port, models=TINY))
        with pytest.raises(RuntimeError, match="bind"):
            asyncio.run(second.start())
    finally:
        running.stop()


def test_retriable_refusals_say_when_to_retry() -> None:
    """UNAVAILABLE and RESOURCE_EXHAUSTED carry a google.rpc.RetryInfo (the bridge's Retry-After); others do not."""
    from google.rpc import error_details_pb2, status_pb2

    from ovserve.service.errors import InvalidArgument, ResourceExhausted, ServiceError, Unavailable, to_rpc_status

    def retry_delay(error: ServiceError) -> float | None:
        key, packed = to_rpc_status(error).trailing_metadata[0]
        assert key == "grpc-status-details-bin"
        for detail in status_pb2.Status.FromString(packed).details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return float(info.retry_delay.ToTimedelta().total_seconds())
        return None

    assert retry_delay(Unavailable("restarting")) == 1.0
    assert retry_delay(ResourceExhausted("full")) == 1.0
    assert retry_delay(InvalidArgument.of("top_p", "bad")) is None


def connection_states(target: str, work: Callable[[grpc.Channel], None]) -> list[grpc.ChannelConnectivity]:
    """The connectivity states a fresh channel passes through while ``work`` uses it, then 1.5 s idle."""
    states: list[grpc.ChannelConnectivity] = []
    with grpc.insecure_channel(target) as channel:
        channel.subscribe(states.append, try_to_connect=False)
        work(channel)
        time.sleep(1.5)  # long enough for a 0.5 s connection age to pass again (not an assertion)
        one_call(channel)  # still usable
    return states


def one_call(channel: grpc.Channel) -> None:
    """A short unary chat on ``channel``."""
    assert chat_pb2_grpc.ChatServiceStub(channel).CreateChatCompletion(chat_request(max_tokens=2)).choices


def test_max_connection_age_recycles_connections_and_spares_streams_in_flight() -> None:
    running = start_server(TINY, max_connection_age_seconds=0.5)
    finished: list[str] = []

    def slow_reader(channel: grpc.Channel) -> None:
        # Read a long stream slowly so the call outlives the connection's age: it must still run to its end.
        stream = chat_pb2_grpc.ChatServiceStub(channel).StreamChatCompletion(
            chat_request(True, max_tokens=300, ignore_eos=True)
        )
        first = next(stream)
        time.sleep(1.0)
        chunks = [first, *stream]
        finished.extend(chunk.choices[0].finish_reason for chunk in chunks if chunk.choices)

    try:
        aged = connection_states(running.target, slow_reader)
        plain = connection_states(running.target, one_call)
    finally:
        running.stop()
    assert common_pb2.FINISH_REASON_LENGTH in finished  # the stream was not cut
    recycled = grpc.ChannelConnectivity.IDLE
    assert recycled in aged[aged.index(grpc.ChannelConnectivity.READY) :], aged  # GOAWAY: the channel went idle
    assert recycled in plain[plain.index(grpc.ChannelConnectivity.READY) :], plain


def test_without_a_connection_age_a_connection_stays(server) -> None:
    states = connection_states(server.target, one_call)
    assert grpc.ChannelConnectivity.IDLE not in states[states.index(grpc.ChannelConnectivity.READY) :], states
