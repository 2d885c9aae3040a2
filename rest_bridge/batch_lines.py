"""A batch line run exactly as the REST API runs the same request: translated, called over gRPC, rendered.

The service's batch runner (service/batches/runner.py) runs each line through ``BatchLines``, which the
composition root builds on a channel to the server: the body goes through the route's own translation to the
proto request, the unary RPC is called as the batch's owner (the runner's token and the owner's tenant in the
metadata, which the service's call policy alone checks), and the reply is rendered as the route renders it. A
refusal of the translation or the service becomes the status and error body the HTTP API would answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from ovserve.clients.defaults import BATCH_OWNER_KEY, BATCH_TOKEN_KEY
from ovserve.rest_bridge.backend import Backend
from ovserve.rest_bridge.errors import BridgeError, from_rpc_error
from ovserve.rest_bridge.render.chat import chat_completion
from ovserve.rest_bridge.render.completions import completion
from ovserve.rest_bridge.render.responses import response
from ovserve.rest_bridge.routes.embeddings import embedding_json, embedding_request
from ovserve.rest_bridge.translate.completions import chat_request, completion_request
from ovserve.rest_bridge.translate.responses import create_request


@dataclass(frozen=True)
class _Route:
    """How one endpoint's body becomes a call and its reply JSON."""

    translate: Callable[[dict[str, Any]], Message]
    rpc: Callable[[Backend], Any]
    render: Callable[[Any, Message], dict[str, Any]]


def _unstreamed(translate: Callable[[dict[str, Any]], tuple[Message, bool]]) -> Callable[[dict[str, Any]], Message]:
    """A translation whose stream flag a batch never sets (the batch's checks refuse ``stream``)."""
    return lambda body: translate(body)[0]


ROUTES: dict[str, _Route] = {
    "/v1/chat/completions": _Route(
        _unstreamed(chat_request), lambda b: b.chat.CreateChatCompletion, lambda reply, _: chat_completion(reply)
    ),
    "/v1/completions": _Route(
        _unstreamed(completion_request), lambda b: b.completions.CreateCompletion, lambda reply, _: completion(reply)
    ),
    "/v1/responses": _Route(
        _unstreamed(create_request), lambda b: b.responses.CreateResponse, lambda reply, _: response(reply.response)
    ),
    "/v1/embeddings": _Route(
        embedding_request,
        lambda b: b.embeddings.CreateEmbedding,
        lambda reply, request: embedding_json(reply, request.encoding_format),  # type: ignore[attr-defined]
    ),
}


class BatchLines:
    """Runs batch lines on ``channel``: ``await lines(endpoint, body, owner)`` -> (status, request id, body)."""

    def __init__(self, channel: grpc.aio.Channel, token: str, deadline_seconds: float = 600.0) -> None:
        self._channel = channel
        self._backend = Backend.on(channel)
        self._token = token
        self._deadline = deadline_seconds

    async def __call__(self, endpoint: str, body: dict[str, Any], owner: str) -> tuple[int, str, dict[str, Any]]:
        """The HTTP status, request id and JSON body the REST API would answer ``body`` on ``endpoint`` with."""
        request_id = uuid.uuid4().hex
        route = ROUTES[endpoint]
        try:
            request = route.translate(body)
            metadata = (("x-request-id", request_id), (BATCH_TOKEN_KEY, self._token), (BATCH_OWNER_KEY, owner))
            reply = await route.rpc(self._backend)(request, timeout=self._deadline, metadata=metadata)
            return 200, request_id, route.render(reply, request)
        except BridgeError as error:
            return error.status_code, request_id, error.envelope()
        except grpc.aio.AioRpcError as error:
            failure = from_rpc_error(error)
            return failure.status_code, request_id, failure.envelope()

    async def close(self) -> None:
        """Close the channel."""
        await self._channel.close()
