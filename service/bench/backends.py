"""The service side: stream requests to a running ovserve over gRPC or HTTP/SSE, on one asyncio loop.

Each backend turns one BenchRequest into a RequestResult: the time each output
message arrived and the token counts from the usage the server reports
(``stream_options.include_usage``). ``run_load`` applies a Schedule to them.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import Any, Protocol

import aiohttp

from ovserve.clients import AsyncOvserveClient
from ovserve.service.bench.load import BenchRequest, Schedule
from ovserve.service.bench.metrics import RequestResult
from ovserve.service.bench.progress import ProgressBar
from ovserve.service.bench.urls import ApiBase, bearer

# Greedy with ignore_eos, so every request makes exactly output_tokens tokens and runs compare like for like.
SAMPLING: dict[str, Any] = {"temperature": 0, "ignore_eos": True, "stream_options": {"include_usage": True}}


class Backend(Protocol):
    """Something that streams one request and times it."""

    name: str

    async def stream(self, request: BenchRequest) -> RequestResult:
        """Send ``request`` streamed; never raises for a failed request (the result carries the error)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


class GrpcBackend:
    """StreamChatCompletion or StreamCompletion through the typed asyncio client."""

    def __init__(self, target: str, model: str, endpoint: str, api_key: str | None = None) -> None:
        self.name = "grpc"
        self._client = AsyncOvserveClient(target, api_key=api_key, timeout=600, retries=0)
        self._model, self._endpoint = model, endpoint

    async def stream(self, request: BenchRequest) -> RequestResult:
        """One streamed call; an output message is one with non-empty delta content (chat) or text (completion)."""
        result = RequestResult(start=time.perf_counter())
        params = {**SAMPLING, "max_tokens": request.output_tokens}
        if self._endpoint == "chat":
            stream = self._client.stream_chat(request.model or self._model, request.chat_messages(), **params)
        else:
            stream = self._client.stream_complete(request.model or self._model, request.prompt, **params)
        try:
            async for chunk in stream:
                now = time.perf_counter()
                if chunk.choices and (
                    piece := chunk.choices[0].delta.content if self._endpoint == "chat" else chunk.choices[0].text
                ):
                    result.chunk_times.append(now)
                    result.pieces.append(piece)
                if chunk.HasField("usage"):
                    result.output_tokens = chunk.usage.completion_tokens
                    result.prompt_tokens = chunk.usage.prompt_tokens
        except Exception as error:  # a failed request is a figure of the run, not the end of it
            result.error = f"{type(error).__name__}: {error}"[:300]
        result.end = time.perf_counter()
        _check_usage(result)
        return result

    async def close(self) -> None:
        """Close the channel."""
        await self._client.close()


class HttpBackend:
    """POST chat/completions or completions with ``"stream": true``, reading the SSE as it arrives: ovserve's
    bridge ("http"), or any OpenAI-compatible server ("peer": llama.cpp's llama-server, vLLM, OVMS).

    aiohttp keeps its connections open between requests, as the clients users run do (the openai package's
    httpx, browsers): tornado's client opened one per request, a TCP handshake and a new bridge connection for
    every request measured, and spent 1.0-1.5 ms of CPU per request against aiohttp's 0.4 (one-line embedding
    requests to a server that does nothing, 8 clients, one run).
    """

    def __init__(
        self,
        base: ApiBase,
        model: str,
        endpoint: str,
        max_clients: int,
        name: str = "http",
        api_key: str | None = None,
    ) -> None:
        self.name = name
        self._url = base.route(endpoint)
        self._headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **bearer(api_key)}
        self._model, self._endpoint = model, endpoint
        self._max_clients = max(10, max_clients)
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        """The client's one session (made in the running event loop, as aiohttp wants), its pool sized to the
        load: a pool smaller than the concurrency would throttle the run."""
        if self._session is None:
            # A peer's connections are not reused: llama-server (cpp-httplib) closed kept-alive ones under the
            # bench, and requests sent on them failed (7 of 48, "Server disconnected"); a loopback connect costs
            # the peer nothing it is measured on.
            self._session = http_session(self._max_clients, reuse=self.name != "peer")
        return self._session

    async def stream(self, request: BenchRequest) -> RequestResult:
        """One streamed POST; an output message is an SSE event with non-empty content or text."""
        body: dict[str, Any] = {
            "model": request.model or self._model,
            "stream": True,
            "max_tokens": request.output_tokens,
            **SAMPLING,
        }
        if self._endpoint == "chat":
            body["messages"] = request.chat_messages()
        else:
            body["prompt"] = request.prompt
        result = RequestResult(start=time.perf_counter())
        buffer = bytearray()
        try:
            async with self.session().post(self._url, data=json.dumps(body), headers=self._headers) as response:
                if response.status >= 400:
                    result.error = f"HTTP {response.status}: {(await response.read())[:200]!r}"
                else:
                    async for data in response.content.iter_any():
                        now = time.perf_counter()
                        buffer.extend(data)
                        # Events end with a blank line; keep a partial event for the next read.
                        *events, rest = bytes(buffer).split(b"\n\n")
                        buffer[:] = rest
                        for event in events:
                            self._on_event(event, now, result)
        except Exception as error:
            result.error = f"{type(error).__name__}: {error}"[:300]
        result.end = time.perf_counter()
        _check_usage(result)
        return result

    def _on_event(self, event: bytes, now: float, result: RequestResult) -> None:
        data = sse_data(event)
        if not data or data == "[DONE]":
            return
        chunk = json.loads(data)
        if "error" in chunk:
            result.error = str(chunk["error"].get("message", chunk["error"]))[:300]
            return
        choices = chunk.get("choices") or []
        if choices:
            piece = choices[0].get("delta", {}).get("content") if self._endpoint == "chat" else choices[0].get("text")
            if piece:
                result.chunk_times.append(now)
                result.pieces.append(piece)
        if chunk.get("usage"):
            result.output_tokens = chunk["usage"]["completion_tokens"]
            result.prompt_tokens = chunk["usage"]["prompt_tokens"]

    async def close(self) -> None:
        """Close the client's connections."""
        if self._session is not None:
            await self._session.close()


def sse_data(event: bytes) -> str:
    """A server-sent event's data: its ``data:`` lines joined. Comment lines (``:``, which llama-server sends as a
    ping after every 30 s without a token, so at 32 streams or on long prompts) and other fields carry none."""
    lines = event.decode().splitlines()
    return "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:")).strip()


def http_session(connections: int, *, reuse: bool = True) -> aiohttp.ClientSession:
    """An HTTP client session keeping up to ``connections`` connections open (or a new one per request, without
    ``reuse``), without a total timeout (a long bench request is a figure, not a failure; each read still times
    out after 600 s)."""
    # An idle connection is dropped after 2 s: llama-server closes its own after 5, and a request sent on a
    # connection the server is closing fails (aiohttp keeps them 15 s by default).
    connector = (
        aiohttp.TCPConnector(limit=connections, keepalive_timeout=2.0)
        if reuse
        else aiohttp.TCPConnector(limit=connections, force_close=True)
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None, sock_read=600),
    )


def _check_usage(result: RequestResult) -> None:
    # Tokens are counted from usage: a stream without it cannot be counted, so it does not count as done.
    if result.error is None and result.output_tokens == 0:
        result.error = "the stream ended without usage (or without output)"


async def run_load(
    backend: Backend, requests: Sequence[BenchRequest], schedule: Schedule, progress: ProgressBar | None = None
) -> tuple[list[RequestResult], float]:
    """Send every request as ``schedule`` says; returns the results in request order and the run's wall time."""
    slots = asyncio.Semaphore(schedule.slots) if schedule.slots else None
    arrivals = schedule.arrivals(len(requests))
    started = time.perf_counter()

    async def one(request: BenchRequest, offset: float) -> RequestResult:
        delay = started + offset - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if slots is None:
            result = await backend.stream(request)
        else:
            async with slots:
                result = await backend.stream(request)
        if progress is not None:
            progress.advance()
        return result

    results = await asyncio.gather(*(one(request, offset) for request, offset in zip(requests, arrivals, strict=True)))
    return list(results), time.perf_counter() - started
