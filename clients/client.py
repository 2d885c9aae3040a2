"""Typed Python clients of ovserve: ``OvserveClient`` (blocking) and ``AsyncOvserveClient`` (asyncio).

    with OvserveClient("127.0.0.1:50051", timeout=30) as client:
        reply = client.chat("tiny-chat", [{"role": "user", "content": "Hi"}], max_tokens=16, temperature=0)
        print(reply.choices[0].message.content)

Parameters are the request's own field names (OpenAI's: ``max_tokens``,
``temperature``, ``stop``, ...); an unknown one raises TypeError before any
call. Failed calls raise ``grpc.RpcError``; ``ovserve.clients.errors`` decodes the
fields they name. Both clients send ``authorization: Bearer <api_key>`` when
given a key, apply ``timeout`` as each call's deadline unless the call gives
its own, and let gRPC retry calls that fail with UNAVAILABLE ``retries`` times.

Both clients have one table of methods (``_Client``), each the call that
``ovserve.clients._calls`` describes; they differ only in how they make a call:
blocking, or with grpc.aio.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from types import TracebackType
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

import grpc
from google.protobuf.message import Message

from ovserve.clients import _calls
from ovserve.clients._calls import Call, Stream, Stubs
from ovserve.clients._options import ChannelOptions, call_metadata, channel_options, channel_target
from ovserve.clients.defaults import DEFAULT_TARGET

__all__ = ["AsyncOvserveClient", "OvserveClient"]

Params = ParamSpec("Params")
Result = TypeVar("Result")
Plan = Callable[..., Any]  # a function of ovserve.clients._calls: (stubs, the method's arguments) -> Call or Stream


class _Method:
    """A method of both clients: the call ``plan`` describes, made the way the client makes calls."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.__doc__ = plan.__doc__
        # help() and editors show the method's own parameters: the plan's, without the stubs.
        signature = inspect.signature(plan)
        parameters = list(signature.parameters.values())[1:]
        self._signature = signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)

    def _named(self, method: Callable[..., Any]) -> Callable[..., Any]:
        method.__name__ = method.__qualname__ = self.plan.__name__
        method.__doc__ = self.__doc__
        method.__signature__ = self._signature  # type: ignore[attr-defined]
        return method


class _Unary(_Method, Generic[Params, Result]):
    """A unary call: OvserveClient's method returns its result, AsyncOvserveClient's is awaited for it."""

    def __init__(self, plan: Callable[Concatenate[Stubs, Params], Call[Result]]) -> None:
        super().__init__(plan)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: OvserveClient, owner: type[Any]) -> Callable[Params, Result]: ...
    @overload
    def __get__(
        self, client: AsyncOvserveClient, owner: type[Any]
    ) -> Callable[Params, Coroutine[Any, Any, Result]]: ...
    def __get__(self, client: _Client | None, owner: type[Any]) -> Any:
        return self if client is None else self._named(client._unary(self.plan))


class _Streaming(_Method, Generic[Params, Result]):
    """A server-streaming call: its messages, iterated with ``for`` or ``async for``; leaving early cancels it."""

    def __init__(self, plan: Callable[Concatenate[Stubs, Params], Stream[Result]]) -> None:
        super().__init__(plan)

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: OvserveClient, owner: type[Any]) -> Callable[Params, Iterator[Result]]: ...
    @overload
    def __get__(self, client: AsyncOvserveClient, owner: type[Any]) -> Callable[Params, AsyncIterator[Result]]: ...
    def __get__(self, client: _Client | None, owner: type[Any]) -> Any:
        return self if client is None else self._named(client._streaming(self.plan))


class _Client:
    """What both clients share: the channel, a stub of every service on it, each call's deadline and metadata,
    and their methods."""

    # grpc (blocking channels) or grpc.aio: the module whose secure_channel / insecure_channel open the channel.
    _channels: ClassVar[Any]

    def __init__(
        self,
        target: str | Sequence[str] = DEFAULT_TARGET,
        *,
        api_key: str | None = None,
        timeout: float | None = 60.0,
        retries: int = 3,
        credentials: grpc.ChannelCredentials | None = None,
        options: ChannelOptions = (),
    ) -> None:
        self.timeout = timeout
        self._metadata = call_metadata(api_key)
        address, balanced = channel_target(target)
        all_options = channel_options(retries, options, balanced=balanced)
        self.channel = (
            self._channels.secure_channel(address, credentials, all_options)
            if credentials
            else self._channels.insecure_channel(address, all_options)
        )
        self._stubs = Stubs(self.channel)

    def _call_options(self, timeout: float | None) -> dict[str, Any]:
        """Keyword arguments of every stub call: the deadline (the call's, else the client's) and metadata."""
        return {"timeout": self.timeout if timeout is None else timeout, "metadata": self._metadata}

    def _unary(self, plan: Plan) -> Callable[..., Any]:
        """The method making ``plan``'s unary call."""
        raise NotImplementedError

    def _streaming(self, plan: Plan) -> Callable[..., Any]:
        """The method starting ``plan``'s server-streaming call."""
        raise NotImplementedError

    chat = _Unary(_calls.chat)
    stream_chat = _Streaming(_calls.stream_chat)
    complete = _Unary(_calls.complete)
    stream_complete = _Streaming(_calls.stream_complete)
    embed = _Unary(_calls.embed)
    rerank = _Unary(_calls.rerank)
    transcribe = _Unary(_calls.transcribe)
    stream_transcription = _Streaming(_calls.stream_transcription)
    translate = _Unary(_calls.translate)
    speak = _Unary(_calls.speak)
    stream_speech = _Streaming(_calls.stream_speech)
    generate_image = _Unary(_calls.generate_image)
    stream_image = _Streaming(_calls.stream_image)
    edit_image = _Unary(_calls.edit_image)
    stream_image_edit = _Streaming(_calls.stream_image_edit)
    list_models = _Unary(_calls.list_models)
    get_model = _Unary(_calls.get_model)
    health = _Unary(_calls.health)
    create_conversation = _Unary(_calls.create_conversation)
    get_conversation = _Unary(_calls.get_conversation)
    update_conversation = _Unary(_calls.update_conversation)
    delete_conversation = _Unary(_calls.delete_conversation)
    list_conversation_items = _Unary(_calls.list_conversation_items)
    add_conversation_items = _Unary(_calls.add_conversation_items)
    get_conversation_item = _Unary(_calls.get_conversation_item)
    delete_conversation_item = _Unary(_calls.delete_conversation_item)
    upload_file = _Unary(_calls.upload_file)
    get_file = _Unary(_calls.get_file)
    list_files = _Unary(_calls.list_files)
    delete_file = _Unary(_calls.delete_file)
    download_file = _Streaming(_calls.download_file)
    create_batch = _Unary(_calls.create_batch)
    get_batch = _Unary(_calls.get_batch)
    list_batches = _Unary(_calls.list_batches)
    cancel_batch = _Unary(_calls.cancel_batch)
    load_lora_adapter = _Unary(_calls.load_lora_adapter)
    unload_lora_adapter = _Unary(_calls.unload_lora_adapter)
    load_model = _Streaming(_calls.load_model)
    unload_model = _Unary(_calls.unload_model)
    reload_config = _Unary(_calls.reload_config)


class OvserveClient(_Client):
    """Blocking client of an ovserve gRPC server.

    Args:
        target: ``host:port`` of the server; several ``ip:port`` replicas, or ``dns:///name:port``
            (every address the name resolves to): calls are spread over the replicas that report
            SERVING (round_robin with gRPC health checks), and a retry goes to another one.
        api_key: sent as ``authorization: Bearer <api_key>`` on every call.
        timeout: default deadline of each call, seconds (None: no deadline).
        retries: how often gRPC retries a call that fails with UNAVAILABLE
            (at most 4; streams only before their first message; 0: never).
        credentials: TLS channel credentials; None for a plaintext channel.
        options: extra gRPC channel options, e.g. ``[("grpc.max_receive_message_length", n)]``.
    """

    _channels = grpc
    channel: grpc.Channel

    def _unary(self, plan: Plan) -> Callable[..., Any]:
        def method(*args: Any, **kwargs: Any) -> Any:
            call: Call[Any] = plan(self._stubs, *args, **kwargs)
            return call.result(call.rpc(_sent(call.request), **self._call_options(call.timeout)))

        return method

    def _streaming(self, plan: Plan) -> Callable[..., Iterator[Any]]:
        def method(*args: Any, **kwargs: Any) -> Iterator[Any]:
            stream: Stream[Any] = plan(self._stubs, *args, **kwargs)  # now: a bad argument raises before iterating
            return _cancelling(stream.rpc(stream.request, **self._call_options(stream.timeout)))

        return method

    def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncOvserveClient(_Client):
    """asyncio client of an ovserve gRPC server (grpc.aio); same arguments and methods as OvserveClient.

    Create it inside the event loop that uses it: grpc.aio channels belong to a loop.
    """

    _channels = grpc.aio
    channel: grpc.aio.Channel

    def _unary(self, plan: Plan) -> Callable[..., Coroutine[Any, Any, Any]]:
        async def method(*args: Any, **kwargs: Any) -> Any:
            call: Call[Any] = plan(self._stubs, *args, **kwargs)
            return call.result(await call.rpc(_sent(call.request), **self._call_options(call.timeout)))

        return method

    def _streaming(self, plan: Plan) -> Callable[..., AsyncIterator[Any]]:
        def method(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            stream: Stream[Any] = plan(self._stubs, *args, **kwargs)
            return _async_cancelling(stream.rpc(stream.request, **self._call_options(stream.timeout)))

        return method

    async def close(self) -> None:
        """Close the channel; calls in flight are cancelled."""
        await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()


def _sent(request: Message | list[Message]) -> Any:
    """What a stub's method takes: the request, or for a client stream an iterator over its messages."""
    return iter(request) if isinstance(request, list) else request


def _cancelling(call: Any) -> Iterator[Any]:
    """Iterate a server-streaming call; cancel it if the caller stops early (a no-op once it has ended)."""
    try:
        yield from call
    finally:
        call.cancel()


async def _async_cancelling(call: Any) -> AsyncIterator[Any]:
    """Iterate a grpc.aio server-streaming call; cancel it if the caller stops early."""
    try:
        async for message in call:
            yield message
    finally:
        call.cancel()
