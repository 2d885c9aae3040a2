"""The one declaration of the contract's services (clients/services.py), what is built from it on both sides,
and the typed clients' one table of methods: no server needed."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from types import SimpleNamespace
from typing import Any

import pytest
from google.protobuf import descriptor_pool
from grpc_health.v1 import health_pb2

import ovserve.clients.v1
from ovserve.clients import AsyncOvserveClient, OvserveClient, _calls
from ovserve.clients._calls import Call, Stream, Stubs
from ovserve.clients.services import Service
from ovserve.service.server.services import SERVED

# The public methods of both clients, as they were before they shared one table: the API to keep.
UNARY = {
    "chat", "complete", "embed", "rerank", "transcribe", "translate", "speak", "generate_image", "edit_image",
    "list_models", "get_model", "health",
    "create_conversation", "get_conversation", "update_conversation", "delete_conversation",
    "list_conversation_items", "add_conversation_items", "get_conversation_item", "delete_conversation_item",
    "upload_file", "get_file", "list_files", "delete_file", "create_batch", "get_batch", "list_batches",
    "cancel_batch", "load_lora_adapter", "unload_lora_adapter", "unload_model", "reload_config",
}  # fmt: skip
STREAMING = {"stream_chat", "stream_complete", "stream_transcription", "stream_speech", "stream_image",
             "stream_image_edit", "download_file", "load_model"}  # fmt: skip


def generated_services() -> set[str]:
    """Every service some generated module of clients/v1 declares, by full name."""
    names = set()
    for module in pkgutil.iter_modules(ovserve.clients.v1.__path__):
        if module.name.endswith("_pb2"):
            file = importlib.import_module(f"ovserve.clients.v1.{module.name}").DESCRIPTOR
            names |= {service.full_name for service in file.services_by_name.values()}
    return names


def test_every_generated_service_is_declared_once() -> None:
    declared = [service.full_name for service in Service]
    assert len(declared) == len(set(declared)) == 13
    assert set(declared) == generated_services()


@pytest.mark.parametrize("service", list(Service), ids=lambda service: service.name)
def test_a_declared_service_names_its_own_generated_code(service: Service) -> None:
    short = service.full_name.rsplit(".", 1)[1]
    assert service.module.DESCRIPTOR.services_by_name[short].full_name == service.full_name
    assert service.stub.__name__ == f"{short}Stub"
    assert service.add_to_server.__name__ == f"add_{short}Servicer_to_server"


def test_the_server_serves_every_declared_service_and_every_rpc_of_it() -> None:
    assert list(SERVED) == [service.full_name for service in Service]  # reflection and health list these
    parts = SimpleNamespace(
        registry=None,
        stored_chat=None,
        responses=None,
        conversations=None,
        files=None,
        batches=None,
        lora=None,
        admin=None,
        reloader=None,
    )
    pool = descriptor_pool.Default()
    for name, (add_to_server, build) in SERVED.items():
        servicer = build(parts)
        rpcs = [method.name for method in pool.FindServiceByName(name).methods]
        assert [rpc for rpc in rpcs if not callable(getattr(servicer, rpc, None))] == [], name
        assert add_to_server.__name__.endswith(f"{name.rsplit('.', 1)[1]}Servicer_to_server")


class RecordingChannel:
    """A channel whose multi-callables only say which method they are (the stubs need nothing more)."""

    def _method(self, path: str, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(path=path)

    unary_unary = unary_stream = stream_unary = stream_stream = _method


# Arguments that make each method build its request.
ARGUMENTS: dict[str, tuple[Any, ...]] = {
    "chat": ("m", [{"role": "user", "content": "Hi"}]),
    "stream_chat": ("m", [{"role": "user", "content": "Hi"}]),
    "complete": ("m", "Hi"),
    "stream_complete": ("m", "Hi"),
    "embed": ("m", "Hi"),
    "rerank": ("m", "q", ["a", "b"]),
    "transcribe": ("m", b"RIFF"),
    "stream_transcription": ("m", b"RIFF"),
    "translate": ("m", b"RIFF"),
    "speak": ("m", "Hello"),
    "stream_speech": ("m", "Hello"),
    "generate_image": ("m", "a red square"),
    "stream_image": ("m", "a red square"),
    "edit_image": ("m", "a boat", b"PNG"),
    "stream_image_edit": ("m", "a boat", b"PNG"),
    "list_models": (),
    "get_model": ("m",),
    "health": (),
    "create_conversation": (),
    "get_conversation": ("conv_1",),
    "update_conversation": ("conv_1", {"k": "v"}),
    "delete_conversation": ("conv_1",),
    "list_conversation_items": ("conv_1",),
    "add_conversation_items": ("conv_1", [{"type": "message", "role": "user", "content": "Hi"}]),
    "get_conversation_item": ("conv_1", "msg_1"),
    "delete_conversation_item": ("conv_1", "msg_1"),
    "upload_file": (b"data", "a.txt", "user_data"),
    "get_file": ("file-1",),
    "list_files": (),
    "delete_file": ("file-1",),
    "download_file": ("file-1",),
    "create_batch": ("file-1", "/v1/chat/completions"),
    "get_batch": ("batch_1",),
    "list_batches": (),
    "cancel_batch": ("batch_1",),
    "load_lora_adapter": ("a", "dir"),
    "unload_lora_adapter": ("a",),
    "load_model": ("m",),
    "unload_model": ("m",),
    "reload_config": (),
}


@pytest.mark.parametrize("name", sorted(UNARY | STREAMING))
def test_each_method_sends_its_rpc_the_request_that_rpc_takes(name: str) -> None:
    call = getattr(_calls, name)(Stubs(RecordingChannel()), *ARGUMENTS[name], timeout=7)
    assert isinstance(call, Stream if name in STREAMING else Call)
    service, rpc = call.rpc.path.strip("/").split("/")
    if service == health_pb2.DESCRIPTOR.services_by_name["Health"].full_name:
        method = health_pb2.DESCRIPTOR.services_by_name["Health"].methods_by_name[rpc]
    else:
        method = descriptor_pool.Default().FindServiceByName(service).methods_by_name[rpc]
    messages = call.request if isinstance(call.request, list) else [call.request]
    assert [message.DESCRIPTOR for message in messages] == [method.input_type] * len(messages)
    assert method.client_streaming == isinstance(call.request, list)
    assert method.server_streaming == (name in STREAMING)
    assert call.timeout == 7


def test_both_clients_have_the_same_methods_with_the_same_parameters() -> None:
    for client_class in (OvserveClient, AsyncOvserveClient):
        assert {name for name in dir(client_class) if not name.startswith("_")} == UNARY | STREAMING | {"close"}

    async def async_methods() -> dict[str, Any]:
        async with AsyncOvserveClient("127.0.0.1:1") as client:
            return {name: getattr(client, name) for name in UNARY | STREAMING}

    awaitable = asyncio.run(async_methods())
    with OvserveClient("127.0.0.1:1") as client:
        for name in UNARY | STREAMING:
            blocking = getattr(client, name)
            assert inspect.signature(blocking) == inspect.signature(awaitable[name]), name
            assert blocking.__name__ == name and blocking.__doc__ == awaitable[name].__doc__ != "", name
            assert inspect.iscoroutinefunction(awaitable[name]) == (name in UNARY), name
            assert not inspect.iscoroutinefunction(blocking), name
        assert str(inspect.signature(client.chat)).startswith("(model: 'str', messages:")  # not the stubs


def test_a_bad_argument_raises_when_the_method_is_called_not_when_the_stream_is_read() -> None:
    with OvserveClient("127.0.0.1:1") as client, pytest.raises(TypeError, match="no_such_field"):
        client.stream_chat("m", [{"role": "user", "content": "Hi"}], no_such_field=1)
