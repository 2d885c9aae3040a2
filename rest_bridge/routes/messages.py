"""/messages and /messages/count_tokens: Anthropic's Messages API, served by the chat gRPC call.

The body is translated onto a chat request (``translate.anthropic``), the reply rendered as Anthropic's message
or event stream (``render.anthropic``, ``render.anthropic_stream``). Anthropic's headers: ``x-api-key`` is the
same API key as ``Authorization: Bearer`` (one of the server's --api-key values, with its tenancy);
``anthropic-version`` and ``anthropic-beta`` are accepted and change nothing; every error on these routes is
Anthropic's envelope, ``{"type": "error", "error": {"type", "message"}}``.
"""

from __future__ import annotations

from typing import Any

import tornado.web

from ovserve.rest_bridge.errors import BridgeError
from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.render.anthropic import error_body, message, token_count
from ovserve.rest_bridge.render.anthropic_stream import MessageEventFraming
from ovserve.rest_bridge.translate.anthropic import count_tokens_request, messages_call

API_KEY_HEADER = "x-api-key"


class AnthropicError(BridgeError):
    """A bridge error answered in Anthropic's envelope (``BridgeHandler.write_error`` writes ``envelope()``)."""

    def envelope(self) -> dict[str, Any]:
        return error_body(self)

    @classmethod
    def of(cls, error: BaseException | None, status: int, method: str, path: str) -> AnthropicError:
        """The Anthropic error for whatever ended a request: a bridge refusal, tornado's own, or a bug (500)."""
        if isinstance(error, BridgeError):
            return cls(error.status_code, error.message, type=error.type, param=error.param, code=error.code,
                       retry_after=error.retry_after)  # fmt: skip
        if isinstance(error, tornado.web.HTTPError):
            text = f"method {method} is not allowed on {path}" if status == 405 else error.log_message or str(status)
            return cls(status, text)
        return cls(500, "internal error in the REST bridge", type="server_error")


class AnthropicHandler(JsonBodyHandler):
    """Anthropic's key header and error envelope over the bridge's JSON handler."""

    async def prepare(self) -> None:
        # x-api-key is Anthropic's header for the key Authorization carries as a Bearer token; the service
        # reads Authorization alone (and the key check before a large body does too). Authorization wins if both.
        key = self.request.headers.get(API_KEY_HEADER)
        if key is not None and "Authorization" not in self.request.headers:
            self.request.headers["Authorization"] = f"Bearer {key}"
        # (a key that is not printable ASCII is refused by BridgeHandler.prepare, in this route's envelope)
        await super().prepare()

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("request-id", self.request_id)  # Anthropic's name; its SDK reports it with errors

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        method, path = self.request.method or "", self.request.path
        anthropic = AnthropicError.of(error, status_code, method, path)
        super().write_error(status_code, exc_info=(AnthropicError, anthropic, None))


class MessagesHandler(AnthropicHandler):
    """POST /v3/messages (and /v1/messages): a message, or its event stream with ``"stream": true``."""

    async def post(self) -> None:
        call = await self.translated(messages_call)
        if call.stream:
            stream = self.backend.chat.StreamChatCompletion(call.chat, **self.grpc_options())
            await self.relay(stream, MessageEventFraming(call.chat.model, call.stop_sequences, call.show_thinking))
        else:
            render = lambda reply: message(reply, call.stop_sequences, call.show_thinking)  # noqa: E731
            await self.answer(self.backend.chat.CreateChatCompletion, call.chat, render)


class CountTokensHandler(AnthropicHandler):
    """POST /v3/messages/count_tokens: the prompt's tokens, counted by the chat call itself (one token
    generated), so the count is what /messages would report, tools, images and thinking included."""

    async def post(self) -> None:
        request = await self.translated(count_tokens_request)
        await self.answer(self.backend.chat.CreateChatCompletion, request, token_count)


ROUTES = [("/messages", MessagesHandler), ("/messages/count_tokens", CountTokensHandler)]
