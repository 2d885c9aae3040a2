"""POST /completions: the legacy completions API (JSON, or SSE with ``"stream": true``)."""

from __future__ import annotations

from ovserve.rest_bridge.handler import JsonBodyHandler
from ovserve.rest_bridge.render.completions import completion, completion_chunk
from ovserve.rest_bridge.sse import ChunkFraming
from ovserve.rest_bridge.translate.completions import completion_request


class CompletionsHandler(JsonBodyHandler):
    """POST /v3/completions."""

    async def post(self) -> None:
        request, stream = await self.translated(completion_request)
        if stream:
            include_usage = request.stream_options.include_usage
            call = self.backend.completions.StreamCompletion(request, **self.grpc_options())
            await self.relay(call, ChunkFraming(lambda chunk: completion_chunk(chunk, include_usage)))
        else:
            await self.answer(self.backend.completions.CreateCompletion, request, completion)


ROUTES = [("/completions", CompletionsHandler)]
