"""The typed clients against the real session server, and against a small recording server for metadata and retries."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from ovserve.clients import AsyncOvserveClient, OvserveClient, OvserveError, field_violations
from ovserve.clients._requests import chat_request, completion_request
from ovserve.clients.errors import error_details
from ovserve.clients.v1 import chat_pb2, completion_pb2, model_pb2
from ovserve.service.errors import FieldViolation, InvalidArgument, NotFound
from tests.conftest import ServerThread, start_server
from tests.rpc import ServiceRpcError

MODEL = "tiny-chat"
HELLO = [{"role": "user", "content": "Hello! How are you?"}]
GREEDY = {"max_tokens": 24, "temperature": 0}
LONG = {"max_tokens": 2000, "ignore_eos": True}  # seconds of generation, well past a 50 ms deadline


@pytest.fixture
def client(server: ServerThread) -> Iterator[OvserveClient]:
    with OvserveClient(server.target, timeout=60) as open_client:
        yield open_client


def run(coroutine):
    """Run a coroutine on a fresh event loop (each async test makes its client inside it)."""
    return asyncio.run(coroutine)


# ---- chat and completions against the real engine ----


def test_chat_unary_equals_joined_stream(client: OvserveClient) -> None:
    reply = client.chat(MODEL, HELLO, **GREEDY)
    chunks = list(client.stream_chat(MODEL, HELLO, **GREEDY))
    streamed = "".join(chunk.choices[0].delta.content for chunk in chunks if chunk.choices)
    assert reply.choices[0].message.content
    assert streamed == reply.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == reply.choices[0].finish_reason


def test_async_chat_unary_equals_joined_stream(server: ServerThread) -> None:
    async def main() -> tuple[str, str]:
        async with AsyncOvserveClient(server.target) as client:
            reply = await client.chat(MODEL, HELLO, **GREEDY)
            parts = [chunk.choices[0].delta.content async for chunk in client.stream_chat(MODEL, HELLO, **GREEDY)]
            return reply.choices[0].message.content, "".join(parts)

    unary, streamed = run(main())
    assert unary
    assert streamed == unary


def test_chat_accepts_content_parts_and_proto_messages(client: OvserveClient) -> None:
    as_parts = [{"role": "user", "content": [{"type": "text", "text": HELLO[0]["content"]}]}]
    as_proto = [chat_pb2.ChatMessage(role="user", content=HELLO[0]["content"])]
    expected = client.chat(MODEL, HELLO, **GREEDY).choices[0].message.content
    assert client.chat(MODEL, as_parts, **GREEDY).choices[0].message.content == expected
    assert client.chat(MODEL, as_proto, **GREEDY).choices[0].message.content == expected


def test_complete_string_prompt_unary_equals_stream(client: OvserveClient) -> None:
    reply = client.complete(MODEL, "Once upon a time", **GREEDY)
    chunks = client.stream_complete(MODEL, "Once upon a time", **GREEDY)
    streamed = "".join(chunk.choices[0].text for chunk in chunks if chunk.choices)
    assert len(reply.choices) == 1
    assert reply.choices[0].text
    assert streamed == reply.choices[0].text


def test_complete_list_prompt_gives_one_choice_per_prompt(client: OvserveClient) -> None:
    prompts = ["Once upon a time", "The cat"]
    batch = client.complete(MODEL, prompts, **GREEDY)
    alone = [client.complete(MODEL, prompt, **GREEDY).choices[0].text for prompt in prompts]
    assert [choice.index for choice in batch.choices] == [0, 1]
    assert [choice.text for choice in batch.choices] == alone


def test_complete_token_id_prompts(client: OvserveClient) -> None:
    assert len(client.complete(MODEL, [5, 6, 7], max_tokens=2, temperature=0).choices) == 1
    assert len(client.complete(MODEL, [[5, 6], [7, 8], [9]], max_tokens=2, temperature=0).choices) == 3


async def _async_completions(target: str) -> tuple[int, str]:
    async with AsyncOvserveClient(target) as client:
        batch = await client.complete(MODEL, ["Once upon a time", "The cat"], **GREEDY)
        chunks = [c async for c in client.stream_complete(MODEL, "The cat", **GREEDY)]
        return len(batch.choices), "".join(c.choices[0].text for c in chunks if c.choices) == batch.choices[1].text


def test_async_completions(server: ServerThread) -> None:
    assert run(_async_completions(server.target)) == (2, True)


# ---- models and health ----


def test_list_and_get_models(client: OvserveClient) -> None:
    assert {model.id for model in client.list_models()} >= {"tiny-chat", "tiny-chat-speculative"}
    assert client.get_model(MODEL).id == MODEL
    with pytest.raises(grpc.RpcError) as caught:
        client.get_model("no-such-model")
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND
    assert client.health() == "SERVING"


def test_async_models_and_health(server: ServerThread) -> None:
    async def main() -> tuple[list[str], str, str]:
        async with AsyncOvserveClient(server.target) as client:
            models = [model.id for model in await client.list_models()]
            return models, (await client.get_model(MODEL)).id, await client.health()

    models, got, health = run(main())
    assert MODEL in models
    assert got == MODEL
    assert health == "SERVING"


# ---- errors ----


def test_bad_request_names_the_fields(client: OvserveClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.chat(MODEL, HELLO, temperature=9, top_p=0)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert {name for name, _ in field_violations(caught.value)} == {"temperature", "top_p"}
    error = OvserveError.from_rpc_error(caught.value)
    assert error.code == grpc.StatusCode.INVALID_ARGUMENT
    assert error.param in {"temperature", "top_p"}
    assert all(description for _, description in error.fields)


def test_async_bad_request_names_the_fields(server: ServerThread) -> None:
    async def main() -> grpc.aio.AioRpcError:
        async with AsyncOvserveClient(server.target) as client:
            try:
                await client.complete(MODEL, "Hi", max_tokens=0)
            except grpc.aio.AioRpcError as error:
                return error
            raise AssertionError("max_tokens=0 was accepted")

    error = run(main())
    assert [name for name, _ in field_violations(error)] == ["max_tokens"]
    assert OvserveError.from_rpc_error(error).param == "max_tokens"


def test_field_violations_of_an_error_without_details(client: OvserveClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.chat(MODEL, HELLO, timeout=0.001, **LONG)
    assert field_violations(caught.value) == []


# ---- deadlines ----


def test_per_call_timeout_is_the_deadline(client: OvserveClient) -> None:
    with pytest.raises(grpc.RpcError) as caught:
        client.complete(MODEL, "Once", timeout=0.05, **LONG)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    with pytest.raises(grpc.RpcError) as caught:
        list(client.stream_chat(MODEL, HELLO, timeout=0.05, **LONG))
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def test_client_timeout_is_the_default_deadline_and_a_call_overrides_it(server: ServerThread) -> None:
    with OvserveClient(server.target, timeout=0.05) as client:
        with pytest.raises(grpc.RpcError) as caught:
            client.chat(MODEL, HELLO, **LONG)
        assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert client.complete(MODEL, "Once", max_tokens=2, timeout=60).choices


def test_async_stream_deadline(server: ServerThread) -> None:
    async def main() -> grpc.StatusCode:
        async with AsyncOvserveClient(server.target, timeout=0.05) as client:
            try:
                async for _ in client.stream_complete(MODEL, "Once", **LONG):
                    pass
            except grpc.aio.AioRpcError as error:
                return error.code()
            return grpc.StatusCode.OK

    assert run(main()) == grpc.StatusCode.DEADLINE_EXCEEDED


# ---- request building: checked before any call ----


class Recorder(grpc.GenericRpcHandler):
    """A stand-in server: records each call's method and metadata; ListModels fails UNAVAILABLE ``failures`` times."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.calls: list[tuple[str, dict[str, str]]] = []

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        self.calls.append((handler_call_details.method, dict(handler_call_details.invocation_metadata)))
        if handler_call_details.method != "/ovserve.v1.ModelService/ListModels":
            return None  # UNIMPLEMENTED
        return grpc.unary_unary_rpc_method_handler(
            self._list_models,
            request_deserializer=model_pb2.ListModelsRequest.FromString,
            response_serializer=model_pb2.ListModelsResponse.SerializeToString,
        )

    def _list_models(self, request: model_pb2.ListModelsRequest, context: grpc.ServicerContext):
        if self.failures > 0:
            self.failures -= 1
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return model_pb2.ListModelsResponse(object="list", data=[model_pb2.Model(id="fake")])


@pytest.fixture
def recorder() -> Iterator[tuple[Recorder, str]]:
    handler = Recorder()
    recording_server = grpc.server(futures.ThreadPoolExecutor(max_workers=1), handlers=[handler])
    port = recording_server.add_insecure_port("127.0.0.1:0")
    recording_server.start()
    yield handler, f"127.0.0.1:{port}"
    recording_server.stop(None)


def test_unknown_param_raises_type_error_before_any_call(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder
    with OvserveClient(target) as client:
        with pytest.raises(TypeError, match="temprature"):
            client.chat(MODEL, HELLO, temprature=0)
        with pytest.raises(TypeError, match=r"max_token\b"):
            client.stream_complete(MODEL, "Hi", max_token=3)
        with pytest.raises(TypeError, match="stream"):
            client.chat(MODEL, HELLO, stream=True)
        with pytest.raises(TypeError, match="prompt"):
            client.complete(MODEL, [1, "two"])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="temperature"):
            client.chat(MODEL, HELLO, temperature="hot")
    assert handler.calls == []


def test_stop_and_content_and_prompt_forms_are_normalised() -> None:
    message = chat_request(
        chat_pb2.CreateChatCompletionRequest,
        MODEL,
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}, {"role": "assistant", "content": "yo"}],
        {"stop": ["\n", "."], "tool_choice": {"type": "function", "function": {"name": "f"}}, "seed": None},
    )
    assert list(message.stop_sequences) == ["\n", "."]
    assert not message.HasField("stop")
    assert not message.HasField("seed")
    assert message.named_tool_choice.function.name == "f"
    assert message.messages[0].content_parts[0].text == "hi"
    assert message.messages[1].content == "yo"
    assert chat_request(chat_pb2.StreamChatCompletionRequest, MODEL, [], {"stop": "\n"}).stop == "\n"

    def prompts(prompt):
        return completion_request(completion_pb2.CreateCompletionRequest, MODEL, prompt, {}).prompts

    assert [p.text for p in prompts(["a", "b"])] == ["a", "b"]
    assert [list(p.token_ids.ids) for p in prompts([1, 2])] == [[1, 2]]
    assert [list(p.token_ids.ids) for p in prompts([[1], [2, 3]])] == [[1], [2, 3]]
    assert completion_request(completion_pb2.CreateCompletionRequest, MODEL, "a", {}).prompt == "a"


# ---- API key metadata and retries (recording server) ----


def test_api_key_is_sent_as_bearer_metadata(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder
    with OvserveClient(target, api_key="sk-test") as client:
        client.list_models()
    with OvserveClient(target) as client:
        client.list_models()
    assert handler.calls[0][1].get("authorization") == "Bearer sk-test"
    assert "authorization" not in handler.calls[1][1]


def test_async_api_key_is_sent_as_bearer_metadata(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder

    async def main() -> None:
        async with AsyncOvserveClient(target, api_key="sk-async") as client:
            await client.list_models()

    run(main())
    assert handler.calls[0][1].get("authorization") == "Bearer sk-async"


def test_unavailable_is_retried_by_the_channel_policy(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder
    handler.failures = 2
    with OvserveClient(target, retries=2) as client:
        assert [model.id for model in client.list_models()] == ["fake"]
    assert len(handler.calls) == 3


def test_without_retries_unavailable_reaches_the_caller(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder
    handler.failures = 1
    with OvserveClient(target, retries=0) as client, pytest.raises(grpc.RpcError) as caught:
        client.list_models()
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
    assert len(handler.calls) == 1


def test_async_unavailable_is_retried(recorder: tuple[Recorder, str]) -> None:
    handler, target = recorder
    handler.failures = 1

    async def main() -> list[str]:
        async with AsyncOvserveClient(target, retries=1) as client:
            return [model.id for model in await client.list_models()]

    assert run(main()) == ["fake"]
    assert len(handler.calls) == 2


# ---- API key against the real server ----


def test_real_server_accepts_the_clients_api_key() -> None:
    keyed = start_server([], api_keys=("sk-real",))
    try:
        with OvserveClient(keyed.target, api_key="sk-real") as client:
            assert client.list_models() == []
        with OvserveClient(keyed.target) as client:
            with pytest.raises(grpc.RpcError) as caught:
                client.list_models()
            assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
            assert client.health() == "SERVING"  # health stays open
    finally:
        keyed.stop()


# ---- decoding google.rpc details (no server: the server's encoder, then the clients' decoder) ----


def test_error_details_decode_what_the_server_encodes() -> None:
    violations = [FieldViolation("stop_sequences[1]", "too long"), FieldViolation("top_p", "must be in (0, 1]")]
    with pytest.raises(InvalidArgument) as raised:
        InvalidArgument.check(violations)
    details = error_details(ServiceRpcError(raised.value))
    assert details.fields == [("stop_sequences[1]", "too long"), ("top_p", "must be in (0, 1]")]
    assert details.param == "stop_sequences[1]" and details.first_field == "stop_sequences[1]"
    unknown = error_details(ServiceRpcError(NotFound("no model 'x'", param="model")))
    assert (unknown.fields, unknown.param, unknown.first_field) == ([], "model", "model")
    error = OvserveError.from_rpc_error(ServiceRpcError(NotFound("no model 'x'", param="model")))
    assert (error.code, error.message, error.param) == (grpc.StatusCode.NOT_FOUND, "no model 'x'", "model")
    bare = error_details(ServiceRpcError(NotFound("gone")))
    assert (bare.fields, bare.param, bare.first_field) == ([], None, None)


def test_client_channels_take_the_servers_message_size() -> None:
    """gRPC's default 4 MiB receive limit would refuse a large batch reply the server may send (64 MiB)."""
    from ovserve.clients._options import channel_options
    from ovserve.clients.defaults import MAX_MESSAGE_BYTES

    options = dict(channel_options(2))
    assert options["grpc.max_receive_message_length"] == MAX_MESSAGE_BYTES > 4 * 1024 * 1024
    assert options["grpc.max_send_message_length"] == MAX_MESSAGE_BYTES
    assert dict(channel_options(0, [("grpc.max_receive_message_length", 1)]))["grpc.max_receive_message_length"] == 1
